"""The capacity model (scripts/capacity): computed from the measured session (the AWS contract
check holds scripts/capacity/measured.json to what the code sends), its tables in the docs as
`make capacity ARGS=--docs` writes them, and the issue's target read from it: with each profile's
default settings, nothing below a million daily users but account quotas, named with the numbers
to ask for."""

from __future__ import annotations

import math
import re

import pytest

from scripts.capacity.model import (
    HARD,
    QUOTA,
    SETTING,
    Measured,
    components,
    profile_config,
    stored_source_bytes,
    vectors_per_session,
)
from scripts.capacity.report import BEGIN, END, PAGES, number, section, verdict
from stacks import sizing
from stacks.sizing import Load


@pytest.mark.parametrize("profile", ["default", "serverless"])
def test_every_rate_grows_with_the_daily_users_and_meets_its_limit_where_it_reaches_it(
    profile: str,
) -> None:
    for component in components(profile):
        if component.fixed is not None:
            continue
        assert component.rate(2_000_000) == pytest.approx(2 * component.rate(1_000_000))
        if not math.isinf(component.reached_at):
            reached = component.per_daily_user * component.reached_at
            assert reached == pytest.approx(component.limit)


def test_the_measured_session_is_what_its_rates_are_made_of() -> None:
    measured = Measured.load("serverless")
    load = Load(daily_users=1_000_000)
    # One chat request a turn, and the session's creation and its end: 12 a 10-turn session.
    api = measured.per_second(
        load, lambda r: r["function"] == "chat_api" and r["service"] == "lambda"
    )
    assert api == pytest.approx(load.turns_per_second * 1.2)
    # Each turn asks the text model once (no second call for its sentiment).
    chat_calls = measured.per_session(
        lambda r: r["function"] == "chat_api" and r["operation"] == "Converse"
    )
    assert chat_calls == measured.parts["turns"] == load.turns_per_session


def test_with_default_settings_the_serverless_profile_meets_only_account_quotas_below_1m() -> None:
    found = components("serverless")
    below = [c for c in found if c.reached_at < 1_000_000]
    assert below and {c.kind for c in below} == {QUOTA}
    names = {c.name for c in below}
    assert "Lambda: concurrent executions of the chat" in names
    assert "Text model: the chat's share of its quota" in names
    text = verdict("serverless", found)
    assert "ask for" in text and "not quotas" not in text


def test_the_models_quotas_are_named_as_service_quotas_names_them_with_the_numbers_to_ask() -> None:
    """Bedrock: the model's requests and tokens a minute (cross-region for the default text
    model's inference profile); SageMaker endpoints: instances of their type for endpoint
    usage. Each with what 1,000,000 daily users need."""
    serverless = {c.name: c for c in components("serverless")}
    text = serverless["Text model: the chat's share of its quota"]
    assert "'Cross-Region InvokeModel requests per minute for Amazon Nova Micro'" in text.limit_name
    assert text.tokens_quota == "'Cross-Region InvokeModel tokens per minute for Amazon Nova Micro'"
    # The chat's requests need the whole quota at twice its rate (half is background work's),
    # each request its input and its longest answer in tokens.
    assert text.ask_for(1_000_000) == math.ceil(text.rate(1_000_000) * 1.25 * 2)
    assert text.tokens_for(1_000_000) > 256 * text.ask_for(1_000_000)
    embed = serverless["Embedding model: requests a minute"]
    assert embed.tokens_quota == (
        "'On-demand InvokeModel tokens per minute for Amazon Titan Text Embeddings V2'"
    )
    assert "tokens a minute" in verdict("serverless", list(serverless.values()))
    default = {c.name: c for c in components("default")}
    endpoint = default["Text model: the chat's share of its quota"]
    assert endpoint.kind == QUOTA and "'ml.g5.2xlarge for endpoint usage'" in endpoint.limit_name
    # Instances, each taking textModelRequestsPerMinute (2,000 a minute, assumed).
    assert endpoint.ask_for(1_000_000) == math.ceil(endpoint.rate(1_000_000) * 1.25 * 2 / 2_000)
    assert not endpoint.tokens_quota


def test_the_default_domain_holds_a_year_of_the_default_load() -> None:
    """In production dailyUsers (a million by default) sizes the domain: its k-NN memory, its
    volumes and its memory indexes' shards (AWS's 50 GiB a shard, an index's 1,024 at most:
    owners spread over several) are met at no less than a million daily users, and the
    domain's instances are within the account's quota there: below it, the default profile
    meets account quotas only."""
    assert profile_config("default").production
    found = {c.name: c for c in components("default")}
    for name in (
        "OpenSearch domain: vectors in k-NN memory",
        "OpenSearch domain: storage",
        "OpenSearch memory indexes: primary shards",
    ):
        assert found[name].kind == SETTING
        assert found[name].reached_at >= 1_000_000, name
    assert found["OpenSearch domain: instances (data nodes on the largest type)"].reached_at > (
        1_000_000
    )
    below = [c for c in found.values() if c.reached_at < 1_000_000]
    assert below and {c.kind for c in below} == {QUOTA}
    assert "not quotas" not in verdict("default", list(found.values()))


def test_a_development_stage_deployed_without_daily_users_gets_a_trials_domain() -> None:
    """Without dailyUsers a development stage's domain holds a trial (more than its ten daily
    users' year of memories, far less than a million: the report says where it ends), and the
    rest of the profile is what production's is."""
    trial = {c.name: c for c in components("default", production=False)}
    production = {c.name: c for c in components("default")}
    domain = [c for name, c in trial.items() if name.startswith("OpenSearch domain: ")]
    assert domain and all(c.kind in (SETTING, QUOTA) for c in domain)
    first = min(c.reached_at for c in domain if c.kind == SETTING)
    assert sizing.TRIAL_DAILY_USERS <= first < 1_000
    for name, component in production.items():
        if not name.startswith("OpenSearch"):
            assert trial[name].reached_at == component.reached_at, name
    assert f"met at {number(first)} daily users" in section()


def test_the_domain_is_sized_for_no_less_than_the_scenario_measures() -> None:
    """The stack sizes the domain before any user (stacks/sizing.py), with constants the
    measured session holds: no more entries a session, no larger a stored source."""
    measured = Measured.load("default")
    assert vectors_per_session(measured) <= sizing.ENTRIES_PER_SESSION
    assert stored_source_bytes(measured) <= sizing.SOURCE_BYTES_PER_ENTRY


def test_hard_limits_are_not_reached_below_ten_million() -> None:
    for profile in ("default", "serverless"):
        for component in components(profile):
            if component.kind == HARD:
                assert component.reached_at > 10_000_000, component


def test_the_docs_capacity_tables_are_what_make_capacity_writes() -> None:
    body = section()
    for page in PAGES:
        text = page.read_text()
        found = re.search(re.escape(BEGIN) + "\n(.*?)\n" + re.escape(END), text, re.S)
        assert found is not None, page
        assert found.group(1) == body, f"{page}: run `make capacity ARGS=--docs`"

"""The capacity model (scripts/capacity): computed from the measured session (the AWS contract
check holds scripts/capacity/measured.json to what the code sends), its tables in the docs as
`make capacity ARGS=--docs` writes them, and the issue's target read from it: with each profile's
default settings, nothing below a million daily users but account quotas, named with the numbers
to ask for."""

from __future__ import annotations

import math
import re

import pytest

from scripts.capacity.model import HARD, QUOTA, SETTING, Measured, components
from scripts.capacity.report import BEGIN, END, PAGES, section, verdict
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
    assert "ask for" in text and "limits of its settings" not in text


def test_the_default_profiles_development_domain_is_reported_as_the_limit_it_is() -> None:
    """Not met, and said so: the default profile's domain (one t3.small, 10 GB, GPT-J's 4,096
    dimensions) holds a year of a few users' memories; its endpoints are sized by settings."""
    found = {c.name: c for c in components("default")}
    storage = found["OpenSearch domain: storage"]
    assert storage.kind == SETTING and storage.reached_at < 10_000
    assert "limits of its settings met below 1,000,000" in verdict("default", list(found.values()))


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

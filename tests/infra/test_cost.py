"""`make cost`: the price table, the pricing of synthesized templates (each configuration built
once per session, shared with the other infra tests), the JSON last line, and the docs' cost
page's generated section, which must be exactly what `python -m scripts.cost --docs` writes."""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scripts.cost import __main__ as cost_main
from scripts.cost.configurations import CONFIGURATIONS, SynthError, synthesize, unknown_settings
from scripts.cost.estimate import Estimate, Pricer, compactions, price, schedule_minutes
from scripts.cost.prices import PRICES_FILE, Fact, Price, PriceTable, load, table
from scripts.cost.report import json_line, page_current, page_section
from scripts.cost.usage import BASIS, Usage, described
from stacks import sizing
from stacks.config import Config
from stacks.models import DEFAULT_TEXT_MODEL
from tests.infra.synth import Synth

Synthesize = Callable[..., Synth]
PRICES = table()
USAGE = Usage()


@pytest.fixture(scope="module")
def templates(synth_cache: Synthesize) -> dict[str, dict[str, Any]]:
    """Every documented configuration's template (synthesized once per test session)."""
    return {c.name: synth_cache(**c.settings).json for c in CONFIGURATIONS}


@pytest.fixture(scope="module")
def estimates(templates: dict[str, dict[str, Any]]) -> dict[str, Estimate]:
    return {name: price(name, body, PRICES, USAGE) for name, body in templates.items()}


def _resources(body: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [r.get("Properties", {}) for r in body["Resources"].values() if r["Type"] == kind]


def _item(estimate: Estimate, starts: str) -> Any:
    (found,) = [i for i in estimate.idle if i.what.startswith(starts)]
    return found


# --- the price table ----------------------------------------------------------------------------


def test_price_table_is_dated_and_every_price_has_a_unit_a_date_and_an_aws_source() -> None:
    assert PRICES.date == datetime.date(2026, 11, 23)
    assert PRICES.region == "us-east-1"
    assert PRICES.currency == "USD"
    entries: list[Price | Fact] = [*PRICES.prices.values(), *PRICES.facts.values()]
    assert len(PRICES.prices) > 50
    for entry in entries:
        assert entry.unit.strip(), entry.id
        assert isinstance(entry.date, datetime.date), entry.id
        assert entry.source.startswith("https://aws.amazon.com/"), entry.id
    for price_ in PRICES.prices.values():
        assert price_.usd > 0, price_.id


def test_prices_we_are_unsure_of_say_why() -> None:
    unsure = PRICES.unverified()
    assert {p.id for p in unsure} >= {
        "s3vectors.query_data_first_tier",
        "s3vectors.query_data_next_tier",
    }
    assert all(len(p.unverified or "") > 5 for p in unsure)


def test_a_price_without_a_unit_or_a_source_is_refused(tmp_path: Path) -> None:
    no_unit = tmp_path / "no_unit.toml"
    no_unit.write_text(
        'date = 2026-11-23\nregion = "us-east-1"\ncurrency = "USD"\n'
        '[kms]\nsource = "https://aws.amazon.com/kms/pricing/"\nkey = { usd = 1.0 }\n'
    )
    with pytest.raises(ValueError, match="kms.key has no unit"):
        load(no_unit)
    no_source = tmp_path / "no_source.toml"
    no_source.write_text(
        'date = 2026-11-23\nregion = "us-east-1"\ncurrency = "USD"\n'
        '[kms]\nkey = { usd = 1.0, unit = "key-month" }\n'
    )
    with pytest.raises(ValueError, match="kms.key has no source"):
        load(no_source)


def test_every_default_of_stacks_config_that_bills_has_a_price() -> None:
    config = Config()
    production = Config.from_mapping({"stage": "prod"})
    # The text model of the region's default (an inference profile bills its model's price).
    for model in (config.text_model_id or DEFAULT_TEXT_MODEL,):
        assert PRICES.has(f"bedrock.models.{model}.input")
        assert PRICES.has(f"bedrock.models.{model}.output")
    assert PRICES.has(f"bedrock.models.{config.embed_model_id}.input")
    # Every instance type the domain's sizing may choose for the load (stacks/sizing.py).
    for kind in {
        config.search_instance_type,
        config.search_master_instance_type,
        production.search_instance_type,
        *(node.name for node in sizing.SEARCH_INSTANCES),
        *(master for _, master in sizing.MASTER_INSTANCES),
    }:
        assert PRICES.has(f"opensearch.instance.{kind}")
    assert PRICES.has(f"sagemaker.realtime.{config.deploy_text_instance_type}")
    assert PRICES.has(f"sagemaker.realtime.{USAGE.external_endpoint_instance_type}")


def test_every_assumption_says_where_it_comes_from() -> None:
    rows = described(USAGE)
    assert {name for name, *_ in rows} == set(BASIS)
    assert {kind for _, _, kind, _ in rows} == {"measured", "assumed", "from the code"}


# --- pricing a template -------------------------------------------------------------------------


def test_default_prices_the_domain_instances_and_volumes_of_its_template(
    templates: dict[str, dict[str, Any]], estimates: dict[str, Estimate]
) -> None:
    (domain,) = _resources(templates["default"], "AWS::OpenSearchService::Domain")
    nodes = domain["ClusterConfig"]["InstanceCount"]
    kind = domain["ClusterConfig"]["InstanceType"]
    size = domain["EBSOptions"]["VolumeSize"]
    estimate = estimates["default"]
    instances = _item(estimate, "OpenSearch domain")
    assert f"{nodes} x {kind}" in instances.what
    assert instances.usd == pytest.approx(
        nodes * PRICES.usd(f"opensearch.instance.{kind}") * PRICES.hours_per_month
    )
    storage = _item(estimate, "OpenSearch storage")
    assert storage.usd == pytest.approx(nodes * size * PRICES.usd("opensearch.storage.gp3"))
    # A plain deploy's domain is a trial's: one node, no dedicated masters.
    assert not [i for i in estimate.idle if i.what.startswith("OpenSearch dedicated")]


def test_alarms_and_dashboards_are_counted_from_the_template(
    templates: dict[str, dict[str, Any]], estimates: dict[str, Estimate]
) -> None:
    for name in ("default", "bedrock-serverless-search", "serverless"):
        alarms = len(_resources(templates[name], "AWS::CloudWatch::Alarm"))
        dashboards = len(_resources(templates[name], "AWS::CloudWatch::Dashboard"))
        assert alarms > 0
        item = _item(estimates[name], f"{alarms} CloudWatch alarms")
        assert item.usd == pytest.approx(alarms * PRICES.usd("cloudwatch.alarm_standard"))
        board = _item(estimates[name], f"{dashboards} CloudWatch dashboard")
        assert board.usd == pytest.approx(dashboards * PRICES.usd("cloudwatch.dashboard"))


def test_production_prices_its_data_nodes_three_masters_and_the_waf_rules(
    templates: dict[str, dict[str, Any]], estimates: dict[str, Estimate]
) -> None:
    estimate = estimates["prod"]
    (domain,) = _resources(templates["prod"], "AWS::OpenSearchService::Domain")
    cluster = domain["ClusterConfig"]
    nodes = f"{cluster['InstanceCount']} x {cluster['InstanceType']}"
    assert nodes in _item(estimate, "OpenSearch domain").what
    masters = _item(estimate, "OpenSearch dedicated masters")
    assert f"3 x {cluster['DedicatedMasterType']}" in masters.what
    assert masters.usd == pytest.approx(
        3
        * PRICES.usd(f"opensearch.instance.{cluster['DedicatedMasterType']}")
        * PRICES.hours_per_month
    )
    (acl,) = _resources(templates["prod"], "AWS::WAFv2::WebACL")
    waf = _item(estimate, "WAF web ACL")
    assert waf.usd == pytest.approx(
        PRICES.usd("waf.web_acl") + len(acl["Rules"]) * PRICES.usd("waf.rule")
    )
    assert [i.what for i in estimate.turn if i.what == "WAF request"]


def test_serverless_search_bills_the_minimum_ocus_of_its_redundancy_setting(
    estimates: dict[str, Estimate],
) -> None:
    item = _item(estimates["bedrock-serverless-search"], "OpenSearch Serverless")
    minimum = PRICES.fact("opensearch_serverless.min_ocu_without_standby")
    assert "standby replicas off" in item.what
    assert item.usd == pytest.approx(
        minimum * PRICES.usd("opensearch_serverless.ocu") * PRICES.hours_per_month
    )


def test_deploy_bills_the_text_endpoint_by_the_hour_and_the_serverless_embedder_per_request(
    estimates: dict[str, Estimate],
) -> None:
    estimate = estimates["deploy"]
    text = _item(estimate, "SageMaker endpoint ChatMemory-dev-text")
    assert text.usd == pytest.approx(
        PRICES.usd("sagemaker.realtime.ml.g5.xlarge") * PRICES.hours_per_month
    )
    assert _item(estimate, "SageMaker serverless endpoint").usd == 0
    assert [i for i in estimate.turn if "serverless endpoint" in i.what and i.usd > 0]


def test_the_default_modes_endpoints_outside_the_stack_are_priced_as_assumed(
    estimates: dict[str, Estimate],
) -> None:
    config = Config()
    outside = [i.what for i in estimates["default"].idle if "outside the stack" in i.what]
    assert len(outside) == 2
    assert config.text_endpoint in outside[0] and config.embed_endpoint in outside[1]
    assert all(USAGE.external_endpoint_instance_type in what for what in outside)
    assert not [i for i in estimates["bedrock"].idle if "SageMaker" in i.what]


def test_serverless_profile_bills_nothing_by_the_hour(estimates: dict[str, Estimate]) -> None:
    idle = {i.what for i in estimates["serverless"].idle if i.usd > 0}
    assert not [w for w in idle if "OpenSearch" in w or "SageMaker" in w or "WAF" in w]
    bare = estimates["serverless-unmonitored"]
    assert [i.what for i in bare.idle if i.usd > 0] == [
        i.what for i in estimates["serverless"].idle if i.what.startswith("idle sweeper")
    ]
    assert bare.idle_usd_month < 0.5


def test_every_resource_type_of_every_configuration_is_priced_or_known_to_bill_by_use(
    templates: dict[str, dict[str, Any]],
) -> None:
    for name, body in templates.items():
        assert Pricer(body, PRICES, USAGE).unpriced_types() == set(), name


def test_a_turn_uses_the_chat_functions_memory_and_the_runtimes_token_budgets(
    templates: dict[str, dict[str, Any]], estimates: dict[str, Estimate]
) -> None:
    pricer = Pricer(templates["bedrock"], PRICES, USAGE)
    (chat,) = [
        p
        for p in _resources(templates["bedrock"], "AWS::Lambda::Function")
        if p.get("Handler", "").startswith("handlers.chat_api.")
    ]
    assert f"{chat['MemorySize']} MB" in " ".join(i.what for i in estimates["bedrock"].turn)
    # In us-east-1 (the price table's region) the default text model is Nova Micro through
    # the US inference profile, billed at the model's price.
    assert pricer.settings.text_model_id == f"us.{DEFAULT_TEXT_MODEL}"
    (text,) = [i for i in estimates["bedrock"].turn if i.what.startswith("us.")]
    model = DEFAULT_TEXT_MODEL
    assert text.usd == pytest.approx(
        pricer.settings.prompt_token_budget * PRICES.usd(f"bedrock.models.{model}.input") / 1000
        + pricer.settings.max_new_tokens * PRICES.usd(f"bedrock.models.{model}.output") / 1000
    )
    # Always-on capacity adds nothing per turn.
    hourly = [i for i in estimates["default"].turn if "billed by the hour" in i.what]
    assert {i.what.split(":")[0] for i in hourly} >= {"text model", "search"}
    assert all(i.usd == 0 for i in hourly)


def test_an_s3_vectors_query_costs_more_as_the_index_grows(
    templates: dict[str, dict[str, Any]],
) -> None:
    pricer = Pricer(templates["serverless"], PRICES, USAGE)
    small = sum(i.usd for i in pricer.turn_items(10_000))
    large = sum(i.usd for i in pricer.turn_items(10_000_000))
    assert large > small
    assert pricer.vector_query_bytes == pricer.settings.embed_dimension * 4 + 240


def test_serverless_cost_per_1000_turns_is_within_2x_between_10k_and_1m_daily_users(
    estimates: dict[str, Estimate],
) -> None:
    """Failed before: every query read the one shared index, so its price grew with all users'
    memories (per 1,000 turns, $0.0041 of search at 100,000 vectors and 100 times that at 10M);
    a query now reads one user's own index, whatever the number of users."""
    from scripts.cost.report import _per_1000

    serverless = estimates["serverless"]
    small, large = (_per_1000(serverless, n, USAGE) for n in (10_000, 1_000_000))
    assert large <= 2 * small and small <= 2 * large
    whole = [serverless.month_usd(n) / (n * USAGE.turns_per_user_month) for n in (10_000, 10**6)]
    assert whole[1] <= 2 * whole[0]  # idle cost and sign-ins included


def test_compactions_follow_the_maintenance_rule() -> None:
    assert compactions(12, 12, 6) == 0
    assert compactions(13, 12, 6) == 1
    assert compactions(20, 12, 6) == 2


def test_schedules_are_read_from_rate_expressions() -> None:
    assert schedule_minutes("rate(5 minutes)") == 5
    assert schedule_minutes("rate(1 hour)") == 60
    with pytest.raises(ValueError, match="only rate"):
        schedule_minutes("cron(0 * * * ? *)")


def test_a_setting_stacks_config_does_not_read_is_refused_before_synthesizing() -> None:
    assert unknown_settings({"modelMode": "bedrock", "noSuchSetting": "1"}) == ["noSuchSetting"]
    with pytest.raises(SynthError, match="noSuchSetting"):
        synthesize(type(CONFIGURATIONS[0])("x", "x", {"noSuchSetting": "1"}))


# --- output -------------------------------------------------------------------------------------


def test_make_cost_ends_with_one_json_line_of_every_configuration(
    estimates: dict[str, Estimate],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    found = list(estimates.values())
    monkeypatch.setattr(cost_main, "estimates", lambda names=None: found)
    assert cost_main.main([]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("Prices: scripts/cost/prices.toml")
    last = json.loads(lines[-1])
    assert list(last) == ["configurations"]
    assert [c["name"] for c in last["configurations"]] == [c.name for c in CONFIGURATIONS]
    for entry, estimate in zip(last["configurations"], found, strict=True):
        assert isinstance(entry["idle_usd_month"], float | int)
        assert isinstance(entry["per_1000_turns_usd"], float | int)
        assert entry["idle_usd_month"] == round(estimate.idle_usd_month, 2)
        assert entry["per_1000_turns_usd"] == round(estimate.per_1000_turns_usd, 4)
    assert json_line(found) == lines[-1]


def test_docs_cost_section_is_what_make_cost_writes(estimates: dict[str, Estimate]) -> None:
    """Regenerate docs/cost.md's section from the same templates and prices; run
    `make cost ARGS=--docs` when this fails."""
    assert page_current() == page_section(list(estimates.values()), PRICES, USAGE)


def test_the_price_table_file_is_the_one_in_the_repository() -> None:
    assert isinstance(PRICES, PriceTable)
    assert PRICES.path == PRICES_FILE

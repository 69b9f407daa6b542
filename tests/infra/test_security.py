"""cdk-nag and cfn-lint on the synthesized templates: no unacknowledged AwsSolutions finding,
no acknowledgment without a finding, no cfn-lint error (warnings as .cfnlintrc decides)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from stacks import nag
from tests.infra.synth import VARIANTS, Synth, synthesize

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("settings", VARIANTS.values(), ids=VARIANTS.keys())
def test_cdk_nag_reports_no_unacknowledged_finding(
    synth_cache: Callable[..., Synth], settings: dict[str, str]
) -> None:
    synth = synth_cache(**settings)
    findings = [
        f"{v['ruleName']} at {c['constructPath']}"
        for v in synth.violations
        for c in v["violatingConstructs"]
    ]
    assert findings == []


# The default, the most acknowledged (SageMaker endpoints), and the serverless profile (no
# OpenSearch, no index setup: none of their acknowledgments may linger).
ACKNOWLEDGED_VARIANTS = ("default", "deploy-models", "serverless-profile")


@pytest.mark.parametrize(
    "settings", [VARIANTS[v] for v in ACKNOWLEDGED_VARIANTS], ids=ACKNOWLEDGED_VARIANTS
)
def test_every_acknowledgment_matches_a_real_finding(
    synth_cache: Callable[..., Synth], tmp_path: Path, settings: dict[str, str]
) -> None:
    """Synthesized again with acknowledgments switched off, cdk-nag must report exactly the
    findings that were acknowledged: none stale, none missing."""
    raw = synthesize(tmp_path, **settings, nagAcknowledge="false")
    findings = {
        (v["ruleName"], c["constructPath"])
        for v in raw.violations
        for c in v["violatingConstructs"]
    }
    acknowledged = nag.acknowledgments(synth_cache(**settings).stack)

    def covers(path: str, rule: str, finding: tuple[str, str]) -> bool:
        return finding[0] == rule and (finding[1] == path or finding[1].startswith(path + "/"))

    stale = [(p, r) for p, r, _ in acknowledged if not any(covers(p, r, f) for f in findings)]
    missing = [f for f in findings if not any(covers(p, r, f) for p, r, _ in acknowledged)]
    assert stale == []
    assert missing == []
    assert all(len(reason) > 40 for _, _, reason in acknowledged)


def test_cfn_lint_finds_no_error_in_any_variant(synth_cache: Callable[..., Synth]) -> None:
    templates = [str(synth_cache(**settings).template_path) for settings in VARIANTS.values()]
    done = subprocess.run(
        [sys.executable, "-c", "from cfnlint.runner import main; main()", *templates],
        cwd=ROOT,  # .cfnlintrc: the warnings this project ignores, with reasons
        capture_output=True,
        text=True,
        check=False,
    )
    # Exit code bits: 2 errors, 4 warnings, 8 informational.
    assert done.returncode == 0, done.stdout + done.stderr

"""IAM policy evaluation, as far as the contract check needs it: does a set of resolved policy
statements allow one action on one resource? An explicit Deny wins, then any Allow; wildcards
`*` and `?` in actions (case-insensitive) and resources; NotAction and NotResource. A condition
is evaluated only for the keys the caller supplies; a statement whose condition names another
key is refused rather than guessed (an Allow then does not count, a Deny is reported)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any


class UnknownCondition(ValueError):
    """A Deny statement whose condition the check cannot evaluate."""


@lru_cache(maxsize=4096)
def _pattern(glob: str, ignore_case: bool) -> re.Pattern[str]:
    parts = (".*" if c == "*" else "." if c == "?" else re.escape(c) for c in glob)
    return re.compile("".join(parts), re.IGNORECASE if ignore_case else 0)


def matches(glob: str, value: str, *, ignore_case: bool = False) -> bool:
    return _pattern(glob, ignore_case).fullmatch(value) is not None


def _listed(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


@dataclass(frozen=True)
class Decision:
    allowed: bool
    why: str


def _condition_holds(condition: Mapping[str, Any], context: Mapping[str, str]) -> bool | None:
    """True/False when every key is known, None when one is not."""
    for operator, tests in condition.items():
        for key, expected in tests.items():
            if key not in context:
                return None
            actual = context[key]
            wanted = _listed(expected)
            if operator in ("StringEquals", "ArnEquals"):
                ok = actual in wanted
            elif operator in ("StringLike", "ArnLike"):
                ok = any(matches(w, actual) for w in wanted)
            elif operator == "StringNotEquals":
                ok = actual not in wanted
            elif operator == "Bool":
                ok = actual.lower() in [w.lower() for w in wanted]
            else:
                return None
            if not ok:
                return False
    return True


def _applies(
    statement: Mapping[str, Any], action: str, resource: str, context: Mapping[str, str]
) -> bool | None:
    if "Action" in statement:
        hit = any(matches(a, action, ignore_case=True) for a in _listed(statement["Action"]))
    else:
        hit = not any(
            matches(a, action, ignore_case=True) for a in _listed(statement.get("NotAction"))
        )
    if not hit:
        return False
    if "Resource" in statement:
        hit = any(matches(r, resource) for r in _listed(statement["Resource"]))
    else:
        hit = not any(matches(r, resource) for r in _listed(statement.get("NotResource")))
    if not hit:
        return False
    condition = statement.get("Condition")
    return True if not condition else _condition_holds(condition, context)


def evaluate(
    statements: Iterable[Mapping[str, Any]],
    action: str,
    resource: str,
    context: Mapping[str, str] | None = None,
) -> Decision:
    """Whether `statements` (one principal's identity policies) allow `action` on `resource`."""
    context = context or {}
    allowed_by = None
    for statement in statements:
        applies = _applies(statement, action, resource, context)
        if statement.get("Effect") == "Deny":
            if applies is None:
                raise UnknownCondition(f"cannot evaluate the condition of {statement}")
            if applies:
                return Decision(False, f"denied explicitly by {statement}")
        elif applies and allowed_by is None:
            allowed_by = statement
    if allowed_by is None:
        return Decision(False, f"no statement allows {action} on {resource}")
    return Decision(True, f"allowed by {allowed_by}")


def allowed_by_any(
    policies: Sequence[Iterable[Mapping[str, Any]]],
    action: str,
    resource: str,
    context: Mapping[str, str] | None = None,
) -> Decision:
    """Same-account access: allowed when one of the policies (the identity policy, a resource
    policy naming the principal) allows it and none denies it. `context`: the condition keys
    the request carries."""
    decisions = [evaluate(p, action, resource, context) for p in policies]
    denied = [d for d in decisions if not d.allowed and d.why.startswith("denied")]
    if denied:
        return denied[0]
    return next((d for d in decisions if d.allowed), decisions[0])

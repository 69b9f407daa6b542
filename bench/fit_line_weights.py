"""Fit auto-recall's line weights (services/longterm/auto_recall.LineWeights) on LoCoMo
conversations.

Builds the LoCoMo world as `bench.locomo` does (import, end, consolidate with the offline
models, on moto), then for every question of categories 1-4 runs auto-recall up to its
candidates (`memories_for_turn`: the gates, the ranking, the floor) and takes each piece the
block could hold (a line of a window, or a record) with its features (`piece_features`). A
piece is positive when it is a gold evidence turn (its text is the turn's) or a record drawn
from one. A logistic regression (scikit-learn, L2, `--c`: 1 by default, as the shipped weights
were fitted) on the `--conversations` given is printed as the `LineWeights` to paste into
services/longterm/auto_recall.py, with evidence_in_prompt at the configured budget on the
conversations it was fitted on and on the others (`--loco` adds leave-one-conversation-out:
each conversation scored with weights fitted on the other four).

    python -m bench.fit_line_weights --data ../shared/data/locomo-dev.json \
        --conversations conv-26,conv-30 [--c 1] [--loco] [--json] [--models offline|environment]
        [--cost-exponents 0,0.25,0.5,0.75,1,1.5]

`--models environment` fits on the world a deployment's models make (as `bench.locomo`'s).
`--cost-exponents` compares what a piece's length costs in the block's order
(`AutoRecallPolicy.cost_exponent`), in-sample and leaving one conversation out.

The dataset is only read here, never copied: the weights are twelve numbers.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from bench.locomo import (
    Conversation,
    World,
    _aws_env,
    _normal,
    _questions,
    build,
    evidence_found,
    gold_turns,
    mock_stores,
)

Example = tuple[str, list[tuple[Any, tuple[float, ...], bool]], list[Any], set[str]]


def examples(world: World) -> dict[str, list[Example]]:
    """Per conversation, per question: the query, its pieces (piece, features, positive), the
    ranked candidates and the gold turns."""
    from chatmemory import wiring
    from chatmemory.services.longterm import auto_recall, recall_block

    policy = wiring.chat_policy(world.settings).auto_recall
    out: dict[str, list[Example]] = {}
    for conversation in world.conversations:
        drawn = _record_sources(world, conversation)
        rows: list[Example] = []
        for qa in _questions(conversation):
            gold = gold_turns(qa.get("evidence", []))
            sources = auto_recall.RecallSources(
                owner=conversation.user,
                memory=world.memory,
                embedder=world.embedder,
                index=world.index,
                now=conversation.asked_at,
            )
            found = auto_recall.memories_for_turn(
                auto_recall.Asked(str(qa["question"])), sources, policy
            )
            if isinstance(found, auto_recall.Recalled):
                rows.append((found.query, [], [], gold))
                continue
            query, ranked = found
            texts = [_normal(conversation.texts[g]) for g in gold if conversation.texts.get(g)]
            pieces = []
            for piece, features in recall_block.piece_features(ranked, query):
                # As bench.locomo counts it: the turn's text, or a fact or preference drawn from it.
                drawn_from = drawn.get(piece.doc.record_id or "", set())
                positive = any(t in _normal(piece.text) for t in texts) or bool(
                    piece.doc.kind in ("fact", "preference") and drawn_from & gold
                )
                pieces.append((piece, features, positive))
            rows.append((query, pieces, ranked, gold))
        out[conversation.user] = rows
    return out


def _record_sources(world: World, conversation: Conversation) -> dict[str, set[str]]:
    """Record id -> the dia_ids of the turns it was drawn from (its provenance)."""
    out: dict[str, set[str]] = {}
    for record in world.memory.records_of_owner(conversation.user):
        out[record.record_id] = {
            said
            for p in record.provenance
            if (said := conversation.turn_ids.get((p.session_id, p.turn), (None, None))[0])
        }
    return out


def fit(rows: list[Example], c: float = 1.0) -> Any:
    from sklearn.linear_model import LogisticRegression

    from chatmemory.services.longterm.auto_recall import LineWeights

    x = [features for _, pieces, _, _ in rows for _, features, _ in pieces]
    y = [positive for _, pieces, _, _ in rows for _, _, positive in pieces]
    model = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    names = list(LineWeights._fields)
    return LineWeights(
        **{n: round(float(w), 3) for n, w in zip(names, model.coef_[0], strict=True)}
    )


def evidence_in_prompt(
    world: World,
    conversation: Conversation,
    rows: list[Example],
    weights: Any,
    cost_exponent: float | None = None,
) -> list[bool]:
    """Each question's outcome with `weights` and `cost_exponent` (the policy's when None)."""
    from chatmemory import wiring
    from chatmemory.services.longterm.auto_recall import Recalled
    from chatmemory.services.longterm.recall_block import build_block

    policy = wiring.chat_policy(world.settings).auto_recall
    budget = policy.token_budget
    cost = policy.cost_exponent if cost_exponent is None else cost_exponent
    hits = []
    for query, _, ranked, gold in rows:
        block, items = build_block(ranked, budget, query, weights, (), cost) if ranked else ("", [])
        recalled = Recalled(query, block=block, items=items)
        hits.append(bool(evidence_found(recalled, conversation, gold, world.memory)))
    return hits


def cost_exponents(
    world: World, rows: dict[str, list[Example]], values: list[float], c: float
) -> dict[str, Any]:
    """evidence_in_prompt for each cost exponent (recall_block.build_block): with the shipped
    weights on all five conversations, and leaving one conversation out, each conversation
    scored with weights fitted on the other four and the exponent best on those four."""
    from chatmemory.services.longterm.auto_recall import LINE_WEIGHTS

    folds = {u: fit([r for v, rs in rows.items() if v != u for r in rs], c) for u in rows}
    by_user = {conversation.user: conversation for conversation in world.conversations}
    shipped: dict[float, dict[str, list[bool]]] = {}
    fitted: dict[float, dict[str, list[bool]]] = {}
    for value in values:
        shipped[value] = {
            u: evidence_in_prompt(world, by_user[u], rows[u], LINE_WEIGHTS, value) for u in rows
        }
        fitted[value] = {
            u: evidence_in_prompt(world, by_user[u], rows[u], folds[u], value) for u in rows
        }

    def share(hits: list[bool]) -> float:
        return round(sum(hits) / max(len(hits), 1), 3)

    out: dict[str, Any] = {
        "shipped_weights": {
            v: share([h for hs in shipped[v].values() for h in hs]) for v in values
        },
        "fold_weights": {v: share([h for hs in fitted[v].values() for h in hs]) for v in values},
    }
    for name, outcomes in (("shipped_weights", shipped), ("fold_weights", fitted)):
        held: list[bool] = []
        chosen = {}
        for user in rows:
            chosen[user] = max(
                values,
                key=lambda v: sum(sum(outcomes[v][u]) for u in rows if u != user),  # noqa: B023
            )
            held += outcomes[chosen[user]][user]
        out[f"{name}_leave_one_out"] = {"evidence_in_prompt": share(held), "chosen": chosen}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data/locomo-dev.json"))
    parser.add_argument("--conversations", default="conv-26,conv-30", help="fit on these")
    parser.add_argument(
        "--c", type=float, default=1.0, help="the regression's C (smaller: weights nearer 0)"
    )
    parser.add_argument("--loco", action="store_true", help="leave one conversation out")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument(
        "--cost-exponents",
        default="",
        help="compare these cost exponents (0,0.5,...), in-sample and leave one out",
    )
    parser.add_argument(
        "--models",
        choices=("offline", "environment"),
        default="offline",
        help="as bench.locomo's: the offline models, or those the environment configures",
    )
    args = parser.parse_args()
    from chatmemory.services.longterm.auto_recall import LINE_WEIGHTS

    _aws_env(args.models)
    started = time.perf_counter()
    train = [c.strip() for c in args.conversations.split(",") if c.strip()]
    with mock_stores(args.models):
        world = build(args.data, models=args.models)
        rows = examples(world)
        weights = fit([row for user in train for row in rows[user]], args.c)

        def score(users: list[str], with_weights: Any) -> float:
            hits = [
                hit
                for c in world.conversations
                if c.user in users
                for hit in evidence_in_prompt(world, c, rows[c.user], with_weights)
            ]
            return round(sum(hits) / max(len(hits), 1), 3)

        others = [c.user for c in world.conversations if c.user not in train]
        result: dict[str, Any] = {
            "fitted_on": train,
            "weights": weights._asdict(),
            "evidence_in_prompt_fitted_on": score(train, weights),
            "evidence_in_prompt_held_out": score(others, weights),
            "shipped_weights_held_out": score(others, LINE_WEIGHTS),
            "window_order_held_out": score(others, None),
        }
        if args.loco:
            hits = []
            for conversation in world.conversations:
                held = fit(
                    [r for u, rs in rows.items() if u != conversation.user for r in rs], args.c
                )
                hits += evidence_in_prompt(world, conversation, rows[conversation.user], held)
            result["evidence_in_prompt_leave_one_out"] = round(sum(hits) / len(hits), 3)
        if args.cost_exponents:
            values = [float(v) for v in args.cost_exponents.split(",")]
            result["cost_exponents"] = cost_exponents(world, rows, values, args.c)
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(f"LINE_WEIGHTS = {weights!r}")
    for key, value in result.items():
        if key != "weights":
            print(f"{key}: {value}")
    if args.json:
        print(json.dumps(result))


if __name__ == "__main__":
    main()

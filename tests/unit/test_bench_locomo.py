"""bench.locomo's budget curve: each budget is what limits the memory put in the prompt."""

from __future__ import annotations

import json
from pathlib import Path

from bench.locomo import build, run_chat, wordpiece_tokens


def _conversation() -> dict[str, object]:
    """A LoCoMo-shaped conversation: two sessions of walks by the harbour, each line its own."""
    conversation: dict[str, object] = {"speaker_a": "Ana", "speaker_b": "Ben"}
    for number, date in ((1, "1:56 pm on 8 May, 2023"), (2, "10:00 am on 9 June, 2023")):
        conversation[f"session_{number}_date_time"] = date
        conversation[f"session_{number}"] = [
            {
                "speaker": "Ana" if i % 2 == 0 else "Ben",
                "dia_id": f"D{number}:{i + 1}",
                "text": f"On walk {number}-{i} I took my greyhound Biscuit along the harbour "
                f"past boat number {100 * number + i} and counted {i + 3} gulls there.",
            }
            for i in range(30)
        ]
    return {
        "sample_id": "conv-t",
        "conversation": conversation,
        "qa": [
            {
                "question": "Where did Ana walk her greyhound Biscuit?",
                "answer": "along the harbour",
                "evidence": ["D1:1", "D2:3"],
                "category": 1,
            }
        ],
    }


def test_each_budget_of_the_curve_bounds_the_memory_and_is_not_capped_by_the_context(
    tmp_path: Path,
) -> None:
    from moto import mock_aws

    data = tmp_path / "locomo.json"
    data.write_text(json.dumps([_conversation()]))
    with mock_aws():
        world = build(data)
        result = run_chat(world, ["thanks!"], budgets=[200, 1600])

    curve = result["budgets"]
    assert 100 < curve["200"]["memory_tokens_p95"] <= 200
    # Above half of the default model's 2,048 tokens: the curve's model has room for it.
    assert 1024 < curve["1600"]["memory_tokens_p95"] <= 1600
    assert result["memory_tokens_p95"] <= 400  # the configured budget, measured as before
    # The same memory read by a real tokenizer (the estimate is meant to count it high).
    assert 0 < result["memory_wordpiece_p95"] < result["memory_tokens_p95"]
    assert 0 < curve["1600"]["memory_wordpiece_p95"] < curve["1600"]["memory_tokens_p95"]


def test_a_real_tokenizers_count_is_the_texts_pieces_neither_padded_nor_cut() -> None:
    # The packaged tokenizer pads every text to 128 pieces: a short block counted 128.
    assert wordpiece_tokens("Hello world, how are you?") == 7
    assert wordpiece_tokens(" ".join(["camping"] * 300)) == 300
    assert wordpiece_tokens("") == 0

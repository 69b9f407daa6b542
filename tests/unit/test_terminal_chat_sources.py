"""What `make chat` prints under an answer for each kind of source (local/chat.format_sources)."""

from __future__ import annotations

from chatmemory.schema import SourceKind
from local.chat import format_sources


def test_each_kind_of_source_is_printed_as_what_it_is_and_the_profile_in_one_line() -> None:
    profile = [
        {"kind": SourceKind.PROFILE.value, "id": f"r{i}", "title": text, "score": None}
        for i, text in enumerate(("I am allergic to peanuts.", "My sister is called Ana."))
    ]
    turn = {
        "sources": [
            *profile,
            {
                "kind": "record",
                "id": "r9",
                "title": "I live in Lisbon.",
                "date": "2026-03-01T10:00:00Z",
            },
            {"kind": "session", "id": "s1", "title": "Garden", "date": "2026-02-01T09:00:00Z"},
            {
                "kind": "passage",
                "id": "p",
                "title": "Account help",
                "doc_id": "a.md",
                "passage_id": "p1",
            },
        ]
    }
    assert format_sources(turn) == [
        "  - profile: 2 facts",
        "  - remembered: I live in Lisbon. (since 2026-03-01)",
        "  - session Garden (2026-02-01) s1",
        "  - [a.md#p1] Account help",
    ]
    assert format_sources({"sources": profile[:1]}) == ["  - profile: 1 fact"]
    assert format_sources({"sources": []}) == []
    # A kind this chat does not know yet is named as the API names it, never as "None#None".
    assert format_sources({"sources": [{"kind": "note", "id": "n1"}]}) == ["  - note: n1"]

"""ChatMemorySaver's channel versions: unique across branches, ordered by step, and the integer
versions of threads stored before (1, 2, 3) go on."""

from __future__ import annotations

from chatmemory_client.langgraph import ChatMemorySaver


def test_versions_of_two_branches_differ_and_a_later_step_is_greater() -> None:
    saver = ChatMemorySaver(base_url="http://chatmemory.test")
    first = saver.get_next_version(None, None)
    forks = {saver.get_next_version(first, None) for _ in range(200)}
    assert len(forks) == 200  # a fork from the same checkpoint never reuses a version
    assert all(fork > first for fork in forks)
    later = saver.get_next_version(max(forks), None)
    assert later > max(forks)
    assert all(isinstance(v, int) for v in (first, later, *forks))


def test_a_thread_with_integer_versions_goes_on_above_them() -> None:
    saver = ChatMemorySaver(base_url="http://chatmemory.test")
    for legacy in (1, 2, 41):
        assert saver.get_next_version(legacy, None) > legacy
        assert saver.get_next_version(legacy, None) // 10**12 == legacy + 1

"""scripts/code_measures.py measures what issue 45 limits (modules of at most 700 lines,
functions of at most 60), and the Lambda code keeps to it."""

from __future__ import annotations

from pathlib import Path

from scripts import code_measures

ROOT = Path(__file__).resolve().parents[2]


def test_functions_are_measured_from_def_to_last_line_methods_and_nested_too(
    tmp_path: Path,
) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "@decorated\n"
        "def outer():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
        "\n"
        "class C:\n"
        "    async def method(self):\n"
        "        pass\n"
    )
    found = {(f.name, f.line, f.lines) for f in code_measures.functions(module)}
    assert found == {("outer", 2, 4), ("outer.inner", 3, 2), ("C.method", 8, 2)}


def test_check_fails_on_a_function_over_the_limit(tmp_path: Path, capsys) -> None:
    module = tmp_path / "long.py"
    module.write_text("def long():\n" + "    x = 1\n" * 60)
    assert code_measures.main([str(tmp_path), "--check"]) == 1
    assert "61  " in capsys.readouterr().out
    assert code_measures.main([str(tmp_path), "--check", "--function-lines", "61"]) == 0


def test_a_chat_message_reaches_the_store_through_at_most_8_modules_from_its_route() -> None:
    """Issue 45's measure of the message path (scripts/message_path.py): from the module that
    answers a chat message (handlers/messages.py) to the store's adapter that writes its turn."""
    from scripts import message_path

    trace = message_path.measure()
    path = message_path.modules_in([p for p in trace.path if p[0] != "(AWS)"])
    assert path[0] == "handlers/chat_api.py"
    store = message_path.to_store(path[path.index("handlers/messages.py") :])
    assert store[-1] == "chatmemory/adapters/dynamodb/turns.py"
    assert len(store) <= 8, store


def test_no_module_under_lambdas_is_over_700_lines_and_no_function_over_60(capsys) -> None:
    """Issue 45's measure, for the whole Lambda code (it held for the handlers alone while a
    profile module grew past it)."""
    assert code_measures.main([str(ROOT / "lambdas"), "--check"]) == 0, capsys.readouterr().out

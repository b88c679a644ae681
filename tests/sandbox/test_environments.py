"""Hostile tool environments through the real bubblewrap sandbox (issue 20): a tool that sleeps, crashes, floods
output or returns what is not text, a ``respond`` that misbehaves, sources that do not load. Every failure must
stay the failing call's (an error the model reads), name its cause, and leave the environment usable."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator

import pytest

from grpo_core.errors import UserError
from grpo_core.rewards.python_runner import SandboxLimits
from grpo_core.rollout.agent.sandboxed import EnvironmentRunner

TOOLS = '''
import os, sys, time

def calculator(expression: str) -> str:
    """Evaluate arithmetic."""
    return str(eval(expression, {"__builtins__": {}}))

def sleeper(seconds: float):
    time.sleep(seconds)
    return "woke up"

def stubborn():
    while True:  # swallows the deadline's exception where it can: only the batch deadline stops it
        try:
            time.sleep(100)
        except Exception:
            pass

def crasher():
    os._exit(3)

def flood():
    for _ in range(2000):
        print("x" * 50_000)
        sys.stderr.write("y" * 50_000)
    return "z" * 1_000_000

def structured(item):
    return {"answer": item["answer"], "ok": True, "values": [1, 2.5, None]}

def an_object():
    return object()

def not_finite():
    return float("nan")

def nested_bytes():
    return {"raw": b"bytes"}

def deep():
    def f(n): return f(n + 1)
    return f(0)

def exfiltrate():
    return open("/etc/passwd").read()

def network():
    import socket
    socket.create_connection(("127.0.0.1", 5432), timeout=1).close()
    return "connected"

def _private():
    return "never a tool"
'''


@pytest.fixture
def make_env(bwrap_ready: None) -> Iterator[Callable[..., EnvironmentRunner]]:
    runners: list[EnvironmentRunner] = []

    def make(source: str, **kw: float) -> EnvironmentRunner:
        limits = SandboxLimits(batch_timeout_seconds=float(kw.pop("batch", 3.0)), load_timeout_seconds=10.0)
        runner = EnvironmentRunner(source, tier="bwrap", limits=limits, **kw)  # type: ignore[arg-type]
        runners.append(runner)
        return runner

    yield make
    for r in runners:
        r.close()


def call(runner: EnvironmentRunner, name: str, item: dict | None = None, **args: object) -> tuple[object, str | None]:
    res = runner.call([{"tool": name, "arguments": args, "item": item or {}}])[0]
    return res.value, res.error


def still_works(runner: EnvironmentRunner) -> None:
    assert call(runner, "calculator", expression="17*23") == ("391", None)


def test_tools_are_the_public_functions_with_their_signatures(make_env) -> None:
    runner = make_env(TOOLS)
    form, tools = runner.load()
    assert form == "tools"
    names = [t["name"] for t in tools]
    assert "calculator" in names and "structured" in names and "_private" not in names
    calc = next(t for t in tools if t["name"] == "calculator")
    assert calc == {
        "name": "calculator",
        "doc": "Evaluate arithmetic.",
        "params": [{"name": "expression", "annotation": "str", "required": True}],
    }


def test_a_sleeping_tool_fails_alone_at_its_own_deadline(make_env) -> None:
    runner = make_env(TOOLS, call_timeout=0.5)
    t0 = time.monotonic()
    out = runner.call(
        [
            {"tool": "calculator", "arguments": {"expression": "1+1"}, "item": {}},
            {"tool": "sleeper", "arguments": {"seconds": 30}, "item": {}},
            {"tool": "sleeper", "arguments": {"seconds": 0.01}, "item": {}},
        ]
    )
    assert time.monotonic() - t0 < 5
    assert (out[0].value, out[0].error) == ("2", None)
    assert out[1].value is None and out[1].error == "timed out after 0.5 s" and out[1].seconds >= 0.5
    assert (out[2].value, out[2].error) == ("woke up", None)  # the next call of the batch still ran
    still_works(runner)


def test_a_tool_that_ignores_its_deadline_is_killed_with_its_batch(make_env) -> None:
    runner = make_env(TOOLS, call_timeout=0.3, batch=1.0)
    t0 = time.monotonic()
    value, error = call(runner, "stubborn")
    assert time.monotonic() - t0 < 5
    assert value is None and error is not None
    assert ("timed out after 0.3 s" in error) or ("the sandbox was killed" in error), error
    still_works(runner)


def test_a_crashing_tool_takes_down_only_its_batch(make_env) -> None:
    runner = make_env(TOOLS)
    out = runner.call(
        [
            {"tool": "crasher", "arguments": {}, "item": {}},
            {"tool": "calculator", "arguments": {"expression": "2"}, "item": {}},
        ]
    )
    for res in out:
        assert (
            res.value is None and res.error == "the sandbox exited with code 3 while running this batch of tool calls"
        )
    starts = runner.starts
    still_works(runner)  # a fresh sandbox for the next batch
    assert runner.starts == starts + 1


def test_flooded_output_is_capped_and_a_long_result_cut(make_env) -> None:
    runner = make_env(TOOLS, max_chars=100)
    value, error = call(runner, "flood")
    assert error is None and isinstance(value, str)
    assert value == "z" * 100 + "... [999900 more characters cut]"
    still_works(runner)


@pytest.mark.parametrize(
    ("tool", "want"),
    [
        ("structured", ('{"answer": "391", "ok": true, "values": [1, 2.5, null]}', None)),
        ("an_object", (None, "the tool returned a value of type object, not a string or a JSON value")),
        ("not_finite", (None, "the tool returned a value of type float, not a string or a JSON value")),
        ("nested_bytes", (None, "the tool returned a value of type dict, not a string or a JSON value")),
    ],
)
def test_non_string_results(make_env, tool: str, want: tuple[object, str | None]) -> None:
    runner = make_env(TOOLS)
    assert call(runner, tool, item={"answer": "391"}) == want
    still_works(runner)


def test_errors_name_their_cause_and_the_sandbox_still_holds(make_env) -> None:
    runner = make_env(TOOLS)
    _, error = call(runner, "calculator", expression="1/0")
    assert error is not None and error.startswith("ZeroDivisionError: division by zero (at line 6 in calculator")
    _, error = call(runner, "deep")
    assert error is not None and error.startswith("RecursionError")
    _, error = call(runner, "exfiltrate")
    assert error is not None and "FileNotFoundError" in error and "/etc/passwd" in error
    assert os.path.exists("/etc/passwd")  # it is there: the sandbox hides it
    _, error = call(runner, "network")
    assert error is not None and "refused by the sandbox" in error
    _, error = call(runner, "calculator", wrong="x")
    assert error is not None and "TypeError" in error and "unexpected keyword argument 'wrong'" in error
    _, error = call(runner, "no_such_tool")
    assert error == "unknown tool 'no_such_tool'"
    still_works(runner)


RESPOND = """
def respond(messages, item):
    last = messages[-1]["content"]
    if item.get("mode") == "bad":
        return ["not", "a", "message"]
    if item.get("mode") == "slow":
        import time
        time.sleep(30)
    if item["answer"] in last:
        return None
    return {"role": "user", "content": f"No, try again (turn {len(messages)})."}
"""


def test_respond_is_called_with_the_conversation(make_env) -> None:
    runner = make_env(RESPOND, call_timeout=0.5)
    assert runner.load() == ("respond", [])
    conv = [{"role": "user", "content": "17*23?"}, {"role": "assistant", "content": "I think 400"}]
    out = runner.call(
        [
            {"respond": conv, "item": {"answer": "391"}},
            {"respond": [*conv[:1], {"role": "assistant", "content": "391"}], "item": {"answer": "391"}},
            {"respond": conv, "item": {"answer": "391", "mode": "slow"}},
            {"respond": conv, "item": {"answer": "391", "mode": "bad"}},
        ]
    )
    assert (out[0].value, out[0].error) == ({"role": "user", "content": "No, try again (turn 2)."}, None)
    assert (out[1].value, out[1].error) == (None, None)
    assert out[2].error == "timed out after 0.5 s"
    assert out[3].value == ["not", "a", "message"]  # JSON: the episode loop refuses it as a message


@pytest.mark.parametrize(
    ("source", "error"),
    [
        ("def f(:\n    pass\n", "environment source failed to load: SyntaxError"),
        ("import no_such_module\ndef tool(): return 1\n", "ModuleNotFoundError: No module named 'no_such_module'"),
        ("X = 1\n", "defines neither respond(messages, item) nor any tool function"),
        ("import os\nos._exit(0)\n", "environment source failed to load: the sandbox exited with code 0"),
    ],
)
def test_sources_that_do_not_load_are_the_users_error(make_env, source: str, error: str) -> None:
    runner = make_env(source)
    with pytest.raises(UserError) as info:
        runner.load()
    assert error in str(info.value)
    with pytest.raises(UserError):  # a call says the same, it never runs anything unsandboxed
        runner.call([{"tool": "tool", "arguments": {}, "item": {}}])

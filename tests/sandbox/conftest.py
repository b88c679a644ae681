"""Fixtures for the sandbox battery: real sandboxes (no mocks), small deadlines, and local victims to attack.

If the sandbox cannot run here the tests fail with the reason rather than skip: a silently skipped battery
would hide exactly the regression it exists for (`make test` installs bubblewrap and the sandbox env first).
"""

from __future__ import annotations

import os
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace

import pytest

from grpo_core.rewards.python_runner import PythonRunner, SandboxLimits, sandbox_status

# 2 s per batch whatever its size, so timeouts in the battery cost 2 s each.
FAST = SandboxLimits(batch_timeout_seconds=2.0, per_item_timeout_seconds=0.0, load_timeout_seconds=10.0)
NORMAL_GRADE = """

def grade(sample, item):
    if item.get("attack"):
        return attack(sample, item)
    return float(len(sample["output_text"])) + item.get("bonus", 0)
"""


def attack_source(body: str) -> str:
    """A grader that runs ``attack(sample, item)`` for items marked attack=True and scores normally otherwise."""
    return body.strip() + "\n" + NORMAL_GRADE


def attack_once(runner: PythonRunner, **item: object) -> dict:
    return runner.score([{"output_text": "x"}], [{"attack": True, **item}])[0]


def assert_still_scores(runner: PythonRunner) -> None:
    """The same runner (its process, or the one it respawned) keeps scoring a normal grader correctly."""
    out = runner.score([{"output_text": "abcd"}, {"output_text": ""}, {"output_text": "ab"}], [{}, {}, {"bonus": 1}])
    assert out == [{"score": 4.0, "error": None}, {"score": 0.0, "error": None}, {"score": 3.0, "error": None}]


@pytest.fixture(scope="session")
def bwrap_ready() -> None:
    status = sandbox_status("bwrap")
    assert status["ok"] and status["tier"] == "bwrap", status["reason"]


@pytest.fixture
def make_runner(bwrap_ready: None) -> Iterator[Callable[..., PythonRunner]]:
    """make_runner(source, tier="bwrap", **limit_overrides) -> a runner closed after the test."""
    runners: list[PythonRunner] = []

    def make(source: str, tier: str = "bwrap", **overrides: float) -> PythonRunner:
        runner = PythonRunner(source, tier=tier, limits=replace(FAST, **overrides))  # type: ignore[arg-type]
        runners.append(runner)
        return runner

    yield make
    for r in runners:
        r.close()


@pytest.fixture
def tcp_victim() -> Iterator[int]:
    """A listening TCP port on 127.0.0.1 that the test process itself can reach."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        port = srv.getsockname()[1]
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        yield port


@pytest.fixture
def unix_victim() -> Iterator[str]:
    """A listening UNIX socket in a folder any uid may enter, like /var/run/postgresql."""
    folder = tempfile.mkdtemp(prefix="rft-victim-")
    os.chmod(folder, 0o777)
    path = os.path.join(folder, "victim.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as srv:
        srv.bind(path)
        os.chmod(path, 0o777)
        srv.listen(8)
        yield path
    os.unlink(path)
    os.rmdir(folder)

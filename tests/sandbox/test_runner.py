"""PythonRunner behaviour through the real sandbox: grader shapes, packages, loading, recycling, tiers, clean-up."""

from __future__ import annotations

import os
import select
import signal
import threading
import time

import pytest

from grpo_core.rewards.python_runner import PythonRunner, SandboxUnavailable, sandbox_status, self_test
from grpo_core.sandbox import canaries
from tests.sandbox.conftest import assert_still_scores, attack_once, attack_source


def test_trl_reward_form(make_runner) -> None:
    runner = make_runner(
        "def reward(prompt, completion, **row):\n"
        "    assert 'prompt' not in row and 'completion' not in row, row\n"
        "    return float(completion.strip() == row['answer']) + (0.5 if isinstance(prompt, list) else 0.0)\n"
    )
    items = [
        {"prompt": "2+2?", "answer": "4"},
        {"prompt": "2+3?", "answer": "5"},
        {"messages": [{"role": "user", "content": "1+1?"}], "answer": "2"},
        {"prompt": "x", "answer": "y", "completion": "a dataset column that must not clash"},
    ]
    out = runner.score([{"output_text": t} for t in (" 4", "6", "2", "y")], items)
    assert [r["score"] for r in out] == [1.0, 0.0, 1.5, 1.0]
    assert runner.form == "reward"


def test_grade_gets_openai_sample_shape_and_wins_over_reward(make_runner) -> None:
    runner = make_runner(
        "def reward(prompt, completion, **row):\n    return -1.0\n"
        "def grade(sample, item):\n"
        "    assert sample['output_json'] is None\n"
        "    return float(sample['output_text'] == item['reference_answer'])\n"
    )
    out = runner.score([{"output_text": "42"}, {"output_text": "41"}], [{"reference_answer": "42"}] * 2)
    assert [r["score"] for r in out] == [1.0, 0.0] and runner.form == "grade"


def test_numpy_sympy_and_rapidfuzz_are_importable(make_runner) -> None:
    runner = make_runner(
        "import numpy as np, sympy\nfrom rapidfuzz import fuzz\n"
        "def grade(sample, item):\n"
        "    x = sympy.Symbol('x')\n"
        "    same = sympy.simplify(sympy.sympify(sample['output_text']) - (x + 1) ** 2) == 0\n"
        "    return np.float64(np.mean([float(same), fuzz.ratio('abc', 'abc') / 100]))\n"
    )
    out = runner.score([{"output_text": "x**2 + 2*x + 1"}, {"output_text": "x**2"}], [{}, {}])
    assert [r["score"] for r in out] == [1.0, 0.5]


@pytest.mark.parametrize(
    ("source", "expect"),
    [
        ("def grade(:\n", "grader source failed to load: SyntaxError"),
        ("raise RuntimeError('boom at import')\n", "grader source failed to load: RuntimeError: boom at import"),
        ("def score(sample, item):\n    return 1\n", "defines neither grade(sample, item) nor reward("),
        ("import os\nos._exit(0)\n", "grader source failed to load: the sandbox exited with code 0"),
        ("while True:\n    pass\n", "grader source failed to load: timed out after 2 s: the sandbox was killed"),
    ],
    ids=["syntax", "raises", "no_function", "exits", "hangs"],
)
def test_sources_that_do_not_load(make_runner, source: str, expect: str) -> None:
    runner = make_runner(source, load_timeout_seconds=2.0)
    out = runner.score([{"output_text": "a"}] * 3, [{}] * 3)
    assert all(r["score"] is None and expect in r["error"] for r in out), out
    assert runner.score([{"output_text": "a"}], [{}]) == out[:1]  # sticky: no second attempt per batch
    assert runner.starts == 1


def test_threads_work_under_the_filter(make_runner) -> None:
    """clone3 answers ENOSYS so glibc falls back to clone(CLONE_THREAD), which the filter allows."""
    runner = make_runner(
        "import ctypes, errno\nfrom concurrent.futures import ThreadPoolExecutor\n"
        "def grade(sample, item):\n"
        "    libc = ctypes.CDLL(None, use_errno=True)\n"
        "    assert libc.syscall(435, 0, 0) == -1 and ctypes.get_errno() == errno.ENOSYS\n"
        "    with ThreadPoolExecutor(4) as pool:\n"
        "        return float(sum(pool.map(len, [sample['output_text']] * 8)))\n"
    )
    assert runner.score([{"output_text": "abc"}], [{}]) == [{"score": 24.0, "error": None}]


def test_recycled_after_n_batches_with_fresh_state(make_runner) -> None:
    runner = make_runner(
        "calls = []\ndef grade(sample, item):\n    calls.append(1)\n    return float(len(calls))\n",
        recycle_after_batches=2,
    )
    scores = [runner.score([{"output_text": ""}] * 2, [{}, {}]) for _ in range(3)]
    assert [[r["score"] for r in batch] for batch in scores] == [[1.0, 2.0], [3.0, 4.0], [1.0, 2.0]]
    assert runner.starts == 2


def test_large_batch(make_runner) -> None:
    runner = make_runner("def grade(sample, item):\n    return len(sample['output_text']) / item['n']\n")
    texts = ["é" * 4000 + str(i) for i in range(256)]
    out = runner.score([{"output_text": t} for t in texts], [{"n": 2} for _ in texts])
    assert [r["score"] for r in out] == [len(t) / 2 for t in texts]


def test_runs_unprivileged_under_seccomp_without_capabilities(make_runner) -> None:
    runner = make_runner(
        "import os\ndef grade(sample, item):\n"
        "    status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines() if ':' in l)\n"
        "    caps = int(status['CapEff'].strip(), 16) | int(status['CapPrm'].strip(), 16)\n"
        "    assert status['Seccomp'].strip() == '2' and status['NoNewPrivs'].strip() == '1' and caps == 0, status\n"
        "    assert set(os.listdir('/')) <= set(item['allowed']), os.listdir('/')\n"
        "    assert sorted(p for p in os.listdir('/proc') if p.isdigit()) == ['1', '2']\n"
        "    return float(os.getuid())\n"
    )
    expected = 65534.0 if os.geteuid() == 0 else float(os.geteuid())
    tops = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "code", "tmp", "proc", "dev"}
    tops |= {b.split("/")[1] for b in runner.plan.ro_binds}  # the sandbox env, e.g. /opt; never etc/home/var/run
    assert not tops & {"etc", "home", "root", "var", "run"}
    assert runner.score([{"output_text": ""}], [{"allowed": sorted(tops)}]) == [{"score": expected, "error": None}]
    assert runner._proc.host_uid() == int(expected)  # type: ignore[union-attr]  # bwrap itself, on the host


def test_close_kills_the_sandbox_and_removes_its_folder(make_runner) -> None:
    runner = make_runner("def grade(sample, item):\n    return 1.0\n")
    runner.start()
    pid, folder = runner._proc.pid, os.path.dirname(runner.code_dir)  # type: ignore[union-attr]
    assert os.path.exists(f"/proc/{pid}") and os.path.isdir(folder)
    runner.close()
    runner.close()
    assert not os.path.exists(f"/proc/{pid}") and not os.path.exists(folder)
    with pytest.raises(RuntimeError, match="closed"):
        runner.score([{"output_text": ""}], [{}])


def test_survives_the_starting_thread_and_an_idle_death(make_runner) -> None:
    """bwrap --die-with-parent follows the forking *thread*; a web server's pool threads come and go."""
    runner = make_runner("def grade(sample, item):\n    return 1.0\n")
    starter = threading.Thread(target=runner.start)
    starter.start()
    starter.join()
    time.sleep(0.2)
    assert runner.score([{"output_text": ""}], [{}]) == [{"score": 1.0, "error": None}] and runner.starts == 1
    os.killpg(runner._proc.pid, signal.SIGKILL)  # type: ignore[union-attr]  # dies between batches
    time.sleep(0.2)
    assert runner.score([{"output_text": ""}], [{}]) == [{"score": 1.0, "error": None}] and runner.starts == 2


def test_works_in_a_forked_child_after_use_in_the_parent(make_runner) -> None:
    """A prefork worker pool forks after the parent may have started sandboxes: the child must still launch."""
    make_runner("def grade(sample, item):\n    return 1.0\n").start()  # the parent's launcher thread exists
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        code = 1
        try:
            with PythonRunner("def grade(sample, item):\n    return 2.0\n", tier="bwrap") as runner:
                os.write(write_end, repr(runner.score([{"output_text": ""}], [{}])).encode())
                code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)
        assert ready, "the forked child could not start a sandbox"
        assert os.read(read_end, 4096) == b"[{'score': 2.0, 'error': None}]"
    finally:
        os.close(read_end)
        for _ in range(100):  # let it close its runner (kill the sandbox, delete the folder) and exit
            if os.waitpid(pid, os.WNOHANG)[0]:
                break
            time.sleep(0.1)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


def test_self_test_contains_every_canary_under_bwrap(bwrap_ready: None) -> None:
    result = self_test("auto")
    assert result["ok"] and result["escaped"] == [] and result["tier"] == "bwrap", result


def test_canaries_do_detect_escapes_when_unsandboxed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canaries are not vacuous: run in this (unsandboxed) process, they report escapes."""
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "canary")
    namespace: dict = {}
    exec(canaries.CANARY_SOURCE, namespace)
    escapes = ["environment", "fork", "subprocess", "execve", "no_seccomp"]
    if os.geteuid() == 0:
        escapes += ["etc_shadow", "root_uid"]
    for name in escapes:
        assert namespace["grade"]({}, {"canary": name}) == 1.0, name


@pytest.mark.parametrize("tier", ["off", "OFF", "none", "", "nonsense"])
def test_off_and_unknown_tiers_fail_closed(tier: str) -> None:
    with pytest.raises(SandboxUnavailable):
        PythonRunner("def grade(sample, item):\n    return 1.0\n", tier=tier)
    status = sandbox_status(tier)
    assert status["ok"] is False and status["tier"] is None and status["reason"]
    assert self_test(tier)["ok"] is False


def test_missing_sandbox_environment_fails_closed(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("REWARD_SANDBOX_ENV", str(tmp_path / "absent"))
    with pytest.raises(SandboxUnavailable, match="no sandbox Python environment"):
        PythonRunner("def grade(sample, item):\n    return 1.0\n")


def test_weak_tier_contains_the_main_attacks(
    make_runner, tcp_victim: int, unix_victim: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Explicit opt-in fallback (no namespaces): no sockets at all, no processes, no secrets, kill on timeout."""
    runner = make_runner(
        attack_source("""
import os, socket, time
def attack(sample, item):
    kind = item["kind"]
    if kind == "tcp":
        socket.create_connection(("127.0.0.1", item["port"]), timeout=2)
    elif kind == "unix":
        socket.socket(socket.AF_UNIX).connect(item["path"])
    elif kind == "env":
        return float(any("canary" in v for v in os.environ.values()))
    elif kind == "fork":
        os.fork()
    elif kind == "shadow":
        open("/etc/shadow").read()
    elif kind == "code":
        open(item["path"], "a").write("pwned")
    elif kind == "sleep":
        time.sleep(3600)
    return 1.0
"""),
        tier="weak",
    )
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "canary")
    items = [
        {"kind": "tcp", "port": tcp_victim},
        {"kind": "unix", "path": unix_victim},
        {"kind": "env"},
        {"kind": "fork"},
        {"kind": "shadow"},
    ]
    if os.geteuid() == 0:  # as root the code folder is root's; a non-root service shares its uid with weak
        items.append({"kind": "code", "path": os.path.join(runner.code_dir, "worker.py")})
    out = runner.score([{"output_text": ""}] * len(items), [{"attack": True, **it} for it in items])
    assert [r["error"].split(":")[0] if r["error"] else r["score"] for r in out] == [
        "PermissionError",  # socket(AF_INET) refused
        "PermissionError",  # socket(AF_UNIX) refused too: host socket paths are visible in this tier
        0.0,
        "PermissionError",
        "PermissionError",
    ] + ["PermissionError"] * (len(items) - 5), out  # the code folder is root's, read-only to the sandbox uid
    assert "timed out after 2 s" in attack_once(runner, kind="sleep")["error"]
    assert_still_scores(runner)
    assert sandbox_status("weak")["ok"] and self_test("weak")["ok"]

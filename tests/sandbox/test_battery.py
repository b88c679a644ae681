"""Hostile graders through the real bubblewrap sandbox (issue 4, item 2's acceptance battery).

Every attack must be contained, the result must name the cause, and the same runner must keep scoring a
normal grader afterwards (its process, or the one respawned after a kill). Each victim the attacks aim at is
first shown to be reachable from the test process itself, so a pass means "blocked", not "nothing there".
"""

from __future__ import annotations

import os
import socket
import time

import pytest

from tests.sandbox.conftest import assert_still_scores, attack_once, attack_source


def _reachable_tcp(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


TCP_ATTACK = attack_source("""
import socket
def attack(sample, item):
    socket.create_connection(("127.0.0.1", item["port"]), timeout=2).close()
    return 1.0
""")


def test_tcp_to_postgres_redis_and_a_local_listener_is_refused(make_runner, tcp_victim: int) -> None:
    runner = make_runner(TCP_ATTACK)
    ports = [tcp_victim] + [p for p in (5432, 6379) if _reachable_tcp(p)]
    assert len(ports) == 3 or not os.environ.get("CI"), "make test starts Postgres and Redis"
    out = runner.score([{"output_text": "x"}] * len(ports), [{"attack": True, "port": p} for p in ports])
    for res in out:
        assert res["score"] is None and "PermissionError" in res["error"] and "refused by the sandbox" in res["error"]
    assert_still_scores(runner)


def test_unix_socket_of_postgres_and_a_local_one_are_invisible(make_runner, unix_victim: str) -> None:
    runner = make_runner(
        attack_source("""
import socket
def attack(sample, item):
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(item["path"])
    return 1.0
""")
    )
    paths = [unix_victim, "/var/run/postgresql/.s.PGSQL.5432"]
    out = runner.score([{"output_text": "x"}] * 2, [{"attack": True, "path": p} for p in paths])
    for res in out:
        assert res["score"] is None and "FileNotFoundError" in res["error"]
    assert_still_scores(runner)


def test_environment_secrets_are_not_visible(make_runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret-aws-canary")
    monkeypatch.setenv("DATABASE_URL", "postgresql://u:pw-canary@db/x")
    runner = make_runner(
        attack_source("""
import os
def attack(sample, item):
    seen = " ".join(f"{k}={v}" for k, v in os.environ.items())
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                seen += open(f"/proc/{pid}/environ").read()
            except OSError:
                pass
    if "canary" in seen or "AWS_SECRET" in seen or "DATABASE_URL" in seen:
        raise AssertionError("LEAK " + seen)
    return float(len(os.environ))
""")
    )
    res = attack_once(runner)
    assert res["error"] is None and 0 < res["score"] <= 10, res  # only PATH, HOME, TMPDIR, LANG... are set
    assert_still_scores(runner)


def test_proc_1_environ_and_etc_shadow(make_runner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s3cret-aws-canary")
    runner = make_runner(
        attack_source("""
def attack(sample, item):
    return float("canary" in open(item["path"]).read())
""")
    )
    proc1, shadow = runner.score(
        [{"output_text": "x"}] * 2, [{"attack": True, "path": p} for p in ("/proc/1/environ", "/etc/shadow")]
    )
    assert proc1 == {"score": 0.0, "error": None}  # pid 1 is the sandbox's own bwrap, started with a clean env
    assert shadow["score"] is None and "FileNotFoundError" in shadow["error"] and "/etc/shadow" in shadow["error"]
    assert_still_scores(runner)


def test_writes_outside_tmp_fail_and_tmp_is_private(make_runner) -> None:
    source = attack_source("""
import os
def attack(sample, item):
    with open("/tmp/ok", "w") as fh:
        fh.write("tmp is writable")
    wrote = []
    for path in item["paths"]:
        try:
            with open(path, "w") as fh:
                fh.write("pwned")
            wrote.append(path)
        except OSError:
            pass
    return float(len(wrote))
""")
    runner = make_runner(source)
    env = runner.plan.ro_binds[0]
    paths = ["/pwned", "/code/grader.py", "/code/worker.py", "/usr/pwned", f"{env}/pwned", "/etc/pwned", "/dev/pwned"]
    assert attack_once(runner, paths=paths) == {"score": 0.0, "error": None}
    assert not os.path.exists(f"{env}/pwned") and not os.path.exists("/tmp/ok")
    with open(os.path.join(runner.code_dir, "grader.py")) as fh:
        assert fh.read() == source
    assert_still_scores(runner)


@pytest.mark.parametrize(
    ("call", "expect"),
    [
        ("subprocess.run(['/usr/bin/touch', '/tmp/x'], check=True)", "PermissionError"),
        ("os.execv('/usr/bin/true', ['true'])", "PermissionError"),
        ("os.posix_spawn('/usr/bin/true', ['true'], {})", "PermissionError"),
        ("float(os.system('exit 0')) or 1 / 0", "returned 32512.0"),  # glibc's status 127: no shell ever ran
    ],
)
def test_subprocess_exec_and_system_are_refused(make_runner, call: str, expect: str) -> None:
    runner = make_runner(attack_source(f"import os, subprocess\ndef attack(sample, item):\n    return {call}\n"))
    res = attack_once(runner)
    assert expect in str(res["error"]) or (expect.startswith("returned") and res["score"] == 32512.0), res
    assert_still_scores(runner)


def test_fork_bomb_stops_at_the_first_fork(make_runner) -> None:
    runner = make_runner(attack_source("import os\ndef attack(sample, item):\n    while True:\n        os.fork()\n"))
    res = attack_once(runner)
    assert res["score"] is None and res["error"].startswith("PermissionError: [Errno 1]"), res
    assert "line 4 in attack: os.fork()" in res["error"]
    assert_still_scores(runner)
    assert runner.starts == 1  # nothing to clean up: the process was never replaced


def test_thread_bomb_hits_the_process_limit(make_runner) -> None:
    runner = make_runner(
        attack_source("""
import threading, time
def attack(sample, item):
    for _ in range(100000):
        threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()
""")
    )
    res = attack_once(runner)
    assert res["score"] is None and "can't start new thread" in res["error"], res
    assert_still_scores(runner)


def test_memory_bomb_is_a_memory_error_and_the_process_is_replaced(make_runner) -> None:
    runner = make_runner(
        attack_source("""
def attack(sample, item):
    hoard = []
    while True:
        hoard.append(bytes(100 * 1024 * 1024))
""")
    )
    res = attack_once(runner)
    assert res["score"] is None and res["error"].startswith("MemoryError"), res
    assert_still_scores(runner)
    assert runner.starts == 2


@pytest.mark.parametrize("body", ["while True:\n        pass", "time.sleep(3600)"], ids=["infinite_loop", "sleep"])
def test_timeouts_kill_the_sandbox_and_it_respawns(make_runner, body: str) -> None:
    runner = make_runner(attack_source(f"import time\ndef attack(sample, item):\n    {body}\n"))
    runner.start()
    old_pid = runner._proc.pid  # type: ignore[union-attr]
    t0 = time.monotonic()
    out = runner.score([{"output_text": "x"}] * 2, [{}, {"attack": True}])
    assert 2.0 <= time.monotonic() - t0 < 4.0
    assert out == [{"score": None, "error": "timed out after 2 s: the sandbox was killed"}] * 2
    assert not os.path.exists(f"/proc/{old_pid}")  # bwrap and everything in its PID namespace are gone
    assert_still_scores(runner)
    assert runner.starts == 2


def test_100mb_to_stdout_and_stderr_neither_hangs_nor_corrupts(make_runner) -> None:
    runner = make_runner(
        attack_source("""
import os, sys
def attack(sample, item):
    big = "x" * 100_000_000
    print(big)
    sys.stdout.write(big)
    sys.__stdout__.write(big)
    sys.__stdout__.flush()
    os.write(1, big.encode())
    print(big, file=sys.stderr)
    os.write(2, big.encode())
    return 7.0
"""),
        batch_timeout_seconds=10.0,
    )
    t0 = time.monotonic()
    assert attack_once(runner) == {"score": 7.0, "error": None}
    assert time.monotonic() - t0 < 5.0  # ~0.7 s here: user prints are capped inside, fd writes drained outside
    assert len(runner._proc.stderr_tail()) <= 600  # type: ignore[union-attr]  # the parent keeps a 4 kB tail
    assert_still_scores(runner)


def test_bad_return_values_are_named_and_other_items_still_score(make_runner) -> None:
    runner = make_runner(
        attack_source("""
import numpy as np
def attack(sample, item):
    return eval(item["value"])
""")
    )
    values = ["float('nan')", "float('inf')", "-float('inf')", "'1.0'", "[1, 2]", "None", "True", "np.float64('nan')"]
    out = runner.score(
        [{"output_text": "ab"}] * (len(values) + 1), [{"attack": True, "value": v} for v in values] + [{}]
    )
    errors = [r["error"] for r in out[:-1]]
    assert errors[0] == "grade() returned nan, not a finite number"
    assert errors[1] == "grade() returned inf, not a finite number"
    assert errors[2] == "grade() returned -inf, not a finite number"
    assert errors[3] == "grade() returned '1.0' (str), not a finite number"
    assert errors[4] == "grade() returned [1, 2] (list), not a finite number"
    assert "None (NoneType)" in errors[5] and "True (bool)" in errors[6] and "returned nan" in errors[7]
    assert all(r["score"] is None for r in out[:-1]) and out[-1] == {"score": 2.0, "error": None}
    assert_still_scores(runner)


def test_exceptions_name_the_cause_with_the_users_line(make_runner) -> None:
    runner = make_runner(attack_source("def attack(sample, item):\n    d = 0\n    return 1 / d\n"))
    err = attack_once(runner)["error"]
    assert err.startswith("ZeroDivisionError: division by zero") and "line 3 in attack: return 1 / d" in err
    assert "line 8 in grade: return attack(sample, item)" in err
    assert_still_scores(runner)
    assert runner.starts == 1


@pytest.mark.parametrize(
    ("body", "expect"),
    [
        ("os._exit(3)", "the sandbox exited with code 3 while scoring this batch"),
        ("ctypes.string_at(0)", "the sandbox was killed by SIGSEGV (it crashed) while scoring this batch"),
        ("os.kill(os.getpid(), signal.SIGKILL)", "killed by SIGKILL"),
        ("os.write(4, b'\\xff\\xff\\xff\\xffgarbage') or time.sleep(5)", "invalid reply"),  # forged protocol
        ("ctypes.CDLL(None).syscall(0x40000000 + 39)", "was killed by SIGSYS (a forbidden system call)"),  # x32 ABI
    ],
    ids=["exit", "segfault", "self_kill", "forged_reply", "x32_syscall"],
)
def test_crashes_and_forged_replies_are_contained(make_runner, body: str, expect: str) -> None:
    runner = make_runner(attack_source(f"import ctypes, os, signal, time\ndef attack(sample, item):\n    {body}\n"))
    out = runner.score([{"output_text": "x"}] * 2, [{}, {"attack": True}])
    assert all(r["score"] is None and expect in r["error"] for r in out), out
    assert_still_scores(runner)
    assert runner.starts == 2


def test_signals_cannot_reach_other_processes(make_runner) -> None:
    runner = make_runner(
        attack_source("""
import os, signal
def attack(sample, item):
    for pid in (1, os.getppid(), -1):
        try:
            os.kill(pid, signal.SIGKILL)
        except PermissionError:
            continue
        return 1.0
    return 0.0
""")
    )
    assert attack_once(runner) == {"score": 0.0, "error": None}
    assert_still_scores(runner)

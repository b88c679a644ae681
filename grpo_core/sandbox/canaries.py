"""Canary graders for ``self_test()``: each returns 1.0 only if its attack got through the sandbox.

Run at boot and in CI (the research note's "Self-test", as edX codejail's tests do): if any canary escapes, the
service must refuse python graders. A canary that raises or times out counts as contained. Network canaries
target 127.0.0.1 and local UNIX sockets only; no packet is ever aimed at another address (no 169.254.169.254).
"""

from __future__ import annotations

from typing import Any

from grpo_core.sandbox.limits import SandboxLimits, SandboxUnavailable

ALLOWED_ENV = {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "PWD", "OPENBLAS_NUM_THREADS"}
ALLOWED_ENV |= {"OMP_NUM_THREADS", "MKL_NUM_THREADS"}

CANARY_SOURCE = r'''
import ctypes, errno, os, socket, subprocess

ALLOWED = set(ALLOWED_NAMES)
libc = ctypes.CDLL(None, use_errno=True)


def _env_leak(text):
    names = {kv.split("=", 1)[0] for kv in text.split("\0") if kv}
    return bool(names - ALLOWED)


def _connects(family, address):
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(1)
        s.connect(address)
    return True


def _raw_allowed(nr, *args):
    """True unless the syscall answers EPERM (our filter's answer); probes use arguments that fail harmlessly."""
    res = libc.syscall(nr, *args)
    return res >= 0 or ctypes.get_errno() != errno.EPERM


def _writable(paths):
    hits = []
    for d in paths:
        target = os.path.join(d, ".rft-canary")
        try:
            with open(target, "w") as fh:
                fh.write("x")
        except OSError:
            continue
        hits.append(d)
        try:
            os.remove(target)
        except OSError:
            pass
    if hits:
        raise AssertionError(f"wrote into {hits}") from None
    return False


def _fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return True


def _capabilities():
    with open("/proc/self/status") as fh:
        return any(line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16) for line in fh)


def _seccomp_off():
    with open("/proc/self/status") as fh:
        return any(line.startswith("Seccomp:") and line.split()[1] != "2" for line in fh)


CHECKS = {
    "tcp_postgres": lambda it: _connects(socket.AF_INET, ("127.0.0.1", 5432)),
    "tcp_redis": lambda it: _connects(socket.AF_INET, ("127.0.0.1", 6379)),
    "unix_postgres": lambda it: _connects(socket.AF_UNIX, "/var/run/postgresql/.s.PGSQL.5432"),
    "unix_docker": lambda it: _connects(socket.AF_UNIX, "/var/run/docker.sock"),
    "environment": lambda it: bool(set(os.environ) - ALLOWED),
    "proc_1_environ": lambda it: _env_leak(open("/proc/1/environ").read()),
    "etc_shadow": lambda it: bool(open("/etc/shadow").read()),
    "write_outside_tmp": lambda it: _writable(it["paths"]),
    "fork": lambda it: _fork(),
    "subprocess": lambda it: subprocess.run(["/usr/bin/true"], check=True) is not None,
    "execve": lambda it: os.execv("/nonexistent-rft-canary", ["x"]),
    "ptrace": lambda it: _raw_allowed(101, 0, 0, 0, 0),  # PTRACE_TRACEME
    "unshare": lambda it: _raw_allowed(272, 0x1),  # an invalid flag: EINVAL unless filtered
    "io_uring": lambda it: _raw_allowed(425, 1, 0),
    "signal_other_process": lambda it: os.kill(1, 0) is None,
    "root_uid": lambda it: os.getuid() == 0 or os.geteuid() == 0 or _capabilities(),
    "no_seccomp": lambda it: _seccomp_off(),
    "memory_bomb": lambda it: len(bytearray(it["bytes"])) > 0,
    "wall_clock": lambda it: __import__("time").sleep(3600),
}


def grade(sample, item):
    try:
        escaped = CHECKS[item["canary"]](item)
    except OSError as exc:
        if item["canary"] == "execve" and exc.errno == errno.ENOENT:
            return 1.0  # execve itself ran (and only failed to find the file)
        raise
    return 1.0 if escaped else 0.0
'''.replace("ALLOWED_NAMES", repr(sorted(ALLOWED_ENV)))

FAST_CANARIES = (
    "tcp_postgres",
    "tcp_redis",
    "unix_postgres",
    "unix_docker",
    "environment",
    "proc_1_environ",
    "etc_shadow",
    "write_outside_tmp",
    "fork",
    "subprocess",
    "execve",
    "ptrace",
    "unshare",
    "io_uring",
    "signal_other_process",
    "root_uid",
    "no_seccomp",
    "memory_bomb",
)
# Errors that mean "refused"; anything else from a canary is a broken probe, not a contained attack.
REFUSALS = ("PermissionError", "FileNotFoundError", "MemoryError", "ConnectionRefusedError", "timed out after")
BWRAP_WRITE_PATHS = ["/", "/code", "/usr", "/etc", "/opt", "/var/tmp", "/dev", "/dev/shm", "/home", "/root"]


def run(runner_cls: Any, tier: str) -> dict[str, Any]:
    """Score every canary with ``runner_cls`` (PythonRunner, passed in to avoid an import cycle).

    The fast canaries share one batch; the wall-clock one runs alone with a 1 s deadline. A canary that fails
    for a reason that is not a refusal (say, a NameError) proves nothing, so it makes the self-test fail too.
    """
    limits = SandboxLimits(batch_timeout_seconds=5.0, load_timeout_seconds=10.0)
    try:
        runner = runner_cls(CANARY_SOURCE, tier=tier, limits=limits)
    except SandboxUnavailable as exc:
        return {"ok": False, "escaped": [], "tier": None, "reason": str(exc), "details": {}}
    details: dict[str, str] = {}
    try:
        paths = BWRAP_WRITE_PATHS if runner.tier == "bwrap" else [runner.code_dir, "/usr", "/etc", "/opt", "/root"]
        items = [{"canary": n, "paths": paths, "bytes": 2 * limits.memory_mb * 1024 * 1024} for n in FAST_CANARIES]
        results = runner.score([{"output_text": ""}] * len(items), items)
        wall_limits = SandboxLimits(batch_timeout_seconds=1.0, per_item_timeout_seconds=0.0)
        wall = runner_cls(CANARY_SOURCE, tier=tier, limits=wall_limits)
        try:
            results += wall.score([{"output_text": ""}], [{"canary": "wall_clock"}])
        finally:
            wall.close()
    except SandboxUnavailable as exc:
        return {"ok": False, "escaped": [], "tier": None, "reason": str(exc), "details": {}}
    finally:
        runner.close()
    escaped: list[str] = []
    broken: list[str] = []
    for name, res in zip((*FAST_CANARIES, "wall_clock"), results, strict=True):
        if res["error"] is not None and res["error"].startswith(REFUSALS):
            details[name] = f"contained: {res['error'][:160]}"
        elif res["error"] is not None:
            broken.append(name)
            details[name] = f"INCONCLUSIVE: {res['error'][:160]}"
        elif res["score"] == 0.0:
            details[name] = "contained"
        else:
            escaped.append(name)
            details[name] = "ESCAPED"
    ok = not escaped and not broken
    reason = f"all {len(details)} canaries contained" if ok else f"escaped: {escaped}, inconclusive: {broken}"
    return {"ok": ok, "escaped": escaped, "tier": runner.tier, "reason": reason, "details": details}

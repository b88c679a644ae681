"""Which sandbox to start and how: tier policy, the sandbox interpreter, the bwrap command line, the code folder.

Tier 1 (``auto``/``bwrap``): bubblewrap with every namespace unshared, a read-only view of /usr, the sandbox
interpreter environment and the grader folder only, a size-capped private /tmp, fresh /proc and /dev, no /etc,
/run, /home or /var, a cleared environment, launched by an unprivileged uid (never root: a root-launched bwrap
maps host root into the sandbox; research note, B2). Tier 3 (``weak``): the same worker as a plain subprocess
of the unprivileged uid in its own session, with rlimits and a seccomp filter that refuses every socket; it sees
the host filesystem as that uid does, so it is for single-tenant machines only and must be chosen explicitly.
Anything else fails closed with :class:`SandboxUnavailable`.

The interpreter is a dedicated environment (scripts/sandbox_setup.sh: a venv of Debian's /usr/bin/python3.11
with numpy, sympy, mpmath and rapidfuzz under /opt/rft-sandbox/py311), because the service's own Python may
live where the unprivileged uid cannot read it (/root/.pyenv, /root is mode 700).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grpo_core.sandbox.limits import SandboxLimits, SandboxUnavailable

NOBODY = 65534
DEFAULT_ENV_DIRS = ("/opt/rft-sandbox/py311", "~/.cache/rft-sandbox/py311")
SETUP_HINT = "run `make sandbox` (scripts/sandbox_setup.sh) as root"
_HERE = Path(__file__).resolve().parent
_OFF = {"off", "none", "disabled", "false", "0", ""}


@dataclass(frozen=True)
class LaunchPlan:
    """Everything needed to start one sandbox process of a tier (no per-grader state)."""

    tier: str  # "bwrap" | "weak"
    python: str  # the sandbox interpreter; the same path inside and outside the bwrap sandbox
    ro_binds: tuple[str, ...]  # host folders the interpreter needs, bound read-only at the same path
    bwrap: str | None
    uid: int | None  # set when the service runs as root: the uid the sandbox is launched as
    gid: int | None


def normalise_tier(tier: str) -> str:
    """'auto'/'bwrap' -> 'bwrap', 'weak' -> 'weak'; 'off' and unknown names raise (fail closed)."""
    name = (tier or "").strip().lower()
    if name in ("auto", "bwrap"):
        return "bwrap"
    if name == "weak":
        return "weak"
    if name in _OFF:
        raise SandboxUnavailable(
            f"REWARD_SANDBOX={tier!r}: the sandbox is switched off, so python graders cannot run "
            "(user code never runs unsandboxed; use auto/bwrap, or weak on a single-tenant machine)"
        )
    raise SandboxUnavailable(f"unknown sandbox tier {tier!r}: use auto, bwrap or weak")


def find_environment() -> Path:
    """The sandbox interpreter environment: $REWARD_SANDBOX_ENV or the first of DEFAULT_ENV_DIRS that exists."""
    configured = os.environ.get("REWARD_SANDBOX_ENV")
    candidates = [configured] if configured else list(DEFAULT_ENV_DIRS)
    for cand in candidates:
        root = Path(cand).expanduser()
        if (root / "bin" / "python").exists():
            return root.resolve()
    raise SandboxUnavailable(f"no sandbox Python environment at {' or '.join(candidates)}: {SETUP_HINT}")


def _interpreter_binds(env: Path) -> tuple[str, ...]:
    """The env plus its base installation when that is outside /usr (pyvenv.cfg ``home``)."""
    binds = [str(env)]
    cfg = env / "pyvenv.cfg"
    if cfg.exists():
        for line in cfg.read_text().splitlines():
            key, _, value = line.partition("=")
            if key.strip() == "home":
                base = Path(value.strip()).resolve().parent
                binds.append(str(base))
    real = Path(os.path.realpath(env / "bin" / "python"))
    binds.append(str(real.parent.parent))

    def under(path: str, top: str) -> bool:
        return path == top or path.startswith(top + "/")

    # /usr is bound whole, except /usr/local, which the sandbox gets empty.
    keep = [b for b in dict.fromkeys(binds) if not under(b, "/usr") or under(b, "/usr/local")]
    return tuple(keep)


def _unreadable_part(path: str, uid: int, gid: int) -> str | None:
    """The first folder of ``path`` that ``uid`` cannot traverse (as root, os.access would always say yes)."""
    cur = Path("/")
    for part in Path(path).parts[1:]:
        st = cur.stat()
        bits = stat.S_IXUSR if st.st_uid == uid else stat.S_IXGRP if st.st_gid == gid else stat.S_IXOTH
        if not st.st_mode & bits:
            return f"{cur} (mode {stat.filemode(st.st_mode)})"
        cur = cur / part
    return None


def resolve(tier: str) -> LaunchPlan:
    """Check the static preconditions of ``tier``; raise SandboxUnavailable naming what is missing."""
    name = normalise_tier(tier)
    if sys.platform != "linux" or platform.machine() != "x86_64":
        raise SandboxUnavailable(f"the grader sandbox needs Linux x86_64, not {sys.platform} {platform.machine()}")
    env = find_environment()
    uid = gid = None
    if os.geteuid() == 0:
        uid = int(os.environ.get("REWARD_SANDBOX_UID", NOBODY))
        gid = int(os.environ.get("REWARD_SANDBOX_GID", uid))
        if uid == 0 or gid == 0:
            raise SandboxUnavailable("REWARD_SANDBOX_UID/GID must not be 0: the sandbox never runs as root")
    binds = _interpreter_binds(env)
    python = str(env / "bin" / "python")
    if uid is not None and gid is not None:
        for path in (*binds, os.path.realpath(python)):
            blocked = _unreadable_part(path, uid, gid)
            if blocked:
                raise SandboxUnavailable(f"uid {uid} cannot reach the sandbox interpreter {path}: {blocked}")
    bwrap = None
    if name == "bwrap":
        bwrap = shutil.which("bwrap", path="/usr/bin:/bin:/usr/local/bin")
        if bwrap is None:
            raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {SETUP_HINT}")
        for knob in ("/proc/sys/kernel/unprivileged_userns_clone", "/proc/sys/user/max_user_namespaces"):
            if os.path.exists(knob) and Path(knob).read_text().strip() == "0":
                raise SandboxUnavailable(f"unprivileged user namespaces are disabled ({knob} = 0)")
    return LaunchPlan(name, python, binds, bwrap, uid, gid)


def sandbox_env(home: str) -> dict[str, str]:
    """The whole environment of the sandbox (and of bwrap itself, whose /proc/1/environ the sandbox can read)."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": home,
        "TMPDIR": home,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def bwrap_argv(plan: LaunchPlan, code_dir: str, limits: SandboxLimits) -> list[str]:
    """The bubblewrap command line; later mounts win, so /tmp comes before binds that may live under it."""
    assert plan.bwrap is not None
    argv = [plan.bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    argv += ["--new-session", "--cap-drop", "ALL", "--hostname", "sandbox", "--clearenv"]
    argv += ["--ro-bind", "/usr", "/usr"]
    if os.path.isdir("/usr/local"):  # site-local installs and tools are none of the grader's business
        argv += ["--size", "1048576", "--tmpfs", "/usr/local"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--size", str(limits.tmp_size_mb * 1024 * 1024), "--tmpfs", "/tmp"]
    for path in plan.ro_binds:
        argv += ["--ro-bind", path, path]
    argv += ["--ro-bind", code_dir, "/code", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--remount-ro", "/dev", "--remount-ro", "/"]
    if os.path.isdir("/usr/local"):
        argv += ["--remount-ro", "/usr/local"]
    argv += ["--chdir", "/tmp"]
    for key, value in sandbox_env("/tmp").items():
        argv += ["--setenv", key, value]
    return [*argv, "--", plan.python, "-I", "-B", "-X", "utf8", "/code/worker.py"]


def weak_argv(plan: LaunchPlan, code_dir: str) -> list[str]:
    return [plan.python, "-I", "-B", "-X", "utf8", os.path.join(code_dir, "worker.py")]


def make_folders(plan: LaunchPlan, source: str, limits: SandboxLimits, mode: str = "grader") -> tuple[str, str, str]:
    """(base, code, work): the grader folder the sandbox reads but can never write, and a scratch folder.
    ``mode``: what the worker loads the source as, a ``grader`` or a tool ``environment``.

    As root the code folder is root-owned (group = the sandbox gid, 0750): a sandbox that could rewrite its own
    worker.py would run without seccomp after the next respawn. The scratch folder (weak tier cwd/HOME) is the
    sandbox uid's own.
    """
    base = tempfile.mkdtemp(prefix="rft-sandbox-")
    code, work = os.path.join(base, "code"), os.path.join(base, "work")
    os.mkdir(code, 0o700)
    os.mkdir(work, 0o700)
    files = {
        "worker.py": (_HERE / "worker.py").read_text(),
        "seccomp.py": (_HERE / "seccomp.py").read_text(),
        "grader.py": source,
        "config.json": json.dumps({**limits.rlimits(), "allow_unix_sockets": plan.tier == "bwrap", "mode": mode}),
    }
    for name, text in files.items():
        with open(os.path.join(code, name), "w", encoding="utf-8") as fh:
            fh.write(text)
    if plan.uid is not None and plan.gid is not None:
        os.chmod(base, 0o711)
        for name in files:
            os.chown(os.path.join(code, name), 0, plan.gid)
            os.chmod(os.path.join(code, name), 0o640)
        os.chown(code, 0, plan.gid)
        os.chmod(code, 0o750)
        os.chown(work, plan.uid, plan.gid)
    return base, code, work


def remove_folders(base: str) -> None:
    """Delete a sandbox's folders, whatever the sandbox left in its scratch folder."""

    def _retry(func: Callable[[str], object], path: str, _exc: object) -> None:
        try:
            os.chmod(os.path.dirname(path), 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(base, onerror=_retry)

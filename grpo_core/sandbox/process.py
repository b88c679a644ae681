"""One running sandbox process and the parent's side of its pipe protocol, every read and write under a deadline.

The parent never blocks on the sandbox: the request is written and the reply read with non-blocking pipes and
poll() against a wall-clock deadline, a reply larger than a cap is refused before it is read, and stderr (where
all user output ends up) is drained by a thread that keeps only its last few kB, so 100 MB printed costs a
little CPU and no memory. Killing means SIGKILL to the process group of the launched process (bwrap, whose
death tears down its PID namespace via --die-with-parent; or the weak-tier worker, which cannot fork).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import struct
import subprocess
import threading
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

STDERR_TAIL_BYTES = 4096


class _Launcher:
    """One long-lived thread that forks every sandbox; recreated in a forked child (e.g. a Celery prefork pool),
    where the parent's thread does not exist and its executor would never run anything."""

    executor: ThreadPoolExecutor | None = None
    lock = threading.Lock()

    @classmethod
    def get(cls) -> ThreadPoolExecutor:
        with cls.lock:
            if cls.executor is None:
                cls.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-launcher")
            return cls.executor

    @classmethod
    def reset_in_child(cls) -> None:
        cls.executor, cls.lock = None, threading.Lock()


os.register_at_fork(after_in_child=_Launcher.reset_in_child)


class SandboxTimeout(Exception):
    """The deadline passed before the sandbox answered."""


class SandboxDied(Exception):
    """The sandbox process exited or closed its pipes."""


class ProtocolError(Exception):
    """The sandbox sent something that is not a well-formed message."""


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"signal {num}"


_SIGNAL_HINTS: dict[int, str] = {
    signal.SIGKILL: "out of memory?",
    signal.SIGXCPU: "its CPU-time limit was reached",
    signal.SIGSYS: "a forbidden system call",
    signal.SIGXFSZ: "its file-size limit was reached",
    signal.SIGSEGV: "it crashed",
}


class SandboxProcess:
    """A started sandbox: ``request(obj, deadline)`` sends one message and returns the reply."""

    def __init__(
        self,
        argv: list[str],
        *,
        env: Mapping[str, str],
        cwd: str,
        uid: int | None,
        gid: int | None,
        via_bwrap: bool,
    ) -> None:
        self.via_bwrap = via_bwrap
        self._tail = b""
        self._tail_lock = threading.Lock()
        # Spawned from one long-lived thread: bwrap's --die-with-parent (PR_SET_PDEATHSIG) fires when the *thread*
        # that forked it exits, and callers' threads (a web server's pool) come and go.
        self._proc = (
            _Launcher.get()
            .submit(
                subprocess.Popen,
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env),
                cwd=cwd,
                user=uid,
                group=gid,
                extra_groups=[] if uid is not None else None,
                start_new_session=True,
                close_fds=True,
            )
            .result()
        )
        assert self._proc.stdin and self._proc.stdout and self._proc.stderr
        self._in = self._proc.stdin.fileno()
        self._out = self._proc.stdout.fileno()
        os.set_blocking(self._in, False)
        os.set_blocking(self._out, False)
        self._drain = threading.Thread(target=self._drain_stderr, name="sandbox-stderr", daemon=True)
        self._drain.start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc.poll() is None

    def host_uid(self) -> int | None:
        """The real uid of the launched process (bwrap), read from the host's /proc; never 0 for a sandbox."""
        try:
            with open(f"/proc/{self._proc.pid}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        return int(line.split()[1])
        except OSError:
            pass
        return None

    def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self._tail_lock:
                self._tail = (self._tail + chunk)[-STDERR_TAIL_BYTES:]

    def stderr_tail(self, limit: int = 600, wait: float = 0.0) -> str:
        """The last lines the sandbox wrote to stderr (user prints included), for error messages."""
        if wait:
            self._drain.join(wait)  # after an exit, let the drain reach EOF first
        with self._tail_lock:
            text = self._tail.decode("utf-8", "replace")
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        return " | ".join(lines[-6:])[-limit:]

    def request(self, obj: Any, deadline: float, max_reply: int) -> Any:
        data = json.dumps(obj, separators=(",", ":")).encode()
        self._write(struct.pack(">I", len(data)) + data, deadline)
        return self.receive(deadline, max_reply)

    def receive(self, deadline: float, max_reply: int) -> Any:
        (size,) = struct.unpack(">I", self._read(4, deadline))
        if size > max_reply:
            raise ProtocolError(f"a {size}-byte reply is over the {max_reply}-byte cap")
        try:
            return json.loads(self._read(size, deadline))
        except ValueError as exc:
            raise ProtocolError(f"the reply is not JSON: {exc}") from None

    def _wait(self, fd: int, events: int, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise SandboxTimeout
        poller = select.poll()
        poller.register(fd, events)
        if not poller.poll(left * 1000):
            raise SandboxTimeout

    def _write(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self._in, view) :]
            except BlockingIOError:
                self._wait(self._in, select.POLLOUT, deadline)
            except (BrokenPipeError, ConnectionResetError):
                raise SandboxDied from None

    def _read(self, n: int, deadline: float) -> bytes:
        parts: list[bytes] = []
        got = 0
        while got < n:
            try:
                chunk = os.read(self._out, min(n - got, 1 << 20))
            except BlockingIOError:
                self._wait(self._out, select.POLLIN, deadline)
                continue
            if not chunk:
                raise SandboxDied
            parts.append(chunk)
            got += len(chunk)
        return b"".join(parts)

    def kill(self) -> None:
        """SIGKILL the whole process group (root may signal the sandbox uid), reap it, close the pipes."""
        if self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._proc.pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                self._proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._proc.wait(timeout=5)
        self._drain.join(timeout=1)
        for pipe in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()

    def exit_reason(self, wait: float = 1.0) -> str:
        """Why the process ended: 'exited with code 3', 'was killed by SIGXCPU (its CPU-time limit was reached)'."""
        try:
            code = self._proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            return "stopped answering"
        sig = -code if code < 0 else code - 128 if self.via_bwrap and code > 128 else 0
        if sig:
            hint = _SIGNAL_HINTS.get(sig)
            return f"was killed by {_signal_name(sig)}" + (f" ({hint})" if hint else "")
        return f"exited with code {code}"

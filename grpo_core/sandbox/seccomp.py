"""A seccomp-BPF syscall filter for the grader sandbox, written with ctypes and prctl only.

Why hand-written BPF rather than libseccomp/pyseccomp: this file is copied into the sandbox and runs on the
sandbox's own interpreter (Debian's python3.11) before any user code is imported, so it must need nothing but
the standard library. It is a denylist (the research note's "move to an allowlist once profiled"):

* ``socket`` is allowed only for AF_UNIX under bubblewrap (there is no host socket in its mount namespace) and
  denied for every family in the weak tier (where host paths such as /var/run/postgresql are visible);
* ``clone`` is allowed only for threads (CLONE_THREAD set, no CLONE_NEW* flag), so processes cannot be created;
  ``clone3`` answers ENOSYS, which makes glibc fall back to ``clone`` for pthread_create, so threads still work;
* ``kill``/``tgkill`` may target only the sandbox process itself (or its own process group);
* execve/execveat, fork/vfork, ptrace, namespaces and mounts, bpf, keyrings, userfaultfd, perf_event_open,
  process_vm_*, io_uring_*, pidfd_*, module/kexec/reboot and other admin calls answer EPERM.

Anything that is not x86_64 (including the x32 ABI and 32-bit ``int 0x80`` calls) kills the process: the syscall
numbers below are the x86_64 table, and a filter with wrong numbers would be worse than none.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

AUDIT_ARCH_X86_64 = 0xC000003E
X32_SYSCALL_BIT = 0x40000000

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

_OFF_NR, _OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    """Offset of the low 32 bits of syscall argument ``i`` in struct seccomp_data (little-endian)."""
    return 16 + 8 * i


AF_UNIX = 1
CLONE_THREAD = 0x00010000
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (CLONE_NEWTIME is clone3-only).
CLONE_NS_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# x86_64 numbers of the syscalls that answer EPERM unconditionally.
DENIED_X86_64: dict[str, int] = {
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "ptrace": 101,
    "rt_sigqueueinfo": 129,
    "pivot_root": 155,
    "chroot": 161,
    "acct": 163,
    "mount": 165,
    "umount2": 166,
    "swapon": 167,
    "swapoff": 168,
    "reboot": 169,
    "init_module": 175,
    "delete_module": 176,
    "quotactl": 179,
    "tkill": 200,
    "kexec_load": 246,
    "add_key": 248,
    "request_key": 249,
    "keyctl": 250,
    "unshare": 272,
    "rt_tgsigqueueinfo": 297,
    "perf_event_open": 298,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "setns": 308,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "finit_module": 313,
    "kexec_file_load": 320,
    "bpf": 321,
    "execveat": 322,
    "userfaultfd": 323,
    "pidfd_send_signal": 424,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "pidfd_open": 434,
    "pidfd_getfd": 438,
    "process_madvise": 440,
    "mount_setattr": 442,
}
SYS_SOCKET, SYS_CLONE, SYS_KILL, SYS_TGKILL, SYS_CLONE3 = 41, 56, 62, 234, 435


class _Asm:
    """A tiny BPF assembler: instructions with symbolic jump labels resolved to relative offsets."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def ld(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((op, jt, jf, k))

    def ret(self, value: int) -> None:
        self.code.append((_RET_K, 0, 0, value))

    def assemble(self) -> bytes:
        out = bytearray()
        for pc, (op, jt, jf, k) in enumerate(self.code):
            rel = [self.labels[j] - pc - 1 if isinstance(j, str) else j for j in (jt, jf)]
            if any(not 0 <= r <= 255 for r in rel):
                raise ValueError(f"BPF jump out of range at {pc}")
            out += struct.pack("<HBBI", op, rel[0], rel[1], k & 0xFFFFFFFF)
        return bytes(out)


def build_filter(*, allow_unix_sockets: bool, own_pid: int) -> bytes:
    """The filter program (struct sock_filter[]) for this process; ``own_pid`` is the only kill() target."""
    eperm = RET_ERRNO | errno.EPERM
    a = _Asm()
    a.ld(_OFF_ARCH)
    a.jump(_JEQ_K, AUDIT_ARCH_X86_64, jt=1)
    a.ret(RET_KILL_PROCESS)
    a.ld(_OFF_NR)
    a.jump(_JGE_K, X32_SYSCALL_BIT, jt="kill")
    for nr in DENIED_X86_64.values():
        a.jump(_JEQ_K, nr, jt="deny")
    a.jump(_JEQ_K, SYS_CLONE3, jt="enosys")
    a.jump(_JEQ_K, SYS_SOCKET, jt="socket")
    a.jump(_JEQ_K, SYS_CLONE, jt="clone")
    a.jump(_JEQ_K, SYS_KILL, jt="kill_sig")
    a.jump(_JEQ_K, SYS_TGKILL, jt="tgkill")
    a.ret(RET_ALLOW)

    a.label("socket")  # socket(domain, ...): AF_UNIX only, and only when there is no host socket to reach
    if allow_unix_sockets:
        a.ld(_arg_lo(0))
        a.jump(_JEQ_K, AF_UNIX, jt="allow")
    a.ret(eperm)

    a.label("clone")  # clone(flags, ...): threads only, never a new namespace
    a.ld(_arg_lo(0))
    a.jump(_JSET_K, CLONE_NS_FLAGS, jt="deny")
    a.jump(_JSET_K, CLONE_THREAD, jt="allow")
    a.ret(eperm)

    a.label("kill_sig")  # kill(pid, sig): itself, its own process group (0 or -pid)
    a.ld(_arg_lo(0))
    a.jump(_JEQ_K, own_pid, jt="allow")
    a.jump(_JEQ_K, 0, jt="allow")
    a.jump(_JEQ_K, -own_pid & 0xFFFFFFFF, jt="allow")
    a.ret(eperm)

    a.label("tgkill")  # tgkill(tgid, tid, sig): threads of this process only
    a.ld(_arg_lo(0))
    a.jump(_JEQ_K, own_pid, jt="allow")
    a.ret(eperm)

    a.label("allow")
    a.ret(RET_ALLOW)
    a.label("deny")
    a.ret(eperm)
    a.label("enosys")
    a.ret(RET_ERRNO | errno.ENOSYS)
    a.label("kill")
    a.ret(RET_KILL_PROCESS)
    return a.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


def install(*, allow_unix_sockets: bool, own_pid: int) -> None:
    """Install the filter on the calling (single-threaded) process; irreversible and inherited by threads."""
    if platform.machine() != "x86_64":
        raise OSError(errno.ENOSYS, f"the sandbox's seccomp filter is x86_64-only, not {platform.machine()}")
    program = build_filter(allow_unix_sockets=allow_unix_sockets, own_pid=own_pid)
    buf = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.addressof(buf))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_SECCOMP) failed")


def seccomp_mode() -> int:
    """The Seccomp field of /proc/self/status: 2 once a filter is active."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("Seccomp:"):
                return int(line.split()[1])
    return -1

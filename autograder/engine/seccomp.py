"""The sandbox's seccomp filter (a classic BPF program, loaded by bubblewrap's --seccomp).

It refuses, for the zygote and everything forked from it:

* new user namespaces (`unshare`/`clone` with CLONE_NEWUSER; `clone3` answers ENOSYS so that
  libc falls back to `clone`, whose flags the filter can read): inside one, a notebook would
  get capabilities again, mount a tmpfs that no limit counts, and rearrange what it sees;
* the kernel keyrings (`keyctl`, `add_key`, `request_key`), which are not namespaced: a key
  left in the user or session keyring would reach the next notebook of the same worker;
* `memfd_create` (ENOSYS, as on an old kernel): anonymous files that no rlimit counts in sum
  (each is capped by RLIMIT_FSIZE, but a process may hold hundreds); nothing in the notebooks'
  stack needs them, and without a cgroup nothing else would bound them;
* system calls of another ABI than the native one (x32, i386), which would bypass the above.

Supported on x86_64 and aarch64; elsewhere `program()` returns None and the isolation report
says that nested user namespaces and keyrings are not blocked.
"""
from __future__ import annotations

import errno
import platform
import struct

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
SYSCALLS = {
    "x86_64": {"clone": 56, "unshare": 272, "clone3": 435, "keyctl": 250, "add_key": 248, "request_key": 249,
               "memfd_create": 319},
    "aarch64": {"clone": 220, "unshare": 97, "clone3": 435, "keyctl": 219, "add_key": 217, "request_key": 218,
                "memfd_create": 279},
}
CLONE_NEWUSER = 0x10000000
X32_SYSCALL_BIT = 0x40000000

# classic BPF opcodes
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW, RET_ERRNO = 0x7FFF0000, 0x00050000
NR, ARCH, ARG0 = 0, 4, 16  # offsets in struct seccomp_data (arg0: its low 32 bits, little endian)


def _ins(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter as raw `struct sock_filter` instructions, or None on an unsupported architecture."""
    machine = machine or platform.machine()
    if machine not in SYSCALLS:
        return None
    nr = SYSCALLS[machine]
    deny, nosys = RET_ERRNO | errno.EPERM, RET_ERRNO | errno.ENOSYS
    p = [_ins(LD_W_ABS, ARCH), _ins(JEQ_K, AUDIT_ARCH[machine], 1, 0), _ins(RET_K, deny), _ins(LD_W_ABS, NR)]
    if machine == "x86_64":
        p += [_ins(JGE_K, X32_SYSCALL_BIT, 0, 1), _ins(RET_K, deny)]
    for name in ("clone3", "memfd_create"):
        p += [_ins(JEQ_K, nr[name], 0, 1), _ins(RET_K, nosys)]
    for name in ("keyctl", "add_key", "request_key"):
        p += [_ins(JEQ_K, nr[name], 0, 1), _ins(RET_K, deny)]
    # unshare(flags) and clone(flags, ...): refuse CLONE_NEWUSER in the first argument
    p += [_ins(JEQ_K, nr["unshare"], 1, 0), _ins(JEQ_K, nr["clone"], 0, 3),
          _ins(LD_W_ABS, ARG0), _ins(JSET_K, CLONE_NEWUSER, 0, 1), _ins(RET_K, deny)]
    p += [_ins(RET_K, RET_ALLOW)]
    return b"".join(p)

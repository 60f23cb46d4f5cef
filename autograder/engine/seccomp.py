"""The sandbox's seccomp filter, built by libseccomp (`pyseccomp`: ctypes over Debian's libseccomp2, which
scripts/system.sh checks for) and loaded by bubblewrap's --seccomp.

It refuses, for the zygote and everything forked from it:

* new user namespaces (`unshare`/`clone` with CLONE_NEWUSER; `clone3` answers ENOSYS so that
  libc falls back to `clone`, whose flags the filter can read): inside one, a notebook would
  get capabilities again, mount a tmpfs that no limit counts, and rearrange what it sees;
* the kernel keyrings (`keyctl`, `add_key`, `request_key`), which are not namespaced: a key
  left in the user or session keyring would reach the next notebook of the same worker;
* `memfd_create` (ENOSYS, as on an old kernel): anonymous files that no rlimit counts in sum
  (each is capped by RLIMIT_FSIZE, but a process may hold hundreds); nothing in the notebooks'
  stack needs them, and without a cgroup nothing else would bound them;
* system calls of another ABI than the native one (x32, i386), which would bypass the above:
  libseccomp's action for a foreign architecture, EPERM here.

libseccomp knows each architecture's system call numbers. Where it cannot be loaded, `program()` raises OSError
(the grader then refuses to start, saying why) rather than grading without the filter.
"""
from __future__ import annotations

import errno
import functools
import tempfile

CLONE_NEWUSER = 0x10000000
REFUSED = {  # system call: the errno it answers
    "clone3": errno.ENOSYS, "memfd_create": errno.ENOSYS,
    "keyctl": errno.EPERM, "add_key": errno.EPERM, "request_key": errno.EPERM,
}
NO_NEW_USER_NAMESPACE = ("unshare", "clone")  # refused (EPERM) when their first argument has CLONE_NEWUSER


@functools.cache
def _build() -> bytes | str:
    """The program, or why libseccomp could not build it."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as exc:  # the package, or libseccomp.so.2, is missing
        return (f"libseccomp cannot be loaded ({exc}): `source scripts/venv.sh` installs pyseccomp (pyproject.toml), "
                "`apt-get install libseccomp2` the library")
    try:
        rules = sc.SyscallFilter(sc.ALLOW)
        rules.set_attr(sc.Attr.ACT_BADARCH, sc.ERRNO(errno.EPERM))
        for name, code in REFUSED.items():
            rules.add_rule(sc.ERRNO(code), name)
        for name in NO_NEW_USER_NAMESPACE:
            rules.add_rule(sc.ERRNO(errno.EPERM), name, sc.Arg(0, sc.MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER))
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            return out.read()
    except OSError as exc:
        return f"libseccomp cannot build the filter here ({exc})"


def program() -> bytes:
    """The filter as raw `struct sock_filter` instructions for this machine; OSError saying why if there is none."""
    built = _build()
    if isinstance(built, str):
        raise OSError(f"the sandbox's seccomp filter: {built}")
    return built


def available() -> bool:
    """Whether `program()` builds here (the isolation report's words)."""
    return isinstance(_build(), bytes)

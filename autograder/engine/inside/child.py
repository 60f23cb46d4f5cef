"""One notebook's processes, forked from the zygote: keeper -> init -> runner.

    keeper  (in the zygote's namespaces) says hello, so the worker learns its pid from the
            kernel and can put it into the notebook's cgroup; on `go` it makes new PID, IPC,
            mount and network namespaces (no interface, not even loopback) and forks
    init    (PID 1 of the new namespace) mounts the notebook's own /proc, a size- and
            inode-capped tmpfs on /tmp and on /dev/shm, caps System V IPC, drops to the
            sandbox's unprivileged user, forks the runner, reaps, and reports the runner's
            exit status on the status pipe. When init exits the kernel kills every process
            left in the namespace: nothing a notebook starts outlives it.
    runner  (PID 2) takes rlimits, no_new_privs and a clean environment, and runs the cells
            (`runner.serve`).

The worker's `go` frame says how (plain data; see `autograder.engine.sandbox.Plan.go`).
Nothing here trusts the notebook: it all happens before any of the notebook's code runs.
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import struct
import sys
from collections.abc import Callable

from . import frames

CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWIPC, CLONE_NEWNET = 0x00020000, 0x20000000, 0x08000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = \
    1, 2, 4, 8, 32, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_SECUREBITS, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 28, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# SECBIT_NOROOT(+LOCKED): uid 0 gains no capability on exec; KEEP_CAPS_LOCKED; NO_CAP_AMBIENT_RAISE(+LOCKED)
SECUREBITS = 0x01 | 0x02 | 0x20 | 0x40 | 0x80
GO_TIMEOUT = 600.0  # the worker answers at once; this only ends a keeper whose worker vanished

_libc = ctypes.CDLL(None, use_errno=True)


class SetupError(RuntimeError):
    """A step of the sandbox's setup failed (the grader's problem, never the student's)."""


def prctl(option: int, value: int, arg3: int = 0) -> bool:
    return _libc.prctl(option, ctypes.c_ulong(value), ctypes.c_ulong(arg3), 0, 0) == 0


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2), raising SetupError with the reason."""
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    if _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        raise SetupError(f"mount {fstype or source} on {target}: {os.strerror(ctypes.get_errno())}")


def reap() -> int:
    """Collect every exited child of this process; returns how many."""
    n = 0
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return n
        if pid == 0:
            return n
        n += 1


def keeper(sock: int, status: int, serve: Callable[[int, dict], None]) -> None:
    """The notebook's first process (never returns); `serve(sock, plan)` is the runner's loop (`runner.main`
    bound to the zygote's shell), handed down so that this module needs no import of the runner."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the zygote
    if os.getppid() != parent:
        os._exit(70)
    frames.send(sock, {"k": "hello"})
    reader = frames.FrameReader(sock, 1 << 20)
    os.set_blocking(sock, False)
    try:
        go = frames.recv_blocking(reader, timeout=GO_TIMEOUT)
    except frames.ProtocolError:
        os._exit(71)
    os.set_blocking(sock, True)
    if go is None or go.kind != "go":
        os._exit(71)
    plan = go.header
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | (0 if plan["network"] else CLONE_NEWNET)
    if plan["mode"] != "none" and _libc.unshare(flags) != 0:
        frames.send(sock, {"k": "ns", "error": f"unshare: {os.strerror(ctypes.get_errno())}"})
        os._exit(72)
    me = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            init(sock, status, plan, serve, me)
        except BaseException as exc:  # noqa: BLE001 - told to the worker, which stops the run
            try:
                frames.send(sock, {"k": "ns", "error": f"{type(exc).__name__}: {exc}"[:500]})
            finally:
                os._exit(73)
    os.close(sock)
    os.close(status)
    while True:
        try:
            done, _ = os.waitpid(pid, 0)
        except ChildProcessError:
            os._exit(0)
        if done == pid:
            os._exit(0)


def init(sock: int, status: int, plan: dict, serve: Callable[[int, dict], None], parent: int) -> None:
    """PID 1 of the notebook's namespaces (never returns)."""
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # dies with the keeper, and so does the namespace
    _check_parent(plan, parent)
    report: dict[str, str] = {}
    if plan["mode"] != "none":
        _filesystems(plan, report)
        _ipc_limits(plan, report)
    _drop_privileges(plan, report)
    prctl(PR_SET_DUMPABLE, 0)  # after setresuid, which resets it: no one may read this process
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # setresuid clears it too
    _check_parent(plan, parent)
    frames.send(sock, {"k": "ns", "report": report})
    runner_pid = os.fork()
    if runner_pid == 0:
        os.close(status)
        serve(sock, plan)  # never returns
    os.close(sock)
    while True:  # reap the namespace's orphans until the runner is gone
        try:
            pid, code = os.waitpid(-1, 0)
        except ChildProcessError:
            os._exit(0)
        if pid == runner_pid:
            os.write(status, struct.pack("<i", code))
            os._exit(0)


def _check_parent(plan: dict, parent: int) -> None:
    """Exit if the keeper is already gone (PID 1 of a new namespace sees its parent as 0)."""
    if os.getppid() != (parent if plan["mode"] == "none" else 0):
        os._exit(70)


def _filesystems(plan: dict, report: dict) -> None:
    """This notebook's /proc, private /tmp (with the read-only paths that live under it) and /dev/shm."""
    scratch = plan["scratch"]
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    keep = [(p, os.open(p, os.O_PATH)) for p in scratch["keep"] if os.path.isdir(p)]
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={scratch['size_mb']}m,nr_inodes={scratch['inodes']},mode=1777")
    for path, fd in keep:  # e.g. a checkout (and its venv) under /tmp
        os.makedirs(path, mode=0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)
        mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV,
          f"size={scratch['shm_mb']}m,nr_inodes={scratch['inodes']},mode=1777")
    for path in scratch.get("read_only", []):  # the zygote's own writable places
        if os.path.isdir(path):
            mount(path, path, None, MS_BIND | MS_REC)
            mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    report["scratch"] = (f"private tmpfs on /tmp ({scratch['size_mb']} MiB, {scratch['inodes']} files) and /dev/shm "
                         f"({scratch['shm_mb']} MiB)")
    report["pid"] = "own PID namespace (every process dies with the notebook)"


def _ipc_limits(plan: dict, report: dict) -> None:
    """System V IPC of this notebook's own IPC namespace, capped (it is destroyed with the namespace)."""
    failed = []
    for name, value in plan["ipc"].items():
        try:
            with open(f"/proc/sys/{name}", "w") as f:
                f.write(str(value))
        except OSError:
            failed.append(name)
    mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)  # the caps above stay as they are
    mount(None, "/proc/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    report["ipc"] = "own IPC namespace" + (f"; could not cap {', '.join(failed)}" if failed else
                                           f", shared memory capped at {plan['ipc'].get('kernel/shmmax', 0) >> 20} MiB")


def _drop_privileges(plan: dict, report: dict) -> None:
    """No capability now or after any exec; root mode: the slot's own unprivileged uid."""
    if plan["mode"] == "none":
        report["user"] = f"uid {os.getuid()} (the grader's own user)"
        return
    prctl(PR_SET_SECUREBITS, SECUREBITS)
    last = int(open("/proc/sys/kernel/cap_last_cap").read())
    for cap in range(last + 1):
        prctl(PR_CAPBSET_DROP, cap)
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if plan["mode"] == "root":
        uid = int(plan["uid"])
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)  # clears every capability
        report["user"] = f"uid {uid} (unprivileged, this worker's own)"
    else:
        _capset_none()
        report["user"] = "the grader's uid inside a user namespace, no capabilities"
    if _has_capabilities():
        raise SetupError("capabilities remain after dropping them")


def _capset_none() -> None:
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    if _libc.capset(ctypes.byref(header), data) != 0:
        raise SetupError(f"capset: {os.strerror(ctypes.get_errno())}")


def _has_capabilities() -> bool:
    for line in open("/proc/self/status").read().splitlines():
        if line.startswith(("CapEff:", "CapPrm:")) and int(line.split()[1], 16):
            return True
    return False


def settle(plan: dict) -> None:
    """In the runner, before any notebook code: own session, rlimits, no_new_privs, clean environment."""
    os.setsid()  # its own session (and scheduler autogroup)
    prctl(PR_SET_DUMPABLE, 1)  # its /proc/self is its own again (init, which it inherited this from, stays closed)
    rlimits(plan)
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    os.environ.clear()
    os.environ.update(plan["env"])
    block_imports(plan["blocked"])


def rlimits(plan: dict) -> None:
    """Memory (beyond what the zygote already mapped), files, processes, no core dumps."""
    lim = plan["rlimits"]
    mb = 1 << 20
    vm = _vm()
    settings = [(resource.RLIMIT_DATA, vm.get("VmData", 0) + lim["memory_mb"] * mb),
                (resource.RLIMIT_FSIZE, lim["file_mb"] * mb), (resource.RLIMIT_NOFILE, lim["open_files"]),
                (resource.RLIMIT_NPROC, lim["nproc"]), (resource.RLIMIT_CORE, 0),
                (resource.RLIMIT_MSGQUEUE, lim["msgqueue_bytes"])]
    if lim.get("address_space", True):  # not with CUDA, which reserves terabytes of address space
        settings.append((resource.RLIMIT_AS, vm.get("VmSize", 0) + 2 * lim["memory_mb"] * mb + (1 << 30)))
    for which, value in settings:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing past the cap fails with EFBIG instead


def _vm() -> dict[str, int]:
    out = {}
    for line in open("/proc/self/status").read().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmData", "VmSize"):
            out[key] = int(value.split()[0]) * 1024
    return out


class _Blocker:
    """A meta path finder that refuses the instructor-only packages (they do not exist here anyway)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in self.names:
            raise ModuleNotFoundError(f"No module named {name!r} (not available while grading)", name=name)
        return None

    def invalidate_caches(self) -> None:
        return None


def block_imports(names: list[str]) -> None:
    """Make `import solutions` / `import autograder` fail with a clear message."""
    blocked = tuple(names)
    sys.meta_path.insert(0, _Blocker(blocked))
    for name in list(sys.modules):
        if name.split(".")[0] in blocked:
            del sys.modules[name]

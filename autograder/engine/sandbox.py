"""Isolation of one notebook's process: namespaces, an unprivileged user, rlimits, no secrets.

`enter` runs in the freshly forked child, before any student code, and returns what held:

* as root (the supported way to grade; e.g. in a container): a new network namespace
  (no network, not even loopback), a new mount namespace in which the course directory,
  the repository's instructor folders (solutions/, autograder/, chapters/, tests/, .git,
  ...), /root, /home and every other secret path are covered by empty read-only tmpfs, a
  private /tmp (tmpfs, size-capped) holding only this notebook's files, /proc remounted
  with hidepid=2, then the process drops to a per-worker unprivileged uid (RLIMIT_NPROC
  binds it; `sweep` kills every process of that uid afterwards);
* not root: the same namespaces inside an unprivileged user namespace when the kernel
  allows it (capabilities are dropped after mounting), else only a private temp working
  directory; see docs/security.md for what that leaves open.

In every mode: rlimits (data segment, address space, file size, open files, processes,
no core dumps), no_new_privs, a scrubbed environment, and `import solutions` /
`import autograder` fail (meta path finder; the modules are purged from sys.modules).
"""
from __future__ import annotations

import ctypes
import os
import resource
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

from autograder.engine.limits import Limits

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
BLOCKED_PACKAGES = ("solutions", "autograder")
SCRATCH_CANDIDATES = ("/tmp", "/var/tmp", "/dev/shm")  # where the child's private tmpfs may go
WORKDIR_NAME = "submission"
UID_RANGE = (1_000_000_000, 2_000_000_000)  # sandbox uids: a fresh random block per grading run

_libc = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Plan:
    """How to isolate this worker's notebooks (decided once, in the worker)."""

    slot: int
    uid_base: int  # this run's block of sandbox uids (one per worker slot, unused by any process)
    hide: tuple[str, ...]  # directories to cover with an empty tmpfs
    keep: tuple[str, ...]  # paths inside them the interpreter needs (bind-mounted back)
    hide_files: tuple[str, ...]  # files to cover with /dev/null (e.g. a gradebook outside the course)
    venv_bin: str
    network: bool = False
    worker_report: tuple[tuple[str, str], ...] = ()  # what isolate_worker achieved

    @property
    def root(self) -> bool:
        return os.geteuid() == 0

    @property
    def uid(self) -> int:
        return self.uid_base + self.slot if self.root else os.getuid()

    @property
    def scratch(self) -> str:
        """Where the child's private tmpfs goes: /tmp, unless the interpreter lives under it (a repo in /tmp)."""
        for candidate in SCRATCH_CANDIDATES:
            if os.path.isdir(candidate) and not any(k == candidate or _inside(k, candidate) for k in self.keep):
                return candidate
        return SCRATCH_CANDIDATES[-1]


def fresh_uid_block(n: int) -> int:
    """The first of `n` uids that no process uses, no account names, and no other grading run holds.

    Two grading runs on one machine must never share a sandbox uid: a sandbox kills every
    process of its uid when a cell ends.
    """
    import pwd
    import secrets as _secrets

    used = set()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                for line in Path(f"/proc/{entry.name}/status").read_text().splitlines():
                    if line.startswith("Uid:"):
                        used.update(int(x) for x in line.split()[1:])
            except OSError:
                pass
    lo, hi = UID_RANGE
    while True:
        base = lo + _secrets.randbelow((hi - lo) // 4096) * 4096
        block = range(base, base + n)
        if used.isdisjoint(block) and not any(_has_account(u, pwd) for u in block):
            return base


def _has_account(uid: int, pwd) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False


def secret_paths(course_dir: Path, repo_root: Path, extra: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """(directories to hide, paths inside them to keep visible) for a student's process.

    Hidden: the course directory, the repository's parent (solutions/, autograder/,
    chapters/, tests/, .git, sibling checkouts), /root, /home, and `extra`. Kept: what
    the notebook's interpreter needs (the Python installation, the virtual environment,
    attnlab's sources).
    """
    import site
    import sysconfig

    parent = repo_root.parent if repo_root.parent != Path("/") else repo_root
    hide = [str(course_dir), str(parent), str(repo_root), "/root", "/home", *extra]
    paths = sysconfig.get_paths()
    keep = [sys.base_prefix, sys.base_exec_prefix, sys.prefix, sys.exec_prefix, paths["stdlib"], paths["platstdlib"],
            paths["purelib"], paths["platlib"], *site.getsitepackages(),
            os.path.dirname(os.path.realpath(sys.executable)), str(repo_root / "attnlab")]
    keep = [os.path.realpath(p) for p in keep if p and os.path.isdir(p)]
    hide = [os.path.realpath(d) for d in dict.fromkeys(hide) if os.path.isdir(d)]
    secrets = [os.path.realpath(p) for p in (course_dir, repo_root / "solutions", repo_root / "autograder")]
    keep = [k for k in keep if not any(s == k or _inside(s, k) for s in secrets)]  # never re-expose a secret
    return list(dict.fromkeys(hide)), sorted(set(keep))


def prepare_worker() -> None:
    """In the warm worker: unreadable by same-uid processes, adopts orphans, dies with the grader."""
    _prctl(PR_SET_DUMPABLE, 0)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def isolate_worker(plan: Plan) -> dict:
    """Once per worker, before any notebook: its own network and mount namespaces with the secrets covered.

    Every child forked later inherits them, so a notebook pays only for its private /tmp.
    Returns {step: what held}.
    """
    report: dict[str, str] = {}
    net = 0 if plan.network else CLONE_NEWNET
    if plan.root:
        ok = _libc.unshare(CLONE_NEWNS | net) == 0
    else:
        uid, gid = os.getuid(), os.getgid()
        ok = _libc.unshare(CLONE_NEWUSER | CLONE_NEWNS | net) == 0
        if ok:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                try:
                    Path(f"/proc/self/{name}").write_text(text)
                except OSError:
                    pass
    if not ok:
        report["namespaces"] = (f"unshare failed ({os.strerror(ctypes.get_errno())}): the notebooks can use the "
                                "network and read whatever the grader's user can read")
        report["network"] = "host network (no namespace)"
        return report
    report["network"] = "host network (allowed by limits)" if plan.network else \
        "none (own network namespace)" if plan.root else "none (own network namespace in a user namespace)"
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _hide(plan, report)
    if plan.root and _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2"):
        report["proc"] = "other users' processes hidden (hidepid=2)"
    return report


def enter(plan: Plan, limits: Limits, files: list[tuple[str, bytes]], threads: int) -> dict:
    """Isolate this freshly forked child: private /tmp, own user, rlimits, clean environment; {step: what held}."""
    report: dict[str, str] = dict(plan.worker_report)
    os.setsid()
    private = "namespaces" not in report and _libc.unshare(CLONE_NEWNS) == 0
    if private:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        private = _mount("tmpfs", plan.scratch, "tmpfs", MS_NOSUID | MS_NODEV,
                         f"size={limits.disk_mb}m,mode={'1777' if plan.root else '0700'}")
        if plan.root and os.path.isdir("/dev/shm"):
            _mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=1777")
    report["tmp"] = "private tmpfs" if private else "shared /tmp (no private mount possible)"
    workdir = _workdir(plan, files, report)
    _drop_privileges(plan, report)
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() == 1:
        os._exit(70)  # the worker is already gone
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    _rlimits(limits, plan, report)
    _environment(plan, workdir, threads)
    block_imports()
    report["imports"] = "solutions and autograder cannot be imported"
    return report


def _hide(plan: Plan, report: dict) -> None:
    """Cover each secret directory with an empty read-only tmpfs, re-exposing only the kept paths in it."""
    covered: list[str] = []
    missed: list[str] = []
    for d in sorted(plan.hide, key=len):  # outer directories first
        if any(d == c or _inside(d, c) for c in covered):
            continue  # under an earlier cover already (only kept paths show through)
        if any(d == k or _inside(d, k) for k in plan.keep):
            missed.append(d)  # inside what the interpreter needs: cannot be covered
            continue
        (covered if _cover(d, [k for k in plan.keep if _inside(k, d)]) else missed).append(d)
    for f in plan.hide_files:
        if not _mount("/dev/null", f, None, MS_BIND):
            missed.append(f)
    report["files"] = f"covered: {', '.join(covered)}" + (f"; NOT covered: {', '.join(missed)}" if missed else "")


def _inside(path: str, directory: str) -> bool:
    return path.startswith(directory.rstrip("/") + "/")


def _cover(directory: str, keeps: list[str]) -> bool:
    """An empty tmpfs over `directory`; each of `keeps` (inside it) bind-mounted back."""
    handles = []
    for k in keeps:
        try:
            handles.append((k, os.open(k, os.O_PATH)))
        except OSError:
            pass
    if not _mount("tmpfs", directory, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755"):
        return False
    for k, fd in handles:
        try:
            os.makedirs(k, exist_ok=True)
            _mount(f"/proc/self/fd/{fd}", k, None, MS_BIND | MS_REC)
        except OSError:
            pass
        os.close(fd)
    _mount("tmpfs", directory, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    return True


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> bool:
    def enc(s: str | None) -> bytes | None:
        return None if s is None else s.encode()

    return _libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) == 0


def _workdir(plan: Plan, files: list[tuple[str, bytes]], report: dict) -> str:
    """A fresh working directory holding only this submission's files, owned by the sandbox user."""
    import tempfile

    private = report.get("tmp") == "private tmpfs"
    workdir = os.path.join(plan.scratch, WORKDIR_NAME) if private else tempfile.mkdtemp(prefix="ag-sandbox-")
    os.makedirs(workdir, mode=0o700, exist_ok=True)
    for rel, data in files:
        target = os.path.normpath(os.path.join(workdir, rel))
        if not target.startswith(workdir + os.sep):
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as f:
            f.write(data)
    if plan.root:
        for base, dirs, names in os.walk(workdir):
            for name in [base, *(os.path.join(base, n) for n in dirs + names)]:
                os.chown(name, plan.uid, plan.uid)
    os.chdir(workdir)
    report["workdir"] = workdir + (" (private)" if private else " (shared /tmp: other users may list it)")
    return workdir


def _drop_privileges(plan: Plan, report: dict) -> None:
    if plan.root:
        os.setgroups([])
        os.setresgid(plan.uid, plan.uid, plan.uid)
        os.setresuid(plan.uid, plan.uid, plan.uid)
        report["user"] = f"uid {plan.uid} (unprivileged, this worker's own)"
    else:
        _drop_capabilities()
        report["user"] = f"uid {os.getuid()} (the grader's own user)"


def _drop_capabilities() -> None:
    """Clear every capability (those a new user namespace grants) so mounts cannot be undone."""
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    header, data = Header(0x20080522, 0), (Data * 2)()
    _libc.capset(ctypes.byref(header), data)


def _rlimits(limits: Limits, plan: Plan, report: dict) -> None:
    mb = 1 << 20
    vm = _vm()
    data = vm.get("VmData", 0) + limits.memory_mb * mb
    space = vm.get("VmSize", 0) + 2 * limits.memory_mb * mb + (1 << 30)
    procs = limits.procs if plan.root else _user_tasks(os.getuid()) + limits.procs
    settings = [(resource.RLIMIT_DATA, data), (resource.RLIMIT_FSIZE, limits.disk_mb * mb),
                (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_NPROC, procs),
                (resource.RLIMIT_CORE, 0)]
    if not _cuda_possible():
        settings.append((resource.RLIMIT_AS, space))  # CUDA reserves terabytes of address space
    for which, value in settings:
        try:
            resource.setrlimit(which, (value, value))
        except (ValueError, OSError):
            pass
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing past the cap fails with EFBIG instead
    report["limits"] = (f"memory +{limits.memory_mb} MiB, {procs} tasks, files {limits.disk_mb} MiB, "
                        f"{limits.open_files} open files")


def _vm() -> dict[str, int]:
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmData", "VmSize"):
            out[key] = int(value.split()[0]) * 1024
    return out


def _cuda_possible() -> bool:
    return os.path.exists("/dev/nvidiactl")


def _user_tasks(uid: int) -> int:
    """Tasks (threads included) of user `uid`, which RLIMIT_NPROC counts."""
    n = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    n += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                pass
    return n


def _environment(plan: Plan, workdir: str, threads: int) -> None:
    """The same variables as stock nbgrader's kernel sees, and nothing of the grader's."""
    private_tmp = workdir.startswith(plan.scratch + "/" + WORKDIR_NAME)
    env = {
        "PATH": os.pathsep.join([plan.venv_bin, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": workdir, "TMPDIR": plan.scratch if private_tmp else workdir, "LANG": "C.UTF-8",
        "MPLBACKEND": "module://matplotlib_inline.backend_inline", "MPLCONFIGDIR": os.path.join(workdir, ".config"),
        "NBGRADER_EXECUTION": "autograde", "ATTNLAB_GRADING": "1", "PYTHONHASHSEED": "0",
        "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
    }
    os.environ.clear()
    os.environ.update(env)


class _Blocker:
    """A meta path finder that refuses the instructor-only packages."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name.split(".")[0] in BLOCKED_PACKAGES:
            raise ModuleNotFoundError(f"No module named {name!r} (not available while grading)", name=name)
        return None

    def invalidate_caches(self) -> None:
        return None


def block_imports() -> None:
    """Make `import solutions` / `import autograder` fail and forget any loaded module of theirs."""
    sys.meta_path.insert(0, _Blocker())
    for name in list(sys.modules):
        if name.split(".")[0] in BLOCKED_PACKAGES:
            del sys.modules[name]


def _prctl(option: int, value: int) -> bool:
    return _libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0) == 0


def sweep(plan: Plan, pgid: int | None = None) -> int:
    """Kill every process the sandbox left (root: all of its uid; else its group and orphans); reap them."""
    if plan.root:
        pid = os.fork()
        if pid == 0:  # as the sandbox's uid, kill(-1) reaches exactly its processes, atomically
            try:
                os.setresgid(plan.uid, plan.uid, plan.uid)
                os.setresuid(plan.uid, plan.uid, plan.uid)
                for _ in range(50):
                    os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
    else:
        if pgid:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
        for orphan in _adopted_children():
            try:
                os.kill(orphan, signal.SIGKILL)
            except OSError:
                pass
    return reap()


def kill_strays(plan: Plan) -> None:
    """From inside the sandbox: stop every other process it started (no process outlives its cell)."""
    if plan.root:
        try:
            os.kill(-1, signal.SIGKILL)  # as the sandbox's own uid: all of its processes but this one
        except OSError:
            pass
        return
    me = os.getpid()
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != me:
            try:
                fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
                if int(fields[3]) == me:  # in this sandbox's session
                    os.kill(int(entry.name), signal.SIGKILL)
            except (OSError, IndexError, ValueError):
                pass


def leftovers(plan: Plan) -> bool:
    """Whether any live process of the sandbox's uid remains (root mode only; cheap /proc scan)."""
    if not plan.root:
        return bool(_adopted_children())
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == plan.uid and _state(entry.name) != "Z":
                    return True
            except OSError:
                pass
    return False


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def _adopted_children() -> list[int]:
    """Processes re-parented to this worker (it is a subreaper), i.e. a dead sandbox's orphans."""
    me, out = str(os.getpid()), []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
                if stat[1] == me and stat[0] != "Z":
                    out.append(int(entry.name))
            except (OSError, IndexError):
                pass
    return out


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

"""What a notebook's sandbox is made of, decided in the trusted worker: bubblewrap's command line for
the zygote (an allowlisted filesystem) and the plan each forked notebook follows (`inside/child.py`).

The filesystem is an allowlist: bubblewrap builds an empty root and binds into it, read-only,
the Python installation (its own site-packages hidden), the virtual environment, the student
kit's sources (an editable install points into the checkout), system libraries (/usr without
/usr/local and /usr/src), the NVIDIA driver's user-space libraries where a GPU is present (they
may live under /usr/local, e.g. /usr/local/nvidia/lib64, found through the loader's path), a few
files of /etc, and the code that runs inside
(`autograder/engine/inside`). Nothing else exists there: no checkout (solutions/, autograder/,
chapters/, tests/, .git), no course directory, no home, no other checkout or venv, no
host-backed writable directory. Each notebook then gets its own /proc, /tmp and /dev/shm.

Modes, chosen by the worker:

* `root` (the supported way to grade): bubblewrap runs privileged; the zygote keeps only the
  capabilities needed to make each notebook's namespaces; each notebook drops to this worker's
  own unprivileged uid (from a fresh block per run) before any of its code runs;
* `userns` (not root): bubblewrap makes a user namespace (the kernel must allow unprivileged
  ones); notebooks drop every capability instead of changing uid;
* `none` (only with `Limits(sandbox="none")`, for machines without namespaces): no namespaces,
  no allowlist; rlimits, a clean environment and the import blocker only. Unsafe.
"""
from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import site
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from autograder.engine import seccomp
from autograder.engine.limits import Limits
from autograder.errors import AutograderError

INSIDE = Path(__file__).resolve().parent / "inside"  # bound into the sandbox as /run/grader/inside
CODE_MOUNT = "/run/grader"
ZYGOTE_HOME = "/run/zygote"  # the zygote's own writable place (read-only to every notebook)
WORKDIR = "/tmp/submission"
BLOCKED = ("solutions", "autograder", "coursenb", "publish", "chapters", "tests")
UID_RANGE = (1_000_000_000, 2_000_000_000)  # sandbox uids (root mode): a fresh random block per grading run
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "fonts", "mime.types")
ZYGOTE_CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")
SANDBOX_UID_NAME = "student"
ZYGOTE_UID_NAME = "zygote"  # the zygote's uid 0 in root mode (it forks, drops to the student's uid, then runs)


class SandboxError(AutograderError):
    """The sandbox cannot be built on this machine (a sentence for the instructor)."""


@dataclass(frozen=True)
class Layout:
    """The sandbox's filesystem: read-only binds (source, destination), masked paths, symlinks."""

    binds: tuple[tuple[str, str], ...]
    masks: tuple[str, ...] = ()  # covered by an empty read-only tmpfs (inside a bind)
    symlinks: tuple[tuple[str, str], ...] = ()  # (target, link)
    devices: tuple[str, ...] = ()  # GPU device nodes, bound as devices

    @property
    def under_tmp(self) -> tuple[str, ...]:
        """Bound paths that live under /tmp (a checkout there): each notebook's /tmp shows them again."""
        return tuple(dst for _, dst in self.binds if dst.startswith("/tmp/"))

    def describe(self) -> str:
        return "allowlist: " + ", ".join(dst for _, dst in self.binds)

    def parents(self) -> list[str]:
        """The directories above the bound paths (made, empty, by the sandbox), outermost first."""
        bound = {dst for _, dst in self.binds}
        out: set[str] = set()
        for _, dst in self.binds:
            parent = os.path.dirname(dst)
            while parent not in ("/", "") and parent not in bound:
                out.add(parent)
                parent = os.path.dirname(parent)
        return sorted(out, key=lambda p: (p.count("/"), p))


def _real(path: str | os.PathLike) -> str:
    return os.path.realpath(os.fspath(path))


def _inside(path: str, directory: str) -> bool:
    return path == directory or path.startswith(directory.rstrip("/") + "/")


def layout(extra: tuple[str, ...] = (), hide: tuple[str, ...] = ()) -> Layout:
    """The allowlist for this interpreter and virtual environment (plus `extra`, minus `hide`)."""
    binds: dict[str, str] = {}

    def bind(path: str) -> None:
        real = _real(path)
        if os.path.exists(real) and not any(_inside(real, b) for b in binds):
            for b in [b for b in binds if _inside(b, real)]:
                del binds[b]
            binds[real] = real

    base = _real(sys.base_prefix)
    needed = [os.path.join(base, sub) for sub in ("bin", "lib", "lib64") if os.path.isdir(os.path.join(base, sub))]
    needed += [_real(sys.prefix), *_editable_roots(), *cuda_library_dirs(), *(_real(p) for p in extra)]
    bind("/usr")
    for path in needed:
        bind(path)
    symlinks = []
    for name in ("bin", "sbin", "lib", "lib64", "lib32", "libx32"):
        top = f"/{name}"
        if os.path.islink(top):
            symlinks.append((os.readlink(top), top))
        elif os.path.isdir(top):
            bind(top)
    for name in ETC_FILES:  # bound as named: /etc/localtime is a symlink into /usr
        if os.path.exists(f"/etc/{name}"):
            binds[f"/etc/{name}"] = f"/etc/{name}"
    if os.path.isdir("/sys/devices/system/cpu"):
        bind("/sys/devices/system/cpu")
    on_path = {_real(p) for p in sys.path if p}
    masks: list[str] = []
    candidates = ["/usr/local", "/usr/src", *_site_dirs(base), *_instructor_copies(), *(_real(h) for h in hide)]
    for real in sorted({_real(c) for c in candidates}, key=len):
        if not os.path.exists(real) or real in on_path and real not in _instructor_copies():
            continue
        if any(_inside(n, real) for n in needed) or any(_inside(real, m) for m in masks):
            continue  # the interpreter lives there, or it is hidden already
        if any(_inside(real, b) for b in binds):
            masks.append(real)
    devices = tuple(sorted(glob.glob("/dev/nvidia*")))
    ordered = sorted(binds.items(), key=lambda kv: kv[1].count("/"))
    return Layout(tuple(ordered), tuple(masks), tuple(symlinks), devices)


def _site_dirs(base: str) -> list[str]:
    """The base interpreter's (and the distribution's) package folders: not the venv's."""
    paths = sysconfig.get_paths(vars={"base": base, "platbase": base})
    found = {paths["purelib"], paths["platlib"]}
    found.update(glob.glob("/usr/lib/python3*/dist-packages") + glob.glob("/usr/local/lib/python3*/*-packages"))
    return sorted(found)


def _editable_roots() -> list[str]:
    """Folders an editable install maps the student kit to (attnlab/ in the checkout)."""
    try:
        import attnlab
    except ImportError:
        return []
    return [_real(p) for p in getattr(attnlab, "__path__", [])]


def _instructor_copies() -> list[str]:
    """Installed (not editable) copies of the instructor's packages inside the venv: hidden too."""
    out = []
    for sp in site.getsitepackages():
        for name in BLOCKED:
            path = os.path.join(sp, name)
            if os.path.isdir(path):
                out.append(_real(path))
    return out


@dataclass(frozen=True)
class Plan:
    """How this worker isolates its notebooks (decided once, in the worker)."""

    mode: str  # root, userns or none
    uid: int  # root mode: this worker's sandbox uid; else the grader's own
    layout: Layout = field(default_factory=lambda: Layout(()))
    network: bool = False
    cgroup: str | None = None  # the run's cgroup directory (None: no cgroups)
    cgroup_why: str = ""
    threads: int = 1
    warm_many: bool = True  # the zygote forks many notebooks: its warm-up pays what only some use (zygote.exercise)

    def zygote_command(self, control_fd: int, seccomp_fd: int | None, passwd_fd: int | None,
                       group_fd: int | None) -> list[str]:
        """The command that starts the zygote (in bubblewrap unless mode is none)."""
        code = CODE_MOUNT if self.mode != "none" else str(INSIDE.parent)
        python = [sys.executable, "-s", "-c",  # the collector off from the first import: zygote.main freezes
                  f"import gc; gc.disable(); import sys; sys.path.insert(0, {code!r}); from inside import zygote; "
                  f"zygote.main({control_fd}, many={self.warm_many!r})"]
        if self.mode == "none":
            return python
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise SandboxError("bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
        cmd = [bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--hostname", "sandbox", "--die-with-parent", "--new-session", "--clearenv"]
        if not self.network:
            cmd.append("--unshare-net")
        if self.mode == "userns":
            cmd += ["--unshare-user", "--uid", "0", "--gid", "0"]
        cmd += ["--cap-drop", "ALL"]
        for cap in ZYGOTE_CAPS:
            cmd += ["--cap-add", cap]
        for key, value in self.zygote_env().items():
            cmd += ["--setenv", key, value]
        for parent in self.layout.parents():  # bubblewrap would make them 0700: the notebook must pass
            cmd += ["--perms", "0755", "--dir", parent]
        for src, dst in self.layout.binds:
            cmd += ["--ro-bind", src, dst]
        for mask in self.layout.masks:
            cmd += ["--tmpfs", mask, "--remount-ro", mask]
        for target, link in self.layout.symlinks:
            cmd += ["--symlink", target, link]
        cmd += ["--ro-bind", str(INSIDE), f"{CODE_MOUNT}/inside", "--proc", "/proc", "--dev", "/dev"]
        for dev in self.layout.devices:
            cmd += ["--dev-bind", dev, dev]
        cmd += ["--tmpfs", "/tmp", "--tmpfs", ZYGOTE_HOME]
        for src, dst in self.layout.binds:  # a checkout under /tmp: its venv and kit again, above the tmpfs
            if dst.startswith("/tmp/"):
                cmd += ["--ro-bind", src, dst]
        if passwd_fd is not None and group_fd is not None:
            cmd += ["--ro-bind-data", str(passwd_fd), "/etc/passwd", "--ro-bind-data", str(group_fd), "/etc/group"]
        if seccomp_fd is not None:
            cmd += ["--seccomp", str(seccomp_fd)]
        cmd += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", ZYGOTE_HOME, "--"]
        return cmd + python

    def zygote_env(self) -> dict[str, str]:
        """The zygote's whole environment: nothing of the grader's."""
        home = ZYGOTE_HOME if self.mode != "none" else os.environ.get("TMPDIR", "/tmp")
        threads = str(max(1, self.threads))
        env = {"PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]), "HOME": home,
               "LANG": "C.UTF-8", "PYTHONHASHSEED": "0", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads,
               "MPLBACKEND": "module://matplotlib_inline.backend_inline", "MPLCONFIGDIR": f"{home}/matplotlib",
               "IPYTHONDIR": f"{home}/ipython", "PYTORCH_NVML_BASED_CUDA_CHECK": "1"}
        kit = {_real(os.path.dirname(root)) for root in _editable_roots()}  # the kit found through PYTHONPATH
        on_path = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and _real(p) in kit]
        if on_path:
            env["PYTHONPATH"] = os.pathsep.join(on_path)
        drivers = cuda_library_dirs()
        if drivers:  # the loader reads its path once, at the zygote's start
            env["LD_LIBRARY_PATH"] = os.pathsep.join(drivers)
        return env

    def accounts(self) -> tuple[bytes, bytes]:
        """/etc/passwd and /etc/group inside: the sandbox's user, and in root mode the zygote's own (uid 0).

        Every uid a process inside runs as has an account: a library may look its user up at import (torch's
        `import torch._dynamo` calls `getpass.getuser()`); a KeyError there leaves a half-imported module behind,
        and every notebook's own import then fails (benchmarks/startup.md, "seen once")."""
        uid = self.uid if self.mode == "root" else 0
        passwd = f"{SANDBOX_UID_NAME}:x:{uid}:{uid}::{WORKDIR}:/bin/false\n"
        group = f"{SANDBOX_UID_NAME}:x:{uid}:\n"
        if uid != 0:
            passwd += f"{ZYGOTE_UID_NAME}:x:0:0::{ZYGOTE_HOME}:/bin/false\n"
            group += f"{ZYGOTE_UID_NAME}:x:0:\n"
        return passwd.encode(), group.encode()

    def go(self, limits: Limits, *, nproc_base: int, threads: int, max_job_frame: int) -> dict:
        """What a forked notebook does before its first cell (the `go` frame's header)."""
        disk = max(1, int(limits.disk_mb))
        shm = max(1, min(64, disk))
        return {
            "k": "go", "mode": self.mode, "uid": self.uid, "network": self.network,
            "workdir": WORKDIR if self.mode != "none" else None,  # none: a fresh temporary folder
            "threads": threads, "blocked": list(BLOCKED), "max_job_frame": max_job_frame,
            "max_outcomes": int(limits.max_outcomes),
            "scratch": {"size_mb": disk, "shm_mb": shm, "inodes": int(limits.max_files),
                        "keep": list(self.layout.under_tmp), "read_only": [ZYGOTE_HOME]},
            "ipc": {"kernel/shmmax": shm << 20, "kernel/shmall": (shm << 20) // 4096, "kernel/shmmni": 64,
                    "kernel/msgmni": 64, "kernel/msgmnb": 65536, "fs/mqueue/queues_max": 16},
            "rlimits": {"memory_mb": int(limits.memory_mb), "file_mb": disk, "open_files": int(limits.open_files),
                        "nproc": nproc_base + int(limits.procs), "msgqueue_bytes": 1 << 20,
                        "address_space": not cuda_possible()},
            "outputs": {"cell_output_bytes": int(limits.cell_output_bytes),
                        "total_output_bytes": int(limits.total_output_bytes),
                        "cell_output_items": int(limits.cell_output_items),
                        "total_output_items": int(limits.total_output_items)},
            "env": self.notebook_env(threads),
        }

    def notebook_env(self, threads: int) -> dict[str, str]:
        """The same variables as stock nbgrader's kernel sees, and nothing of the grader's."""
        home = WORKDIR if self.mode != "none" else os.environ.get("TMPDIR", "/tmp")
        return {"PATH": os.pathsep.join([os.path.dirname(sys.executable), "/usr/bin", "/bin"]),
                "HOME": home, "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": SANDBOX_UID_NAME,
                "MPLBACKEND": "module://matplotlib_inline.backend_inline", "MPLCONFIGDIR": f"{home}/.config",
                "NBGRADER_EXECUTION": "autograde", "ATTNLAB_GRADING": "1", "PYTHONHASHSEED": "0",
                "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}

    def report(self) -> dict[str, str]:
        """What this plan holds, in words (the grading log's `sandbox` and GradeSummary.isolation)."""
        if self.mode == "none":
            return {"mode": "none: NO isolation (Limits.sandbox='none'): the notebook can read what the grader's "
                            "user can read and use the network",
                    "files": "NOT isolated", "network": "host network", "user": f"uid {self.uid} (the grader's own)",
                    "cgroup": self.cgroup_why}
        blocked = seccomp.available()
        return {
            "mode": f"{self.mode}: bubblewrap, a zygote that only forks, one set of namespaces per notebook",
            "files": self.layout.describe() + (f"; hidden inside: {', '.join(self.layout.masks)}"
                                                if self.layout.masks else ""),
            "network": "host network (allowed by limits)" if self.network else
                       "none (own network namespace per notebook, no interface up)",
            "user": (f"uid {self.uid} (unprivileged, this worker's own)" if self.mode == "root"
                     else "the grader's uid in a user namespace, no capabilities"),
            "syscalls": ("no new user namespaces, no keyrings, no memfd (seccomp)" if blocked
                         else f"NOT filtered (no seccomp filter for {os.uname().machine})"),
            "cgroup": self.cgroup_why,
        }


def cuda_possible() -> bool:
    return os.path.exists("/dev/nvidiactl")


# Where NVIDIA's driver puts libcuda.so.1 beside the loader's own path (containers, distributions).
DRIVER_DIRS = ("/usr/local/nvidia/lib64", "/usr/local/nvidia/lib", "/usr/lib/x86_64-linux-gnu", "/usr/lib64",
               "/usr/lib/aarch64-linux-gnu", "/usr/lib/wsl/lib")


def cuda_library_dirs() -> list[str]:
    """The folders holding the NVIDIA driver's libcuda.so.1 (searched, CUDA never initialised); [] without a GPU.

    The notebooks' torch loads the driver with dlopen, which searches LD_LIBRARY_PATH: a driver outside the
    sandbox's /usr (e.g. /usr/local/nvidia/lib64, which the allowlist hides) would be "no NVIDIA driver"."""
    if not cuda_possible():
        return []
    loader_path = [p for p in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
    found: list[str] = []
    for folder in (*loader_path, *DRIVER_DIRS):
        if glob.glob(os.path.join(folder, "libcuda.so*")) and _real(folder) not in found:
            found.append(_real(folder))
    return found


def fresh_uid_block(n: int) -> int:
    """The first of `n` uids that no process uses, no account names, and no other grading run holds."""
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
        base = lo + secrets.randbelow((hi - lo) // 4096) * 4096
        block = range(base, base + n)
        if used.isdisjoint(block) and not any(_has_account(u, pwd) for u in block):
            return base


def _has_account(uid: int, pwd) -> bool:
    try:
        pwd.getpwuid(uid)
        return True
    except KeyError:
        return False

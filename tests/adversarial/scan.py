"""What a notebook can observe of its surroundings: the source of a cell that looks everywhere for a pattern.

`SCANNER` defines `_scan(pattern, places)` in a notebook. For the regular expression `pattern`
(bytes) it counts matches in:

* memory: the process's own writable memory (heap, stacks, anonymous mappings);
* environment: its environment block as the kernel recorded it at exec (/proc/self/stat
  env_start..env_end), which outlives `os.environ.clear()`;
* files: every file on every writable filesystem it can see (from /proc/self/mountinfo);
* processes: every visible process's command line;
* sysv: System V shared memory segments, message queues and semaphores (any, not matches);
* sockets: Unix sockets' names;
* keyring: bytes in the user and session keyrings (x86_64 only).

Patterns are regular expressions such as rb"NB1[0-9a-f]{32}", whose own text never matches,
so the scanner does not find itself.
"""

PLACES = ("memory", "environment", "files", "processes", "sysv", "sockets", "keyring")

SCANNER = r'''
def _scan(pattern, places=("memory", "environment", "files", "processes", "sysv", "sockets", "keyring")):
    import ctypes, os, platform, re
    rx = re.compile(pattern)
    found = dict.fromkeys(places, 0)
    if "memory" in places or "environment" in places:
        mem = os.open("/proc/self/mem", os.O_RDONLY)
        try:
            for line in open("/proc/self/maps").read().splitlines() if "memory" in places else []:
                parts = line.split()
                if not parts[1].startswith("rw") or (len(parts) >= 6 and parts[5].startswith("/")):
                    continue
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                for at in range(lo, hi, 1 << 24):
                    try:
                        found["memory"] += len(rx.findall(os.pread(mem, min(1 << 24, hi - at), at)))
                    except OSError:
                        pass
            if "environment" in places:
                stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
                start, end = int(stat[47]), int(stat[48])  # env_start, env_end: fields 50 and 51 of proc(5)
                found["environment"] = len(rx.findall(os.pread(mem, end - start, start)))
        finally:
            os.close(mem)
    if "files" in places:
        skip = ("proc", "sysfs", "devpts", "cgroup", "cgroup2", "mqueue")
        for line in open("/proc/self/mountinfo").read().splitlines():
            parts = line.split()
            fstype = parts[parts.index("-") + 1]
            if "rw" not in parts[5].split(",") or fstype in skip:
                continue
            for base, dirs, files in os.walk(parts[4]):
                for name in files:
                    try:
                        with open(os.path.join(base, name), "rb") as f:
                            found["files"] += len(rx.findall(f.read(1 << 20)))
                    except OSError:
                        pass
    if "processes" in places:
        for pid in [p for p in os.listdir("/proc") if p.isdigit()]:
            try:
                found["processes"] += len(rx.findall(open(f"/proc/{pid}/cmdline", "rb").read()))
            except OSError:
                pass
    if "sysv" in places:
        for table in ("shm", "msg", "sem"):
            try:
                found["sysv"] += max(0, len(open(f"/proc/sysvipc/{table}").read().splitlines()) - 1)
            except OSError:
                pass
    if "sockets" in places:
        try:
            found["sockets"] = len(rx.findall(open("/proc/net/unix", "rb").read()))
        except OSError:
            pass
    if "keyring" in places and platform.machine() == "x86_64":
        libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(4096)
        for ring in (-4, -3):  # the user and the session keyring: keyctl(KEYCTL_READ)
            n = libc.syscall(250, 11, ring, buf, 4096)
            found["keyring"] += max(n, 0)
    return found
'''

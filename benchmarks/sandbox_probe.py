"""Run Python code where the grader's zygote runs (bubblewrap, seccomp, its environment) and print its traceback.

A diagnostic for a failed warm-up ("the sandbox's warm-up failed: ..."): the grading log gives one line,
this gives the whole traceback of the same import in the same place.

    python benchmarks/sandbox_probe.py                      # import torch._dynamo, then the zygote's warm-up
    python benchmarks/sandbox_probe.py -c "import triton"   # any code
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from autograder.engine import sandbox, seccomp  # noqa: E402
from autograder.engine.worker import _memfd, make_plan  # noqa: E402

DEFAULT = """
import sys, time, traceback
for step in ("import torch", "import torch._dynamo", "from inside import zygote; print(zygote.warm_up()); print(zygote.exercise())"):
    t = time.perf_counter()
    try:
        exec(step)
        print(f"ok   {step} ({time.perf_counter() - t:.1f} s)")
    except BaseException:
        print(f"FAIL {step}"); traceback.print_exc(); sys.stdout.flush()
"""


def main() -> int:
    """Start bubblewrap as the worker starts the zygote, with `code` in place of the zygote's main."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-c", dest="code", default=DEFAULT, help="Python code to run (default: the warm-up, step by step)")
    args = parser.parse_args()
    root = os.geteuid() == 0
    uid = sandbox.fresh_uid_block(1) if root else os.getuid()
    plan = make_plan({"uid": uid, "threads": 1, "limits": {}})
    program, (passwd, group) = seccomp.program(), plan.accounts()
    fds = [_memfd("seccomp", program), _memfd("passwd", passwd), _memfd("group", group)]
    cmd = plan.zygote_command(0, *fds)
    code = f"import sys; sys.path.insert(0, {sandbox.CODE_MOUNT!r})\n" + args.code
    cmd = cmd[: cmd.index("--") + 1] + [sys.executable, "-s", "-c", code]
    print(f"sandbox mode {plan.mode}; {plan.report()}", flush=True)
    return subprocess.run(cmd, pass_fds=fds, env={"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}, timeout=600).returncode


if __name__ == "__main__":
    sys.exit(main())

"""The code that runs inside the sandbox: the zygote, a notebook's processes, the cell runner.

This folder is bind-mounted read-only into the sandbox (the rest of `autograder/` does not
exist there) and imported under its own name, so its modules import only each other
(relative imports), the standard library and the student's stack (attnlab, IPython, torch).

    zygote.py  imports the stack once and only forks: it never holds a job
    child.py   a forked notebook: its own PID, IPC and mount namespaces, private scratch,
               an unprivileged user, rlimits, a clean environment
    runner.py  runs the cells the worker sends, one at a time, and answers with their outputs
    frames.py  the wire format (shared with the grader's side)
"""

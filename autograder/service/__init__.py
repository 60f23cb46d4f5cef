"""The submission service (`autograder serve`): students upload a notebook and read its result, graded at once
by the engine through `Course.grade`, the path of `autograder grade`.

    store     the durable state: uploads, the queue, hashed tokens and sessions (SQLite in WAL mode)
    tokens    per-student and instructor tokens: issue, revoke, list, a CSV for a mail merge
    settings  what the instructor chose: attempts per window, queue length, what a result shows, when
    grader    the thread that grades the queue through `Course.grade`
    views     one attempt as its student may see it (the page and `attnlab.submit` print the same)
    app       the Starlette application; `serve` runs it on uvicorn

docs/security.md states the service's threat model.
"""

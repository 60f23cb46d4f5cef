"""Submit a chapter notebook to your course's submission service and print its result.

    python -m attnlab.submit login --server https://grader.example.edu   # asks for your token, once
    python -m attnlab.submit ch1_parallel_time.ipynb                      # uploads, waits, prints the result

The token comes from the environment variable ATTNLAB_TOKEN, or the file `login` writes
(~/.config/attnlab/submit.json, readable by you only); the server from --server, ATTNLAB_SERVER or
that file. The chapter is read from the file name (ch1_...) unless --chapter says it. The result is
the one the service's page shows. Exit status: 0 graded, 1 not accepted or not graded, 2 usage.

Standard library only: it runs wherever the kit's notebooks do.
"""
from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

CONFIG = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "attnlab" / "submit.json"
CHAPTER = re.compile(r"(ch\d+)(?:_|$)")
MAX_BYTES = 64 << 20  # the service refuses more (collect's cap on one uploaded file)
POLL_S = 0.25


class SubmitError(Exception):
    """Something to tell the student in one line; exit status 1."""


def _printable(text: str) -> str:
    """The server's text without control characters (a terminal runs some of them), line breaks kept."""
    return "".join(ch if ch in "\n\t" or (ch.isprintable()) else "?" for ch in text)


def _saved() -> dict:
    try:
        data = json.loads(CONFIG.read_text())
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _request(method: str, url: str, token: str, body: bytes | None = None, timeout: float = 60.0) -> tuple[int, dict, dict]:
    """(status, JSON body, headers); SubmitError when the server cannot be reached or answers no JSON."""
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Authorization": f"Bearer {token}", "Accept": "application/json",
                                          **({"Content-Type": "application/x-ipynb+json"} if body is not None else {})})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            status, raw, headers = resp.status, resp.read(1 << 20), dict(resp.headers)
    except urllib.error.HTTPError as err:
        status, raw, headers = err.code, err.read(1 << 20), dict(err.headers or {})
    except (urllib.error.URLError, OSError) as err:
        raise SubmitError(f"cannot reach the service at {url.split('/api/')[0]}: {getattr(err, 'reason', err)}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        data = {"error": raw.decode("utf-8", "replace").strip()[:300] or f"HTTP {status}"}
    return status, data if isinstance(data, dict) else {"error": str(data)[:300]}, headers


def _server_and_token(server: str | None) -> tuple[str, str]:
    saved = _saved()
    server = server or os.environ.get("ATTNLAB_SERVER") or saved.get("server")
    token = os.environ.get("ATTNLAB_TOKEN") or saved.get("token")
    if not server:
        raise SubmitError("no server: give --server URL (or run `python -m attnlab.submit login --server URL`)")
    if not token:
        raise SubmitError("no token: run `python -m attnlab.submit login --server URL`, or set ATTNLAB_TOKEN")
    if urllib.parse.urlparse(server).scheme not in ("http", "https"):
        raise SubmitError(f"--server must be an http(s) URL, got {server!r}")
    return server.rstrip("/"), str(token).strip()


def login(server: str, token: str | None = None) -> str:
    """Check the token with the server and save both for later submissions; returns who the server says you are."""
    token = (token or getpass.getpass("Your token (from your instructor's message): ")).strip()
    status, data, _ = _request("GET", f"{server.rstrip('/')}/api/me", token)
    if status != 200:
        raise SubmitError(f"the service refused the token: {data.get('error', status)}")
    CONFIG.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(CONFIG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({"server": server.rstrip("/"), "token": token}, f)
    return str(data.get("student", ""))


def submit(notebook: Path, server: str | None = None, chapter: str | None = None, wait: float = 900.0) -> tuple[bool, str]:
    """Upload `notebook`, wait up to `wait` seconds for its result; (graded, the result as text)."""
    server, token = _server_and_token(server)
    notebook = Path(notebook)
    m = CHAPTER.match(notebook.name)
    chapter = chapter or (m.group(1) if m else None)
    if not chapter:
        raise SubmitError(f"cannot tell the chapter from the name {notebook.name!r}: give --chapter chN")
    try:
        size = notebook.stat().st_size
        if size > MAX_BYTES:
            raise SubmitError(f"{notebook.name} is larger than {MAX_BYTES >> 20} MiB: clear its outputs first")
        data = notebook.read_bytes()
    except OSError as err:
        raise SubmitError(f"cannot read {notebook}: {err.strerror or err}") from None
    status, answer, headers = _request("POST", f"{server}/api/submit/{urllib.parse.quote(chapter)}", token, data)
    if status != 202:
        retry = headers.get("Retry-After")
        raise SubmitError(f"not accepted: {answer.get('error', status)}" + (f" (try again in {retry} s)" if retry else ""))
    upload_id = str(answer.get("id", ""))
    print(f"received: upload {upload_id} of {chapter}; grading...", flush=True)
    deadline = time.monotonic() + wait
    url = f"{server}/api/result/{urllib.parse.quote(upload_id)}?wait=25"  # the server answers once it is graded
    while True:
        status, answer, _ = _request("GET", url, token)
        if status != 200:
            raise SubmitError(f"cannot read the result: {answer.get('error', status)}")
        if answer.get("state") in ("done", "failed") or time.monotonic() > deadline:
            break
        time.sleep(POLL_S)
    text = _printable(str(answer.get("text", "")))
    if answer.get("state") not in ("done", "failed"):
        text += f"\nstill {answer.get('state')} after {wait:g} s: run again later with --result {upload_id}"
    return answer.get("state") == "done", text


def result(upload_id: str, server: str | None = None) -> tuple[bool, str]:
    server, token = _server_and_token(server)
    status, answer, _ = _request("GET", f"{server}/api/result/{urllib.parse.quote(upload_id)}", token)
    if status != 200:
        raise SubmitError(f"cannot read the result: {answer.get('error', status)}")
    return answer.get("state") == "done", _printable(str(answer.get("text", "")))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        if args[:1] == ["login"]:
            p = argparse.ArgumentParser(prog="python -m attnlab.submit login")
            p.add_argument("--server", required=True, help="the service's URL, from your instructor")
            p.add_argument("--token", help=argparse.SUPPRESS)  # tests; a token on a command line shows in `ps`
            a = p.parse_args(args[1:])
            who = login(a.server, a.token or os.environ.get("ATTNLAB_TOKEN"))
            print(f"signed in as {_printable(who)}; saved in {CONFIG}")
            return 0
        p = argparse.ArgumentParser(prog="python -m attnlab.submit",
                                    description="Upload a chapter notebook to the course's service and print its result.")
        p.add_argument("notebook", nargs="?", type=Path)
        p.add_argument("--server", help="the service's URL (default: ATTNLAB_SERVER, or what `login` saved)")
        p.add_argument("--chapter", help="chN (default: from the file name)")
        p.add_argument("--wait", type=float, default=900.0, help="seconds to wait for the result (default 900)")
        p.add_argument("--result", metavar="ID", help="print the result of an earlier upload instead")
        a = p.parse_args(args)
        if a.result:
            ok, text = result(a.result, a.server)
        elif a.notebook is None:
            p.print_usage(sys.stderr)
            return 2
        else:
            ok, text = submit(a.notebook, a.server, a.chapter, a.wait)
        print(text)
        return 0 if ok else 1
    except SystemExit as exc:
        return int(exc.code or 0)
    except SubmitError as err:
        print(f"attnlab.submit: error: {_printable(str(err))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

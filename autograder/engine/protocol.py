"""Frames between grader, worker and sandbox (`inside/frames.py`), and the checks on what a notebook sends.

A notebook's process is the student's: every frame from it is read as data against a fixed
schema (exact keys, exact types, bounded sizes) and only the kinds the worker expects at that
moment are accepted. Anything else is a `ProtocolError`, which costs the notebook the cell
that was running, never anything else.
"""
from __future__ import annotations

from autograder.engine.inside.frames import (
    HEADER_MAX,
    FrameReader,
    Message,
    ProtocolError,
    pack,
    recv_blocking,
    recv_fds,
    send,
    send_fds,
    unpack,
)

__all__ = ["HEADER_MAX", "FrameReader", "Message", "ProtocolError", "pack", "recv_blocking", "recv_fds", "send",
           "send_fds", "unpack", "fields", "report_of", "done_of", "setup_report"]

NAME_MAX = 200


def fields(msg: Message, schema: dict[str, type], blobs: tuple[int, int] = (0, 0)) -> dict:
    """The header's values if it has exactly the keys of `schema` (plus "k") with exactly those types
    and between blobs[0] and blobs[1] blobs; ProtocolError otherwise."""
    header = dict(msg.header)
    header.pop("k", None)
    if set(header) != set(schema):
        raise ProtocolError(f"a {msg.kind!r} message with fields {sorted(header)[:8]}")
    for key, kind in schema.items():
        value = header[key]
        if type(value) is not kind:
            raise ProtocolError(f"{key} of a {msg.kind!r} message is not a {kind.__name__}")
        if kind is str and len(value) > NAME_MAX:
            raise ProtocolError(f"{key} of a {msg.kind!r} message is too long")
        if kind is int and not 0 <= value < 1 << 31:
            raise ProtocolError(f"{key} of a {msg.kind!r} message is out of range")
    if not blobs[0] <= len(msg.blobs) <= blobs[1]:
        raise ProtocolError(f"a {msg.kind!r} message with {len(msg.blobs)} attachments")
    return header


def report_of(msg: Message, max_outcomes: int) -> tuple[str, list[bytes]]:
    """A hidden check's report: (check name, one outcome blob per trial)."""
    name = fields(msg, {"name": str}, (0, max_outcomes))["name"]
    return name, msg.blobs


def done_of(msg: Message, cell: int) -> tuple[bool, bytes]:
    """The end of cell `cell`: (whether it raised, its outputs as JSON bytes)."""
    h = fields(msg, {"cell": int, "error": bool}, (1, 1))
    if h["cell"] != cell:
        raise ProtocolError(f"cell {h['cell']} ended while cell {cell} was running")
    return h["error"], msg.blobs[0]


def setup_report(msg: Message) -> dict[str, str]:
    """What the notebook's init set up (sent before any notebook code runs): {step: words}."""
    if "error" in msg.header:
        raise ProtocolError(f"the sandbox could not be set up: {str(msg.header['error'])[:500]}")
    report = fields(msg, {"report": dict})["report"]
    if len(report) > 16 or not all(isinstance(k, str) and isinstance(v, str) and len(k) < 64 and len(v) < 1000
                                   for k, v in report.items()):
        raise ProtocolError("a malformed setup report")
    return report

"""The one error family of `autograder`: every exception class it defines derives from `AutograderError`.

An `AutograderError` is a problem with the instructor's input or the course (never a student's file:
those are graded and explained, not raised): a one-line message that says what is wrong, and a remedy
that says what to do. The command line (`autograder.cli.main`) catches this one type and prints both;
the Python API (`autograder.course.Course`) raises them unchanged. The message's first line and the
remedy make the one line the command prints (`error: MESSAGE; to fix: REMEDY`); lines after the first
(a log's tail, a list of problems) follow it.

The three classes of `autograder/engine/inside/` stand apart: that code runs inside the sandbox,
where `autograder` cannot be imported (a `ProtocolError` or `SetupError` is told to the worker as
data, which raises its own), and `runner.CellTimeout` is a `BaseException` so that a student's
`except Exception` cannot swallow it.
"""
from __future__ import annotations


class AutograderError(Exception):
    """A clear, user-facing problem: `message` (its first line is what the command line prints) and `remedy`."""

    remedy: str = ""  # what to do about it; a class states its usual one, an instance may state its own

    def __init__(self, message: str = "", remedy: str | None = None) -> None:
        super().__init__(message)
        if remedy is not None:
            self.remedy = remedy

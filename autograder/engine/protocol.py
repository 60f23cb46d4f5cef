"""Framed messages between grader, worker and sandbox: a JSON header plus raw blobs, never pickle.

A frame on the wire is `length (8 bytes, little endian) | header length (4) | JSON header |
blobs`, where the header's `"blobs"` lists the blobs' lengths. Whatever arrives from a
student's process is parsed as data with hard size caps; a malformed frame raises
`ProtocolError` and the reader treats the sender as broken.
"""
from __future__ import annotations

import json
import os
import select
import time
from dataclasses import dataclass, field


class ProtocolError(ValueError):
    """The peer sent something that is not a well-formed frame."""


@dataclass
class Message:
    """One frame: a JSON object `header` and its binary attachments."""

    header: dict
    blobs: list[bytes] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.header.get("k", ""))


def pack(header: dict, blobs: list[bytes] | tuple[bytes, ...] = ()) -> bytes:
    """A frame holding `header` and `blobs`."""
    head = json.dumps({**header, "blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    body = len(head).to_bytes(4, "little") + head + b"".join(blobs)
    return len(body).to_bytes(8, "little") + body


def unpack(body: bytes) -> Message:
    """The message in one frame's body (without its 8-byte length)."""
    try:
        n = int.from_bytes(body[:4], "little")
        header = json.loads(body[4:4 + n].decode())
        lengths = header.pop("blobs", [])
        if not isinstance(header, dict) or not isinstance(lengths, list) \
                or not all(type(x) is int and x >= 0 for x in lengths):
            raise ProtocolError("malformed header")
        blobs, at = [], 4 + n
        for length in lengths:
            blobs.append(body[at:at + length])
            at += length
        if at != len(body):
            raise ProtocolError("blob lengths do not add up")
        return Message(header, blobs)
    except ProtocolError:
        raise
    except Exception as exc:  # noqa: BLE001 - any garbage is one kind of error
        raise ProtocolError(f"malformed frame: {exc}") from None


def send(fd: int, header: dict, blobs: list[bytes] | tuple[bytes, ...] = ()) -> None:
    """Write one frame (blocking or not: waits until the peer has taken all of it)."""
    view = memoryview(pack(header, blobs))
    while view:
        try:
            view = view[os.write(fd, view):]
        except (InterruptedError, BlockingIOError):
            select.select([], [fd], [])


class FrameReader:
    """Reassembles frames from a NON-BLOCKING descriptor; refuses frames over `max_frame` bytes."""

    def __init__(self, fd: int, max_frame: int) -> None:
        self.fd, self.max_frame = fd, max_frame
        self.buffer = bytearray()
        self.eof = False
        self.total = 0
        self.error: str | None = None

    def fill(self) -> None:
        """Read what is available now (call when select says readable); never raises."""
        while not self.eof:
            try:
                chunk = os.read(self.fd, 1 << 20)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.eof = True
                return
            if not chunk:
                self.eof = True
                return
            self.total += len(chunk)
            self.buffer += chunk
            if len(self.buffer) >= 8 and int.from_bytes(self.buffer[:8], "little") > self.max_frame:
                self.error = f"a message of more than {self.max_frame} bytes"
                return
            if len(self.buffer) > 2 * self.max_frame + 8:
                return  # let messages() consume before reading more

    def messages(self) -> list[Message]:
        """The complete, well-formed frames read so far, in order; `error` is set at the first bad one."""
        out = []
        while self.error is None and len(self.buffer) >= 8:
            n = int.from_bytes(self.buffer[:8], "little")
            if n > self.max_frame:
                self.error = f"a message of more than {self.max_frame} bytes"
                break
            if len(self.buffer) < 8 + n:
                break
            try:
                out.append(unpack(bytes(self.buffer[8:8 + n])))
            except ProtocolError as exc:
                self.error = str(exc)
                break
            del self.buffer[:8 + n]
        return out


def recv_blocking(reader: FrameReader, timeout: float | None = None) -> Message | None:
    """The next message from `reader` (None on end of file or timeout)."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        ready = reader.messages()
        if reader.error and not ready:
            raise ProtocolError(reader.error)
        if ready:
            if len(ready) > 1:  # keep the rest for the next call
                reader.buffer[:0] = b"".join(pack(m.header, m.blobs) for m in ready[1:])
            return ready[0]
        if reader.eof:
            return None
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if wait == 0.0:
            return None
        r, _, _ = select.select([reader.fd], [], [], wait)
        if r:
            reader.fill()

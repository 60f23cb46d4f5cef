"""Framed messages: a JSON header plus raw blobs, never pickle (both sides of the sandbox use this file).

A frame on the wire is `length (8 bytes, little endian) | header length (4) | JSON header |
blobs`, where the header's `"blobs"` lists the blobs' lengths. A reader refuses frames over
its `max_frame` bytes and anything malformed (`ProtocolError`); what a frame *means* is
checked by the receiver (`autograder.engine.protocol` for frames from a notebook).
Standard library only: this module runs inside the sandbox too.
"""
from __future__ import annotations

import array
import json
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field

HEADER_MAX = 1 << 20  # a header is small: cell sources and names, never data


class ProtocolError(ValueError):
    """The peer sent something that is not a well-formed frame."""


@dataclass
class Message:
    """One frame: a JSON object `header` and its binary attachments."""

    header: dict
    blobs: list[bytes] = field(default_factory=list)
    pid: int | None = None  # the sender's pid in the receiver's namespace, when the kernel said so

    @property
    def kind(self) -> str:
        return str(self.header.get("k", ""))


def pack(header: dict, blobs: list[bytes] | tuple[bytes, ...] = ()) -> bytes:
    """A frame holding `header` and `blobs`."""
    head = json.dumps({**header, "blobs": [len(b) for b in blobs]}, separators=(",", ":")).encode()
    body = len(head).to_bytes(4, "little") + head + b"".join(blobs)
    return len(body).to_bytes(8, "little") + body


def _strict_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number here")


def _strict_int(text: str) -> int:
    if len(text) > 21:  # 64-bit values and no more: nothing slow to convert, nothing to overflow
        raise ValueError("integer too large")
    return int(text)


def _strict_float(text: str) -> float:
    value = float(text)
    if value != value or value in (float("inf"), float("-inf")):
        raise ValueError("non-finite number")
    return value


def unpack(body: bytes) -> Message:
    """The message in one frame's body (without its 8-byte length)."""
    try:
        n = int.from_bytes(body[:4], "little")
        if n > HEADER_MAX or n > len(body) - 4:
            raise ProtocolError("header length out of range")
        header = json.loads(body[4:4 + n].decode(), parse_int=_strict_int, parse_float=_strict_float,
                            parse_constant=_strict_constant)
        if not isinstance(header, dict):
            raise ProtocolError("the header is not an object")
        lengths = header.pop("blobs", [])
        if not isinstance(lengths, list) or not all(type(x) is int and x >= 0 for x in lengths):
            raise ProtocolError("malformed blob lengths")
        if 4 + n + sum(lengths) != len(body):
            raise ProtocolError("blob lengths do not add up")
        blobs, at = [], 4 + n
        for length in lengths:
            blobs.append(body[at:at + length])
            at += length
        return Message(header, blobs)
    except ProtocolError:
        raise
    except Exception as exc:  # noqa: BLE001 - any garbage is one kind of error
        raise ProtocolError(f"malformed frame: {str(exc)[:200]}") from None


def send(fd: int, header: dict, blobs: list[bytes] | tuple[bytes, ...] = (), timeout: float | None = None) -> None:
    """Write one frame (blocking or not: waits until the peer has taken all of it, at most `timeout` seconds,
    then TimeoutError)."""
    view = memoryview(pack(header, blobs))
    deadline = None if timeout is None else time.monotonic() + timeout
    while view:
        try:
            view = view[os.write(fd, view):]
        except (InterruptedError, BlockingIOError):
            wait = None if deadline is None else deadline - time.monotonic()
            if wait is not None and wait <= 0:
                raise TimeoutError("the peer stopped reading") from None
            select.select([], [fd], [], wait)


class FrameReader:
    """Reassembles frames from a NON-BLOCKING descriptor (a blocking one would hang in `fill`); refuses
    frames over `max_frame` bytes.

    `credentials=True` (a Unix socket with SO_PASSCRED): each message carries the pid of the
    process that wrote its first bytes, as the kernel reports it (a sender cannot lie about it).
    """

    def __init__(self, fd: int, max_frame: int, credentials: bool = False) -> None:
        self.fd, self.max_frame, self.credentials = fd, max_frame, credentials
        self.buffer = bytearray()
        self.eof = False
        self.error: str | None = None
        self.pending: list[Message] = []  # parsed, not yet handed out (recv_blocking)
        self._consumed = 0  # bytes taken out of the buffer so far
        self._senders: list[tuple[int, int | None]] = []  # (offset where a sender's bytes start, its pid)

    def _read(self) -> tuple[bytes, int | None]:
        if not self.credentials:
            return os.read(self.fd, 1 << 20), None
        sock = socket.socket(fileno=self.fd)
        try:
            data, ancillary, _, _ = sock.recvmsg(1 << 20, socket.CMSG_SPACE(12))
        finally:
            sock.detach()
        pid = None
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS and len(payload) >= 12:
                pid = struct.unpack("iII", payload[:12])[0]
        return data, pid

    def fill(self) -> None:
        """Read what is available now (call when select says readable); never raises."""
        while not self.eof and self.error is None:
            try:
                chunk, pid = self._read()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                self.eof = True
                return
            if not chunk:
                self.eof = True
                return
            if self.credentials and (not self._senders or self._senders[-1][1] != pid):
                self._senders.append((self._consumed + len(self.buffer), pid))
            self.buffer += chunk
            if len(self.buffer) >= 8 and int.from_bytes(self.buffer[:8], "little") > self.max_frame:
                self.error = f"a message of more than {self.max_frame} bytes"
                return
            if len(self.buffer) > self.max_frame + 8:
                return  # let messages() consume before reading more

    def messages(self) -> list[Message]:
        """The complete, well-formed frames read so far, in order; `error` is set at the first bad one."""
        out, self.pending = self.pending, []
        while self.error is None and len(self.buffer) >= 8:
            n = int.from_bytes(self.buffer[:8], "little")
            if n > self.max_frame:
                self.error = f"a message of more than {self.max_frame} bytes"
                break
            if len(self.buffer) < 8 + n:
                break
            try:
                msg = unpack(bytes(self.buffer[8:8 + n]))
            except ProtocolError as exc:
                self.error = str(exc)
                break
            msg.pid = self._sender(self._consumed)
            out.append(msg)
            del self.buffer[:8 + n]
            self._consumed += 8 + n
        return out

    def _sender(self, offset: int) -> int | None:
        """The pid that wrote the byte at `offset` (None without credentials)."""
        while len(self._senders) > 1 and self._senders[1][0] <= offset:
            del self._senders[0]
        return self._senders[0][1] if self._senders and self._senders[0][0] <= offset else None


def recv_blocking(reader: FrameReader, timeout: float | None = None) -> Message | None:
    """The next message from `reader` (None on end of file or timeout); ProtocolError on garbage."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        ready = reader.messages()
        if ready:
            reader.pending = ready[1:]  # kept for the next call
            return ready[0]
        if reader.error:
            raise ProtocolError(reader.error)
        if reader.eof:
            return None
        wait = None if deadline is None else max(0.0, deadline - time.monotonic())
        if wait == 0.0:
            return None
        r, _, _ = select.select([reader.fd], [], [], wait)
        if r:
            reader.fill()


def send_fds(sock: socket.socket, header: dict, fds: list[int]) -> None:
    """One small frame with open descriptors attached (SCM_RIGHTS)."""
    data = pack(header)
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


def recv_fds(sock: socket.socket, max_fds: int = 4) -> tuple[Message | None, list[int]]:
    """The next frame sent by `send_fds` and its descriptors (None at end of file)."""
    data, ancillary, _, _ = sock.recvmsg(HEADER_MAX, socket.CMSG_SPACE(max_fds * 4))
    fds: list[int] = []
    for level, kind, payload in ancillary:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.extend(array.array("i", payload[:len(payload) - len(payload) % 4]))
    if not data:
        for fd in fds:
            os.close(fd)
        return None, []
    if len(data) < 8 or int.from_bytes(data[:8], "little") != len(data) - 8:
        for fd in fds:
            os.close(fd)
        raise ProtocolError("a control frame must arrive in one piece")
    return unpack(data[8:]), fds

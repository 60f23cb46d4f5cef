"""Plain data on the wire: nested tensors, numbers and strings, never pickle.

The grader and a student's process exchange trial inputs and outputs as a JSON skeleton
plus raw arrays (`numpy.save(..., allow_pickle=False)`), so nothing the student's
process writes is ever executed as code by the grader.
"""
from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

Plain = Any  # None | bool | int | float | str | Tensor | list[Plain] | tuple[Plain, ...] | dict[str, Plain]


class WireError(ValueError):
    """The data cannot be sent: an unsupported type or a malformed message."""


def encode(obj: Plain) -> bytes:
    """Nested plain data -> bytes (a length-prefixed JSON skeleton, then .npy blobs)."""
    arrays: list[np.ndarray] = []
    return frame(_skeleton(obj, arrays, depth=0), arrays)


def frame(skeleton: object, arrays: list[np.ndarray]) -> bytes:
    """A skeleton and its arrays as the message's bytes: the skeleton's JSON length (8 bytes, little-endian), the
    JSON, then each array as .npy (what `decode` reads; the skeleton's placeholders name the arrays)."""
    head = json.dumps(skeleton).encode()
    buf = io.BytesIO()
    buf.write(len(head).to_bytes(8, "little"))
    buf.write(head)
    for a in arrays:
        np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


DECODE_FACTOR = 2  # decoding holds at most this many times the message's bytes ...
DECODE_SLACK = 1 << 20  # ... plus this much ...
DECODE_CAP = 512 << 20  # ... and never more than this, whatever the message
MAX_SKELETON = 1 << 20  # bytes of JSON skeleton (an honest one is a few KiB: one node per tensor or number)
NODE_BYTES = 256  # what one skeleton node costs against the budget (a Python object or two)


def decode_budget(size: int) -> int:
    """Bytes a message of `size` bytes may decode to: min(DECODE_FACTOR * size + DECODE_SLACK, DECODE_CAP)."""
    return min(DECODE_FACTOR * size + DECODE_SLACK, DECODE_CAP)


def decode(data: bytes, *, record_device: bool = False, budget: int | None = None) -> Plain:
    """bytes from `encode` -> nested plain data, in time and memory linear in `len(data)`.

    Tensors go back to the device they were recorded on, or, with `record_device`, stay on
    the CPU wrapped as `Received(tensor, device_type)` so a judge can check the device.
    Each stored array is read once, in place (one copy of the message, no copy per array), as
    the dtype it was stored in (a bfloat16 tensor, stored as float32, is cast once); a tensor
    referenced many times is one tensor. Everything decoded counts against `budget` bytes
    (default `decode_budget(len(data))`): past it, WireError.
    """
    try:
        left = [decode_budget(len(data)) if budget is None else budget]
        n = int.from_bytes(data[:8], "little")
        if not 0 <= n <= min(MAX_SKELETON, len(data) - 8):
            raise WireError(f"the skeleton's length {n} is out of range (at most {MAX_SKELETON} bytes)")
        skeleton = json.loads(bytes(data[8:8 + n]).decode())
        buf = bytearray(data[8 + n:])  # the one copy: writable, so tensors may share it
        _spend(left, len(buf))
        arrays = _arrays(buf)
        return _Rebuild(arrays, record_device, left).plain(skeleton)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - any malformed input is one error kind
        raise WireError(f"malformed message: {str(exc)[:200]}") from None


def _spend(left: list[int], nbytes: int) -> None:
    left[0] -= nbytes
    if left[0] < 0:
        raise WireError("the message decodes to more data than its size allows")


def _arrays(buf: bytearray) -> list[np.ndarray]:
    """The .npy arrays stored one after another in `buf`, each a view of it (no copy)."""
    view, arrays, at = memoryview(buf), [], 0
    while at < len(buf):
        found = _saved_header(buf, at)
        if found is not None:
            shape, fortran, dtype, start = found
        else:  # any other header: numpy's own reader (the same checks follow)
            stream = io.BytesIO(view[at:at + 65536 + 16])  # a header is at most 64 KiB
            version = np.lib.format.read_magic(stream)
            if version == (1, 0):
                shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
            elif version in ((2, 0), (3, 0)):
                shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
            else:
                raise WireError(f"unknown .npy version {version}")
            start = at + stream.tell()
        if fortran or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None \
                or not dtype.isnative or dtype.kind not in "biufc":
            raise WireError(f"unsupported stored array ({dtype}, fortran order {fortran})")
        count = 1
        for d in shape:
            count *= int(d)
        if start + count * dtype.itemsize > len(buf):
            raise WireError("a stored array is larger than the message")
        arrays.append(np.frombuffer(buf, dtype=dtype, count=count, offset=start).reshape(shape))
        at = start + count * dtype.itemsize
    return arrays


# the version 1.0 header `np.save` writes for a C-ordered array of plain numbers: {'descr': '<f4',
# 'fortran_order': False, 'shape': (2, 3), } padded with spaces to a newline; a number without leading zeros
_SAVED = re.compile(rb"\{'descr': '([<>|][biufc][1-9][0-9]?)', 'fortran_order': False, "
                    rb"'shape': \(((?:(?:0|[1-9][0-9]{0,17}), )*(?:0|[1-9][0-9]{0,17})?|(?:0|[1-9][0-9]{0,17}),)\), \} *\n")
_DTYPES: dict[bytes, np.dtype] = {}


def _saved_header(buf: bytearray, at: int) -> tuple[tuple[int, ...], bool, np.dtype, int] | None:
    """(shape, fortran order, dtype, where the data starts) of the array at `at` when its header is exactly as
    `np.save` writes a plain array (read without numpy's `ast.literal_eval` of it); None for any other header."""
    if buf[at:at + 8] != b"\x93NUMPY\x01\x00":
        return None
    end = at + 10 + int.from_bytes(buf[at + 8:at + 10], "little")
    m = _SAVED.fullmatch(buf, at + 10, end) if end <= len(buf) else None
    if m is None:
        return None
    descr = m[1]
    dtype = _DTYPES.get(descr)
    if dtype is None:
        dtype = _DTYPES.setdefault(descr, np.lib.format.descr_to_dtype(descr.decode()))
    text = m[2].decode()
    shape = tuple(int(d) for d in text.rstrip(",").split(", ")) if text else ()
    return shape, False, dtype, end


@dataclass(frozen=True)
class Received:
    """A tensor received from another process, with the device type it was produced on."""

    tensor: torch.Tensor
    device_type: str


def _skeleton(obj: Plain, arrays: list[np.ndarray], depth: int) -> Any:
    if depth > 32:
        raise WireError("nesting deeper than 32 levels")
    if obj is None or isinstance(obj, (bool, str)):
        return {"v": obj}
    if isinstance(obj, (int, float)) and type(obj) in (int, float):
        if isinstance(obj, float) and not np.isfinite(obj):
            return {"f": repr(obj)}
        return {"v": obj}
    if type(obj) is torch.Tensor or (isinstance(obj, torch.Tensor) and not _is_subclass(obj)):
        t = obj.detach()
        arrays.append(_to_numpy(t))
        return {"t": len(arrays) - 1, "dtype": str(t.dtype).removeprefix("torch."),
                "device": t.device.type, "shape": list(t.shape)}
    if isinstance(obj, torch.Tensor):
        raise WireError(f"a tensor subclass ({type(obj).__name__}) is not a plain torch.Tensor")
    if isinstance(obj, np.ndarray) and obj.dtype != object:
        arrays.append(np.ascontiguousarray(obj))
        return {"a": len(arrays) - 1}
    if type(obj) in (list, tuple):
        return {"l" if type(obj) is list else "u": [_skeleton(x, arrays, depth + 1) for x in obj]}
    if type(obj) is dict and all(type(k) is str for k in obj):
        return {"d": {k: _skeleton(v, arrays, depth + 1) for k, v in obj.items()}}
    raise WireError(f"cannot send an object of type {type(obj).__name__}")


def _is_subclass(t: torch.Tensor) -> bool:
    return type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.cpu()
    if t.dtype == torch.bfloat16:
        t = t.float()
    return np.ascontiguousarray(t.resolve_conj().resolve_neg().numpy())


class _Rebuild:
    """Plain data from a skeleton: every node costs NODE_BYTES; a stored array becomes one tensor per
    (array, dtype, device), shared by every reference to it."""

    def __init__(self, arrays: list[np.ndarray], record: bool, left: list[int]) -> None:
        self.arrays, self.record, self.left = arrays, record, left
        self.tensors: dict[tuple[int, str, str], torch.Tensor] = {}

    def plain(self, s: Any) -> Plain:
        _spend(self.left, NODE_BYTES)
        if not isinstance(s, dict) or len(s) == 0:
            raise WireError("malformed skeleton")
        if "v" in s:
            return s["v"]
        if "f" in s:
            return float(s["f"])
        if "t" in s:
            t = self.tensor(s["t"], s["dtype"], s["device"] if not self.record else "cpu")
            if list(t.shape) != s["shape"]:
                raise WireError("tensor shape does not match its header")
            return Received(t, s["device"]) if self.record else t
        if "a" in s:
            return self.arrays[s["a"]]
        if "l" in s:
            return [self.plain(x) for x in s["l"]]
        if "u" in s:
            return tuple(self.plain(x) for x in s["u"])
        if "d" in s:
            return {k: self.plain(v) for k, v in s["d"].items()}
        raise WireError("malformed skeleton")

    def tensor(self, index: int, dtype_name: str, device: str) -> torch.Tensor:
        """Stored array `index` as a tensor of `dtype_name` on `device`, made once."""
        key = (index, dtype_name, device)
        if key not in self.tensors:
            if type(index) is not int or not 0 <= index < len(self.arrays):
                raise WireError("a tensor refers to no stored array")
            dtype = getattr(torch, str(dtype_name), None)
            if not isinstance(dtype, torch.dtype):
                raise WireError(f"unknown dtype {str(dtype_name)[:40]!r}")
            t = torch.from_numpy(self.arrays[index])
            if dtype != t.dtype:
                if not (dtype == torch.bfloat16 and t.dtype == torch.float32):  # encode stores bfloat16 as float32
                    raise WireError(f"a {str(t.dtype)[6:]} array is sent as {str(dtype)[6:]}: tensors travel in their own dtype")
                _spend(self.left, t.numel() * 2)
                t = t.to(dtype)
            if device != "cpu":
                t = t.to(device)
            self.tensors[key] = t
        return self.tensors[key]

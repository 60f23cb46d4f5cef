"""Plain data on the wire: nested tensors, numbers and strings, never pickle.

The grader and a student's process exchange trial inputs and outputs as a JSON skeleton
plus raw arrays (`numpy.save(..., allow_pickle=False)`), so nothing the student's
process writes is ever executed as code by the grader.
"""
from __future__ import annotations

import io
import json
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
    skeleton = _skeleton(obj, arrays, depth=0)
    head = json.dumps(skeleton).encode()
    buf = io.BytesIO()
    buf.write(len(head).to_bytes(8, "little"))
    buf.write(head)
    for a in arrays:
        np.save(buf, a, allow_pickle=False)
    return buf.getvalue()


def decode(data: bytes, *, record_device: bool = False) -> Plain:
    """bytes from `encode` -> nested plain data.

    Tensors go back to the device they were recorded on, or, with `record_device`, stay on
    the CPU wrapped as `Received(tensor, device_type)` so a judge can check the device.
    """
    try:
        n = int.from_bytes(data[:8], "little")
        skeleton = json.loads(data[8:8 + n].decode())
        buf = io.BytesIO(data[8 + n:])
        arrays = []
        while buf.tell() < len(data) - 8 - n:
            arrays.append(np.load(buf, allow_pickle=False))
        return _rebuild(skeleton, arrays, record_device)
    except WireError:
        raise
    except Exception as exc:  # noqa: BLE001 - any malformed input is one error kind
        raise WireError(f"malformed message: {exc}") from None


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


def _rebuild(s: Any, arrays: list[np.ndarray], record: bool) -> Plain:
    if not isinstance(s, dict) or len(s) == 0:
        raise WireError("malformed skeleton")
    if "v" in s:
        return s["v"]
    if "f" in s:
        return float(s["f"])
    if "t" in s:
        t = torch.from_numpy(arrays[s["t"]].copy()).to(getattr(torch, s["dtype"]))
        if list(t.shape) != s["shape"]:
            raise WireError("tensor shape does not match its header")
        if record:
            return Received(t, s["device"])
        return t.to(s["device"]) if s["device"] != "cpu" else t
    if "a" in s:
        return arrays[s["a"]]
    if "l" in s:
        return [_rebuild(x, arrays, record) for x in s["l"]]
    if "u" in s:
        return tuple(_rebuild(x, arrays, record) for x in s["u"])
    if "d" in s:
        return {k: _rebuild(v, arrays, record) for k, v in s["d"].items()}
    raise WireError("malformed skeleton")

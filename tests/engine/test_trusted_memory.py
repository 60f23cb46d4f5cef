"""The trusted side's memory: decoding a student's message is linear in its size, and the processes that
parse or judge student data run under a memory bound. Each test fails with its bound removed."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from attnlab import wire
from autograder.engine import membound


def _message(skeleton: object, *arrays: np.ndarray) -> bytes:
    """A wire message with a skeleton written by hand (what a student's process may send instead of `wire.encode`)."""
    return wire.frame(skeleton, list(arrays))


def _tensor(index: int, dtype: str, shape: list[int]) -> dict:
    return {"t": index, "dtype": dtype, "device": "cpu", "shape": shape}


def test_encode_and_decode_round_trip_every_dtype() -> None:
    values = {"f32": torch.randn(3, 4), "f64": torch.randn(2, dtype=torch.float64), "bf16": torch.randn(5).bfloat16(),
              "i64": torch.arange(6).view(2, 3), "bool": torch.tensor([True, False]), "empty": torch.zeros(0, 3),
              "nums": [1, 2.5, float("-inf"), None, "x"], "array": np.arange(4.0)}
    got = wire.decode(wire.encode(values))
    for key in ("f32", "f64", "bf16", "i64", "bool", "empty"):
        assert got[key].dtype == values[key].dtype and torch.equal(got[key], values[key]), key
    assert got["nums"][:2] == [1, 2.5] and got["nums"][2] == float("-inf")
    assert np.array_equal(got["array"], values["array"])


def test_a_tensor_referenced_many_times_is_decoded_once() -> None:
    """One 1 MiB array referenced 1000 times is one tensor: every reference shares the message's memory."""
    a = np.random.default_rng(0).standard_normal(1 << 17).astype(np.float64)  # 1 MiB
    blob = _message({"l": [_tensor(0, "float64", [1 << 17])] * 1000}, a)
    got = wire.decode(blob, record_device=True)
    pointers = {r.tensor.data_ptr() for r in got}
    assert len(pointers) == 1, "every reference is the same tensor, not a copy"
    assert torch.equal(got[0].tensor, torch.from_numpy(a))


def test_a_stored_array_is_never_widened() -> None:
    """A float16 array named float64 (four times the memory per reference) is refused; bfloat16 stored as
    float32 (what encode writes) is the one cast, and it narrows."""
    blob = _message(_tensor(0, "float64", [4]), np.zeros(4, dtype=np.float16))
    with pytest.raises(wire.WireError, match="travel in their own dtype"):
        wire.decode(blob)
    blob = _message(_tensor(0, "int64", [4]), np.zeros(4, dtype=np.uint8))
    with pytest.raises(wire.WireError):
        wire.decode(blob)


def test_decoding_stops_at_its_budget() -> None:
    """Every skeleton node and every decoded byte counts: a message that decodes past
    min(DECODE_FACTOR * size + DECODE_SLACK, DECODE_CAP) is refused, whatever it is made of."""
    nodes = {"l": [{"v": 0}] * 40_000}  # 400 KB of skeleton, 40 000 objects
    blob = _message(nodes)
    assert wire.decode_budget(len(blob)) < 40_000 * wire.NODE_BYTES
    with pytest.raises(wire.WireError, match="more data than its size allows"):
        wire.decode(blob)
    assert wire.decode(blob, budget=50_000 * wire.NODE_BYTES) == [0] * 40_000
    assert wire.decode_budget(1 << 40) == wire.DECODE_CAP
    with pytest.raises(wire.WireError):
        wire.decode(_message({"v": 0}, np.zeros(4)), budget=16)


def test_malformed_stored_arrays_are_refused() -> None:
    good = _message(_tensor(0, "float32", [8]), np.zeros(8, dtype=np.float32))
    for bad in (good[:-4],  # shorter than its header says
                _message(_tensor(0, "float32", [2, 2]), np.asfortranarray(np.arange(4, dtype=np.float32).reshape(2, 2))),
                _message(_tensor(0, "float32", [8]), np.zeros(8, dtype=">f4")),
                _message(_tensor(1, "float32", [8]), np.zeros(8, dtype=np.float32)),
                _message(_tensor(0, "Tensor", [8]), np.zeros(8, dtype=np.float32)),
                _message(_tensor(0, "float32", [9]), np.zeros(8, dtype=np.float32))):
        with pytest.raises(wire.WireError):
            wire.decode(bad)
    long_skeleton = (wire.MAX_SKELETON + 1).to_bytes(8, "little") + b" " * (wire.MAX_SKELETON + 1)
    with pytest.raises(wire.WireError, match="skeleton"):
        wire.decode(long_skeleton)


def test_the_header_np_save_writes_is_read_as_numpy_reads_it_and_any_other_by_numpy() -> None:
    """`wire` reads the .npy header `np.save` writes without numpy's literal_eval: the same shape and dtype for every
    dtype and shape sent; a header written otherwise (a leading zero, Fortran order) is left to numpy's reader."""
    import io
    import itertools

    for dtype, shape in itertools.product(("<f4", "<f8", "<f2", "|i1", "<i8", "|u1", "|b1", "<c8"),
                                          [(), (0,), (1,), (12,), (2, 3), (3, 0, 2), (1, 1, 1, 10)]):
        stored = io.BytesIO()
        np.save(stored, np.zeros(shape, dtype=dtype), allow_pickle=False)
        raw = bytearray(stored.getvalue())
        stream = io.BytesIO(raw)
        np.lib.format.read_magic(stream)
        assert wire._saved_header(raw, 0) == (*np.lib.format.read_array_header_1_0(stream), stream.tell())
    text = b"{'descr': '<f4', 'fortran_order': False, 'shape': (01,), }"
    header = text + b" " * (53 - len(text)) + b"\n"
    assert wire._saved_header(bytearray(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header), 0) is None
    stored = io.BytesIO()
    np.save(stored, np.asfortranarray(np.zeros((2, 2))), allow_pickle=False)
    assert wire._saved_header(bytearray(stored.getvalue()), 0) is None


_ALLOCATE = """
import sys
from autograder.engine import membound
bound = membound.MemoryBound.from_argv(sys.argv[1:])
if bound is not None:
    bound.enter()
try:
    hog = bytearray(256 << 20)
    print("allocated 256 MiB")
except MemoryError:
    print("MemoryError")
"""


@pytest.mark.parametrize("bounded", [True, False])
def test_a_bounded_process_cannot_allocate_past_its_bound(bounded: bool) -> None:
    """The helper the judge and the instructor's commands use: RLIMIT_DATA here (no cgroup v2 on the test
    machines), a cgroup's memory.max where there is one. The unbounded run shows the allocation is possible."""
    bound = membound.memory_bound(64 << 20, "test", find=False)
    assert bound.cgroup is None and "RLIMIT_DATA 64 MiB" in bound.why
    words = bound.argv() if bounded else []
    out = subprocess.run([sys.executable, "-c", _ALLOCATE, *words], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == ("MemoryError" if bounded else "allocated 256 MiB"), out.stderr[-2000:]


@pytest.mark.slow
def test_the_judge_process_runs_under_its_memory_bound() -> None:
    from autograder.engine.judging import JudgeClient

    client = JudgeClient(memory_bytes=1536 << 20)
    try:
        assert client.known(["ch1.self_attention", "nope"]) == ["nope"]
        limits = open(f"/proc/{client.proc.pid}/limits").read()
        line = next(x for x in limits.splitlines() if x.startswith("Max data size"))
        assert (1536 << 20) <= int(line.split()[3]) <= (1536 << 20) + (1 << 30), line  # on top of its imports
    finally:
        client.close()

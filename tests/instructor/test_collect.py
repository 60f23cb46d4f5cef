"""`autograder collect` against what a student can upload: identity, zips, sizes, names, times.

Every attack here is one a student controls through the file they upload to the LMS; each
test shows it stopped. The course is Chapter 1's source and release made in-process
(coursenb's release transform, no nbgrader run), so this file is fast.
"""
from __future__ import annotations

import datetime as dt
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder import cli, collect, course, notebook_guard
from autograder.collect import layouts
from coursenb import cells
from coursenb.chapters import select
from tests import nbgrader_support as nbs

CHAPTER = select(["ch1"])[0]
NB = CHAPTER.notebook
# A process's own peak memory in KiB: VmHWM belongs to its address space since exec. (ru_maxrss does not: Linux
# carries it over exec, so a child of a big test process would report its parent's peak.)
PEAK = "print('PEAK', next(int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')))"


@pytest.fixture(scope="module")
def course_dir(tmp_path_factory) -> Path:
    """A Chapter-1 course: config, source and release notebooks (no gradebook yet)."""
    root = tmp_path_factory.mktemp("collect") / "course"
    source = course.source_notebook(CHAPTER)
    for folder, nb in (("source", source), ("release", cells.release(source))):
        (root / folder / "ch1").mkdir(parents=True)
        nbformat.write(nb, root / folder / "ch1" / f"{NB}.ipynb")
    (root / "nbgrader_config.py").write_text(course.config_text())
    return root


def release_bytes(course_dir: Path) -> bytes:
    return (course_dir / "release" / "ch1" / f"{NB}.ipynb").read_bytes()


def lms_zip(path: Path, files: dict[str, bytes], when=(2025, 1, 30, 12, 0, 0)) -> Path:
    """A Canvas-style download zip of `files` (entry name -> bytes)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, when), data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def student_zip(files: dict[str, bytes], when=(2020, 1, 1, 0, 0, 0)) -> bytes:
    """A zip a student made (its entry names and times are theirs to choose)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, when), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def zip_bomb(name: str, mib: int) -> bytes:
    """A one-member zip whose member inflates to `mib` MiB of zeros: 1 MiB of zeros deflated once with a full
    flush (so the block stands alone) and repeated, then a final empty block. (Its CRC is left 0: a reader
    that stops at its cap never gets that far.)"""
    import struct
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    data = block * mib + b"\x03\x00"  # a final, empty fixed-Huffman block
    size, name_b = mib << 20, name.encode()
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x5A21, 0, len(data), size, len(name_b), 0)
    central = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x5A21, 0, len(data), size,
                          len(name_b), 0, 0, 0, 0, 0o644 << 16, 0)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 1, 1, len(central) + len(name_b),
                      len(local) + len(name_b) + len(data), 0)
    return local + name_b + data + central + name_b + end


def submitted(course_dir: Path) -> list[str]:
    root = course_dir / "submitted"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.ipynb")) if root.is_dir() else []


def fresh(course_dir: Path, tmp_path: Path) -> Path:
    return nbs.course_copy(course_dir, tmp_path / "course")


# ----------------------------------------------------------------------------- identity


def test_a_students_zip_cannot_place_files_for_others(course_dir, tmp_path) -> None:
    """mallory uploads a zip whose entries are named like ada's Canvas file and ada's nbgrader path."""
    course_dir = fresh(course_dir, tmp_path)
    good = release_bytes(course_dir)
    evil = good.replace(b"YOUR CODE HERE", b"MALLORY WAS HERE")
    inner = student_zip({f"ada_1001_1_{NB}.ipynb": evil, f"ada/ch1/{NB}.ipynb": evil,
                         f"../../ada/ch1/{NB}.ipynb": evil})
    src = lms_zip(tmp_path / "canvas.zip", {f"ada_1001_100_{NB}.ipynb": good,
                                            "mallory_1066_200_work.zip": inner})
    result = collect.collect(course_dir, [src])
    assert (course_dir / "submitted" / "ada" / "ch1" / f"{NB}.ipynb").read_bytes() == good
    assert submitted(course_dir) == [f"ada/ch1/{NB}.ipynb"]
    assert {p.student for p, _ in result.placed} == {"ada"}
    # each entry names another owner from inside mallory's upload: a problem of mallory's, never ada's file
    nested = [reason for _, reason in result.problems if "named like ada's" in reason]
    assert len(nested) == 3 and all(r.startswith("mallory's upload holds") for r in nested), result.problems


def test_bad_student_ids_are_refused_and_nothing_leaves_submitted(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    nb = release_bytes(course_dir)
    src = lms_zip(tmp_path / "layout.zip", {f"../ch1/{NB}.ipynb": nb, f"./ch1/{NB}.ipynb": nb,
                                            f"..\\..\\ch1/{NB}.ipynb": nb, f"/abs/ch1/{NB}.ipynb": nb,
                                            f"\x1b[31mred/ch1/{NB}.ipynb": nb, f"ok-id/ch1/{NB}.ipynb": nb})
    result = collect.collect(course_dir, [src])
    assert submitted(course_dir) == [f"abs/ch1/{NB}.ipynb", f"ok-id/ch1/{NB}.ipynb"]  # "/abs" is just a name
    assert not (course_dir / "ch1").exists() and not (course_dir.parent / "ch1").exists()
    assert sum("bad student id" in reason for _, reason in result.problems) == 3  # "." is dropped: "wrong name"
    assert sorted(p.name for p in course_dir.iterdir()) == ["collected.json", "nbgrader_config.py", "record",
                                                             "release", "source", "submitted"]  # record: attempts
    assert sorted(p.name for p in (course_dir / "record" / "attempts").iterdir()) == ["abs", "ok-id"]


def test_terminal_escapes_never_reach_the_terminal(capsys, course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    nb = release_bytes(course_dir)
    src = lms_zip(tmp_path / "canvas.zip", {f"\x1b]0;owned\x07eve_7_1_{NB}.ipynb": nb,
                                            "eve_7_2_\x1b[2J\x1b[31mnotes\u202e.txt": b"x",
                                            f"eve/ch1/\x9b31m{NB}.ipynb": nb})
    assert cli.main(["collect", str(src), "--course", str(course_dir)]) == 0
    out, err = capsys.readouterr()
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in out + err
    assert "\\x1b" in out  # shown, escaped, so the instructor sees what was there


# ----------------------------------------------------------------------------- a new LMS is one class


class Acme(layouts.Layout):
    """A made-up LMS that names every upload `u<user id>@@<file name>`: the whole of what adding it takes."""

    kind = "acme"
    expected = "Acme's u<user id>@@<file name>"
    NAME = re.compile(r"u(?P<user>\d+)@@(?P<file>.+)")

    @classmethod
    def claim(cls, parts, i, entry, ctx):
        if i != len(parts) - 1 or not (m := cls.NAME.fullmatch(parts[i])):
            return None
        return layouts.owned(f"acme{m['user']}", m["file"], (), entry.timestamp, identity=layouts.Identity(cls.kind, m["user"]))


def test_a_new_lms_layout_is_one_class(course_dir, tmp_path, monkeypatch) -> None:
    """Registered in the one list of layouts, Acme's names are read, a renamed notebook is placed by its content, and
    a Canvas upload whose file name is Acme's for another user is that user's nested owner: not placed."""
    monkeypatch.setattr(layouts, "LAYOUTS", [*layouts.LAYOUTS[:-1], Acme, layouts.LAYOUTS[-1]])
    course_dir = fresh(course_dir, tmp_path)
    nb = release_bytes(course_dir)
    src = lms_zip(tmp_path / "acme.zip", {f"u42@@{NB}.ipynb": nb, "u43@@my homework.ipynb": nb,
                                          f"mallory_7_1_u42@@{NB}.ipynb": nb})
    result = collect.collect(course_dir, [src])
    assert submitted(course_dir) == [f"acme42/ch1/{NB}.ipynb", f"acme43/ch1/{NB}.ipynb"]
    assert {str(p.identity) for p, _ in result.placed} == {"acme:42", "acme:43"}
    assert any("named like acme42's (acme layout)" in reason for _, reason in result.problems), result.problems


# ----------------------------------------------------------------------------- zips


def test_a_zip_bomb_costs_neither_memory_nor_disk(course_dir, tmp_path) -> None:
    """A 2 MiB upload that inflates to 2 GiB, inside the LMS zip: refused after the cap, in a subprocess whose
    peak memory is measured."""
    course_dir = fresh(course_dir, tmp_path)
    bomb = zip_bomb(f"{NB}.ipynb", 2048)
    assert len(bomb) < 3 * (1 << 20), f"the bomb is {len(bomb)} bytes with this zlib"
    src = lms_zip(tmp_path / "canvas.zip", {"bomber_9_1_homework.zip": bomb, f"bomber_9_2_{NB}.ipynb": release_bytes(course_dir)})
    code = f"""
import sys
from pathlib import Path
from autograder import collect
r = collect.collect(Path({str(course_dir)!r}), [Path({str(src)!r})])
{PEAK}
for origin, reason in r.problems: print("PROBLEM", reason)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, cwd=course.ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    peak_kib = int(next(line.split()[1] for line in proc.stdout.splitlines() if line.startswith("PEAK")))
    assert peak_kib < 600 * 1024, f"peak memory {peak_kib} KiB"
    assert "PROBLEM larger than 64 MiB uncompressed: not read" in proc.stdout, proc.stdout[-2000:]
    disk = sum(p.stat().st_size for p in course_dir.rglob("*") if p.is_file())
    assert disk < 5 * (1 << 20), f"{disk} bytes on disk"
    assert f"bomber/ch1/{NB}.ipynb" in submitted(course_dir)  # the student's other upload still counts


def test_zip_caps_count_inflated_bytes_not_headers(tmp_path) -> None:
    data = student_zip({"a.ipynb": b"x" * 5000, "b.ipynb": b"y" * 10})
    entries = list(collect.read_zip(data, "up.zip", caps=collect.Caps(member_bytes=1000)))
    assert [(e.path.name, e.problem is None) for e in entries] == [("a.ipynb", False), ("b.ipynb", True)]
    entries = list(collect.read_zip(data, "up.zip", caps=collect.Caps(members=1)))
    assert len(entries) == 1 and "more than the 1 collect reads" in entries[0].problem
    entries = list(collect.read_zip(b"PK\x03\x04 not really", "up.zip"))
    assert "not a readable zip" in entries[0].problem


def test_deeply_nested_json_is_a_bad_file_not_a_crash(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    deep = b'{"cells": [], "metadata": {"x": ' + b"[" * 200_000 + b"]" * 200_000 + b"}}"
    src = lms_zip(tmp_path / "canvas.zip", {f"deep_5_1_{NB}.ipynb": deep, "deeper_6_1_renamed.ipynb": deep})
    result = collect.collect(course_dir, [src])
    assert submitted(course_dir) == []
    reasons = [reason for _, reason in result.problems]
    assert sum("nests more than 64 levels deep" in r for r in reasons) == 2, reasons
    assert notebook_guard.nesting(json.loads('{"a": "[[[[", "b": [[1], {"c": "\\"]"}]}')) == 3


# ----------------------------------------------------------------------------- times and late marks


def test_a_late_upload_stays_late_and_keeps_its_real_time(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    nb = release_bytes(course_dir)
    inner = student_zip({f"{NB}.ipynb": nb}, when=(2020, 1, 1, 0, 0, 0))  # the student's clock says 2020
    src = lms_zip(tmp_path / "canvas.zip", {"late_LATE_3_9_mywork.zip": inner, f"ontime_4_9_{NB}.ipynb": nb},
                  when=(2025, 2, 2, 23, 0, 0))
    collect.collect(course_dir, [src])
    records, _ = collect.Manifest.read(course_dir)
    late = records[f"late/ch1/{NB}"]
    assert late.lms_late and late.uploaded_at == "2025-02-02T23:00:00Z"
    assert not records[f"ontime/ch1/{NB}"].lms_late
    stamp = (course_dir / "submitted" / "late" / "ch1" / "timestamp.txt").read_text()
    assert stamp == "2025-02-02 23:00:00.000000 UTC"
    from nbgrader.utils import parse_utc

    assert parse_utc(stamp) == dt.datetime(2025, 2, 2, 23, 0, 0)
    # collecting the same zip again keeps the mark; an on-time-looking re-download does not erase it
    collect.collect(course_dir, [src])
    assert collect.Manifest.read(course_dir)[0][f"late/ch1/{NB}"].lms_late


def test_zip_times_are_in_the_course_time_zone(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    with (course_dir / "nbgrader_config.py").open("a") as f:
        f.write("\nc.Deadlines.timezone = 'Europe/Zurich'\n")
    src = lms_zip(tmp_path / "canvas.zip", {f"zed_4_9_{NB}.ipynb": release_bytes(course_dir)},
                  when=(2025, 1, 31, 23, 30, 0))
    collect.collect(course_dir, [src])
    assert collect.Manifest.read(course_dir)[0][f"zed/ch1/{NB}"].uploaded_at == "2025-01-31T22:30:00Z"


# ----------------------------------------------------------------------------- placing by content


def test_a_renamed_notebook_is_placed_by_its_content(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    nb = nbformat.read(course_dir / "release" / "ch1" / f"{NB}.ipynb", as_version=4)
    stripped = nbformat.from_dict(nb)
    for cell in stripped.cells:  # metadata lost (pasted into a fresh notebook): the locked cells still tell
        cell.metadata = {}
    foreign = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch\nprint('my own notebook, not the course')")])
    src = lms_zip(tmp_path / "canvas.zip", {
        "linus_11_1_ch1_final_version.ipynb": nbformat.writes(nb).encode(),
        "pasted_12_1_Untitled.ipynb": nbformat.writes(stripped).encode(),
        "other_13_1_Untitled.ipynb": nbformat.writes(foreign).encode(),
    })
    result = collect.collect(course_dir, [src])
    assert submitted(course_dir) == [f"linus/ch1/{NB}.ipynb", f"pasted/ch1/{NB}.ipynb"]
    notes = dict(result.notes)
    linus = next(v for k, v in notes.items() if "linus" in k)
    assert linus.startswith(f"ch1_final_version.ipynb placed as ch1/{NB}.ipynb by its content")
    assert "graded-cell id" in linus
    other = next(r for o, r in result.problems if "other_13" in o)
    assert "wrong name Untitled.ipynb" in other and "match no notebook of this course" in other
    records, unplaced = collect.Manifest.read(course_dir)
    assert records[f"linus/ch1/{NB}"].how == "content"
    assert [u.student for u in unplaced] == ["other"] and "match no notebook" in unplaced[0].reason


def test_unplaced_files_are_kept_in_the_manifest_by_origin(course_dir, tmp_path) -> None:
    course_dir = fresh(course_dir, tmp_path)
    src = lms_zip(tmp_path / "canvas.zip", {f"ken_12_1_{NB}.py": b"print(1)"})
    collect.collect(course_dir, [src])
    collect.collect(course_dir, [src])  # the same source again: no second entry
    _, unplaced = collect.Manifest.read(course_dir)
    assert [(u.student, u.reason) for u in unplaced] == [("ken", f"not a notebook ({NB}.py)")]
    json.loads((course_dir / "collected.json").read_text())  # plain JSON for a person to read


def test_every_upload_seen_is_in_the_manifest_with_its_time_and_reason(course_dir, tmp_path) -> None:
    """A placed notebook is a record; every other upload (an earlier duplicate, a file that is no notebook) is kept
    with its uploader's identity, its time and why it was not placed."""
    course_dir = fresh(course_dir, tmp_path)
    nb = release_bytes(course_dir)
    src = lms_zip(tmp_path / "canvas.zip", {f"ada_1001_1_{NB}.ipynb": b"{}", f"ada_1001_2_{NB}-1.ipynb": nb,
                                            "ada_1001_3_notes.txt": b"x"}, when=(2025, 1, 30, 12, 0, 0))
    collect.collect(course_dir, [src])
    records, unplaced = collect.Manifest.read(course_dir)
    assert records[f"ada/ch1/{NB}"].identity == "canvas:1001" and records[f"ada/ch1/{NB}"].file == f"ada_1001_2_{NB}-1.ipynb"
    why = {u.origin.rsplit(":", 1)[1]: u for u in unplaced}
    assert why[f"ada_1001_1_{NB}.ipynb"].reason.startswith(f"duplicate of ada/{NB}: kept the later")
    assert why["ada_1001_3_notes.txt"].reason == "not a notebook (notes.txt)"
    assert all(u.identity == "canvas:1001" and u.uploaded_at == "2025-01-30T12:00:00Z" for u in unplaced)


def test_memory_measure_works_here() -> None:
    """The bomb test's measure sees a real allocation, and not the memory of the process that started it."""
    big = bytearray(700 << 20)  # this process's peak, which ru_maxrss would pass on through fork and exec
    big[::4096] = b"x" * len(big[::4096])
    for size_mib, low, high in ((0, 0, 250), (300, 250, 600)):
        code = f"b = bytearray({size_mib} << 20); b[::4096] = b'x' * len(b[::4096])\n{PEAK}"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120).stdout
        peak_kib = int(out.split()[1])
        assert low * 1024 <= peak_kib < high * 1024, (size_mib, peak_kib)
    del big


def test_a_name_in_either_unicode_form_names_one_student() -> None:
    """A name unpacked on macOS is decomposed (NFD: `e` then a combining accent), and Python lowers `İ` to `i` with a
    combining dot: each names the student its composed form names, never a refused id or another student's
    (on main, Moodle's decomposed `José` was `jose` and `İlker` and an exchange folder `josé` were refused)."""
    import unicodedata
    from pathlib import PurePosixPath

    from autograder.collect.sources import Entry

    ctx = layouts.Context({"ch1": ["nb.ipynb"]})

    def student(name: str) -> str | None:
        return layouts.owner_of(Entry(name, PurePosixPath(name), b"", None), ctx).student

    for name, expected in (("José_6_assignsubmission_file_/nb.ipynb", "josé"), ("josé/ch1/nb.ipynb", "josé"),
                           ("İlker Öz_5_assignsubmission_file_/nb.ipynb", "ilkeröz")):
        assert student(name) == student(unicodedata.normalize("NFD", name)) == expected, name

"""Uploads that attack `autograder collect`: one `SourceAttack` per way a student reaches another's submission.

Each attack builds one source (an LMS zip or an exchange folder) in which mallory's own upload
names other students (ada, who submitted honestly in the same batch, and grace, who never
submitted) through what is hers to choose: her folders, the names inside her zip, a backslash
in her file name. Collect must place ada's honest notebook exactly, create nothing for grace,
and name mallory's files as problems. `bombs` builds the memory attack: nested zip bombs beside
honest uploads.
"""
from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

WHEN = (2025, 1, 30, 12, 0, 0)
LATER = (2025, 1, 30, 13, 0, 0)  # mallory's uploads come last: a "kept the later" rule would pick them


def honest(release: bytes) -> bytes:
    """ada's own notebook: the release, marked."""
    return release.replace(b"YOUR CODE HERE", b"ADA'S OWN WORK")


def evil(release: bytes) -> bytes:
    """What mallory wants placed as another student's."""
    return release.replace(b"YOUR CODE HERE", b"MALLORY WAS HERE")


def zip_of(files: dict[str, bytes], when=WHEN) -> bytes:
    """A zip of `files` (entry name -> bytes), every entry at `when`."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, when), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _canvas_backslashes(tmp: Path, nb: str, release: bytes) -> Path:
    """Canvas keeps a file's name as uploaded: mallory names hers `ada\\ch1\\<notebook>` (read as a folder by a
    collect that turns backslashes into slashes)."""
    path = tmp / "canvas.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"ada_1001_100_{nb}.ipynb", WHEN), honest(release))
        zf.writestr(zipfile.ZipInfo(f"mallory_1066_201_ada\\ch1\\{nb}.ipynb", LATER), evil(release))
        zf.writestr(zipfile.ZipInfo(f"mallory_1066_202_grace\\ch1\\{nb}.ipynb", LATER), evil(release))
    return path


def _exchange_subfolders(tmp: Path, nb: str, release: bytes) -> Path:
    """nbgrader's submit copies a student's subfolders: mallory's assignment folder holds `ada/ch1/<notebook>`
    and `grace/ch1/<notebook>`, with a later timestamp.txt beside each."""
    root = tmp / "submitted"
    for folder, data, stamp in (("ada/ch1", honest(release), "2025-01-30 12:00:00.000000 UTC"),
                                ("mallory/ch1/ada/ch1", evil(release), "2025-01-30 13:00:00.000000 UTC"),
                                ("mallory/ch1/grace/ch1", evil(release), "2025-01-30 13:00:00.000000 UTC")):
        (root / folder).mkdir(parents=True)
        (root / folder / f"{nb}.ipynb").write_bytes(data)
        (root / folder / "timestamp.txt").write_text(stamp)
    return root


def _moodle_nested(tmp: Path, nb: str, release: bytes) -> Path:
    """Moodle keeps a student's folders: mallory's submission folder holds `ada/ch1/<notebook>`."""
    path = tmp / "moodle.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"Ada_556_assignsubmission_file_/{nb}.ipynb", WHEN), honest(release))
        zf.writestr(zipfile.ZipInfo(f"Mallory_555_assignsubmission_file_/ada/ch1/{nb}.ipynb", LATER), evil(release))
        zf.writestr(zipfile.ZipInfo(f"Mallory_555_assignsubmission_file_/grace/ch1/{nb}.ipynb", LATER), evil(release))
    return path


def _nested_zip(tmp: Path, nb: str, release: bytes) -> Path:
    """A zip in a subfolder of mallory's assignment folder, named like no LMS download, whose entries are other
    students' nbgrader paths (a collect that reads such a zip as the LMS's takes its names as owners)."""
    root = tmp / "submitted"
    (root / "ada" / "ch1").mkdir(parents=True)
    (root / "ada" / "ch1" / f"{nb}.ipynb").write_bytes(honest(release))
    (root / "mallory" / "ch1" / "extra").mkdir(parents=True)
    (root / "mallory" / "ch1" / "extra" / "more.zip").write_bytes(
        zip_of({f"ada/ch1/{nb}.ipynb": evil(release), f"grace/ch1/{nb}.ipynb": evil(release)}, when=LATER))
    return root


def _unpacked_upload(tmp: Path, nb: str, release: bytes) -> Path:
    """The instructor unpacked the Canvas download and the students' zips in it, each into a folder of its Canvas
    name: mallory's zip held `ada/ch1/<notebook>` and `grace/ch1/<notebook>`."""
    root = tmp / "download"
    (root / "mallory_1066_200_work" / "ada" / "ch1").mkdir(parents=True)
    (root / "mallory_1066_200_work" / "grace" / "ch1").mkdir(parents=True)
    (root / f"ada_1001_100_{nb}.ipynb").write_bytes(honest(release))
    for who in ("ada", "grace"):
        (root / "mallory_1066_200_work" / who / "ch1" / f"{nb}.ipynb").write_bytes(evil(release))
    return root


def _blackboard_name_in_name(tmp: Path, nb: str, release: bytes) -> Path:
    """Blackboard keeps a file's name as uploaded after `<assignment>_<user>_attempt_<time>_`: mallory names hers
    `x_ada_attempt_<earlier time>_<notebook>` (a greedy parse reads the last user and time: ada's, on time)."""
    path = tmp / "blackboard.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"ch1_ada_attempt_2025-01-30-12-00-00_{nb}.ipynb", WHEN), honest(release))
        for who in ("ada", "grace"):
            zf.writestr(zipfile.ZipInfo(f"ch1_mallory_attempt_2025-01-30-13-00-00_x_{who}_attempt_2025-01-30-12-30-00_"
                                        f"{nb}.ipynb", LATER), evil(release))
    return path


def canvas_name_shift(tmp: Path, nb: str, release: bytes) -> Path:
    """mallory (user 1066) sets her Canvas name to `ada_1001`: her upload `ada_1001_1066_200_<notebook>` reads, at its
    shortest, as user 1001's (ada's) attachment 1066, later than ada's own."""
    path = tmp / "canvas.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"ada_1001_100_{nb}.ipynb", WHEN), honest(release))
        zf.writestr(zipfile.ZipInfo(f"ada_1001_1066_200_{nb}.ipynb", LATER), evil(release))
    return path


def lms_name_as_another(tmp: Path, nb: str, release: bytes) -> Path:
    """A Canvas download where mallory (user 1066) named her files so that another LMS's layout reads them:
    `x_grace_attempt_<time>_<notebook>` (Blackboard's upload of grace's, who never submitted: on main it created
    her submission) and `x_1_assignsubmission_file_<notebook>` (Moodle's participant 1's: a student
    `mallory1066201x` collect created)."""
    path = tmp / "canvas.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(f"ada_1001_100_{nb}.ipynb", WHEN), honest(release))
        zf.writestr(zipfile.ZipInfo(f"mallory_1066_200_x_grace_attempt_2025-01-30-12-30-00_{nb}.ipynb", LATER),
                    evil(release))
        zf.writestr(zipfile.ZipInfo(f"mallory_1066_201_x_1_assignsubmission_file_{nb}.ipynb", LATER), evil(release))
    return path


@dataclass(frozen=True)
class SourceAttack:
    """A source in which mallory's upload names ada and grace; `build(tmp, notebook name, release bytes)`."""

    name: str
    build: Callable[[Path, str, bytes], Path]
    why: str


OWNERSHIP = [
    SourceAttack("canvas_backslashes", _canvas_backslashes, "a backslash in a Canvas file name is a character"),
    SourceAttack("exchange_subfolders", _exchange_subfolders, "the exchange's top folder is the owner, not the innermost"),
    SourceAttack("moodle_nested", _moodle_nested, "Moodle's submission folder is the owner"),
    SourceAttack("nested_zip", _nested_zip, "a zip inside a student's folder is that student's upload"),
    SourceAttack("unpacked_upload", _unpacked_upload, "a folder under a Canvas name is that upload's"),
    SourceAttack("blackboard_name_in_name", _blackboard_name_in_name, "Blackboard's user and time come first"),
]


def zeros_zip(names: list[str], mib: int) -> bytes:
    """A zip whose every member (one per name) inflates to `mib` MiB of zeros: 1 MiB of zeros deflated once with a
    full flush (so the block stands alone), repeated, then a final empty block; its CRC is true, so a reader that
    reads a member whole accepts it."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = c.compress(bytes(1 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    data, size, crc = block * mib + b"\x03\x00", mib << 20, 0  # 0x03 0x00: a final, empty fixed-Huffman block
    for _ in range(mib):
        crc = zlib.crc32(bytes(1 << 20), crc)
    out, central = bytearray(), bytearray()
    for name in names:
        n = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x5A21, crc, len(data), size, len(n), 0) + n + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x5A21, crc, len(data), size,
                               len(n), 0, 0, 0, 0, 0o644 << 16, offset) + n
    return bytes(out + central + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(names), len(names), len(central),
                                             len(out), 0))


def bombs(tmp: Path, nb: str, release: bytes, uploads: int = 2, members: int = 24, mib: int = 48) -> Path:
    """A Canvas zip with `uploads` students' zips, each of `members` notebooks that inflate to `mib` MiB (under the
    per-file cap: a collect that keeps what it inflates holds uploads x members x mib), beside honest uploads
    (ada's notebook, and alan's inside a zip of his own)."""
    files = {f"ada_1001_1_{nb}.ipynb": honest(release),
             "alan_1002_2_mywork.zip": zip_of({f"{nb}.ipynb": honest(release).replace(b"ADA", b"ALAN")})}
    for k in range(uploads):
        files[f"bomber{k}_{2000 + k}_{10 + k}_homework.zip"] = zeros_zip([f"part{j}/{nb}.ipynb" for j in range(members)], mib)
    path = tmp / "bombs.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED) as zf:
        for name, data in files.items():
            zf.writestr(zipfile.ZipInfo(name, WHEN), data)
    return path

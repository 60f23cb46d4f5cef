"""The student kit as the release ships it: its files, and the zip the LMS and the book hand out.

Kept apart from `autograder.course` so that what reads the kit (the book's leak audit) depends on
this and `coursenb` alone.
"""
from __future__ import annotations

import zipfile
from pathlib import Path

from coursenb.chapters import ROOT


def write_release_zip(notebooks: list[Path], out: Path) -> Path:
    """The student notebooks (flat: the names students must submit), the student kit attnlab/ (its
    source, README and pyproject.toml: `pip install ./attnlab` works from the unzipped folder) and a
    README.md with the exact commands. Reproducible: the same inputs give the same bytes."""
    out.parent.mkdir(parents=True, exist_ok=True)
    kit = ROOT / "attnlab"
    readme = (kit / "README.md").read_text(encoding="utf-8")
    if notebooks:  # the README's examples name a notebook of this zip
        readme = readme.replace("ch1_parallel_time.ipynb", notebooks[0].name)
    readme += "\n## The notebooks in this folder\n\n" + "".join(f"- `{nb.name}`\n" for nb in notebooks)
    files = {nb.name: nb.read_bytes() for nb in notebooks}
    files.update({f"attnlab/{rel}": (kit / rel).read_bytes() for rel in kit_files(kit)})
    files["README.md"] = readme.encode()
    tmp = out.with_name(f".{out.name}.tmp")
    with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, files[name])
    tmp.replace(out)
    return out


def kit_files(kit: Path) -> list[str]:
    """The kit's distributable files, relative to `kit`: its Python source, README.md and pyproject.toml
    (never build outputs, egg-info, caches or hidden files)."""
    found = []
    for path in sorted(kit.rglob("*")):
        rel = path.relative_to(kit)
        if not path.is_file() or any(part.startswith(".") or part in {"build", "dist", "__pycache__"}
                                     or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.suffix == ".py" or rel.as_posix() in {"README.md", "pyproject.toml"}:
            found.append(rel.as_posix())
    return found

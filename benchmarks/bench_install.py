"""What installing the student kit costs, printed as figures (the sizes attnlab/README.md and front/students.md state).

    python3 benchmarks/bench_install.py [--keep DIR]

In a scratch folder: a fresh virtual environment of this Python, `pip download ./attnlab` (every wheel
the README's one command fetches, with pip's configured indexes: give it the CPU index with
PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu where it is reachable), then `pip install`
from those wheels alone. Prints the download (all wheels, PyTorch's alone), the environment's size on
disk before and after (PyTorch's folder alone), the PyTorch that was installed and the platform. Several
minutes, mostly pip (10 on this 2-core machine at load 10). Last run (Linux x86-64, Python 3.11.7, torch
2.13.0+cpu from the CPU index's wheel): 110 wheels, 294 MB, torch's 192 MB; the venv 26 MB fresh, 1355 MB
with the kit, torch's folder 791 MB.
"""
from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parent.parent / "attnlab"


def disk_mb(path: Path) -> float:
    """Megabytes (10^6 bytes) that `path` takes on disk, as `du` counts them (hard links once)."""
    return int(subprocess.run(["du", "-sk", str(path)], capture_output=True, text=True, check=True)
               .stdout.split()[0]) * 1024 / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary one)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="attnlab-install-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        wheels, venv = root / "wheels", root / "venv"
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", str(KIT), "-d", str(wheels)], check=True)
        files = [f for f in wheels.iterdir() if f.is_file()]
        torch = [f for f in files if f.name.startswith("torch-")]
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        before = disk_mb(venv)
        py = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-index", "--find-links", str(wheels), str(KIT)],
                       check=True)
        version, where = subprocess.run([str(py), "-c", "import torch; print(torch.__version__); print(torch.__path__[0])"],
                                        capture_output=True, text=True, check=True).stdout.split()
        print(f"platform {platform.system()} {platform.machine()}, Python {platform.python_version()}, torch {version}")
        print(f"download: {len(files)} wheels, {sum(f.stat().st_size for f in files) / 1e6:.0f} MB; "
              + ", ".join(f"{f.name} {f.stat().st_size / 1e6:.0f} MB" for f in torch))
        print(f"on disk: the fresh venv {before:.0f} MB, with the kit installed {disk_mb(venv):.0f} MB, "
              f"torch's folder {disk_mb(Path(where)):.0f} MB")


if __name__ == "__main__":
    main()

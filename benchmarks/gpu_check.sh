#!/usr/bin/env bash
# On a machine with a CUDA GPU and a Python that already holds torch (no .venv): run every chapter on
# CUDA, then grade the bundled example class with the engine on that machine, and write what a CPU run
# is compared with. Nothing is downloaded: the packages the GPU machine lacks travel as wheels.
#
# Usage (from the repository root):  bash benchmarks/gpu_check.sh OUT_DIR
#   SKIP_SETUP=1 SKIP_CHAPTERS=1 WORKERS=2 TAG=cpu PYTHON=.venv/bin/python: the CPU side of the comparison
#   CHAPTERS="ch1_ ch7_" SKIP_GRADING=1: those chapters only, no grading
#   .whl/   wheels of the packages the machine lacks (pip download --python-version ... -d .whl ...)
#   .deb/   bubblewrap's Debian package, unpacked into / where bwrap is missing (the grader's sandbox)
# Writes OUT_DIR/chapters.tsv (chapter, seconds, status), OUT_DIR/cells_gpu.csv (the graded class,
# per cell), OUT_DIR/gpu_check.log. Compare cells_gpu.csv with a CPU run's
#   autograder export --format csv --cells  (benchmarks/compare_cells.py).
set -uo pipefail
OUT="${1:?usage: gpu_check.sh OUT_DIR}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
case "$PWD" in  # the sandbox gives each notebook a private /tmp: the project must live elsewhere
    /tmp/*) rm -rf /opt/attnbook && cp -a "$PWD" /opt/attnbook && cd /opt/attnbook ;;
esac
ROOT="$PWD"
PY="${PYTHON:-python3}"
exec > >(tee "$OUT/gpu_check.log") 2>&1
t0=$SECONDS
echo "== set-up: wheels, the project (editable), bubblewrap"
if [ "${SKIP_SETUP:-0}" = 1 ]; then :; else
if [ -d .whl ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check .whl/*.whl || exit 1
fi
"$PY" -m pip install -q --no-index --no-deps --no-build-isolation --disable-pip-version-check -e ./attnlab -e . || exit 1
if ! command -v bwrap >/dev/null && [ -d .deb ]; then
    for f in .deb/bubblewrap_*.deb; do dpkg -x "$f" /; done
fi
"$PY" -m ipykernel install --sys-prefix --name python3 >/dev/null 2>&1
fi
BIN="$(dirname "$(command -v "$PY")")"
export PATH="$BIN:$PATH" MPLBACKEND=Agg PYTHONHASHSEED=0
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
"$PY" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), torch.cuda.is_available() and torch.cuda.get_device_name(0))"
echo "== set-up took $((SECONDS - t0)) s"
echo "== the zygote's imports, step by step, in the sandbox (benchmarks/sandbox_probe.py)"
"$PY" benchmarks/sandbox_probe.py 2>&1 | tail -40

if [ "${SKIP_CHAPTERS:-0}" != 1 ]; then
echo "== every chapter executed on CUDA (hidden checks judged locally), in parallel"
NB="$ROOT/.gpu_nb"
rm -rf "$NB"; mkdir -p "$NB"
"$PY" -m coursenb.chapters --out "$NB" >/dev/null || exit 1
"$PY" - "$NB" "$OUT/chapters.tsv" <<'PYCODE'
import concurrent.futures as cf, os, pathlib, sys, time, traceback
import nbformat
from nbclient import NotebookClient

nb_dir, out = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])

def run(indexed):
    index, path = indexed
    time.sleep(3 * index)  # kernels started at once can draw the same free port (seen: ZMQError, a dead kernel)
    nb = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    try:
        NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
        status = "ok"
    except Exception as e:  # one chapter's failure is reported, the others still run
        status = "FAILED: " + (str(e).strip().splitlines() or [type(e).__name__])[-1][:300]
    seconds = time.perf_counter() - start
    if path.stem.startswith(("ch1_", "ch7_")):  # the two timing plots that name the kernel (few files come back)
        (out.parent / "notebooks").mkdir(exist_ok=True)
        nbformat.write(nb, out.parent / "notebooks" / path.name)  # executed, figures included
    words = ("cuda", "backend", "flash", "fused", "efficient", "cudnn", "scaled_dot_product_attention:")
    devices = sorted({line for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])
                      for line in o.get("text", "").splitlines() if any(w in line.lower() for w in words)})[:6]
    return path.stem, seconds, status, " | ".join(devices)

only = os.environ.get("CHAPTERS", "").split()  # e.g. CHAPTERS="ch1_ ch7_": those chapters only
paths = [p for p in sorted(nb_dir.glob("ch*.ipynb")) if not only or p.stem.startswith(tuple(only))]
with cf.ThreadPoolExecutor(len(paths)) as pool:
    rows = list(pool.map(run, enumerate(paths)))
out.write_text("chapter\tseconds\tstatus\tcuda lines\n" + "".join(f"{c}\t{s:.1f}\t{st}\t{d}\n" for c, s, st, d in rows))
for c, s, st, d in rows:
    print(f"{c:24s} {s:7.1f} s  {st}  {d[:400]}")
PYCODE
fi

[ "${SKIP_GRADING:-0}" = 1 ] && { echo "== gpu_check done in $((SECONDS - t0)) s"; exit 0; }
echo "== the example class graded by the engine on this machine (8 workers)"
C="$ROOT/.gpu_course/course"
rm -rf "$ROOT/.gpu_course"; mkdir -p "$ROOT/.gpu_course"
AG="$BIN/autograder"
"$AG" release --course "$C" >/dev/null || exit 1
"$AG" deadlines --course "$C" --due "2025-01-31 23:00" --late per-day --per-day 10% --cap 50% --grace 15 >/dev/null
"$AG" example-class --course "$C" --zip "$ROOT/.gpu_course/example_class.zip" >/dev/null || exit 1
"$AG" collect --course "$C" "$ROOT/.gpu_course/example_class.zip" | tail -3
g0=$SECONDS
"$AG" grade --course "$C" --workers "${WORKERS:-8}" | tail -8
echo "== graded in $((SECONDS - g0)) s"
"$AG" export --course "$C" --format csv --cells -o "$OUT/cells_${TAG:-gpu}.csv"
"$AG" gradebook --course "$C" | tail -20
echo "== gpu_check done in $((SECONDS - t0)) s"

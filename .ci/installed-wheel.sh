#!/usr/bin/env bash
# The tool as a user installs it: build the wheel, install it (not editable) into a fresh virtual
# environment, and use it from a folder outside the checkout, with none of the checkout's sources on
# sys.path and no optional extras. Every command's --help, then the README's quick start and the
# commands a newcomer runs first. Fails on any traceback or build deprecation warning.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
say() { printf '\n== %s\n' "$*"; }

say "build the wheel"
# From a copy of the working tree (tracked and untracked-not-ignored files): setuptools writes
# build/ and *.egg-info beside the sources, and nothing in the checkout is touched.
mkdir "$work/src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/src" 2>/dev/null)
python3 -m venv "$work/build-env"
"$work/build-env/bin/python" -m pip install -q --upgrade pip build
"$work/build-env/bin/python" -m build --wheel --outdir "$work/dist" "$work/src" > "$work/build.log" 2>&1 \
  || { cat "$work/build.log"; exit 1; }
if grep -nEi "deprecat|BuildBackendWarning|SetuptoolsWarning" "$work/build.log"; then
  echo "the build printed deprecation warnings (above)"; exit 1
fi
wheel="$(ls "$work"/dist/skillbase-*.whl)"

say "install $(basename "$wheel") into a fresh environment"
python3 -m venv "$work/user"
"$work/user/bin/python" -m pip install -q --upgrade pip
"$work/user/bin/python" -m pip install -q "$wheel"
export PATH="$work/user/bin:$PATH"
unset PYTHONPATH
mkdir "$work/outside" && cd "$work/outside"
python - <<PY
import skillbase, sys
assert "site-packages" in skillbase.__file__, skillbase.__file__
assert not any(p.startswith("$repo") for p in sys.path if p), sys.path
print("skillbase", skillbase.__version__, "from", skillbase.__file__)
PY

say "every command's --help, each in its own process"
python - <<'PY'
import subprocess, sys, click
from skillbase.cli import cli
from skillbase.docgen import _commands
paths = [p for p, _ in _commands(cli, click.Context(cli, info_name="skillbase"), [])]
for path in [[], *paths]:
    out = subprocess.run(["skillbase", *path, "--help"], capture_output=True, text=True)
    if out.returncode != 0 or "Traceback" in out.stderr or not out.stdout.startswith("Usage:"):
        sys.exit(f"skillbase {' '.join(path)} --help failed ({out.returncode}):\n{out.stdout}{out.stderr}")
print(f"{len(paths) + 1} commands answered --help")
PY
skillbase --version

say "the README quick start: copy an example, advise from its saved H200 profile"
skillbase examples list
skillbase examples copy naive_sgemm
skillbase advise --report naive_sgemm/naive_sgemm.h200.ncu-rep.xz --source naive_sgemm/naive_sgemm.cu
skillbase advise --report naive_sgemm/naive_sgemm.h200.ncu-rep.xz --source naive_sgemm/naive_sgemm.cu --json \
  | python -c "import json, sys; d = json.load(sys.stdin); assert d['candidates'], d; print('top:', d['candidates'][0]['skill'])"

say "the corpus and the rules ship whole"
skillbase rules validate
skillbase rules test --failed
skillbase skills validate
skillbase skills list | tail -1
skillbase bench list | tail -1

say "init on a bundled example's kernel"
cp naive_sgemm/naive_sgemm.cu mine.cu
skillbase init mine.cu
test -f mine.task.yaml

say "word search needs no extra; a missing optional extra is one line naming it, never a traceback"
skillbase skills search "shared memory tiling" > words.out 2>&1 || { cat words.out; exit 1; }
grep -q "mem.smem_tiling" words.out || { cat words.out; echo "word search did not find mem.smem_tiling"; exit 1; }
set +e
skillbase skills search --semantic "shared memory tiling" > search.out 2>&1; code=$?
set -e
cat search.out
if [ "$code" -eq 0 ] || grep -q Traceback search.out || ! grep -q "\[search\]" search.out; then
  echo "skills search --semantic without the [search] extra must fail with one line naming it"; exit 1
fi
set +e
skillbase mcp < /dev/null > mcp.out 2>&1; code=$?
set -e
cat mcp.out
if [ "$code" -ne 3 ] || grep -q Traceback mcp.out || ! grep -q "skillbase\[mcp\]" mcp.out; then
  echo "skillbase mcp without the [mcp] extra must fail with one line naming it"; exit 1
fi
python -c "import skillbase; print('the API loads in the wheel:', skillbase.skills_show('mem.vectorize').skill.id)"
set +e
skillbase doctor > doctor.out 2>&1
set -e
cat doctor.out
grep -q Traceback doctor.out && { echo "doctor printed a traceback"; exit 1; }
grep -q "\[gpu\]" doctor.out || { echo "doctor must name the [gpu] extra for CuPy"; exit 1; }
say "the installed wheel works"

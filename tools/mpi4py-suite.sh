#!/usr/bin/env bash
# mpi4py's own test suite (the `test/` folder of its source distribution,
# the version installed in target/venv) on Tessel's library, through the
# wheel's MPICH-ABI module, on 1, 2 and 3 processes. Prints one line per
# process count with the suite's figures (tests run, failures, errors,
# skipped) and keeps each run's log in target/mpi4py-suite/.
#
#   tools/mpi4py-suite.sh [NP ...]        # default: 1 2 3
#
# Excluded: the modules that start processes (test_spawn, test_dynproc,
# test_util_pool: MPI_Comm_spawn is not supported yet, and mpi4py's
# process pool waits forever for workers that never start). Each run is
# bounded by TESSEL_SUITE_TIMEOUT seconds (default 900).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
bash tools/install.sh >/dev/null

py=$PWD/target/venv/bin/python
prefix=$PWD/target/tessel
out=$PWD/target/mpi4py-suite
version=$("$py" -c 'import mpi4py; print(mpi4py.__version__)')
src=$out/mpi4py-$version
if [ ! -f "$src/test/main.py" ]; then
    mkdir -p "$out"
    "$py" -m pip download --quiet --disable-pip-version-check --no-deps --no-binary mpi4py \
        -d "$out" "mpi4py==$version"
    tar -xzf "$out/mpi4py-$version.tar.gz" -C "$out"
fi

nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(1 2 3)
echo "mpi4py $version test suite on Tessel (MPICH-ABI module)"
for n in "${nps[@]}"; do
    log=$out/np$n.log
    set +e
    (cd "$src" && MPI4PY_MPIABI=mpich LD_LIBRARY_PATH=$prefix/lib \
        timeout "${TESSEL_SUITE_TIMEOUT:-900}" "$prefix/bin/mpiexec" -n "$n" \
        "$py" test/main.py -e test_spawn -e test_dynproc -e test_util_pool) >"$log" 2>&1
    rc=$?
    set -e
    # unittest's summary of rank 0: "Ran N tests", then "OK (...)" or "FAILED (...)".
    "$py" - "$log" "$n" "$rc" <<'PY'
import re, sys
log, n, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
text = open(log, errors="replace").read()
ran = re.findall(r"^Ran (\d+) tests?", text, re.M)
ends = re.findall(r"^(OK|FAILED)(?: \((.*)\))?$", text, re.M)
if not ran or not ends:
    print(f"np={n}: no summary (exit {rc}); see {log}")
    sys.exit(0)
fields = dict(kv.split("=") for kv in (ends[0][1] or "").split(", ") if "=" in kv)
f, e, s = (int(fields.get(k, 0)) for k in ("failures", "errors", "skipped"))
passed = int(ran[0]) - f - e - s
print(f"np={n}: run {ran[0]}, passed {passed}, failures {f}, errors {e}, skipped {s} (exit {rc}; {log})")
PY
done

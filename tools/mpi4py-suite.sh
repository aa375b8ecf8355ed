#!/usr/bin/env bash
# mpi4py's own test suite (the `test/` folder of its source distribution,
# the version installed in target/venv) on Tessel's library, through the
# wheel's MPICH-ABI module, on 1, 2 and 3 processes. Prints one line per
# process count with the suite's figures (tests run, failures, errors,
# skipped) and keeps each run's log in target/mpi4py-suite/.
#
#   tools/mpi4py-suite.sh [NP ...]        # default: 1 2 3
#   tools/mpi4py-suite.sh --check         # and hold them to the baseline
#
# With --check (tools/test.sh uses it) the script fails when, for any
# process count, fewer tests pass or more fail or err than
# tools/mpi4py-suite.baseline records: a ratchet, lowered by hand as the
# library implements more.
#
# Excluded: the modules that start processes (test_spawn, test_dynproc,
# test_util_pool: MPI_Comm_spawn is not supported yet, and mpi4py's
# process pool waits forever for workers that never start), and
# test_ulfm's testIAgree, which on 2 or more processes calls a barrier and
# mpi4py's emulated agreement (an MPI_Iallreduce) in different orders on
# different ranks of one communicator: the standard makes that erroneous
# (MPI-4.1 §6.12), and here it waits forever; and test_comm_inter, whose
# intercommunicators the library does not have yet: on 3 processes its
# failing set-ups leave the ranks on different paths, and a later test
# waits forever. Each run is bounded by TESSEL_SUITE_TIMEOUT seconds
# (default 900).
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

check=
if [ "${1:-}" = --check ]; then
    check=tools/mpi4py-suite.baseline
    shift
fi
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(1 2 3)
worse=0
echo "mpi4py $version test suite on Tessel (MPICH-ABI module)"
for n in "${nps[@]}"; do
    log=$out/np$n
    rm -f "$log".rank*.log
    set +e
    # Each rank writes its own log (PMI_RANK is the launcher's), so that the
    # ranks' summaries do not interleave.
    (cd "$src" && MPI4PY_MPIABI=mpich LD_LIBRARY_PATH=$prefix/lib \
        timeout "${TESSEL_SUITE_TIMEOUT:-900}" "$prefix/bin/mpiexec" -n "$n" \
        sh -c 'exec "$0" "$@" >"'"$log"'.rank$PMI_RANK.log" 2>&1' \
        "$py" test/main.py -e test_spawn -e test_dynproc -e test_util_pool -e test_comm_inter \
        -x testIAgree) >"$log.launcher.log" 2>&1
    rc=$?
    set -e
    # unittest's summary of each rank: "Ran N tests", then "OK (...)" or
    # "FAILED (...)"; the figures are rank 0's, the check holds every rank.
    "$py" - "$log" "$n" "$rc" "$check" <<'PY' || worse=1
import re, sys
log, n, rc, check = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
limits = None
if check:
    # Lines "NP PASSED FAILURES_AND_ERRORS"; '#' starts a comment.
    for line in open(check):
        fields = line.split("#")[0].split()
        if fields and fields[0] == n:
            limits = int(fields[1]), int(fields[2])
worse = False
for r in range(int(n)):
    name = f"{log}.rank{r}.log"
    try:
        text = open(name, errors="replace").read()
    except OSError:
        text = ""
    ran = re.findall(r"^Ran (\d+) tests?", text, re.M)
    ends = re.findall(r"^(?:OK|FAILED)(?: \((.*)\))?$", text, re.M)
    if not ran or not ends:
        print(f"np={n} rank {r}: no summary (exit {rc}); see {name} and {log}.launcher.log")
        worse = True
        continue
    fields = dict(kv.split("=") for kv in ends[-1].split(", ") if "=" in kv)
    f, e, s = (int(fields.get(k, 0)) for k in ("failures", "errors", "skipped"))
    passed = int(ran[-1]) - f - e - s
    if r == 0:
        print(f"np={n}: run {ran[-1]}, passed {passed}, failures {f}, errors {e}, skipped {s} (rank 0; logs {log}.rank*.log)")
    if limits and (passed < limits[0] or f + e > limits[1]):
        print(f"np={n} rank {r}: passed {passed}, failures and errors {f + e}: "
              f"worse than the baseline ({limits[0]} passed, {limits[1]} failures and errors)")
        worse = True
sys.exit(1 if worse and check else 0)
PY
done
exit $worse

#!/usr/bin/env bash
# mpi4py's own test suite (the `test/` folder of its source distribution,
# the version installed in target/venv) on Tessel's library, on 1, 2 and 3
# processes, through both of mpi4py's modules that apply:
#   - mpich: the PyPI wheel's MPICH-ABI module, on libmpi.so.12;
#   - standard: the MPI-5 standard-ABI module, which the 4.1 wheel does not
#     carry: built from the same source distribution by MPICH 5's own
#     `mpicc_abi` (PyPI `mpich`, target/bench-venv) into target/venv-abi,
#     then run on Tessel's libmpi_abi.so.1 unchanged.
# Prints one line per module and process count with the suite's figures
# (tests run, failures, errors, skipped) and keeps each run's log in
# target/mpi4py-suite/.
#
#   tools/mpi4py-suite.sh [--abi mpich|standard] [NP ...]   # default: both, 1 2 3
#   tools/mpi4py-suite.sh --check                           # and hold them to the baseline
#
# With --check (tools/test.sh uses it) the script fails when, for any
# module and process count, fewer tests pass or more fail or err than
# tools/mpi4py-suite.baseline records: a ratchet, tightened by hand as the
# library implements more.
#
# Every module runs, those that start processes (test_spawn, test_dynproc,
# test_util_pool) included. Excluded: test_ulfm's testIAgree, which on 2 or
# more processes calls a barrier and mpi4py's emulated agreement (an
# MPI_Iallreduce) in different orders on different ranks of one
# communicator: the standard makes that erroneous (MPI-4.1 §6.12), and
# here it waits forever. Each run is bounded by TESSEL_SUITE_TIMEOUT
# seconds (default 900).
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
abis=(mpich standard)
while [ $# -gt 0 ]; do
    case $1 in
        --check) check=tools/mpi4py-suite.baseline; shift ;;
        --abi) abis=("$2"); shift 2 ;;
        *) break ;;
    esac
done
nps=("$@")
[ ${#nps[@]} -gt 0 ] || nps=(1 2 3)

# The standard-ABI module, built once by MPICH 5's compiler wrapper.
abi_venv=$PWD/target/venv-abi
if [[ " ${abis[*]} " == *" standard "* ]] && ! "$abi_venv/bin/python" -c "import mpi4py.MPI" >/dev/null 2>&1; then
    echo "building mpi4py $version's standard-ABI module with MPICH 5's mpicc_abi into $abi_venv (a few minutes, once)"
    rm -rf "$abi_venv"
    /usr/bin/python3 -m venv "$abi_venv"
    MPI4PY_BUILD_MPIABI=1 MPI4PY_BUILD_MPICC=$PWD/target/bench-venv/bin/mpicc_abi \
        "$abi_venv/bin/pip" install --quiet --disable-pip-version-check --no-binary mpi4py \
        "$out/mpi4py-$version.tar.gz" >"$out/build-abi.log" 2>&1 \
        || { echo "building the standard-ABI module failed; see $out/build-abi.log" >&2; exit 1; }
fi

worse=0
for abi in "${abis[@]}"; do
case $abi in
    # The wheel's loader picks its MPICH-ABI module by this variable; the
    # standard-ABI build has that one module only.
    mpich) py=$PWD/target/venv/bin/python; lib=libmpi.so.12; select=(MPI4PY_MPIABI=mpich) ;;
    standard) py=$abi_venv/bin/python; lib=libmpi_abi.so.1; select=() ;;
    *) echo "--abi $abi: expected mpich or standard" >&2; exit 2 ;;
esac
# The module must load and run on Tessel's library, not the one it was built with.
which_lib=$(env "${select[@]}" LD_LIBRARY_PATH=$prefix/lib "$prefix/bin/mpiexec" -n 1 \
    "$py" -c 'from mpi4py import MPI; print(MPI.Get_library_version())' 2>&1) || true
case $which_lib in
    *Tessel*"$lib"*) ;;
    *) echo "mpi4py's $abi module does not run on Tessel's $lib: $which_lib" >&2; worse=1; continue ;;
esac
echo "mpi4py $version test suite on Tessel ($abi-ABI module, $lib)"
for n in "${nps[@]}"; do
    log=$out/$abi-np$n
    rm -f "$log".rank*.log
    set +e
    # Each rank writes its own log (PMI_RANK is the launcher's), so that the
    # ranks' summaries do not interleave.
    (cd "$src" && env "${select[@]}" LD_LIBRARY_PATH=$prefix/lib \
        timeout "${TESSEL_SUITE_TIMEOUT:-900}" "$prefix/bin/mpiexec" -n "$n" \
        sh -c 'exec "$0" "$@" >"'"$log"'.rank$PMI_RANK.log" 2>&1' \
        "$py" test/main.py -x testIAgree) >"$log.launcher.log" 2>&1
    rc=$?
    set -e
    # unittest's summary of each rank: "Ran N tests", then "OK (...)" or
    # "FAILED (...)"; the figures are rank 0's, the check holds every rank.
    "$py" - "$log" "$n" "$rc" "$check" "$abi" <<'PY' || worse=1
import re, sys
log, n, rc, check, abi = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
limits = None
if check:
    # Lines "ABI NP PASSED FAILURES_AND_ERRORS"; '#' starts a comment.
    for line in open(check):
        fields = line.split("#")[0].split()
        if fields[:2] == [abi, n]:
            limits = int(fields[2]), int(fields[3])
    if limits is None:
        print(f"{abi} np={n}: no line in {check}")
        sys.exit(1)
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
        print(f"{abi} np={n} rank {r}: no summary (exit {rc}); see {name} and {log}.launcher.log")
        worse = True
        continue
    fields = dict(kv.split("=") for kv in ends[-1].split(", ") if "=" in kv)
    f, e, s = (int(fields.get(k, 0)) for k in ("failures", "errors", "skipped"))
    passed = int(ran[-1]) - f - e - s
    if r == 0:
        print(f"{abi} np={n}: run {ran[-1]}, passed {passed}, failures {f}, errors {e}, skipped {s} (rank 0; logs {log}.rank*.log)")
    if limits and (passed < limits[0] or f + e > limits[1]):
        print(f"{abi} np={n} rank {r}: passed {passed}, failures and errors {f + e}: "
              f"worse than the baseline ({limits[0]} passed, {limits[1]} failures and errors)")
        worse = True
sys.exit(1 if worse and check else 0)
PY
done
done
exit $worse

#!/usr/bin/env bash
# Installs what building and testing Tessel needs on Debian: a C toolchain
# and pkg-config, MPICH with its headers (the tests run our binaries under
# its Hydra `mpiexec.mpich`, build C programs with its `mpicc.mpich` to run
# them on our library, and compare our mpi.h with its), the third-party
# MPI programs the tests run on our library unchanged (Debian's NetPIPE
# built against MPICH; mpi4py from PyPI, in the virtual environment
# target/venv), MPICH 5 from PyPI as the reference of the standard ABI
# (target/bench-venv), hwloc with its headers for the topology (hwloc.pc
# links -ludev, hence libudev-dev), the network libraries the plugins bind at build
# time with bindgen (UCX, libfabric, libibverbs; libclang for bindgen), their
# own benchmark tools (ucx_perftest, fi_pingpong), iproute2 for the tests'
# network namespaces, and a Rust toolchain when none is on PATH.
# Safe to run again: it installs only what is missing. Sourced by demo.sh and test.sh.
set -euo pipefail

apt_packages=(build-essential pkg-config mpich libmpich-dev netpipe-mpich2 python3 python3-venv
    libhwloc-dev libudev-dev libucx-dev ucx-utils libfabric-dev libfabric-bin libibverbs-dev
    libclang-dev iproute2 valgrind)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "setup: installing the Rust toolchain with rustup"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl ca-certificates >/dev/null
    curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --component rustfmt,clippy
    export PATH="$HOME/.cargo/bin:$PATH"
fi
for c in rustfmt clippy-driver; do
    command -v "$c" >/dev/null 2>&1 || { command -v rustup >/dev/null && rustup component add "${c%-driver}"; }
done

# mpi4py's wheel (4.1 when this was written) carries one extension module
# per MPI ABI; the tests select the MPICH one with MPI4PY_MPIABI=mpich.
mpi4py_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/venv"
if ! "$mpi4py_venv/bin/python" -c "import mpi4py" >/dev/null 2>&1; then
    echo "setup: installing mpi4py into $mpi4py_venv"
    /usr/bin/python3 -m venv "$mpi4py_venv"
    "$mpi4py_venv/bin/pip" install --quiet --disable-pip-version-check "mpi4py>=4.1,<5"
fi

# MPICH 5 from PyPI, in its own virtual environment target/bench-venv (the
# benchmarks compare against it too): its `mpicc_abi` and `mpi_abi.h` are
# the reference the tests hold the standard-ABI library to.
mpich5_venv="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/target/bench-venv"
if [ ! -x "$mpich5_venv/bin/mpicc_abi" ]; then
    echo "setup: installing MPICH 5 into $mpich5_venv"
    /usr/bin/python3 -m venv "$mpich5_venv"
    "$mpich5_venv/bin/pip" install --quiet --disable-pip-version-check "mpich>=5,<6"
fi

#!/usr/bin/env bash
# The demo: build in release mode, then pass messages of every protocol
# around a ring of processes on this machine. Usage: tools/demo.sh [NPROCS]
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh
n=${1:-4}
cargo build --release -p tools --bin mpiexec --example ring
target/release/mpiexec -n "$n" target/release/examples/ring

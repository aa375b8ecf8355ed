#!/usr/bin/env bash
# Every check CI runs: formatting, lints, unit and multi-process tests (with
# and without cross-memory attach, oversubscribed, killed peer, Hydra),
# loom models and their mutation builds, the benchmarks' build, a short
# pingpong, the comparison with other MPIs and the benchmark of jobs across
# nodes in their --quick modes. Installs
# what it needs first (tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/setup.sh

# Each step says how long the run has taken so far.
step() { printf '\n==> %s  [%dm%02ds]\n' "$*" $((SECONDS / 60)) $((SECONDS % 60)); }

step "format"
cargo fmt --all --check

step "atomics and cells only through the engine's sync facade (loom checks them)"
if grep -rnE '(core|std)::sync::atomic|cell::UnsafeCell' shm-engine/src --include='*.rs' \
        | grep -v '^shm-engine/src/sync.rs:'; then
    echo "use shm_engine::sync instead" >&2
    exit 1
fi

step "clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "install the MPI library for the C tests (tools/install.sh)"
bash tools/install.sh

step "tests (debug)"
cargo test --workspace --locked

step "multi-process tests (release)"
cargo test --release --locked -p tools

step "mpi4py's own test suite, MPICH-ABI and standard-ABI modules, on 1, 2 and 3 processes, no worse than tools/mpi4py-suite.baseline"
TESSEL_SUITE_TIMEOUT=600 bash tools/mpi4py-suite.sh --check

step "loom models of the production ring, doorbell, steal queues, flag board and library lock"
RUSTFLAGS="--cfg tessel_loom" CARGO_TARGET_DIR=target/loom \
    cargo test --release --locked -p loom-tests

# The same RUSTFLAGS and target directory: each mutation rebuilds only
# shm-engine and loom-tests (their build scripts read TESSEL_MUTATION). Each
# runs the models that name it: the ones that must catch it, and the ones
# that set a test aside under it.
for m in spsc_publish doorbell_ring spmc_claim chunk_done stealer_mask board_post board_reuse board_tiers doorbell_poll lock_release lock_any_time; do
    step "mutation $m: loom must find the weakened ordering"
    models=()
    for t in $(grep -l "tessel_mutation = \"$m\"" loom-tests/tests/*.rs); do
        models+=(--test "$(basename "$t" .rs)")
    done
    [ ${#models[@]} -gt 0 ] || { echo "no loom model names the mutation $m" >&2; exit 1; }
    TESSEL_MUTATION=$m RUSTFLAGS="--cfg tessel_loom" CARGO_TARGET_DIR=target/loom \
        cargo test --release --locked -p loom-tests "${models[@]}"
done

step "benchmarks build; pingpong runs"
# The bench profile is the release profile, and the workspace's features are
# the bench build's: the two builds below reuse what it built.
cargo bench --locked --workspace --no-run
cargo build --release --locked --workspace --bin mpiexec --example pingpong
target/release/mpiexec -n 2 target/release/examples/pingpong --quick

step "compare against other MPIs, --quick (proves the harness works; no timing is checked)"
cargo run --release --locked -p benches --bin compare -- --quick
report=target/bench-report
for f in report.md results.json results.csv; do
    test -s "$report/$f" || { echo "compare wrote no $report/$f" >&2; exit 1; }
done
# Every competitor that set up has its column in the summary table.
for mpi in $(python3 -c 'import json, sys
print(" ".join(m["name"] for m in json.load(open(sys.argv[1]))["mpis"]
               if m["skipped"] is None and m["name"] != "tessel"))' "$report/results.json"); do
    grep -qF "| vs $mpi |" "$report/report.md" || { echo "the summary does not name $mpi" >&2; exit 1; }
done

step "large-message protocols benchmark, --quick (every TESSEL_RNDV setting runs; no timing is checked)"
cargo run --release --locked -p benches --bin protocols -- --quick --mpi tessel --no-setup
report=target/protocols-report
for f in report.md bandwidth.csv stats.csv; do
    test -s "$report/$f" || { echo "protocols wrote no $report/$f" >&2; exit 1; }
done
# The forced runs used the protocol they forced (TESSEL_STATS lines).
for p in get coop steal; do
    grep -q ",$p," "$report/stats.csv" || { echo "no $p transfers in $report/stats.csv" >&2; exit 1; }
done

step "jobs across nodes benchmark, --quick (stencil overlap and plugin overhead run with every MPI and plugin; no timing is checked)"
cargo run --release --locked -p benches --bin internode -- --quick
test -s target/internode-report/report.md || { echo "internode wrote no report" >&2; exit 1; }

step "all checks passed"

//! loom models of `shm-engine`'s production code live in `tests/`; they run
//! only in a build with `RUSTFLAGS="--cfg tessel_loom"` (see `tools/test.sh`).

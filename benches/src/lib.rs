//! Benchmarks of the engine: `cargo bench -p benches` for the queues, and
//! the multi-process `pingpong` example run through `mpiexec`.

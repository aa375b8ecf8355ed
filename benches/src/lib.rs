//! Benchmarks of the engine: `cargo bench -p benches` for the queues, the
//! multi-process `pingpong` example run through `mpiexec`, and
//! [`compare`], the harness that runs the C programs of `benches/c` on
//! Tessel and on other MPIs side by side.

pub mod compare;

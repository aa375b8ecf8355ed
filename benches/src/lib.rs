//! Benchmarks of the engine: `cargo bench -p benches` for the queues, the
//! multi-process `pingpong` example run through `mpiexec`, [`compare`], the
//! harness that runs the C programs of `benches/c` on Tessel and on other
//! MPIs side by side, and [`protocols`], which runs the large-message
//! benchmarks under each of Tessel's rendezvous protocols.

pub mod compare;
pub mod protocols;

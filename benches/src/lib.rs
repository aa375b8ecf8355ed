//! Benchmarks of the engine: `cargo bench -p benches` for the queues, the
//! multi-process `pingpong` example run through `mpiexec`, [`compare`], the
//! harness that runs the C programs of `benches/c` on Tessel and on other
//! MPIs side by side, [`protocols`], which runs the large-message
//! benchmarks under each of Tessel's rendezvous protocols, and
//! [`internode`], which runs jobs that span nodes (the stencil's overlap of
//! intra- and inter-node transfers, the network plugins' overhead).

pub mod compare;
pub mod internode;
pub mod protocols;

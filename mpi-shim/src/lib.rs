//! Tessel's MPI library: `libmpi.so.12`, binary-compatible with MPICH,
//! over the shared-memory engine.
//!
//! - [`abi`]: the MPICH ABI (handle values, constants, `MPI_Status`,
//!   prototypes), defined once; `tessel-mpi-header` prints `mpi.h` from it.
//! - [`core`]: ABI-independent state: the life cycle, sessions and process
//!   sets, communicators, requests, errors.
//! - [`coll`], [`ops`]: collectives and predefined reductions.
//! - [`mpich`]: the exported `MPI_*` functions of the MPICH ABI.
//! - [`std_abi`]: the exported `MPI_*` functions of the MPI-5 standard ABI
//!   (`libmpi_abi.so.1`), translating into [`mpich`]'s.
//! - [`pmpi`]: the profiling interface, `PMPI_*` for every `MPI_*`.

pub mod abi;
pub mod coll;
pub mod core;
pub mod mpich;
pub mod ops;
pub mod pmpi;
pub mod std_abi;

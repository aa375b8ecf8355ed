//! Tessel's launcher, `mpiexec`, as a library.
//!
//! [`cli`] parses the command line, [`mapping`] places ranks on virtual
//! nodes, [`pmi_server`] answers the PMI-1 requests of the ranks (the
//! protocol logic only, no I/O), and [`launch`] starts the processes, runs
//! the event loop that carries PMI traffic and watches the children, and
//! decides the job's exit status; [`binding`] says where processes are
//! pinned. [`info`] is what `tessel-info` prints.
#![warn(missing_docs)]

pub mod binding;
pub mod cli;
pub mod dynres;
pub mod info;
pub mod launch;
pub mod mapping;
pub mod pmi_server;
mod sys;

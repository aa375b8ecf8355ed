//! The kinds of request beyond a single engine operation:
//!
//! - persistent requests (MPI-4.0 §3.9): an operation prepared once and
//!   started many times; between rounds the request is inactive;
//! - generalized requests (MPI-4.0 §13.2): operations the application
//!   carries out itself and completes with `MPI_Grequest_complete`; the
//!   library calls its query, free and cancel callbacks;
//! - messages taken by a matched probe (MPI-4.0 §3.8.2).

use std::fmt;

use super::{Code, MpiError, MpiResult, Req, Runtime, Status};

/// What starts one round of a persistent request.
pub type StartFn = Box<dyn FnMut(&mut Runtime) -> MpiResult<Req>>;

/// A persistent request: how to start a round, and the round in flight.
pub struct Persistent {
    pub start: StartFn,
    /// The started operation (an engine request, or a completed one);
    /// `None` while inactive.
    pub active: Option<Box<Req>>,
}

impl fmt::Debug for Persistent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Persistent")
            .field("active", &self.active)
            .finish_non_exhaustive()
    }
}

/// A generalized request: the application's callbacks (each returns an
/// MPI error code) and whether it said the operation is complete.
pub struct Generalized {
    /// Fills the status of the completed operation (given the empty
    /// status).
    pub query: Box<dyn FnMut(&mut Status) -> Code>,
    /// Releases the application's state; called once, when the request
    /// is freed after completion.
    pub free: Box<dyn FnMut() -> Code>,
    /// Told whether the operation already completed.
    pub cancel: Box<dyn FnMut(bool) -> Code>,
    pub complete: bool,
    /// `MPI_Request_free` came before completion: free at completion.
    pub freed: bool,
}

impl fmt::Debug for Generalized {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Generalized")
            .field("complete", &self.complete)
            .field("freed", &self.freed)
            .finish_non_exhaustive()
    }
}

/// An application callback's error code as an error.
pub fn callback_result(rc: Code, what: &str) -> MpiResult<()> {
    if rc.is_success() {
        Ok(())
    } else {
        Err(MpiError::new(rc, format!("the {what} callback failed")))
    }
}

/// A message taken by a matched probe, waiting for `MPI_Mrecv`.
#[derive(Debug)]
pub struct Matched {
    pub msg: shm_engine::Message,
    /// Communicator slot, to translate the source.
    pub comm: usize,
}

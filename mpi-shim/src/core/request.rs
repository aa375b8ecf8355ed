//! The kinds of request beyond a single engine operation, and the
//! attached buffer of buffered sends:
//!
//! - persistent requests (MPI-4.0 §3.9): an operation prepared once and
//!   started many times; between rounds the request is inactive;
//! - generalized requests (MPI-4.0 §13.2): operations the application
//!   carries out itself and completes with `MPI_Grequest_complete`; the
//!   library calls its query, free and cancel callbacks;
//! - messages taken by a matched probe (MPI-4.0 §3.8.2);
//! - the buffer of `MPI_Bsend` (MPI-4.0 §3.6): each buffered message is
//!   copied into the attached buffer, which it occupies (with
//!   [`BSEND_OVERHEAD`] bytes of bookkeeping) until the engine is done.

use std::fmt;

use super::{MpiError, MpiResult, Req, Runtime};
use crate::abi;

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
    /// Fills the status of the completed operation.
    pub query: Box<dyn FnMut(&mut abi::MPI_Status) -> i32>,
    /// Releases the application's state; called once, when the request
    /// is freed after completion.
    pub free: Box<dyn FnMut() -> i32>,
    /// Told whether the operation already completed.
    pub cancel: Box<dyn FnMut(bool) -> i32>,
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
pub fn callback_result(rc: i32, what: &str) -> MpiResult<()> {
    if rc == abi::MPI_SUCCESS {
        Ok(())
    } else {
        Err(MpiError::new(
            rc,
            format!("the {what} callback returned {rc}"),
        ))
    }
}

/// A message taken by a matched probe, waiting for `MPI_Mrecv`.
#[derive(Debug)]
pub struct Matched {
    pub msg: shm_engine::Message,
    /// Communicator slot, to translate the source.
    pub comm: usize,
}

/// Bookkeeping bytes each buffered message occupies in the attached
/// buffer besides its data (MPICH's `MPI_BSEND_OVERHEAD`).
pub const BSEND_OVERHEAD: usize = abi::MPI_BSEND_OVERHEAD as usize;

/// The buffer attached with `MPI_Buffer_attach`.
#[derive(Debug)]
pub struct Attached {
    pub ptr: *mut u8,
    pub size: usize,
    /// Messages in flight from the buffer: offset, bytes occupied (with
    /// the overhead), engine request; in offset order.
    used: Vec<(usize, usize, shm_engine::Request)>,
}

impl Attached {
    pub fn new(ptr: *mut u8, size: usize) -> Self {
        Self {
            ptr,
            size,
            used: Vec::new(),
        }
    }

    /// Release the space of messages the engine is done with.
    fn reclaim(&mut self, ep: &mut shm_engine::Endpoint) -> MpiResult<()> {
        ep.progress();
        let mut i = 0;
        while i < self.used.len() {
            if ep.is_complete(&self.used[i].2) {
                let (_, _, req) = self.used.remove(i);
                ep.wait(req)?;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// The offset of the first gap that holds `need` bytes.
    fn first_fit(&self, need: usize) -> Option<usize> {
        let mut start = 0;
        for &(off, len, _) in &self.used {
            if off - start >= need {
                return Some(start);
            }
            start = off + len;
        }
        (self.size - start >= need).then_some(start)
    }

    /// Copy `data` into the buffer and start sending it from there to
    /// `to` with `tag`; `MPI_ERR_BUFFER` when no gap is large enough.
    pub fn send(
        &mut self,
        ep: &mut shm_engine::Endpoint,
        to: u32,
        tag: u64,
        data: &[u8],
    ) -> MpiResult<()> {
        self.reclaim(ep)?;
        let need = data.len() + BSEND_OVERHEAD;
        let off = self.first_fit(need).ok_or_else(|| {
            MpiError::new(
                abi::MPI_ERR_BUFFER,
                format!(
                    "the attached buffer ({} bytes) has no room for a {}-byte message (with MPI_BSEND_OVERHEAD)",
                    self.size, need
                ),
            )
        })?;
        // SAFETY: `off + need <= size` (first_fit): the copy stays inside
        // the attached buffer, which the application lent the library
        // until MPI_Buffer_detach; no other message uses this range.
        let dst = unsafe { self.ptr.add(off) };
        // SAFETY: as above; `data` is the library's copy or the caller's
        // buffer, never the attached range itself.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        // SAFETY: the range stays reserved (and the buffer attached) until
        // the engine request completes: `detach` waits for every one.
        let req = unsafe { ep.isend_raw(to, tag, dst, data.len())? };
        let at = self.used.partition_point(|&(o, _, _)| o < off);
        self.used.insert(at, (off, need, req));
        Ok(())
    }

    /// Wait until every buffered message is delivered (`MPI_Buffer_detach`).
    pub fn drain(mut self, ep: &mut shm_engine::Endpoint) -> MpiResult<(*mut u8, usize)> {
        for (_, _, req) in self.used.drain(..) {
            ep.wait(req)?;
        }
        Ok((self.ptr, self.size))
    }
}

/// Whether the cancelled bit of a status is set (MPICH keeps it in the
/// lowest bit of `count_hi_and_cancelled`).
pub fn is_cancelled(st: &abi::MPI_Status) -> bool {
    st.count_hi_and_cancelled & 1 != 0
}

/// Set or clear the cancelled bit of a status.
pub fn set_cancelled(st: &mut abi::MPI_Status, flag: bool) {
    st.count_hi_and_cancelled = (st.count_hi_and_cancelled & !1) | i32::from(flag);
}

/// The empty status (MPI-4.0 §3.7.3): what a null or inactive request
/// reports.
pub fn empty_status() -> abi::MPI_Status {
    abi::MPI_Status::new(abi::MPI_ANY_SOURCE, abi::MPI_ANY_TAG, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use shm_engine::bootstrap::Singleton;
    use shm_engine::{Endpoint, Source, TagMatch};

    #[test]
    fn cancelled_bit_leaves_the_count_alone() {
        let mut st = abi::MPI_Status::new(3, 4, (1 << 33) + 5);
        set_cancelled(&mut st, true);
        assert!(is_cancelled(&st));
        assert_eq!(st.bytes(), (1 << 33) + 5);
        set_cancelled(&mut st, false);
        assert!(!is_cancelled(&st));
        assert_eq!(st.bytes(), (1 << 33) + 5);
    }

    #[test]
    fn attached_buffer_holds_messages_until_delivered() {
        let mut ep = Endpoint::new(Box::new(Singleton::default())).expect("endpoint");
        // Rendezvous-sized messages stay in flight until received.
        let n = ep.config().eager_max + 1;
        let mut mem = vec![0u8; 2 * (n + BSEND_OVERHEAD)];
        let mut att = Attached::new(mem.as_mut_ptr(), mem.len());
        let data: Vec<u8> = (0..n).map(|i| i as u8).collect();
        att.send(&mut ep, 0, 1, &data).unwrap();
        att.send(&mut ep, 0, 2, &data).unwrap();
        let full = att.send(&mut ep, 0, 3, &data).unwrap_err();
        assert_eq!(full.class, abi::MPI_ERR_BUFFER);
        // Once the first is received, its space is reused.
        let mut got = vec![0u8; n];
        ep.recv(Source::Any, TagMatch::exact(1), &mut got).unwrap();
        assert_eq!(got, data);
        att.send(&mut ep, 0, 3, &data).unwrap();
        for tag in [2, 3] {
            ep.recv(Source::Any, TagMatch::exact(tag), &mut got)
                .unwrap();
            assert_eq!(got, data);
        }
        let (ptr, size) = att.drain(&mut ep).unwrap();
        assert_eq!((ptr, size), (mem.as_mut_ptr(), mem.len()));
    }
}

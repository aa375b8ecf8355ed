//! Library-managed receive buffers: what `MPI_Irecv` with a null buffer
//! received, until the application takes it (`MPIX_Get_recv_buf`) and
//! gives it back (`MPIX_Release_recv_buf`).
//!
//! The extension names a buffer by the receive's status only, which holds
//! source, tag and size but no request: among completed receives with the
//! same (source, tag, size) the buffers are handed out in the order the
//! receives completed.

use std::collections::{HashMap, VecDeque};

use shm_engine::RecvBuf;

use super::Status;
use super::peer::{Rank, Tag};

/// What names a buffer: the source, tag and byte count of the status its
/// receive completed with.
type Key = (Rank, Tag, u64);

/// The key of a receive that completed with status `st`.
fn key(st: &Status) -> Key {
    (st.source, st.tag, st.bytes)
}

/// Completed managed receives and the buffers handed out.
#[derive(Debug, Default)]
pub struct Store {
    ready: VecDeque<(Key, RecvBuf)>,
    out: HashMap<usize, RecvBuf>,
}

impl Store {
    /// Keep the buffer of a receive that completed with status `st`.
    pub fn complete(&mut self, st: &Status, buf: RecvBuf) {
        self.ready.push_back((key(st), buf));
    }

    /// Hand out the oldest buffer of a receive completed with the source,
    /// tag and byte count of `st`; `None` when there is none.
    pub fn take(&mut self, st: &Status) -> Option<*mut u8> {
        let want = key(st);
        let i = self.ready.iter().position(|(k, _)| *k == want)?;
        let (_, buf) = self.ready.remove(i)?;
        let p = buf.as_ptr();
        self.out.insert(p as usize, buf);
        Some(p)
    }

    /// Return a handed-out buffer; false when `p` is not one.
    pub fn release(&mut self, p: *mut u8) -> bool {
        self.out.remove(&(p as usize)).is_some()
    }

    /// Buffers received but not yet taken.
    pub fn waiting(&self) -> usize {
        self.ready.len()
    }
}

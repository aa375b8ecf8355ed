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

/// Completed managed receives and the buffers handed out.
#[derive(Debug, Default)]
pub struct Store {
    ready: VecDeque<((i32, i32, u64), RecvBuf)>,
    out: HashMap<usize, RecvBuf>,
}

impl Store {
    /// Keep the buffer of a receive that completed with this source, tag
    /// and byte count.
    pub fn complete(&mut self, source: i32, tag: i32, bytes: u64, buf: RecvBuf) {
        self.ready.push_back(((source, tag, bytes), buf));
    }

    /// Hand out the oldest buffer of a receive completed with this source,
    /// tag and byte count; `None` when there is none.
    pub fn take(&mut self, source: i32, tag: i32, bytes: u64) -> Option<*mut u8> {
        let i = self
            .ready
            .iter()
            .position(|(key, _)| *key == (source, tag, bytes))?;
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

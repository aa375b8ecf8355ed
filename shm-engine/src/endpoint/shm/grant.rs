//! Landing buffers: a managed receive from one local peer lends it a
//! buffer in our shared heap, and the peer's next large message that fits
//! is written straight into it (a PUT: no RTS, no CTS, no FIN). A grant
//! belongs to the pair, not to one receive, so none is ever revoked while
//! the sender may be writing.

use super::cell::{Control, Grant};
use crate::endpoint::request::{ReqId, Status};
use crate::endpoint::{Endpoint, RecvBuf};
use crate::heap;
use crate::iov;
use crate::stats::Protocol;

/// Landing buffers lent to one local peer: at most this many at a time.
const GRANTS_PER_PEER: usize = 4;

impl Endpoint {
    /// Lend local peer `j` a landing buffer of `cap` bytes for its next
    /// large message to us, if it has fewer than [`GRANTS_PER_PEER`] and
    /// the shared heap has room.
    pub(in crate::endpoint) fn grant(&mut self, j: u32, cap: usize) {
        if !self.shm.cma || self.shm.peers[j as usize].lent.len() >= GRANTS_PER_PEER {
            return;
        }
        let buf = RecvBuf::new(cap);
        let Some(at) = buf
            .in_shared_heap()
            .then(|| heap::locate(buf.as_ptr(), cap))
            .flatten()
        else {
            return;
        };
        self.shm.next_grant += 1;
        let id = self.shm.next_grant;
        self.shm.peers[j as usize].lent.push((id, buf));
        self.control(j, Control::Grant(Grant { id, cap, at }));
    }

    /// Keep a landing buffer local peer `j` lent us.
    pub(super) fn granted(&mut self, j: u32, g: Grant) {
        self.shm.peers[j as usize].grants.push_back(g);
    }

    /// Send `id` (`len` bytes) to local peer `j` by writing it at once
    /// into a landing buffer `j` lent us; false when there is none that
    /// fits (or it cannot be mapped here).
    pub(super) fn put(&mut self, j: u32, id: ReqId, tag: u64, len: usize) -> bool {
        let grants = &mut self.shm.peers[j as usize].grants;
        let Some(k) = grants.iter().position(|g| g.cap >= len) else {
            return false;
        };
        let g = grants.remove(k).expect("found above");
        let Ok(dst) = self.shm.heaps.resolve(&g.at) else {
            // Our mapping failed: the buffer stays with the receiver.
            return false;
        };
        let pieces = self.reqs.pieces(id);
        // SAFETY: the grant gives us `g.cap >= len` bytes at `dst` until we
        // publish the Put cell; the send's pieces hold `len` readable bytes.
        unsafe { iov::gather(pieces, dst, len) };
        self.control(
            j,
            Control::Put {
                grant: g.id,
                tag,
                size: len,
            },
        );
        true
    }

    /// Local peer `j` wrote a message of `size` bytes into the buffer of
    /// our grant `grant`: it arrives like any message.
    pub(super) fn arrive_put(&mut self, j: u32, grant: u64, tag: u64, size: usize) {
        let from = self.shm.peers[j as usize].rank;
        let lent = &mut self.shm.peers[j as usize].lent;
        let Some(k) = lent.iter().position(|(id, _)| *id == grant) else {
            self.boot.abort(
                70,
                &format!("tessel: rank {from} wrote into unknown grant {grant}"),
            );
            return;
        };
        let (_, mut buf) = lent.swap_remove(k);
        buf.truncate(size);
        self.arrive(from, tag, crate::endpoint::Arrival::Landed(buf));
    }

    /// Receive a message that landed in a granted buffer: a managed
    /// receive takes the buffer itself (no copy), another one copies out.
    pub(in crate::endpoint) fn land(&mut self, id: ReqId, from: u32, tag: u64, buf: RecvBuf) {
        let n = buf.len();
        self.stats.transfer(Protocol::Put, n);
        let r = self.reqs.get_mut(id).expect("matched request exists");
        let result = match r.managed {
            Some(cap) if r.recv_buf.is_none() && n <= cap => {
                r.recv_buf = Some(buf);
                Ok(Status::new(from, tag, n))
            }
            _ => self.deliver(id, from, tag, buf.as_slice()),
        };
        self.reqs.complete(id, result);
    }
}

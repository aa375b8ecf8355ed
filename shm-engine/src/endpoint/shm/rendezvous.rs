//! The rendezvous of a matched large message from a local peer: in chunks
//! ([`chunked`](super::chunked)) when its plan says so, else one GET over
//! cross-memory attach and a FIN; when cross-memory attach is refused, the
//! staging pipeline (CTS, then the sender streams chunks through staging
//! slots, which the receiver scatters in order).

use super::cell::{Control, Rts};
use super::send::Outgoing;
use crate::endpoint::Endpoint;
use crate::endpoint::request::{ReqId, truncation};
use crate::iov::{self, Cursor, Piece};
use crate::stats::Protocol;
use crate::sys;

/// A pipelined rendezvous receive: chunks arrive in order and are
/// scattered at `cursor`.
#[derive(Debug)]
pub(in crate::endpoint) struct Pipeline {
    source: u32,
    tag: u64,
    size: usize,
    got: usize,
    cursor: Cursor,
}

impl Endpoint {
    /// Start receiving rendezvous `rts` into matched request `id`: in
    /// chunks, or read it over CMA and send FIN, or (CMA refused) ask for
    /// the pipeline.
    pub(in crate::endpoint) fn start_rndv(&mut self, id: ReqId, rts: Rts) {
        self.provide(id, rts.size);
        let (j, tag) = (rts.from, rts.tag);
        let source = self.shm.peers[j as usize].rank;
        if self.shm.cma {
            if self.start_chunked(id, &rts) {
                return;
            }
            let cap = self.reqs.get(id).expect("matched request exists").cap;
            if self.cma_get(id, &rts).is_ok() {
                self.control(j, Control::Fin { sreq: rts.sreq });
                self.stats.transfer(Protocol::Get, rts.size);
                self.reqs
                    .complete(id, truncation(source, tag, rts.size, cap));
                return;
            }
            // Refused after all (ptrace policy changed, seccomp...): fall
            // back to the staging pipeline from now on.
            self.shm.cma = false;
        }
        if let Some(r) = self.reqs.get_mut(id) {
            let cursor = Cursor::start(r.buf.pieces());
            r.pipeline = Some(Pipeline {
                source,
                tag,
                size: rts.size,
                got: 0,
                cursor,
            });
        }
        self.stats.transfer(Protocol::Pipeline, rts.size);
        self.control(
            j,
            Control::CtsPipeline {
                sreq: rts.sreq,
                rreq: id,
            },
        );
    }

    /// Read the sender's pieces of `rts` into request `id`'s pieces with
    /// `process_vm_readv` (first the sender's list, when it has one), as
    /// much as fits.
    fn cma_get(&mut self, id: ReqId, rts: &Rts) -> std::io::Result<()> {
        let remote = if rts.pieces == 0 {
            vec![Piece::new(rts.addr as usize as *mut u8, rts.size)]
        } else {
            let n = usize::try_from(rts.pieces).map_err(std::io::Error::other)?;
            let mut list = vec![Piece::new(std::ptr::null_mut(), 0); n];
            // SAFETY: `list` is a local array of `n` pieces, plain data
            // whatever bytes land in it (the sender wrote `iovec`s).
            unsafe {
                sys::cma_read(
                    rts.pid,
                    rts.addr,
                    list.as_mut_ptr().cast(),
                    size_of_val(&list[..]),
                )?;
            }
            list
        };
        let r = self.reqs.get(id).expect("matched request exists");
        let mut sink = [0u8; iov::MAX_BRIDGE];
        let bridged = iov::bridge(&remote, r.buf.pieces(), sink.as_mut_ptr());
        let (local, remote) = match &bridged {
            Some((remote, local)) => (&local[..], &remote[..]),
            None => (r.buf.pieces(), &remote[..]),
        };
        // SAFETY: the receive's pieces are writable and untouched until
        // completion (irecv contract, or our own Vec); the sink is a local
        // array nothing reads. `from_remote` fills the shorter list or
        // fails.
        unsafe { crate::copy::from_remote(rts.pid, local, remote)? };
        Ok(())
    }

    /// The receiver of our send `sreq` asks for the pipeline into its
    /// receive `rreq`.
    pub(super) fn stream(&mut self, j: u32, sreq: ReqId, rreq: u64) {
        let Some(r) = self.reqs.get(sreq) else {
            return;
        };
        let (len, cursor) = (r.cap, Cursor::start(r.buf.pieces()));
        self.enqueue(
            j,
            Outgoing::Stream {
                sreq,
                rreq,
                len,
                off: 0,
                cursor,
            },
        );
    }

    /// Bytes `off..off+len` of pipelined receive `rreq` arrived from local
    /// peer `j` in its staging slot `slot`.
    pub(super) fn chunk(&mut self, j: u32, rreq: ReqId, off: usize, slot: u64, len: usize) {
        let data = self.shm.seg.staging_slot(j, self.shm.me, slot);
        let mut finished = None;
        if let Some(r) = self.reqs.get_mut(rreq)
            && let Some(p) = r.pipeline.as_mut()
        {
            // Chunks come in order (one FIFO ring per pair).
            debug_assert_eq!(off, p.got, "pipeline chunk out of order");
            // SAFETY: the slot holds `len` published bytes (SP1), checked
            // against the slot size; the cursor writes only what fits in
            // the receive's pieces.
            unsafe { p.cursor.scatter(r.buf.pieces(), data, len) };
            p.got += len;
            if p.got == p.size {
                finished = Some(truncation(p.source, p.tag, p.size, r.cap));
            }
        }
        self.shm.free_slot(j, slot);
        if let Some(result) = finished {
            self.reqs.complete(rreq, result);
        }
    }
}

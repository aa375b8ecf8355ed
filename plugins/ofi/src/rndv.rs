//! Rendezvous state: sends waiting for their FIN, payloads announced to
//! the engine (tokens), and fetches reading them.
//!
//! A fetch walks the sender's segments and the engine's pieces together,
//! posting one `fi_read` per overlap (at most the provider's largest
//! transfer), with at most [`READS_IN_FLIGHT`] posted at a time.

use std::ffi::c_int;

use plugin_api::OK;

use crate::buffers::{Ctx, Kind, Region};
use crate::fi::{Addr, Endpoint, FiError, MrId};
use crate::wire::Seg;

/// Reads in flight per fetch.
pub const READS_IN_FLIGHT: usize = 16;

/// A rendezvous send waiting for its FIN.
#[derive(Debug)]
pub struct RndvSend {
    /// The engine's cookie; `None` when the send was reported done at once
    /// (a packed payload).
    pub cookie: Option<u64>,
    /// The receiver.
    pub peer: u32,
    /// Registrations of the payload's pieces.
    pub mrs: Vec<MrId>,
    /// The packed payload, when it came in more than `MAX_SEGS` pieces.
    pub packed: Option<Region>,
}

/// A payload announced by an RTS, waiting for `fetch` or `discard`.
#[derive(Debug)]
pub struct Token {
    /// The sender.
    pub peer: u32,
    /// The sender's operation.
    pub op: u64,
    /// Payload length.
    pub len: u64,
    /// Where the payload is.
    pub segs: Vec<Seg>,
}

/// A piece of the engine's buffer a fetch reads into.
#[derive(Debug)]
pub struct Piece {
    /// Start.
    pub base: *mut u8,
    /// Length (non-zero).
    pub len: usize,
    /// Its registration, under `FI_MR_LOCAL`.
    pub mr: Option<MrId>,
}

/// A fetch: reads from the sender's segments into the engine's pieces.
///
/// Cursor invariant: `(seg, seg_off)` and `(piece, piece_off)` name the
/// first byte not yet asked for, on both sides; both reach the end
/// together because the totals are equal (checked in `fetch`).
#[derive(Debug)]
pub struct Fetch {
    /// The engine's cookie.
    pub cookie: u64,
    /// The sender.
    pub peer: u32,
    src: Addr,
    /// The sender's operation, for the FIN.
    pub op: u64,
    segs: Vec<Seg>,
    /// The engine's buffer.
    pub pieces: Vec<Piece>,
    seg: usize,
    seg_off: u64,
    piece: usize,
    piece_off: usize,
    outstanding: usize,
    /// Read contexts (one allocation: their addresses stay put while
    /// posted), made once the fetch has its id.
    ctxs: Box<[Ctx]>,
    free_ctxs: Vec<u32>,
    /// `OK`, or the error that ends the fetch.
    pub status: c_int,
}

impl Fetch {
    /// A fetch of `token`'s payload from `src` into `pieces` (whose total
    /// is the payload's length).
    pub fn new(cookie: u64, src: Addr, token: Token, pieces: Vec<Piece>) -> Self {
        let mut f = Fetch {
            cookie,
            peer: token.peer,
            src,
            op: token.op,
            segs: token.segs,
            pieces,
            seg: 0,
            seg_off: 0,
            piece: 0,
            piece_off: 0,
            outstanding: 0,
            ctxs: Box::new([]),
            free_ctxs: (0..READS_IN_FLIGHT as u32).rev().collect(),
            status: OK,
        };
        f.skip_empty_segs();
        f
    }

    /// Make the read contexts, naming fetch `id` (before any read).
    pub fn set_id(&mut self, id: u64) {
        debug_assert_eq!(self.outstanding, 0);
        self.ctxs = (0..READS_IN_FLIGHT as u32)
            .map(|i| Ctx::new(Kind::Read, i, id))
            .collect();
    }

    /// A read ended (its context is free again) with `status`.
    pub fn read_done(&mut self, ctx: u32, status: c_int) {
        self.outstanding -= 1;
        self.free_ctxs.push(ctx);
        if status != OK && self.status == OK {
            self.status = status;
        }
    }

    /// End the fetch with `status` (reads still posted end on their own).
    pub fn fail(&mut self, status: c_int) {
        if self.status == OK {
            self.status = status;
        }
    }

    /// Post reads until all are posted, the provider says wait, or the
    /// in-flight limit is reached; each at most `max_read` bytes.
    pub fn issue(&mut self, net: &Endpoint, max_read: u64) -> Issue {
        let f = self;
        loop {
            if f.status != OK || f.all_issued() {
                return Issue::Done;
            }
            // Wait for a read to complete if all contexts are posted: its
            // completion issues more.
            let Some(c) = f.free_ctxs.pop() else {
                return Issue::Done;
            };
            let s = f.segs[f.seg];
            let p = &f.pieces[f.piece];
            let n = (s.len - f.seg_off)
                .min((p.len - f.piece_off) as u64)
                .min(max_read);
            let desc = p.mr.map_or(std::ptr::null_mut(), |m| net.mr_desc(m));
            // SAFETY: `piece_off + n <= p.len` bytes of the engine's buffer,
            // which stays until the fetch completes (the ABI); context `c`
            // is free (not posted) and lives in the fetch's array, which is
            // dropped only when no read is posted or after the endpoint.
            let r = unsafe {
                net.read(
                    p.base.add(f.piece_off),
                    n as usize,
                    desc,
                    f.src,
                    s.addr + f.seg_off,
                    s.key,
                    f.ctxs[c as usize].as_op_context(),
                )
            };
            match r {
                Ok(()) => {
                    f.outstanding += 1;
                    f.seg_off += n;
                    f.piece_off += n as usize;
                    if f.piece_off == p.len {
                        f.piece += 1;
                        f.piece_off = 0;
                    }
                    f.skip_empty_segs();
                }
                Err(e) => {
                    f.free_ctxs.push(c);
                    if e.is_again() {
                        return Issue::Blocked;
                    }
                    return Issue::Failed(e);
                }
            }
        }
    }

    fn skip_empty_segs(&mut self) {
        while self.seg < self.segs.len() && self.seg_off == self.segs[self.seg].len {
            self.seg += 1;
            self.seg_off = 0;
        }
    }

    fn all_issued(&self) -> bool {
        self.seg >= self.segs.len()
    }

    /// Nothing posted and nothing more to post.
    pub fn finished(&self) -> bool {
        self.outstanding == 0 && (self.status != OK || self.all_issued())
    }
}

/// How issuing reads went.
#[derive(Debug)]
pub enum Issue {
    /// Everything is posted, or the in-flight limit is reached (a
    /// completion issues more), or the fetch already failed.
    Done,
    /// The provider said "no resources": try again after progress.
    Blocked,
    /// Posting failed: the fetch ends with this error.
    Failed(FiError),
}

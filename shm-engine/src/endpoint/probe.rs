//! Probing and cancelling (MPI-4.0 §3.8): probes look at the unexpected
//! queue ([`Endpoint::iprobe`]) or take a message out of it
//! ([`Endpoint::improbe`], received later with [`Endpoint::imrecv`]); a
//! posted receive that has not matched can be cancelled
//! ([`Endpoint::cancel`]).

use super::delivery::{Arrival, Message};
use super::progress::Backoff;
use super::request::Status;
use super::{Endpoint, Request};
use crate::error::Error;
use crate::iov::{Buf, Piece};
use crate::matching::{Source, TagMatch};

impl Endpoint {
    /// Progress once, then report the oldest message from `source` with a
    /// tag `tag` accepts that no receive has matched yet, leaving it to be
    /// received. A rendezvous message counts with its full size.
    pub fn iprobe(&mut self, source: Source, tag: TagMatch) -> Option<Status> {
        self.progress();
        self.matcher
            .peek_unexpected(source, tag)
            .map(|(from, tag, body)| Status::new(*from, *tag, body.len()))
    }

    /// Wait (backing off) until [`iprobe`](Self::iprobe) sees a message.
    pub fn probe(&mut self, source: Source, tag: TagMatch) -> Status {
        let mut backoff = Backoff::default();
        loop {
            if let Some(st) = self.iprobe(source, tag) {
                return st;
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Progress once, then take the oldest message [`iprobe`](Self::iprobe)
    /// would report out of the unexpected queue: it is matched now (a
    /// synchronous sender learns so), and only [`imrecv`](Self::imrecv)
    /// of the returned [`Message`] receives it.
    pub fn improbe(&mut self, source: Source, tag: TagMatch) -> Option<(Status, Message)> {
        self.progress();
        let (from, tag, mut body) = self.matcher.take_unexpected(source, tag)?;
        if let Arrival::Data { ack, .. } | Arrival::Fetch { ack, .. } = &mut body {
            self.acknowledge(ack.take());
        }
        let status = Status::new(from, tag, body.len());
        Some((
            status,
            Message {
                source: from,
                tag,
                body,
            },
        ))
    }

    /// Wait (backing off) until [`improbe`](Self::improbe) takes a message.
    pub fn mprobe(&mut self, source: Source, tag: TagMatch) -> (Status, Message) {
        let mut backoff = Backoff::default();
        loop {
            if let Some(found) = self.improbe(source, tag) {
                return found;
            }
            self.progress_or_back_off(&mut backoff);
        }
    }

    /// Start receiving a matched message into a new buffer of `capacity`
    /// bytes; the data comes back in the completion.
    pub fn imrecv(&mut self, msg: Message, capacity: usize) -> Request {
        let mut buf = vec![0u8; capacity];
        let one = Buf::One(Piece::new(buf.as_mut_ptr(), capacity));
        self.start_mrecv(msg, one, Some(buf))
    }

    /// Start receiving a matched message into `cap` bytes at `ptr`: an
    /// eager message is copied at once, a rendezvous starts here.
    ///
    /// # Safety
    /// As for [`irecv_raw`](Self::irecv_raw).
    pub unsafe fn imrecv_raw(&mut self, msg: Message, ptr: *mut u8, cap: usize) -> Request {
        self.start_mrecv(msg, Buf::One(Piece::new(ptr, cap)), None)
    }

    /// Start receiving a matched message into `pieces` (see
    /// [`imrecv_raw`](Self::imrecv_raw) and
    /// [`irecv_iov_raw`](Self::irecv_iov_raw)).
    ///
    /// # Safety
    /// As for [`irecv_iov_raw`](Self::irecv_iov_raw).
    pub unsafe fn imrecv_iov_raw(&mut self, msg: Message, pieces: &[Piece]) -> Request {
        self.start_mrecv(msg, Buf::of(pieces), None)
    }

    /// Receive a matched message into `buf` and wait for it.
    pub fn mrecv(&mut self, msg: Message, buf: &mut [u8]) -> Result<Status, Error> {
        // SAFETY: `buf` outlives the request: we wait for it here.
        let r = unsafe { self.imrecv_raw(msg, buf.as_mut_ptr(), buf.len()) };
        self.wait(r).map(|c| c.status)
    }

    fn start_mrecv(&mut self, msg: Message, buf: Buf, owned: Option<Vec<u8>>) -> Request {
        let id = self.reqs.add(buf, owned, Status::new(0, 0, 0), true);
        self.receive_arrival(id, msg.source, msg.tag, msg.body);
        Request { id }
    }

    /// Cancel a receive that has not matched a message yet: it completes
    /// at once with [`Status::cancelled`] set, and a later message goes to
    /// another receive. Returns false, leaving the request to complete
    /// normally, for a receive that already matched and for every send
    /// (MPI-4.0 §3.8.4 allows a cancel to fail).
    pub fn cancel(&mut self, req: &Request) -> bool {
        let waiting = self
            .reqs
            .get_mut(req.id)
            .is_some_and(|r| r.is_recv && r.result.is_none());
        if !waiting || !self.matcher.cancel(req.id) {
            return false;
        }
        let mut status = Status::new(0, 0, 0);
        status.cancelled = true;
        self.reqs.complete(req.id, Ok(status));
        true
    }
}

//! The request table: every operation in flight, named by a [`ReqId`]
//! that carries its slot and the slot's generation, so a stale id (of a
//! request already waited for) never reaches the request that reuses the
//! slot. The matcher's posted queue holds full ids.

#[cfg(doc)]
use super::Endpoint;
use super::RecvBuf;
use super::shm::Pipeline;
use crate::error::Error;
use crate::iov::{Buf, total};

/// What a completed receive (or send) reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status {
    /// The sender (for a send: this process).
    pub source: u32,
    /// The message's tag.
    pub tag: u64,
    /// Bytes delivered.
    pub len: usize,
    /// The request was cancelled before it matched ([`Endpoint::cancel`]);
    /// nothing was received.
    pub cancelled: bool,
}

impl Status {
    pub(super) const fn new(source: u32, tag: u64, len: usize) -> Self {
        Self {
            source,
            tag,
            len,
            cancelled: false,
        }
    }
}

/// A finished request.
#[derive(Debug, PartialEq, Eq)]
pub struct Completion {
    /// What arrived (or was sent).
    pub status: Status,
    /// For [`Endpoint::irecv`]: the received bytes. `None` otherwise.
    pub data: Option<Vec<u8>>,
    /// For [`Endpoint::irecv_managed`]: the buffer the engine received
    /// into. `None` otherwise.
    pub buffer: Option<RecvBuf>,
}

/// A nonblocking operation in flight. Finish it with [`Endpoint::wait`].
/// A request dropped without waiting still completes, but its bookkeeping
/// (and an owned buffer) stays in the endpoint until the endpoint is dropped.
#[must_use = "a request must be waited for to learn its result"]
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Request {
    pub(super) id: u64,
}

/// A request's id: its slot (low 32 bits) and the slot's generation.
pub(super) type ReqId = u64;

/// The slot of request `id`.
fn index(id: ReqId) -> usize {
    (id & 0xffff_ffff) as usize
}

/// One operation in flight.
#[derive(Debug)]
pub(super) struct Req {
    pub(super) generation: u32,
    /// `Some` once complete.
    pub(super) result: Option<Result<Status, Error>>,
    /// Receive buffer (raw receives, or `owned`'s storage); for a send,
    /// the source buffer.
    pub(super) buf: Buf,
    /// Bytes in `buf`.
    pub(super) cap: usize,
    /// Whether this is a receive (its owned buffer is handed back).
    pub(super) is_recv: bool,
    /// Storage of a safe `isend`/`irecv`.
    pub(super) owned: Option<Vec<u8>>,
    /// For a receive posted without a buffer: the most bytes it takes;
    /// the engine allocates `recv_buf` when a message matches.
    pub(super) managed: Option<usize>,
    pub(super) recv_buf: Option<RecvBuf>,
    /// Pipelined rendezvous receive in progress.
    pub(super) pipeline: Option<Pipeline>,
    /// A send's status, known when it starts.
    pub(super) status: Status,
    /// A send to another node: events still owed before it completes
    /// (the plugin's completion, and for a synchronous send the ACK).
    pub(super) net_pending: u8,
}

/// Every request of one endpoint.
#[derive(Debug, Default)]
pub(super) struct Requests {
    slots: Vec<Option<Req>>,
    free: Vec<u32>,
}

impl Requests {
    /// A new request over `buf` (`owned` is its storage, if the engine
    /// owns it); `status` is a send's, known at once.
    pub(super) fn add(
        &mut self,
        buf: Buf,
        owned: Option<Vec<u8>>,
        status: Status,
        is_recv: bool,
    ) -> ReqId {
        let idx = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            (self.slots.len() - 1) as u32
        });
        let slot = &mut self.slots[idx as usize];
        let generation = slot.as_ref().map_or(0, |r| r.generation);
        let cap = total(buf.pieces());
        *slot = Some(Req {
            generation,
            result: None,
            buf,
            cap,
            is_recv,
            owned,
            managed: None,
            recv_buf: None,
            pipeline: None,
            status,
            net_pending: 0,
        });
        (u64::from(generation) << 32) | u64::from(idx)
    }

    /// Request `id`, unless it was released.
    pub(super) fn get(&self, id: ReqId) -> Option<&Req> {
        self.slots
            .get(index(id))?
            .as_ref()
            .filter(|r| u64::from(r.generation) == id >> 32)
    }

    /// Request `id`, unless it was released.
    pub(super) fn get_mut(&mut self, id: ReqId) -> Option<&mut Req> {
        self.slots
            .get_mut(index(id))?
            .as_mut()
            .filter(|r| u64::from(r.generation) == id >> 32)
    }

    /// The pieces of request `id` (none once it was released).
    pub(super) fn pieces(&self, id: ReqId) -> &[crate::iov::Piece] {
        self.get(id).map_or(&[][..], |r| r.buf.pieces())
    }

    /// Record `id`'s result: it is complete.
    pub(super) fn complete(&mut self, id: ReqId, result: Result<Status, Error>) {
        if let Some(r) = self.get_mut(id) {
            r.result = Some(result);
        }
    }

    /// Complete send `id` with the status it was given at its start.
    pub(super) fn complete_sent(&mut self, id: ReqId) {
        if let Some(r) = self.get_mut(id) {
            r.result = Some(Ok(r.status));
        }
    }

    /// Whether `id` is complete.
    pub(super) fn is_complete(&self, id: ReqId) -> bool {
        self.get(id).is_some_and(|r| r.result.is_some())
    }

    /// Take complete request `id`'s outcome and free its slot.
    pub(super) fn finish(&mut self, id: ReqId) -> Result<Completion, Error> {
        let r = self.get_mut(id).expect("completed request exists");
        let result = r.result.take().expect("complete");
        let data = r.owned.take().filter(|_| r.is_recv);
        let buffer = r.recv_buf.take();
        self.release(id);
        result.map(|status| Completion {
            status,
            buffer,
            data: data.map(|mut v| {
                v.truncate(status.len);
                v
            }),
        })
    }

    /// Free request `id`'s slot.
    pub(super) fn release(&mut self, id: ReqId) {
        let idx = index(id);
        if let Some(r) = self.slots[idx].as_mut() {
            // Keep the slot (and its generation) so a stale id never matches
            // the request that reuses it.
            r.result = None;
            r.owned = None;
            r.managed = None;
            r.recv_buf = None;
            r.buf = Buf::of(&[]);
            r.generation = r.generation.wrapping_add(1);
        }
        self.free.push(idx as u32);
    }
}

/// A receive's result for a message of `incoming` bytes into `capacity`.
pub(super) fn truncation(
    source: u32,
    tag: u64,
    incoming: usize,
    capacity: usize,
) -> Result<Status, Error> {
    if incoming > capacity {
        Err(Error::Truncated {
            source,
            tag,
            incoming,
            capacity,
        })
    } else {
        Ok(Status::new(source, tag, incoming))
    }
}

//! What every transport's arrivals go through: the one matcher (posted and
//! unexpected queues keyed by process id), and delivery into the matched
//! request, whichever path the message came by.

use super::request::{ReqId, Status, truncation};
use super::shm::Rts;
use super::{Endpoint, RecvBuf};
use crate::endpoint::shm::cell::Control;
use crate::error::Error;
use crate::iov::{self, Buf, Cursor, Piece};
use crate::stats::Protocol;

/// A message taken out of the unexpected queue by a matched probe
/// ([`Endpoint::improbe`]): no receive can match it any more; receive it
/// with [`Endpoint::imrecv`]. Dropping it discards an eager message, and
/// leaves the sender of a rendezvous message waiting forever.
#[must_use = "a matched message must be received with imrecv"]
#[derive(Debug)]
pub struct Message {
    pub(super) source: u32,
    pub(super) tag: u64,
    pub(super) body: Arrival,
}

impl Message {
    /// The process that sent it.
    pub fn source(&self) -> u32 {
        self.source
    }
}

/// What a receiver owes the sender of a synchronous message once it
/// matches: an ACK naming the sender's request `sreq`, as a cell to local
/// peer `j` or as a message to process `rank` on another node.
#[derive(Clone, Copy, Debug)]
pub(super) enum Ack {
    Local { j: u32, sreq: u64 },
    Remote { rank: u32, sreq: u64 },
}

/// An arrival's body, as it waits in the unexpected queue.
#[derive(Debug)]
pub(super) enum Arrival {
    /// A whole message (a copy of an inline, eager or network-eager one).
    Data { bytes: Copied, ack: Option<Ack> },
    /// A local rendezvous offer.
    Rts(Rts),
    /// A message a local sender wrote into a buffer we granted.
    Landed(RecvBuf),
    /// A message from another node whose payload waits there: fetched
    /// through the network plugin once a receive matches.
    Fetch {
        len: usize,
        token: u64,
        ack: Option<Ack>,
    },
}

/// Bytes of a copy kept in place rather than on the heap: an inline
/// message's worth.
const IN_PLACE: usize = crate::layout::INLINE_CAPACITY;

/// A copy of a whole message, as the unexpected queue keeps it: in place
/// up to an inline message's size, so that the small messages a sender
/// ahead of its receiver leaves cost no allocation when they arrive and
/// no free when a receive takes them (about 200 instructions of 1,100 for
/// a receive of an 8-byte message that arrived first); on the heap beyond.
pub(super) enum Copied {
    InPlace { len: u8, data: [u8; IN_PLACE] },
    Heap(Vec<u8>),
}

const _: () = assert!(IN_PLACE <= u8::MAX as usize);

impl Copied {
    /// A copy of `data`.
    pub(super) fn of(data: &[u8]) -> Self {
        if data.len() <= IN_PLACE {
            let mut copy = [0; IN_PLACE];
            crate::copy::slice(&mut copy[..data.len()], data);
            Self::InPlace {
                len: data.len() as u8,
                data: copy,
            }
        } else {
            Self::Heap(data.to_vec())
        }
    }

    /// `data` itself as the copy (in place when small enough).
    pub(super) fn from_vec(data: Vec<u8>) -> Self {
        if data.len() <= IN_PLACE {
            Self::of(&data)
        } else {
            Self::Heap(data)
        }
    }
}

impl std::ops::Deref for Copied {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Self::InPlace { len, data } => &data[..usize::from(*len)],
            Self::Heap(v) => v,
        }
    }
}

impl std::fmt::Debug for Copied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Copied({} bytes)", self.len())
    }
}

impl Arrival {
    /// The message's full size.
    pub(super) fn len(&self) -> usize {
        match self {
            Self::Data { bytes, .. } => bytes.len(),
            Self::Rts(rts) => rts.size,
            Self::Landed(buf) => buf.len(),
            Self::Fetch { len, .. } => *len,
        }
    }
}

impl Endpoint {
    /// A message from `from` with `tag` arrived: the oldest matching
    /// receive takes it, or it waits in the unexpected queue.
    pub(super) fn arrive(&mut self, from: u32, tag: u64, body: Arrival) {
        match self.matcher.match_arrival(from, tag) {
            Some(p) => {
                let id = p.req;
                self.receive_arrival(id, from, tag, body);
            }
            None => self.matcher.push_unexpected(from, tag, body),
        }
    }

    /// A whole message arrived in memory the transport reuses (a cell, a
    /// staging slot, a plugin's buffer): delivered from there when a
    /// receive matches, copied into the unexpected queue otherwise.
    pub(super) fn arrive_data(&mut self, from: u32, tag: u64, data: &[u8], ack: Option<Ack>) {
        match self.matcher.match_arrival(from, tag) {
            Some(p) => {
                let id = p.req;
                self.acknowledge(ack);
                let result = self.deliver(id, from, tag, data);
                self.reqs.complete(id, result);
            }
            None => {
                let bytes = Copied::of(data);
                self.matcher
                    .push_unexpected(from, tag, Arrival::Data { bytes, ack });
            }
        }
    }

    /// Send request `id` (`len` bytes of `tag`) to this process itself
    /// (local index `me`): it arrives at once, without a ring or a
    /// rendezvous. A posted receive takes it straight from the send
    /// buffer, one copy (piece to piece, when either buffer is in
    /// pieces); otherwise it waits in the unexpected queue as a copy. The
    /// send completes now, or, when synchronous, once a receive matched
    /// it (the ACK comes as a cell to ourselves). Sends to ourselves all
    /// take this path, so they stay in order.
    pub(super) fn send_self(&mut self, me: u32, id: ReqId, tag: u64, len: usize, sync: bool) {
        if len > self.cfg.eager_max {
            self.stats.transfer(Protocol::ToSelf, len);
        }
        let ack = sync.then_some(Ack::Local { j: me, sreq: id });
        if self.reqs.pieces(id).len() > 1
            && let Some(p) = self.matcher.match_arrival(self.rank, tag)
        {
            let rid = p.req;
            self.acknowledge(ack);
            self.provide(rid, len);
            let r = self.reqs.get(rid).expect("matched request exists");
            // SAFETY: the sender's pieces are readable and the receiver's
            // writable until their requests complete (isend and irecv
            // contracts, or the receive's own buffer), and a receive
            // buffer may not overlap a send buffer (MPI contract).
            unsafe { iov::copy(r.buf.pieces(), self.reqs.pieces(id), len) };
            let result = truncation(self.rank, tag, len, r.cap);
            self.reqs.complete(rid, result);
            if !sync {
                self.reqs.complete_sent(id);
            }
            return;
        }
        match self.reqs.pieces(id) {
            _ if len == 0 => self.arrive_data(self.rank, tag, &[], ack),
            [p] => {
                // SAFETY: the sender's buffer is readable, `len` bytes in
                // all (isend contract), and stays so until the request
                // completes below; a receive buffer may not overlap it
                // (MPI contract).
                let data = unsafe { std::slice::from_raw_parts(p.ptr, len) };
                self.arrive_data(self.rank, tag, data, ack);
            }
            many => {
                // No posted receive matched (above): the gathered bytes
                // are the copy the unexpected queue keeps.
                let mut v = vec![0; len];
                // SAFETY: as above; `v` holds `len` bytes.
                unsafe { Cursor::start(many).gather(many, v.as_mut_ptr(), len) };
                let body = Arrival::Data {
                    bytes: Copied::from_vec(v),
                    ack,
                };
                self.matcher.push_unexpected(self.rank, tag, body);
            }
        }
        if !sync {
            self.reqs.complete_sent(id);
        }
    }

    /// Receive a matched arrival into request `id`.
    pub(super) fn receive_arrival(&mut self, id: ReqId, from: u32, tag: u64, body: Arrival) {
        match body {
            Arrival::Data { bytes, ack } => {
                self.acknowledge(ack);
                let result = self.deliver(id, from, tag, &bytes);
                self.reqs.complete(id, result);
            }
            Arrival::Rts(rts) => self.start_rndv(id, rts),
            Arrival::Landed(buf) => self.land(id, from, tag, buf),
            Arrival::Fetch { len, token, ack } => {
                self.acknowledge(ack);
                self.start_fetch(id, from, tag, len, token);
            }
        }
    }

    /// Tell a synchronous sender its message matched.
    pub(super) fn acknowledge(&mut self, ack: Option<Ack>) {
        match ack {
            None => {}
            Some(Ack::Local { j, sreq }) => self.control(j, Control::Ack { sreq }),
            Some(Ack::Remote { rank, sreq }) => self.send_ack_remote(rank, sreq),
        }
    }

    /// Give a managed receive its buffer, for a `size`-byte message.
    pub(super) fn provide(&mut self, id: ReqId, size: usize) {
        if let Some(r) = self.reqs.get_mut(id)
            && let Some(cap) = r.managed
            && r.recv_buf.is_none()
        {
            let b = RecvBuf::new(size.min(cap));
            r.buf = Buf::One(Piece::new(b.as_ptr(), b.len()));
            r.cap = cap;
            r.recv_buf = Some(b);
        }
    }

    /// Scatter a whole message into request `id`'s pieces (as much as
    /// fits).
    pub(super) fn deliver(
        &mut self,
        id: ReqId,
        source: u32,
        tag: u64,
        data: &[u8],
    ) -> Result<Status, Error> {
        self.provide(id, data.len());
        let r = self.reqs.get(id).expect("matched request exists");
        let pieces = r.buf.pieces();
        // SAFETY: the pieces are writable (irecv contract or our own Vec);
        // `data` is a distinct allocation or a staging slot.
        unsafe { iov::scatter(pieces, data.as_ptr(), data.len()) };
        truncation(source, tag, data.len(), r.cap)
    }
}

#[cfg(all(test, not(tessel_loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_copy_gives_back_its_bytes_in_place_or_on_the_heap() {
        let data: Vec<u8> = (0..200u8).collect();
        for n in [0, 1, 8, IN_PLACE - 1, IN_PLACE, IN_PLACE + 1, 200] {
            for c in [Copied::of(&data[..n]), Copied::from_vec(data[..n].to_vec())] {
                assert_eq!(&*c, &data[..n], "{n} bytes");
                let in_place = matches!(c, Copied::InPlace { .. });
                assert_eq!(in_place, n <= IN_PLACE, "{n} bytes");
            }
        }
    }
}

//! The inter-node path: messages to and from processes of other nodes,
//! carried by a network plugin ([`crate::transport`]).
//!
//! Every message is one active message: a 40-byte engine [`Header`] and
//! the payload. The plugin delivers small payloads as data and large ones
//! as a token; the endpoint matches the header like any arrival and, for a
//! token, fetches the payload straight into the matched buffer (a user
//! buffer, or a buffer of its own for a receive posted without one), so a
//! large message moves once, after the match, with no copy through the
//! engine. A synchronous send is acknowledged by an `Ack` message at the
//! match.
//!
//! Order: headers carry a per-(sender, receiver) sequence number, and
//! [`Net`] hands arrivals to the endpoint in that order whatever order the
//! transport delivered them in, so MPI's non-overtaking rule holds for
//! every plugin. "No resources" from the plugin queues the operation in
//! its peer's backlog (sends stay in order), retried at each poll.

use std::collections::{BTreeMap, HashMap, VecDeque};

use plugin_api::Iov;

use crate::iov::Piece;
use crate::transport::{NetError, NetEvent, Payload, Started, Transport};

/// Bytes of an engine header on the wire.
pub(crate) const HEADER_LEN: usize = 40;

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A tagged message for matching.
    Msg = 1,
    /// A synchronous send's message matched (`sreq` names the send).
    Ack = 2,
}

/// The engine's header of one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) kind: Kind,
    /// A synchronous send: answer with an `Ack` at the match.
    pub(crate) sync: bool,
    /// Per (sender, receiver) sequence number, from 0.
    pub(crate) seq: u32,
    pub(crate) tag: u64,
    /// The sender's request (for `Ack`).
    pub(crate) sreq: u64,
    /// The payload's size.
    pub(crate) size: u64,
}

impl Header {
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut h = [0u8; HEADER_LEN];
        h[0] = self.kind as u8;
        h[1] = u8::from(self.sync);
        h[2..4].copy_from_slice(b"TS");
        h[4..8].copy_from_slice(&self.seq.to_le_bytes());
        h[8..16].copy_from_slice(&self.tag.to_le_bytes());
        h[16..24].copy_from_slice(&self.sreq.to_le_bytes());
        h[24..32].copy_from_slice(&self.size.to_le_bytes());
        h
    }

    pub(crate) fn decode(h: &[u8]) -> Option<Self> {
        if h.len() != HEADER_LEN || &h[2..4] != b"TS" {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().expect("8 bytes"));
        Some(Self {
            kind: match h[0] {
                1 => Kind::Msg,
                2 => Kind::Ack,
                _ => return None,
            },
            sync: h[1] != 0,
            seq: u32::from_le_bytes(h[4..8].try_into().expect("4 bytes")),
            tag: u64_at(8),
            sreq: u64_at(16),
            size: u64_at(24),
        })
    }
}

/// What an operation in flight was for; handed back when it ends.
#[derive(Debug)]
pub(crate) enum Op {
    /// A send to `peer` of request `req` (`None`: an engine message such
    /// as `Ack`).
    Send { peer: u32, req: Option<u64> },
    /// Pulling a matched message's payload into request `req`, or into
    /// `scratch` when the receive is too small (the endpoint then copies
    /// what fits and reports the truncation).
    Fetch {
        req: u64,
        source: u32,
        tag: u64,
        size: usize,
        scratch: Option<Vec<u8>>,
    },
}

/// What the endpoint learns from a poll.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A message, in its sender's order.
    Message {
        peer: u32,
        header: Header,
        payload: Payload,
    },
    /// An operation ended.
    Done {
        op: Op,
        result: Result<(), NetError>,
    },
    /// A peer failed.
    PeerFailed { peer: u32, error: NetError },
    /// A peer sent something that is not an engine header.
    Corrupt { peer: u32 },
}

/// A send or fetch waiting for resources.
#[derive(Debug)]
enum Pending {
    Send {
        header: [u8; HEADER_LEN],
        pieces: Vec<Iov>,
        cookie: u64,
    },
    Fetch {
        token: u64,
        pieces: Vec<Iov>,
        cookie: u64,
    },
}

/// Per remote peer: sequence numbers both ways and early arrivals.
#[derive(Debug, Default)]
struct Peer {
    next_send: u32,
    next_recv: u32,
    /// Arrivals ahead of `next_recv`, by sequence number.
    early: BTreeMap<u32, (Header, Payload)>,
    /// Sends waiting for resources, in order.
    backlog: VecDeque<Pending>,
}

/// The engine's side of one open transport.
#[derive(Debug)]
pub(crate) struct Net {
    transport: Transport,
    peers: HashMap<u32, Peer>,
    /// Operations in flight by cookie.
    ops: HashMap<u64, Op>,
    next_cookie: u64,
    /// Fetches waiting for resources (sends wait in their peer's backlog).
    fetches: VecDeque<Pending>,
    /// Peers with a non-empty backlog.
    blocked: Vec<u32>,
    /// Operations that ended without an event (done at once, or failed).
    done: Vec<Incoming>,
    events: Vec<NetEvent>,
    wake_fd: Option<i32>,
}

/// Events handled per poll.
const BUDGET: u32 = 64;

/// The pieces of a buffer as the plugin's I/O vector, cut at `len` bytes.
pub(crate) fn iov_of(pieces: &[Piece], len: usize) -> Vec<Iov> {
    let mut left = len;
    let mut out = Vec::with_capacity(pieces.len());
    for p in pieces {
        if left == 0 {
            break;
        }
        let n = p.len.min(left);
        if n > 0 {
            out.push(Iov {
                base: p.ptr.cast(),
                len: n,
            });
        }
        left -= n;
    }
    out
}

impl Net {
    pub(crate) fn new(mut transport: Transport) -> Self {
        let wake_fd = transport.wake_fd();
        Self {
            transport,
            peers: HashMap::new(),
            ops: HashMap::new(),
            next_cookie: 1,
            fetches: VecDeque::new(),
            blocked: Vec::new(),
            done: Vec::new(),
            events: Vec::new(),
            wake_fd,
        }
    }

    pub(crate) fn transport(&self) -> &Transport {
        &self.transport
    }

    fn cookie(&mut self, op: Op) -> u64 {
        let c = self.next_cookie;
        self.next_cookie += 1;
        self.ops.insert(c, op);
        c
    }

    /// Send a message of `kind` to `peer`: `pieces` (their first `size`
    /// bytes) after a header with the next sequence number. The end comes
    /// back from [`poll`](Self::poll) as `Done` with `op`.
    ///
    /// # Safety
    /// The pieces stay valid and unmodified until then.
    pub(crate) unsafe fn send(
        &mut self,
        peer: u32,
        mut header: Header,
        pieces: &[Piece],
        op: Op,
    ) -> Result<(), NetError> {
        let p = self.peers.entry(peer).or_default();
        header.seq = p.next_send;
        p.next_send = p.next_send.wrapping_add(1);
        let queued = !p.backlog.is_empty();
        let iov = iov_of(pieces, header.size as usize);
        let cookie = self.cookie(op);
        let pending = Pending::Send {
            header: header.encode(),
            pieces: iov,
            cookie,
        };
        if queued {
            self.peers
                .get_mut(&peer)
                .expect("entry made above")
                .backlog
                .push_back(pending);
            return Ok(());
        }
        match self.start(peer, &pending) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.peers
                    .get_mut(&peer)
                    .expect("entry made above")
                    .backlog
                    .push_back(pending);
                self.blocked.push(peer);
                Ok(())
            }
            Err(e) => {
                self.ops.remove(&cookie);
                Err(e)
            }
        }
    }

    /// Pull the payload of `token` into `pieces`; the end comes back as
    /// `Done` with `op`.
    ///
    /// # Safety
    /// The pieces are writable, hold exactly the payload's length, and are
    /// not otherwise used until then.
    pub(crate) unsafe fn fetch(
        &mut self,
        token: u64,
        pieces: Vec<Iov>,
        op: Op,
    ) -> Result<(), NetError> {
        let cookie = self.cookie(op);
        let pending = Pending::Fetch {
            token,
            pieces,
            cookie,
        };
        if !self.fetches.is_empty() {
            self.fetches.push_back(pending);
            return Ok(());
        }
        match self.start(0, &pending) {
            Ok(true) => Ok(()),
            Ok(false) => {
                self.fetches.push_back(pending);
                Ok(())
            }
            Err(e) => {
                self.ops.remove(&cookie);
                Err(e)
            }
        }
    }

    /// Drop a payload nobody will receive.
    pub(crate) fn discard(&mut self, token: u64) {
        self.transport.discard(token);
    }

    /// Hand `pending` to the plugin: false when it had no resources.
    fn start(&mut self, peer: u32, pending: &Pending) -> Result<bool, NetError> {
        let (started, cookie) = match pending {
            Pending::Send {
                header,
                pieces,
                cookie,
            } => {
                // SAFETY: the pieces stay valid until the op ends (the
                // caller's contract in `send`).
                let s = unsafe { self.transport.send(peer, header, pieces, *cookie)? };
                (s, *cookie)
            }
            Pending::Fetch {
                token,
                pieces,
                cookie,
            } => {
                // SAFETY: as above, from `fetch`'s contract.
                let s = unsafe { self.transport.fetch(*token, pieces, *cookie)? };
                (s, *cookie)
            }
        };
        match started {
            Started::Done => {
                let op = self.ops.remove(&cookie).expect("cookie made for this op");
                self.done.push(Incoming::Done { op, result: Ok(()) });
                Ok(true)
            }
            Started::InProgress => Ok(true),
            Started::Again => Ok(false),
        }
    }

    /// Retry what waited for resources; a failure ends its op.
    fn retry(&mut self) {
        let blocked = std::mem::take(&mut self.blocked);
        for peer in blocked {
            while let Some(front) = self
                .peers
                .get_mut(&peer)
                .and_then(|p| p.backlog.pop_front())
            {
                match self.start(peer, &front) {
                    Ok(true) => {}
                    Ok(false) => {
                        let p = self.peers.get_mut(&peer).expect("peer with backlog");
                        p.backlog.push_front(front);
                        self.blocked.push(peer);
                        break;
                    }
                    Err(e) => self.fail(&front, e),
                }
            }
        }
        while let Some(front) = self.fetches.pop_front() {
            match self.start(0, &front) {
                Ok(true) => {}
                Ok(false) => {
                    self.fetches.push_front(front);
                    break;
                }
                Err(e) => self.fail(&front, e),
            }
        }
    }

    fn fail(&mut self, pending: &Pending, error: NetError) {
        let cookie = match pending {
            Pending::Send { cookie, .. } | Pending::Fetch { cookie, .. } => *cookie,
        };
        if let Some(op) = self.ops.remove(&cookie) {
            self.done.push(Incoming::Done {
                op,
                result: Err(error),
            });
        }
    }

    /// Whether engine messages (ACKs) are still in flight or anything
    /// waits for resources: finalize waits for these.
    pub(crate) fn busy(&self) -> bool {
        self.has_backlog()
            || self
                .ops
                .values()
                .any(|op| matches!(op, Op::Send { req: None, .. }))
    }

    /// Whether operations wait for resources.
    pub(crate) fn has_backlog(&self) -> bool {
        !self.blocked.is_empty() || !self.fetches.is_empty()
    }

    /// Progress the transport and collect what happened, arrivals in each
    /// sender's order.
    pub(crate) fn poll(&mut self, out: &mut Vec<Incoming>) -> Result<(), NetError> {
        if self.has_backlog() {
            self.retry();
        }
        out.append(&mut self.done);
        let mut events = std::mem::take(&mut self.events);
        let polled = self.transport.progress(BUDGET, &mut events);
        for ev in events.drain(..) {
            match ev {
                NetEvent::Arrived {
                    peer,
                    header,
                    payload,
                } => {
                    let Some(h) = Header::decode(&header) else {
                        if let Payload::Token { token, .. } = payload {
                            self.transport.discard(token);
                        }
                        out.push(Incoming::Corrupt { peer });
                        continue;
                    };
                    let p = self.peers.entry(peer).or_default();
                    if h.seq != p.next_recv {
                        p.early.insert(h.seq, (h, payload));
                        continue;
                    }
                    p.next_recv = p.next_recv.wrapping_add(1);
                    out.push(Incoming::Message {
                        peer,
                        header: h,
                        payload,
                    });
                    while let Some((h, payload)) = p.early.remove(&p.next_recv) {
                        p.next_recv = p.next_recv.wrapping_add(1);
                        out.push(Incoming::Message {
                            peer,
                            header: h,
                            payload,
                        });
                    }
                }
                NetEvent::Completed { cookie, result } => {
                    if let Some(op) = self.ops.remove(&cookie) {
                        out.push(Incoming::Done { op, result });
                    }
                }
                NetEvent::Failed { peer, error } => out.push(Incoming::PeerFailed { peer, error }),
            }
        }
        self.events = events;
        out.append(&mut self.done);
        polled
    }

    /// Prepare to sleep: the descriptor to poll, or `None` when the
    /// plugin has none or has events pending.
    pub(crate) fn arm(&mut self) -> Option<i32> {
        let fd = self.wake_fd?;
        (!self.has_backlog() && self.transport.arm()).then_some(fd)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_round_trip_and_foreign_bytes_are_refused() {
        let h = Header {
            kind: Kind::Msg,
            sync: true,
            seq: 7,
            tag: u64::MAX - 3,
            sreq: 1 << 40 | 5,
            size: 123_456_789,
        };
        assert_eq!(Header::decode(&h.encode()), Some(h));
        let mut bad = h.encode();
        bad[2] = b'x';
        assert_eq!(Header::decode(&bad), None);
        assert_eq!(Header::decode(&h.encode()[..39]), None);
        let mut kind = h.encode();
        kind[0] = 9;
        assert_eq!(Header::decode(&kind), None);
    }

    #[test]
    fn iov_is_cut_at_the_message_size() {
        let mut a = [0u8; 10];
        let mut b = [0u8; 10];
        let pieces = [
            Piece::new(a.as_mut_ptr(), 10),
            Piece::new(b.as_mut_ptr(), 10),
        ];
        let lens = |v: Vec<Iov>| v.iter().map(|i| i.len).collect::<Vec<_>>();
        assert_eq!(lens(iov_of(&pieces, 20)), [10, 10]);
        assert_eq!(lens(iov_of(&pieces, 13)), [10, 3]);
        assert_eq!(lens(iov_of(&pieces, 10)), [10]);
        assert!(iov_of(&pieces, 0).is_empty());
    }
}

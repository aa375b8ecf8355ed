//! The endpoint's side of the inter-node path ([`crate::net`]): sends to
//! processes of other nodes, arrivals from them handed to the one matcher
//! every transport shares, and payloads fetched into the matched buffer.

use plugin_api::Iov;

use super::request::{ReqId, Status};
use super::{Ack, Arrival, Endpoint};
use crate::error::Error;
use crate::net::{self, Header, Incoming, Kind, Op};
use crate::stats::Protocol;
use crate::transport::{NetError, Payload};

impl Endpoint {
    /// Send request `id` (`len` bytes, already described in the request)
    /// to `dest` on another node. It completes when the plugin is done
    /// with the buffer and, for a synchronous send, the ACK came back.
    pub(super) fn send_remote(
        &mut self,
        dest: u32,
        id: ReqId,
        tag: u64,
        len: usize,
        sync: bool,
    ) -> Result<(), Error> {
        let header = Header {
            kind: Kind::Msg,
            sync,
            seq: 0,
            tag,
            sreq: id,
            size: len as u64,
        };
        let net = self.net.as_mut().expect("routed to another node");
        let r = self.reqs.get_mut(id).expect("new request exists");
        r.net_pending = 1 + u8::from(sync);
        let op = Op::Send {
            peer: dest,
            req: Some(id),
        };
        // SAFETY: the pieces are the send's buffer, valid until the
        // request completes (isend's contract), which is after the op ends.
        let sent = unsafe { net.send(dest, header, r.buf.pieces(), op) };
        sent.map_err(|e| {
            self.reqs.release(id);
            net_error(dest, e)
        })
    }

    /// Tell `rank` (on another node) that its synchronous send `sreq`
    /// matched.
    pub(super) fn send_ack_remote(&mut self, rank: u32, sreq: u64) {
        let header = Header {
            kind: Kind::Ack,
            sync: false,
            seq: 0,
            tag: 0,
            sreq,
            size: 0,
        };
        let net = self.net.as_mut().expect("an ACK owed to another node");
        let op = Op::Send {
            peer: rank,
            req: None,
        };
        // SAFETY: no payload.
        if let Err(e) = unsafe { net.send(rank, header, &[], op) } {
            self.fail_job(&format!("cannot acknowledge a message of rank {rank}: {e}"));
        }
    }

    /// Fetch the `len`-byte payload of `token` (from `from`) into matched
    /// request `id`: a receive posted without a buffer gets one of the
    /// message's size first, so the transfer starts at once.
    pub(super) fn start_fetch(&mut self, id: ReqId, from: u32, tag: u64, len: usize, token: u64) {
        let net = self.net.as_mut().expect("a token from another node");
        if len == 0 {
            net.discard(token);
            self.reqs.complete(id, Ok(Status::new(from, tag, 0)));
            return;
        }
        self.provide(id, len);
        let r = self.reqs.get_mut(id).expect("matched request exists");
        let (iov, scratch) = if len <= r.cap {
            (net::iov_of(r.buf.pieces(), len), None)
        } else {
            // Truncated: take it all, keep what fits (MPI reports the
            // truncation; the rest of the message must leave the wire).
            let mut scratch = vec![0u8; len];
            let iov = vec![Iov {
                base: scratch.as_mut_ptr().cast(),
                len,
            }];
            (iov, Some(scratch))
        };
        let op = Op::Fetch {
            req: id,
            source: from,
            tag,
            size: len,
            scratch,
        };
        let net = self.net.as_mut().expect("checked above");
        // SAFETY: the pieces are the receive's buffer (irecv's contract:
        // writable and untouched until completion, which follows the op's
        // end) cut to `len`, or the scratch vector the op owns.
        if let Err(e) = unsafe { net.fetch(token, iov, op) } {
            self.reqs.complete(id, Err(net_error(from, e)));
        }
    }

    /// Poll the plugin and act on what it reports. Returns whether
    /// anything happened.
    pub(super) fn progress_net(&mut self) -> bool {
        let mut incoming = std::mem::take(&mut self.incoming);
        let net = self.net.as_mut().expect("called with a plugin");
        if let Err(e) = net.poll(&mut incoming) {
            self.fail_job(&format!("the network transport failed: {e}"));
        }
        let did = !incoming.is_empty();
        for ev in incoming.drain(..) {
            self.handle_net(ev);
        }
        self.incoming = incoming;
        did
    }

    fn handle_net(&mut self, ev: Incoming) {
        match ev {
            Incoming::Message {
                peer,
                header,
                payload,
            } => match header.kind {
                Kind::Ack => self.remote_send_step(header.sreq),
                Kind::Msg => {
                    let ack = header.sync.then_some(Ack::Remote {
                        rank: peer,
                        sreq: header.sreq,
                    });
                    match payload {
                        Payload::Data(bytes) => {
                            self.stats.transfer(Protocol::NetEager, bytes.len());
                            self.arrive_data(peer, header.tag, &bytes, ack);
                        }
                        Payload::Token { len, token } => {
                            self.arrive(peer, header.tag, Arrival::Fetch { len, token, ack });
                        }
                    }
                }
            },
            Incoming::Done { op, result } => match op {
                Op::Send { peer, req: None } => {
                    if let Err(e) = result {
                        self.fail_job(&format!("a control message to rank {peer} failed: {e}"));
                    }
                }
                Op::Send {
                    peer,
                    req: Some(id),
                } => match result {
                    Ok(()) => self.remote_send_step(id),
                    Err(e) => self.reqs.complete(id, Err(net_error(peer, e))),
                },
                Op::Fetch {
                    req,
                    source,
                    tag,
                    size,
                    scratch,
                } => {
                    let result = match (result, scratch) {
                        (Err(e), _) => Err(net_error(source, e)),
                        (Ok(()), Some(all)) => self.deliver(req, source, tag, &all),
                        (Ok(()), None) => Ok(Status::new(source, tag, size)),
                    };
                    self.stats.transfer(Protocol::NetFetch, size);
                    self.reqs.complete(req, result);
                }
            },
            Incoming::PeerFailed { peer, error } => {
                self.fail_job(&format!("lost rank {peer} on another node: {error}"));
            }
            Incoming::Corrupt { peer } => {
                self.fail_job(&format!(
                    "rank {peer} sent a message without an engine header"
                ));
            }
        }
    }

    /// One of the events a send to another node waits for happened.
    fn remote_send_step(&mut self, id: ReqId) {
        let Some(r) = self.reqs.get_mut(id) else {
            return;
        };
        r.net_pending = r.net_pending.saturating_sub(1);
        if r.net_pending == 0 {
            self.reqs.complete_sent(id);
        }
    }

    /// End the job: a peer or the network failed under us.
    fn fail_job(&mut self, what: &str) {
        let msg = format!("tessel: rank {}: {what}", self.rank);
        eprintln!("{msg}");
        self.boot.abort(75, &msg);
    }
}

fn net_error(peer: u32, e: NetError) -> Error {
    Error::Net {
        peer,
        message: e.message,
    }
}

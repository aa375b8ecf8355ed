//! Posting point-to-point operations (MPI-4.1 §3.2–§3.8) once the entry
//! layer has turned its arguments into a communicator slot, [`Rank`]s,
//! [`Tag`]s and a checked [`UserBuf`]: the four send modes, receives into
//! the application's memory or a packed copy, library-managed receives,
//! and receives of a matched message.

use shm_engine::{Endpoint, Message, Next, Piece, Source, TagMatch};

use super::buffer::{UserBuf, Way, Wire};
use super::peer::{Rank, RecvFrom, Tag};
use super::{MpiError, MpiResult, Req, Runtime, Staged, Status, Unpack};

/// Looks at a sender's ring a blocking receive takes before it posts
/// itself and waits as usual ([`Runtime::recv_now`]).
const QUICK_TAKES: u32 = 128;

/// The send modes of MPI-4.1 §3.4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendMode {
    /// The engine picks: inline/eager complete at once, rendezvous at FIN.
    Standard,
    /// Copied into the attached buffer; complete at once (§3.6).
    Buffered,
    /// Complete once the receiver matched the message.
    Synchronous,
    /// A receive is promised to be posted; a standard send is a correct
    /// implementation (§3.4: "a ready send ... can be replaced by a
    /// standard send with no effect on the behavior").
    Ready,
}

impl Runtime {
    /// Start sending `ub` to job rank `to` with engine tag `tag` in
    /// `mode`: straight from the user's memory when it is contiguous or
    /// worth sending piece by piece (see [`UserBuf::wire`]), from a packed
    /// copy the request keeps otherwise; a buffered send copies into the
    /// attached buffer and is done at once.
    ///
    /// # Safety
    /// The buffer stays readable and unchanged until the request completes.
    pub unsafe fn start_send(
        &mut self,
        to: u32,
        tag: u64,
        ub: &UserBuf,
        comm: usize,
        mode: SendMode,
    ) -> MpiResult<Req> {
        if mode == SendMode::Buffered {
            // SAFETY: forwarded from the caller.
            let data = unsafe { ub.data() };
            self.bsend(comm, to, tag, &data)?;
            return Ok(Req::Done(Status::empty()));
        }
        // SAFETY: forwarded from the caller (a send's buffer is readable).
        let wire = unsafe { ub.wire(&self.ep, Way::Send(to)) };
        // A small standard or ready send to a peer of this node (inline
        // or eager) goes at once, without an engine request.
        if mode != SendMode::Synchronous {
            // SAFETY: the pieces are readable (as above) during the call.
            if unsafe { self.ep.try_send_iov_now(to, tag, wire.pieces())? } {
                if let Some(packed) = wire.packed() {
                    super::pool::give(packed);
                }
                return Ok(Req::Done(Status::empty()));
            }
        }
        // SAFETY: MPI forbids touching the buffer until the request
        // completes, so its pieces outlive the engine request; a packed
        // copy moves into the request below and its heap storage stays put
        // until then.
        let req = unsafe {
            if mode == SendMode::Synchronous {
                self.ep.issend_iov_raw(to, tag, wire.pieces())?
            } else {
                self.ep.isend_iov_raw(to, tag, wire.pieces())?
            }
        };
        let staged = wire.packed().map(Staged::Send);
        Ok(Req::Engine { req, comm, staged })
    }

    /// Send the `len` bytes at `data` on communicator `comm` to `dest`
    /// with `tag` at once, if the engine can (a standard or ready send
    /// small enough for a ring cell or a staging slot, to another process
    /// of this node): the flat path of a blocking send of a predefined
    /// contiguous datatype, without a [`UserBuf`] or a request. `None`
    /// when it cannot, to `MPI_PROC_NULL`, or when an argument is
    /// invalid: the caller then goes the general way
    /// ([`Runtime::start_send`]), which also reports the error.
    ///
    /// # Safety
    /// `len` bytes at `data` are readable during the call.
    #[inline]
    pub unsafe fn send_now(
        &mut self,
        comm: usize,
        dest: Rank,
        tag: Tag,
        data: *const u8,
        len: usize,
    ) -> Option<MpiResult<()>> {
        let (to, tag) = self.comm(comm).ok()?.send_to(dest, tag).ok()?;
        let one = [Piece::new(data.cast_mut(), len)];
        // SAFETY: readable during the call (the caller's promise).
        match unsafe { self.ep.try_send_iov_now(to?, tag, &one) } {
            Ok(true) => {
                self.reap_freed();
                Some(Ok(()))
            }
            Ok(false) => None,
            Err(e) => Some(Err(e.into())),
        }
    }

    /// Post a receive of checked arguments (whom it accepts); a completed
    /// request for `MPI_PROC_NULL`.
    ///
    /// # Safety
    /// The buffer stays writable and untouched until the request completes.
    pub unsafe fn start_recv(
        &mut self,
        from: RecvFrom,
        ub: &UserBuf,
        comm: usize,
    ) -> MpiResult<Req> {
        let Some((src, matcher)) = from else {
            return Ok(Req::Done(Status::proc_null()));
        };
        // SAFETY: a receive's wire is not read.
        let wire = unsafe { ub.wire(&self.ep, Way::Recv(src)) };
        // A whole message that arrived before its receive (a copy in the
        // unexpected queue) is received at once, without an engine request
        // (into the user's memory: a datatype received packed is unpacked
        // when its request completes).
        if !wire.is_packed() && self.ep.has_unexpected() {
            self.comm(comm)?; // checked before a message is taken
            // SAFETY: the pieces are the user's elements, writable (the
            // caller's promise).
            if let Some(st) = unsafe { self.ep.try_recv_iov_now(src, matcher, wire.pieces()) } {
                return Ok(Req::Done(self.comm(comm)?.status_of(&st)));
            }
        }
        self.recv_into(ub, wire, comm, |ep, pieces| {
            // SAFETY: the caller's promise: the pieces (the user's
            // elements, or the request's own packed buffer) stay writable
            // until completion.
            Ok(unsafe { ep.irecv_iov_raw(src, matcher, pieces)? })
        })
    }

    /// Post a receive of at most `cap` bytes into `data` on communicator
    /// `comm` from `source` with `tag`: the flat path of a nonblocking
    /// receive of a predefined contiguous datatype, without a
    /// [`UserBuf`]. It takes the steps [`Runtime::start_recv`] takes for
    /// such a buffer. `None` when an argument is invalid: the caller then
    /// goes the general way, which reports the error.
    ///
    /// # Safety
    /// `cap` bytes at `data` stay writable and untouched until the request
    /// completes.
    #[inline]
    pub unsafe fn irecv_now(
        &mut self,
        comm: usize,
        source: Rank,
        tag: Tag,
        data: *mut u8,
        cap: usize,
    ) -> Option<MpiResult<Req>> {
        let one = [Piece::new(data, cap)];
        // SAFETY: writable until completion (the caller's promise).
        let (src, matcher) = match unsafe { self.flat_recv_start(comm, source, tag, &one)? } {
            Ok(from) => from,
            Err(done) => return Some(done.map(Req::Done)),
        };
        // SAFETY: the caller's promise: writable until completion.
        let posted = unsafe { self.ep.irecv_iov_raw(src, matcher, &one) };
        Some(posted.map_err(MpiError::from).map(|req| Req::Engine {
            req,
            comm,
            staged: None,
        }))
    }

    /// Receive at most `cap` bytes into `data` on communicator `comm` from
    /// `source` with `tag`, and wait for the message: the flat path of a
    /// blocking receive of a predefined contiguous datatype, without a
    /// [`UserBuf`]. `None` when an argument is invalid: the caller then
    /// goes the general way ([`Runtime::start_recv`]), which reports the
    /// error.
    ///
    /// # Safety
    /// `cap` bytes at `data` are writable during the call.
    #[inline]
    pub unsafe fn recv_now(
        &mut self,
        comm: usize,
        source: Rank,
        tag: Tag,
        data: *mut u8,
        cap: usize,
    ) -> Option<MpiResult<Status>> {
        let one = [Piece::new(data, cap)];
        // SAFETY: writable during the call (the caller's promise).
        let (src, matcher) = match unsafe { self.flat_recv_start(comm, source, tag, &one)? } {
            Ok(from) => from,
            Err(done) => return Some(done),
        };
        // A message that comes within a few looks at its sender's ring is
        // taken from there, without a request (see `Endpoint::take_next`);
        // not where processes outnumber cores, as the sender may need ours.
        if let Source::Rank(r) = src
            && !self.ep.oversubscribed()
        {
            for _ in 0..QUICK_TAKES {
                // SAFETY: writable during the call (the caller's promise).
                match unsafe { self.ep.take_next(r, matcher, data, cap) } {
                    Some(Next::Taken(st)) => return Some(self.received(comm, &st)),
                    Some(Next::Empty) => std::hint::spin_loop(),
                    Some(Next::Other) | None => break,
                }
            }
        }
        // SAFETY: as above; the request is waited for before returning.
        let posted = unsafe { self.ep.irecv_iov_raw(src, matcher, &one) };
        Some(posted.map_err(MpiError::from).and_then(|req| {
            self.wait_started(Req::Engine {
                req,
                comm,
                staged: None,
            })
        }))
    }

    /// The start the flat receives share ([`Runtime::recv_now`],
    /// [`Runtime::irecv_now`]) on communicator `comm` from `source` with
    /// `tag`: whom the receive accepts, or (`Err`) its outcome already,
    /// for `MPI_PROC_NULL` or a message that arrived whole before it (a
    /// copy in the unexpected queue), taken at once into `one` (see
    /// `start_recv`). `None` when an argument is invalid.
    ///
    /// # Safety
    /// `one` is writable during the call.
    unsafe fn flat_recv_start(
        &mut self,
        comm: usize,
        source: Rank,
        tag: Tag,
        one: &[Piece],
    ) -> Option<Result<(Source, TagMatch), MpiResult<Status>>> {
        let Some((src, matcher)) = self.comm(comm).ok()?.recv_from(source, tag).ok()? else {
            return Some(Err(Ok(Status::proc_null())));
        };
        if self.ep.has_unexpected() {
            // SAFETY: writable during the call (the caller's promise).
            if let Some(st) = unsafe { self.ep.try_recv_iov_now(src, matcher, one) } {
                return Some(Err(self.received(comm, &st)));
            }
        }
        Some(Ok((src, matcher)))
    }

    /// The status of a message a blocking receive on communicator `comm`
    /// took without a request; requests the application freed that have
    /// finished are finished too, as a wait does ([`Runtime::wait_started`]).
    fn received(&mut self, comm: usize, st: &shm_engine::Status) -> MpiResult<Status> {
        self.reap_freed();
        // The communicator was checked before the message was taken.
        Ok(self.comm(comm)?.status_of(st))
    }

    /// Receive matched message `msg` (of communicator `comm`) into `ub`.
    ///
    /// # Safety
    /// As for [`Runtime::start_recv`].
    pub unsafe fn imrecv(&mut self, msg: Message, comm: usize, ub: &UserBuf) -> MpiResult<Req> {
        // SAFETY: a receive's wire is not read.
        let wire = unsafe { ub.wire(&self.ep, Way::Recv(Source::Rank(msg.source()))) };
        self.recv_into(ub, wire, comm, |ep, pieces| {
            // SAFETY: the pieces stay writable until completion (the
            // caller's promise, or the request's packed buffer).
            Ok(unsafe { ep.imrecv_iov_raw(msg, pieces) })
        })
    }

    /// Post a library-managed receive (see `recvbuf`) of at most `cap`
    /// bytes from `source` with `tag`, into a buffer the engine allocates
    /// when the message matches; a completed request for `MPI_PROC_NULL`.
    pub fn irecv_managed(
        &mut self,
        comm: usize,
        source: Rank,
        tag: Tag,
        cap: usize,
    ) -> MpiResult<Req> {
        let Some((src, matcher)) = self.comm(comm)?.recv_from(source, tag)? else {
            return Ok(Req::Done(Status::proc_null()));
        };
        let req = self.ep.irecv_managed(src, matcher, cap)?;
        Ok(Req::Engine {
            req,
            comm,
            staged: None,
        })
    }

    /// Start receiving into `ub` with `post`, which hands the engine the
    /// pieces of `wire`, `ub`'s for a receive: the user's memory when the
    /// datatype is contiguous or worth receiving piece by piece (see
    /// [`UserBuf::wire`]), a packed buffer the request keeps (and unpacks
    /// at completion) otherwise.
    fn recv_into(
        &mut self,
        ub: &UserBuf,
        wire: Wire,
        comm: usize,
        post: impl FnOnce(&mut Endpoint, &[Piece]) -> MpiResult<shm_engine::Request>,
    ) -> MpiResult<Req> {
        let req = post(&mut self.ep, wire.pieces())?;
        let staged = wire.packed().map(|packed| {
            Staged::Recv(Unpack {
                packed,
                dst: ub.ptr,
                count: ub.count,
                dt: ub.dt.clone(),
            })
        });
        Ok(Req::Engine { req, comm, staged })
    }

    /// Start both halves of a send-receive (MPI-4.1 §3.10) on
    /// communicator `comm` as one request, every argument checked before
    /// either starts. When the send cannot start, the posted receive is
    /// withdrawn (cancelled, or completed if it matched), so that no
    /// request outlives a failed call.
    ///
    /// # Safety
    /// `send` is readable and `recv` writable, and both stay untouched
    /// until the request completes.
    pub unsafe fn isendrecv(
        &mut self,
        comm: usize,
        (dest, sendtag, send): (Rank, Tag, &UserBuf),
        (source, recvtag, recv): (Rank, Tag, &UserBuf),
    ) -> MpiResult<Req> {
        let c = self.comm(comm)?;
        let (to, tag) = c.send_to(dest, sendtag)?;
        let from = c.recv_from(source, recvtag)?;
        // SAFETY: the receive buffer stays writable until completion.
        let incoming = unsafe { self.start_recv(from, recv, comm)? };
        let outgoing = match to {
            // SAFETY: the send buffer stays readable until completion.
            Some(to) => unsafe { self.start_send(to, tag, send, comm, SendMode::Standard) },
            None => Ok(Req::Done(Status::empty())),
        };
        self.pair(incoming, outgoing)
    }

    /// Start a send-receive in one buffer (MPI-4.1 §3.10): the outgoing
    /// message leaves from a packed copy, so the incoming one may land in
    /// `ub` at once.
    ///
    /// # Safety
    /// `ub` is readable and writable and stays untouched until completion.
    pub unsafe fn isendrecv_replace(
        &mut self,
        comm: usize,
        (dest, sendtag): (Rank, Tag),
        (source, recvtag): (Rank, Tag),
        ub: &UserBuf,
    ) -> MpiResult<Req> {
        let c = self.comm(comm)?;
        let (to, tag) = c.send_to(dest, sendtag)?;
        let from = c.recv_from(source, recvtag)?;
        let outgoing = to.map(|to| {
            // SAFETY: `ub` is readable now; the copy is taken before the
            // receive can write it.
            (to, unsafe { ub.data() }.into_owned())
        });
        // SAFETY: `ub` stays writable until completion.
        let incoming = unsafe { self.start_recv(from, ub, comm)? };
        let outgoing = match outgoing {
            Some((to, data)) => {
                // SAFETY: the copy moves into the request below and its
                // heap storage stays put until the engine is done with it.
                unsafe { self.ep.isend_raw(to, tag, data.as_ptr(), data.len()) }
                    .map(|req| Req::Engine {
                        req,
                        comm,
                        staged: Some(Staged::Send(data)),
                    })
                    .map_err(MpiError::from)
            }
            None => Ok(Req::Done(Status::empty())),
        };
        self.pair(incoming, outgoing)
    }

    /// The request of a send-receive whose receive is posted and whose
    /// send started (or failed to: then the receive is withdrawn).
    fn pair(&mut self, recv: Req, send: MpiResult<Req>) -> MpiResult<Req> {
        match send {
            Ok(send) => Ok(Req::Pair {
                recv: Box::new(recv),
                send: Box::new(send),
            }),
            Err(e) => {
                let ri = self.add_req(recv);
                let _withdrawn = self.cancel_req(ri).and_then(|()| self.wait_req(ri));
                Err(e)
            }
        }
    }
}

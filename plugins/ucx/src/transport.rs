//! One open context: a UCP context and worker, the endpoints to peers, the
//! operations in flight and the tokens handed out.
//!
//! # Who touches what
//! UCX calls four functions of ours: [`on_am`] (an active message
//! arrived), [`on_send_done`] and [`on_fetch_done`] (a request ended) and
//! [`on_ep_error`] (an endpoint failed). Each gets the [`Transport`] back
//! as a pointer we registered, and may run inside any UCX call: normally
//! inside `ucp_worker_progress`, but a send to this very process (UCX's
//! `self` transport) or an endpoint close may run them too. So:
//! - every entry and every UCX callback holds only a shared `&Transport`;
//!   the mutable part sits in a `RefCell` that is never borrowed across a
//!   UCX call or an engine callback (a mistake panics, and the panic is
//!   caught at the boundary, instead of aliasing);
//! - an event reaches the engine at once only while [`Transport::progress`]
//!   runs and nothing older is queued; otherwise (and when the engine's
//!   header or payload must outlive UCX's call) it is copied into the
//!   deferred queue that the next progress call delivers first. The
//!   engine so sees callbacks only inside `progress`, in the order they
//!   happened.
//!
//! # Requests
//! Sends and fetches pass `user_data` = the transport and a completion
//! callback; a request handle UCX returns becomes the key of the
//! operation's record (cookie, peer, and the header and `ucp_dt_iov_t`
//! array UCX reads until the end). Should a callback ever run before the
//! call that started it returned, its status waits in `early` for that
//! call.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::{Duration, Instant};

use plugin_api::{
    ATTR_WAKE_FD, Attr, ERR_AGAIN, ERR_CANCELLED, ERR_INVALID, ERR_NO_DEVICE, ERR_PEER_FAILED,
    ERR_TRANSPORT, ERR_UNREACHABLE, IN_PROGRESS, Iov, OK,
};

use crate::limits;
use crate::sys::{self, Started};
use crate::tokens::Tokens;
use crate::wire;
use plugin_api::plugin::{Engine, Payload};

/// The active message id the plugin registers and sends with.
const AM_ID: u32 = 1;
/// Sends and fetches in flight beyond which new ones answer `ERR_AGAIN`
/// (back-pressure instead of unbounded queues inside UCX).
const MAX_IN_FLIGHT: usize = 4096;
/// How long `close` lets a worker flush deliver what was sent.
const CLOSE_FLUSH: Duration = Duration::from_secs(2);
/// How long `close` waits for cancelled operations and closed endpoints.
const CLOSE_CANCEL: Duration = Duration::from_secs(1);
/// Marks a live transport (checked by the entry points).
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"tesslucx");

/// The bootstrap key of `rank`'s worker address.
fn address_key(rank: u32) -> String {
    format!("tessel.ucx.{rank}")
}

/// What the plugin knows of one peer.
#[derive(Clone, Copy, Debug)]
enum Peer {
    /// No endpoint yet (made at the first send).
    Idle,
    /// An endpoint.
    Connected(sys::ucp_ep_h),
    /// Its endpoint failed: sends answer `ERR_PEER_FAILED`.
    Failed,
}

/// A rendezvous payload waiting at its sender.
#[derive(Debug)]
struct Rndv {
    desc: *mut c_void,
    len: usize,
    peer: u32,
}

/// A send or fetch in flight, and the memory UCX reads until it ends.
#[derive(Debug)]
struct Op {
    cookie: u64,
    peer: u32,
    /// The wire header (sends only).
    header: Vec<u8>,
    /// The `ucp_dt_iov_t` array of a payload in several pieces.
    _iov: Vec<sys::ucp_dt_iov_t>,
}

/// An event for the engine that could not be delivered when it happened.
#[derive(Debug)]
enum Event {
    Arrived {
        peer: u32,
        header: Vec<u8>,
        data: Option<Vec<u8>>,
        token: u64,
        len: usize,
    },
    Completed {
        cookie: u64,
        status: c_int,
    },
    Failed {
        peer: u32,
        status: c_int,
        message: String,
    },
}

/// The mutable part of a transport.
#[derive(Debug)]
struct State {
    peers: Vec<Peer>,
    /// Rank of each endpoint we created (for the error callback).
    ep_rank: HashMap<usize, u32>,
    sends: HashMap<usize, Op>,
    fetches: HashMap<usize, Op>,
    /// Statuses of requests whose callback ran before their call returned.
    early: HashMap<usize, sys::ucs_status_t>,
    tokens: Tokens<Rndv>,
    deferred: VecDeque<Event>,
    /// Endpoints of failed peers, to close outside UCX's callbacks.
    to_close: Vec<sys::ucp_ep_h>,
    /// Endpoint close requests not finished yet.
    closing: Vec<*mut c_void>,
    /// Header buffers to reuse.
    spare: Vec<Vec<u8>>,
}

impl State {
    fn in_flight(&self) -> usize {
        self.sends.len() + self.fetches.len()
    }
}

/// One open context of the plugin.
#[derive(Debug)]
pub(crate) struct Transport {
    pub(crate) magic: u64,
    context: sys::ucp_context_h,
    worker: sys::ucp_worker_h,
    /// Set once the worker and context are destroyed.
    destroyed: Cell<bool>,
    rank: u32,
    size: u32,
    engine: Engine,
    max_header: usize,
    eager_max: usize,
    wake_fd: Option<c_int>,
    /// Inside `progress`: events may go to the engine at once.
    in_progress: Cell<bool>,
    /// Inside `close`: events are dropped.
    closing: Cell<bool>,
    /// Events delivered by the current `progress` call.
    delivered: Cell<u32>,
    /// A UCX callback of ours panicked: the context is unusable.
    fault: Cell<bool>,
    state: RefCell<State>,
}

/// Resets `in_progress` when `progress` ends, even by a panic.
struct InProgress<'a>(&'a Cell<bool>);

impl Drop for InProgress<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

/// Create the UCP context: active messages, and wake-up events when some
/// transport offers them (else without, and the plugin claims no wake-up
/// descriptor). `NULL` configuration: UCX reads its `UCX_*` environment.
fn create_context(size: u32) -> Result<(sys::ucp_context_h, bool), (c_int, String)> {
    let mut last = sys::UCS_OK;
    for wakeup in [true, false] {
        let params = sys::ucp_params_t {
            field_mask: (sys::UCP_PARAM_FIELD_FEATURES
                | sys::UCP_PARAM_FIELD_MT_WORKERS_SHARED
                | sys::UCP_PARAM_FIELD_ESTIMATED_NUM_EPS
                | sys::UCP_PARAM_FIELD_NAME) as u64,
            features: (sys::UCP_FEATURE_AM | if wakeup { sys::UCP_FEATURE_WAKEUP } else { 0 })
                as u64,
            mt_workers_shared: 0,
            estimated_num_eps: size as usize,
            name: c"tessel".as_ptr(),
            ..Default::default()
        };
        let mut context = std::ptr::null_mut();
        // SAFETY: `params` is initialised for every field its mask names
        // (the name is a static string); a null configuration is allowed;
        // `context` is a valid place for the handle.
        let status = unsafe {
            sys::ucp_init_version(
                sys::UCP_API_MAJOR,
                sys::UCP_API_MINOR,
                &params,
                std::ptr::null(),
                &mut context,
            )
        };
        if status == sys::UCS_OK {
            return Ok((context, wakeup));
        }
        last = status;
    }
    let code = match last {
        sys::UCS_ERR_NO_DEVICE
        | sys::UCS_ERR_NO_ELEM
        | sys::UCS_ERR_UNSUPPORTED
        | sys::UCS_ERR_UNREACHABLE => ERR_NO_DEVICE,
        _ => ERR_TRANSPORT,
    };
    Err((code, format!("ucp_init: {}", sys::status_text(last))))
}

/// The text `ucp_context_print_info` writes (transports and devices).
fn context_info(context: sys::ucp_context_h) -> String {
    let mut buf: *mut libc::c_char = std::ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: `buf` and `len` are valid places for the stream's buffer.
    let stream = unsafe { libc::open_memstream(&mut buf, &mut len) };
    if stream.is_null() {
        return String::new();
    }
    // SAFETY: a live context and an open stream.
    unsafe { sys::ucp_context_print_info(context, stream) };
    // SAFETY: the stream is open; closing it sets `buf` and `len` to the
    // text written.
    unsafe { libc::fclose(stream) };
    if buf.is_null() {
        return String::new();
    }
    // SAFETY: after fclose `buf` holds `len` bytes (plus a NUL) that the
    // stream allocated with malloc and hands to us.
    let text = unsafe { std::slice::from_raw_parts(buf.cast::<u8>(), len) };
    let text = String::from_utf8_lossy(text).into_owned();
    // SAFETY: malloc'd by the stream, ours to free, not used afterwards.
    unsafe { libc::free(buf.cast()) };
    text
}

/// The `ucp_dt_iov_t` list of the non-empty pieces, and their total.
fn gather(pieces: &[Iov]) -> Option<(Vec<sys::ucp_dt_iov_t>, usize)> {
    let mut total = 0usize;
    let mut list = Vec::new();
    for p in pieces.iter().filter(|p| p.len > 0) {
        total = total.checked_add(p.len)?;
        list.push(sys::ucp_dt_iov_t {
            buffer: p.base,
            length: p.len,
        });
    }
    Some((list, total))
}

/// Point `param` at a payload: nothing, one contiguous piece (the default
/// datatype, bytes), or the iov list. Returns UCX's buffer and count.
fn payload_args(
    list: &[sys::ucp_dt_iov_t],
    param: &mut sys::ucp_request_param_t,
) -> (*mut c_void, usize) {
    match list {
        [] => (std::ptr::null_mut(), 0),
        [one] => (one.buffer, one.length),
        many => {
            param.op_attr_mask |= sys::UCP_OP_ATTR_FIELD_DATATYPE;
            param.datatype = sys::dt_iov();
            (many.as_ptr().cast_mut().cast(), many.len())
        }
    }
}

impl Transport {
    /// Open the transport for `rank` of `size`: context, worker, receive
    /// handler, wake-up descriptor, and the worker address published under
    /// `tessel.ucx.<rank>`.
    pub(crate) fn open(
        rank: u32,
        size: u32,
        engine: Engine,
    ) -> Result<(Box<Self>, Attr), (c_int, String)> {
        let (context, wakeup) = create_context(size)?;
        let resources = limits::parse_resources(&context_info(context));
        let mut t = Box::new(Self {
            magic: MAGIC,
            context,
            worker: std::ptr::null_mut(),
            destroyed: Cell::new(false),
            rank,
            size,
            engine,
            max_header: 0,
            eager_max: limits::eager_max(
                std::env::var("UCX_RNDV_THRESH").ok().as_deref(),
                &resources,
            ),
            wake_fd: None,
            in_progress: Cell::new(false),
            closing: Cell::new(false),
            delivered: Cell::new(0),
            fault: Cell::new(false),
            state: RefCell::new(State {
                peers: vec![Peer::Idle; size as usize],
                ep_rank: HashMap::new(),
                sends: HashMap::new(),
                fetches: HashMap::new(),
                early: HashMap::new(),
                tokens: Tokens::default(),
                deferred: VecDeque::new(),
                to_close: Vec::new(),
                closing: Vec::new(),
                spare: Vec::new(),
            }),
        });
        let check = |status: sys::ucs_status_t, what: &str| {
            if status == sys::UCS_OK {
                Ok(())
            } else {
                Err((
                    ERR_TRANSPORT,
                    format!("{what}: {}", sys::status_text(status)),
                ))
            }
        };

        let params = sys::ucp_worker_params_t {
            field_mask: sys::UCP_WORKER_PARAM_FIELD_THREAD_MODE as u64,
            thread_mode: sys::UCS_THREAD_MODE_SINGLE,
            ..Default::default()
        };
        // SAFETY: a live context; `params` is initialised for its mask;
        // `t.worker` is a valid place for the handle.
        let status = unsafe { sys::ucp_worker_create(context, &params, &mut t.worker) };
        check(status, "ucp_worker_create")?;

        let mut attr = sys::ucp_worker_attr_t {
            field_mask: (sys::UCP_WORKER_ATTR_FIELD_ADDRESS
                | sys::UCP_WORKER_ATTR_FIELD_MAX_AM_HEADER) as u64,
            ..Default::default()
        };
        // SAFETY: a live worker and a valid attribute struct.
        let status = unsafe { sys::ucp_worker_query(t.worker, &mut attr) };
        check(status, "ucp_worker_query")?;
        let address = if attr.address.is_null() {
            Vec::new()
        } else {
            // SAFETY: UCX allocated `address_length` bytes at `address`;
            // they are copied before the release below.
            unsafe { std::slice::from_raw_parts(attr.address.cast::<u8>(), attr.address_length) }
                .to_vec()
        };
        if !attr.address.is_null() {
            // SAFETY: the address this worker's query returned, released once.
            unsafe { sys::ucp_worker_release_address(t.worker, attr.address) };
        }
        if address.is_empty() {
            return Err((ERR_TRANSPORT, "UCX returned an empty worker address".into()));
        }
        let ucx_max = attr.max_am_header.saturating_sub(wire::PREFIX_LEN);
        if ucx_max < 64 {
            return Err((
                ERR_NO_DEVICE,
                format!(
                    "UCX's largest active message header is {} bytes; Tessel needs {}",
                    attr.max_am_header,
                    64 + wire::PREFIX_LEN
                ),
            ));
        }
        t.max_header = ucx_max.min(limits::HEADER_CAP);

        if wakeup {
            let mut fd: c_int = -1;
            // SAFETY: a live worker of a context with UCP_FEATURE_WAKEUP;
            // `fd` is a valid place.
            if unsafe { sys::ucp_worker_get_efd(t.worker, &mut fd) } == sys::UCS_OK && fd >= 0 {
                t.wake_fd = Some(fd);
            }
        }

        // From here on UCX holds a pointer to the transport: `t` is only
        // read (shared), never mutated through the box.
        let handler = sys::ucp_am_handler_param_t {
            field_mask: (sys::UCP_AM_HANDLER_PARAM_FIELD_ID
                | sys::UCP_AM_HANDLER_PARAM_FIELD_FLAGS
                | sys::UCP_AM_HANDLER_PARAM_FIELD_CB
                | sys::UCP_AM_HANDLER_PARAM_FIELD_ARG) as u64,
            id: AM_ID,
            flags: sys::UCP_AM_FLAG_WHOLE_MSG,
            cb: Some(on_am),
            arg: t.as_arg(),
        };
        // SAFETY: a live worker; the handler's argument is the boxed
        // transport, which outlives the worker (destroyed first, in
        // `destroy`).
        let status = unsafe { sys::ucp_worker_set_am_recv_handler(t.worker, &handler) };
        check(status, "ucp_worker_set_am_recv_handler")?;
        t.engine.put(&address_key(rank), &address).map_err(|rc| {
            (
                rc,
                format!("publishing the UCX worker address failed: {rc}"),
            )
        })?;

        let (latency_ns, bandwidth_mbs) = limits::estimate(&resources);
        let mut out = Attr {
            flags: if t.wake_fd.is_some() { ATTR_WAKE_FD } else { 0 },
            max_header: t.max_header as u64,
            inline_max: limits::INLINE_MAX.min(t.eager_max) as u64,
            eager_max: t.eager_max as u64,
            max_message: 0,
            latency_ns,
            bandwidth_mbs,
            ..Attr::default()
        };
        out.set_device(&limits::device_text(&resources));
        Ok((t, out))
    }

    /// The pointer UCX hands back to our callbacks.
    fn as_arg(&self) -> *mut c_void {
        (self as *const Self).cast_mut().cast()
    }

    /// The status code of an operation to `peer` that UCX ended with
    /// `status`.
    fn code_of(&self, status: sys::ucs_status_t, peer: u32) -> c_int {
        let failed = matches!(
            self.state.borrow().peers.get(peer as usize),
            Some(Peer::Failed)
        );
        match status {
            sys::UCS_OK => OK,
            _ if failed || sys::is_peer_failure(status) => ERR_PEER_FAILED,
            sys::UCS_ERR_CANCELED => ERR_CANCELLED,
            _ => ERR_TRANSPORT,
        }
    }

    // ---- events -------------------------------------------------------

    /// Whether an event may go to the engine now.
    fn direct(&self) -> bool {
        self.in_progress.get() && self.state.borrow().deferred.is_empty()
    }

    fn emit(&self, event: Event) {
        if self.closing.get() {
            return;
        }
        if self.direct() {
            self.deliver(event);
        } else {
            self.state.borrow_mut().deferred.push_back(event);
        }
    }

    /// An arrival: delivered from UCX's memory when possible, else copied.
    fn emit_arrival(&self, peer: u32, header: &[u8], payload: Payload<'_>) {
        if self.closing.get() {
            return;
        }
        if self.direct() {
            self.engine.arrived(peer, header, payload);
            self.delivered.set(self.delivered.get() + 1);
            return;
        }
        let event = match payload {
            Payload::Data(d) => Event::Arrived {
                peer,
                header: header.to_vec(),
                data: Some(d.to_vec()),
                token: 0,
                len: d.len(),
            },
            Payload::Token { token, len } => Event::Arrived {
                peer,
                header: header.to_vec(),
                data: None,
                token,
                len,
            },
        };
        self.state.borrow_mut().deferred.push_back(event);
    }

    fn deliver(&self, event: Event) {
        match event {
            Event::Arrived {
                peer,
                header,
                data,
                token,
                len,
            } => {
                let payload = match &data {
                    Some(d) => Payload::Data(d),
                    None => Payload::Token { token, len },
                };
                self.engine.arrived(peer, &header, payload);
            }
            Event::Completed { cookie, status } => self.engine.completed(cookie, status),
            Event::Failed {
                peer,
                status,
                message,
            } => self.engine.failed(peer, status, &message),
        }
        self.delivered.set(self.delivered.get() + 1);
    }

    // ---- UCX callbacks ------------------------------------------------

    fn am_arrived(
        &self,
        header: &[u8],
        data: *mut c_void,
        len: usize,
        rndv: bool,
    ) -> sys::ucs_status_t {
        let Some((peer, header)) = wire::split(header, self.size) else {
            // Not from this job's plugin: dropped (a rendezvous one too,
            // UCX releases it when the handler does not keep it).
            return sys::UCS_OK;
        };
        if self.closing.get() {
            return sys::UCS_OK;
        }
        if rndv {
            let token = self.state.borrow_mut().tokens.insert(Rndv {
                desc: data,
                len,
                peer,
            });
            self.emit_arrival(peer, header, Payload::Token { token, len });
            sys::UCS_INPROGRESS
        } else {
            let bytes = if len == 0 || data.is_null() {
                &[][..]
            } else {
                // SAFETY: UCX passes `len` readable bytes at `data`, valid
                // until the handler returns UCS_OK (below); `emit_arrival`
                // copies them if they must live longer.
                unsafe { std::slice::from_raw_parts(data.cast::<u8>(), len) }
            };
            self.emit_arrival(peer, header, Payload::Data(bytes));
            sys::UCS_OK
        }
    }

    /// A send or fetch request ended.
    fn request_done(&self, request: *mut c_void, status: sys::ucs_status_t, fetch: bool) {
        let op = {
            let mut st = self.state.borrow_mut();
            let map = if fetch {
                &mut st.fetches
            } else {
                &mut st.sends
            };
            match map.remove(&(request as usize)) {
                Some(op) => op,
                None => {
                    // Its call has not returned yet: it frees the request.
                    st.early.insert(request as usize, status);
                    return;
                }
            }
        };
        // SAFETY: a request UCX gave us, ended now, freed once (its record
        // was just removed).
        unsafe { sys::ucp_request_free(request) };
        let code = self.code_of(status, op.peer);
        self.recycle(op.header);
        self.emit(Event::Completed {
            cookie: op.cookie,
            status: code,
        });
    }

    fn ep_failed(&self, ep: sys::ucp_ep_h, status: sys::ucs_status_t) {
        let peer = {
            let mut st = self.state.borrow_mut();
            let Some(peer) = st.ep_rank.remove(&(ep as usize)) else {
                return;
            };
            st.peers[peer as usize] = Peer::Failed;
            st.to_close.push(ep);
            peer
        };
        let code = if status == sys::UCS_ERR_UNREACHABLE {
            ERR_UNREACHABLE
        } else {
            ERR_PEER_FAILED
        };
        let message = format!(
            "UCX endpoint from rank {} to rank {peer} failed: {}",
            self.rank,
            sys::status_text(status)
        );
        self.emit(Event::Failed {
            peer,
            status: code,
            message,
        });
    }

    fn recycle(&self, mut header: Vec<u8>) {
        if header.capacity() > 0 {
            header.clear();
            let mut st = self.state.borrow_mut();
            if st.spare.len() < 256 {
                st.spare.push(header);
            }
        }
    }

    // ---- operations ---------------------------------------------------

    /// The endpoint to `peer`, created at the first use from the address
    /// the peer published.
    fn endpoint(&self, peer: u32) -> Result<sys::ucp_ep_h, c_int> {
        match self.state.borrow().peers[peer as usize] {
            Peer::Connected(ep) => return Ok(ep),
            Peer::Failed => return Err(ERR_PEER_FAILED),
            Peer::Idle => {}
        }
        let address = self
            .engine
            .get(&address_key(peer))
            .map_err(|_| ERR_UNREACHABLE)?;
        if address.is_empty() {
            return Err(ERR_UNREACHABLE);
        }
        let params = sys::ucp_ep_params_t {
            field_mask: (sys::UCP_EP_PARAM_FIELD_REMOTE_ADDRESS
                | sys::UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE
                | sys::UCP_EP_PARAM_FIELD_ERR_HANDLER) as u64,
            address: address.as_ptr().cast(),
            err_mode: sys::UCP_ERR_HANDLING_MODE_PEER,
            err_handler: sys::ucp_err_handler_t {
                cb: Some(on_ep_error),
                arg: self.as_arg(),
            },
            ..Default::default()
        };
        let mut ep = std::ptr::null_mut();
        // SAFETY: a live worker; `params` is initialised for its mask and
        // the address buffer lives through the call (UCX copies what it
        // needs); the error handler's argument outlives the endpoint.
        let status = unsafe { sys::ucp_ep_create(self.worker, &params, &mut ep) };
        if status != sys::UCS_OK || ep.is_null() {
            return Err(ERR_UNREACHABLE);
        }
        let mut st = self.state.borrow_mut();
        st.peers[peer as usize] = Peer::Connected(ep);
        st.ep_rank.insert(ep as usize, peer);
        Ok(ep)
    }

    /// `Ops::send`.
    pub(crate) fn send(&self, peer: u32, header: &[u8], pieces: &[Iov], cookie: u64) -> c_int {
        if peer >= self.size {
            return ERR_UNREACHABLE;
        }
        if header.len() > self.max_header {
            return ERR_INVALID;
        }
        let Some((list, total)) = gather(pieces) else {
            return ERR_INVALID;
        };
        if self.state.borrow().in_flight() >= MAX_IN_FLIGHT {
            return ERR_AGAIN;
        }
        let ep = match self.endpoint(peer) {
            Ok(ep) => ep,
            Err(code) => return code,
        };
        let mut wire_header = self.state.borrow_mut().spare.pop().unwrap_or_default();
        wire_header.extend_from_slice(&wire::prefix(self.rank));
        wire_header.extend_from_slice(header);

        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK
                | sys::UCP_OP_ATTR_FIELD_USER_DATA
                | sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags: if total <= self.eager_max {
                sys::UCP_AM_SEND_FLAG_EAGER
            } else {
                sys::UCP_AM_SEND_FLAG_RNDV
            },
            user_data: self.as_arg(),
            ..Default::default()
        };
        param.cb.send = Some(on_send_done);
        let (buffer, count) = payload_args(&list, &mut param);
        // SAFETY: a live endpoint of our worker; the header and the iov
        // list are owned by this call and, when a request is returned,
        // moved into its record (their heap memory does not move) until
        // it completes; the payload stays valid until then (the caller's
        // duty under the ABI); `param` is initialised for its mask.
        let ret = unsafe {
            sys::ucp_am_send_nbx(
                ep,
                AM_ID,
                wire_header.as_ptr().cast(),
                wire_header.len(),
                buffer,
                count,
                &param,
            )
        };
        match sys::classify(ret) {
            Started::Done => {
                self.recycle(wire_header);
                OK
            }
            Started::Failed(status) => {
                self.recycle(wire_header);
                if status == sys::UCS_ERR_NO_RESOURCE {
                    ERR_AGAIN
                } else {
                    self.code_of(status, peer)
                }
            }
            Started::Request(req) => self.started(
                req,
                false,
                Op {
                    cookie,
                    peer,
                    header: wire_header,
                    _iov: list,
                },
            ),
        }
    }

    /// Record a request a call returned, unless it already ended.
    fn started(&self, req: *mut c_void, fetch: bool, op: Op) -> c_int {
        let mut st = self.state.borrow_mut();
        if let Some(status) = st.early.remove(&(req as usize)) {
            drop(st);
            // SAFETY: the request ended (its callback ran) and was not
            // freed there; freed once here.
            unsafe { sys::ucp_request_free(req) };
            let code = self.code_of(status, op.peer);
            self.recycle(op.header);
            return code;
        }
        let map = if fetch {
            &mut st.fetches
        } else {
            &mut st.sends
        };
        map.insert(req as usize, op);
        IN_PROGRESS
    }

    /// `Ops::fetch`.
    pub(crate) fn fetch(&self, token: u64, pieces: &[Iov], cookie: u64) -> c_int {
        let Some((list, total)) = gather(pieces) else {
            return ERR_INVALID;
        };
        let rndv = {
            let mut st = self.state.borrow_mut();
            match st.tokens.get(token) {
                None => return ERR_INVALID,
                Some(r) if r.len != total => return ERR_INVALID,
                Some(_) if st.in_flight() >= MAX_IN_FLIGHT => return ERR_AGAIN,
                Some(_) => st.tokens.take(token).expect("the token is live"),
            }
        };
        let mut param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_CALLBACK | sys::UCP_OP_ATTR_FIELD_USER_DATA,
            user_data: self.as_arg(),
            ..Default::default()
        };
        param.cb.recv_am = Some(on_fetch_done);
        let (buffer, count) = payload_args(&list, &mut param);
        // SAFETY: a live worker and a rendezvous descriptor UCX handed to
        // our receive handler, used once (its token was just taken; UCX
        // owns it from here, whatever the outcome); the destination pieces
        // stay valid until completion (the caller's duty under the ABI)
        // and the iov list moves into the request's record.
        let ret =
            unsafe { sys::ucp_am_recv_data_nbx(self.worker, rndv.desc, buffer, count, &param) };
        match sys::classify(ret) {
            Started::Done => OK,
            Started::Failed(status) => self.code_of(status, rndv.peer),
            Started::Request(req) => self.started(
                req,
                true,
                Op {
                    cookie,
                    peer: rndv.peer,
                    header: Vec::new(),
                    _iov: list,
                },
            ),
        }
    }

    /// `Ops::discard`: an unknown token is ignored.
    pub(crate) fn discard(&self, token: u64) {
        let Some(rndv) = self.state.borrow_mut().tokens.take(token) else {
            return;
        };
        // SAFETY: a live worker and a descriptor our handler kept (it
        // returned UCS_INPROGRESS), released once (its token was taken).
        unsafe { sys::ucp_am_data_release(self.worker, rndv.desc) };
    }

    /// `Ops::progress`: first what was deferred, then UCX, until about
    /// `budget` events reached the engine or UCX has nothing more.
    pub(crate) fn progress(&self, budget: u32) -> c_int {
        if self.fault.get() {
            return ERR_TRANSPORT;
        }
        self.in_progress.set(true);
        let _reset = InProgress(&self.in_progress);
        self.delivered.set(0);
        let budget = budget.max(1);
        while self.delivered.get() < budget {
            let next = self.state.borrow_mut().deferred.pop_front();
            match next {
                Some(event) => self.deliver(event),
                None => break,
            }
        }
        let mut ucx: u32 = 0;
        while self.delivered.get() < budget {
            // SAFETY: a live worker, used by this thread only (ABI rule:
            // one thread at a time per context); no borrow of our state is
            // held, so our callbacks may run inside.
            let n = unsafe { sys::ucp_worker_progress(self.worker) };
            if n == 0 {
                break;
            }
            ucx = ucx.saturating_add(n);
            if ucx >= budget.saturating_mul(16) {
                break;
            }
        }
        self.reap();
        if self.fault.get() {
            return ERR_TRANSPORT;
        }
        let events = self.delivered.get().max(u32::from(ucx > 0));
        c_int::try_from(events).unwrap_or(c_int::MAX)
    }

    /// Close the endpoints of failed peers and free finished closes.
    fn reap(&self) {
        let eps = std::mem::take(&mut self.state.borrow_mut().to_close);
        for ep in eps {
            self.close_ep(ep, sys::UCP_EP_CLOSE_FLAG_FORCE);
        }
        let pending = std::mem::take(&mut self.state.borrow_mut().closing);
        let mut left = Vec::new();
        for req in pending {
            // SAFETY: a close request UCX returned and we have not freed.
            if unsafe { sys::ucp_request_check_status(req) } == sys::UCS_INPROGRESS {
                left.push(req);
            } else {
                // SAFETY: as above; it ended, freed once.
                unsafe { sys::ucp_request_free(req) };
            }
        }
        self.state.borrow_mut().closing.extend(left);
    }

    fn close_ep(&self, ep: sys::ucp_ep_h, flags: u32) {
        let param = sys::ucp_request_param_t {
            op_attr_mask: sys::UCP_OP_ATTR_FIELD_FLAGS,
            flags,
            ..Default::default()
        };
        // SAFETY: an endpoint of our worker, closed once (it left
        // `peers`/`to_close` before this call); no state borrow is held.
        let ret = unsafe { sys::ucp_ep_close_nbx(ep, &param) };
        if let Started::Request(req) = sys::classify(ret) {
            self.state.borrow_mut().closing.push(req);
        }
    }

    /// `Ops::wake_fd`.
    pub(crate) fn wake_fd(&self) -> c_int {
        self.wake_fd.unwrap_or(ERR_INVALID)
    }

    /// `Ops::arm`.
    pub(crate) fn arm(&self) -> c_int {
        if self.wake_fd.is_none() {
            return ERR_INVALID;
        }
        if self.fault.get() || !self.state.borrow().deferred.is_empty() {
            return ERR_AGAIN;
        }
        // SAFETY: a live worker with wake-up events.
        match unsafe { sys::ucp_worker_arm(self.worker) } {
            sys::UCS_OK => OK,
            sys::UCS_ERR_BUSY => ERR_AGAIN,
            _ => ERR_TRANSPORT,
        }
    }

    /// Progress UCX until `done` or `deadline`.
    fn progress_until(&self, deadline: Instant, done: impl Fn(&Self) -> bool) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            // SAFETY: as in `progress`.
            let n = unsafe { sys::ucp_worker_progress(self.worker) };
            self.reap();
            if n == 0 {
                std::thread::yield_now();
            }
        }
    }

    /// `Ops::close`, up to the destruction of the worker: tokens released,
    /// what was sent flushed (for at most [`CLOSE_FLUSH`]), fetches
    /// cancelled, endpoints closed by force (their sends end cancelled).
    /// No event reaches the engine any more.
    pub(crate) fn close(&self) {
        self.closing.set(true);
        let tokens = self.state.borrow_mut().tokens.drain();
        for rndv in tokens {
            // SAFETY: descriptors our handler kept, each released once.
            unsafe { sys::ucp_am_data_release(self.worker, rndv.desc) };
        }

        let param = sys::ucp_request_param_t::default();
        // SAFETY: a live worker; no callback is asked for (the request is
        // polled, and freed at the end of this function).
        let ret = unsafe { sys::ucp_worker_flush_nbx(self.worker, &param) };
        let flush = match sys::classify(ret) {
            Started::Request(req) => Some(req),
            _ => None,
        };
        let flushed = |_: &Self| {
            // SAFETY: the flush request, freed only at the end of `close`.
            flush.is_none_or(
                |req| unsafe { sys::ucp_request_check_status(req) } != sys::UCS_INPROGRESS,
            )
        };
        self.progress_until(Instant::now() + CLOSE_FLUSH, flushed);

        let fetches: Vec<usize> = self.state.borrow().fetches.keys().copied().collect();
        for req in fetches {
            // SAFETY: a fetch request still in flight (its record is
            // present); its callback runs with UCS_ERR_CANCELED.
            unsafe { sys::ucp_request_cancel(self.worker, req as *mut c_void) };
        }
        let eps: Vec<sys::ucp_ep_h> = {
            let mut st = self.state.borrow_mut();
            let mut eps: Vec<_> = st
                .peers
                .iter_mut()
                .filter_map(|p| match std::mem::replace(p, Peer::Failed) {
                    Peer::Connected(ep) => Some(ep),
                    _ => None,
                })
                .collect();
            eps.append(&mut st.to_close);
            st.ep_rank.clear();
            eps
        };
        for ep in eps {
            self.close_ep(ep, sys::UCP_EP_CLOSE_FLAG_FORCE);
        }
        // Closing the endpoints by force ends their sends (cancelled) and
        // an unfinished flush.
        self.progress_until(Instant::now() + CLOSE_CANCEL, |t| {
            let st = t.state.borrow();
            st.closing.is_empty() && st.in_flight() == 0 && flushed(t)
        });
        let left = std::mem::take(&mut self.state.borrow_mut().closing);
        for req in left.into_iter().chain(flush) {
            // SAFETY: close and flush requests, each freed once here; one
            // that has not ended is released by UCX when it does (or with
            // the worker).
            unsafe { sys::ucp_request_free(req) };
        }
    }

    /// Destroy the worker and the context (once). Records of requests that
    /// never ended are dropped with the transport, after this.
    pub(crate) fn destroy(&self) {
        if self.destroyed.replace(true) {
            return;
        }
        self.closing.set(true);
        if !self.worker.is_null() {
            // SAFETY: our worker, destroyed once; callbacks it may still
            // run find the transport alive (it is dropped after this).
            unsafe { sys::ucp_worker_destroy(self.worker) };
        }
        // SAFETY: our context, after its only worker, cleaned up once.
        unsafe { sys::ucp_cleanup(self.context) };
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        self.destroy();
    }
}

/// Run a UCX callback's body; a panic marks the transport broken instead
/// of unwinding into C.
fn shielded<R>(t: &Transport, fallback: R, body: impl FnOnce() -> R) -> R {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        t.fault.set(true);
        fallback
    })
}

/// UCX's active message handler.
///
/// # Safety
/// Called by UCX only: `arg` is the transport registered in `open` (alive
/// until its worker is destroyed); `header` holds `header_length` bytes;
/// `data` is the payload (eager) or a rendezvous descriptor; `param` is
/// UCX's receive parameters.
unsafe extern "C" fn on_am(
    arg: *mut c_void,
    header: *const c_void,
    header_length: usize,
    data: *mut c_void,
    length: usize,
    param: *const sys::ucp_am_recv_param_t,
) -> sys::ucs_status_t {
    // SAFETY: `arg` is our live transport (registration in `open`).
    let t = unsafe { &*arg.cast::<Transport>() };
    shielded(t, sys::UCS_OK, || {
        let header = if header.is_null() || header_length == 0 {
            &[][..]
        } else {
            // SAFETY: UCX passes `header_length` readable bytes, valid for
            // the handler's duration.
            unsafe { std::slice::from_raw_parts(header.cast::<u8>(), header_length) }
        };
        let recv_attr = if param.is_null() {
            0
        } else {
            // SAFETY: UCX's parameters, valid for the call when non-null.
            unsafe { (*param).recv_attr }
        };
        let rndv = recv_attr & sys::UCP_AM_RECV_ATTR_FLAG_RNDV as u64 != 0;
        t.am_arrived(header, data, length, rndv)
    })
}

/// UCX's completion of a send.
///
/// # Safety
/// Called by UCX only, with the `user_data` we passed: our live transport.
unsafe extern "C" fn on_send_done(
    request: *mut c_void,
    status: sys::ucs_status_t,
    user_data: *mut c_void,
) {
    // SAFETY: the transport passed as user_data; alive while requests are.
    let t = unsafe { &*user_data.cast::<Transport>() };
    shielded(t, (), || t.request_done(request, status, false));
}

/// UCX's completion of a fetch.
///
/// # Safety
/// As for [`on_send_done`].
unsafe extern "C" fn on_fetch_done(
    request: *mut c_void,
    status: sys::ucs_status_t,
    _length: usize,
    user_data: *mut c_void,
) {
    // SAFETY: as in `on_send_done`.
    let t = unsafe { &*user_data.cast::<Transport>() };
    shielded(t, (), || t.request_done(request, status, true));
}

/// UCX's endpoint error handler.
///
/// # Safety
/// Called by UCX only, with the argument we registered: our live transport.
unsafe extern "C" fn on_ep_error(arg: *mut c_void, ep: sys::ucp_ep_h, status: sys::ucs_status_t) {
    // SAFETY: the transport registered with the endpoint; it outlives it.
    let t = unsafe { &*arg.cast::<Transport>() };
    shielded(t, (), || t.ep_failed(ep, status));
}

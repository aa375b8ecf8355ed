//! Tessel's InfiniBand / RoCE network plugin, on libibverbs (rdma-core).
//!
//! It implements the C ABI of [`plugin_api`]: the shared object
//! `libtessel_plugin_verbs.so` exports [`tessel_plugin_descriptor`].
//!
//! # Where it runs
//!
//! A machine with an RDMA device whose transport is InfiniBand (IB or
//! RoCE; iWARP devices are skipped, their RC QPs need rdma_cm). Without
//! one, `open` fails with `ERR_NO_DEVICE` and says why:
//! `ibv_get_device_list` failing (`ENOSYS` where the kernel has no RDMA
//! support), no devices, or no device with an active port.
//!
//! Environment:
//! - `TESSEL_VERBS_DEVICE=<name>` or `<name>:<port>` (`mlx5_0`,
//!   `mlx5_1:2`): use this device (and port). Default: the first device
//!   with an active port, its first active port.
//! - `TESSEL_VERBS_GID_INDEX=<n>`: the source GID index. Default: 0 on
//!   InfiniBand; on RoCE the first RoCE v2 entry with an IPv4-mapped
//!   address, else the first RoCE v2 entry, else the first non-zero one.
//!
//! # Connections
//!
//! One reliable connected (RC) QP per peer, the process itself included
//! (a QP connected to itself, through the HCA's loopback). `open` creates
//! them all, moves them to INIT, posts their receive buffers, and
//! publishes with `callbacks.put`:
//! - `tessel.verbs.<rank>`: LID, port, active MTU, link layer, GID,
//!   initial PSN, responder resources, receive depth, and the address and
//!   rkey of the credit array (see `wire::Address`);
//! - `tessel.verbs.<rank>.q<k>`: the QP numbers this process uses for
//!   peers `100k .. 100k+99` (values stay under PMI-1's 1024 hex-encoded
//!   characters).
//!
//! The engine fences after `open`. At the first `progress` the plugin
//! reads each peer's two keys (`callbacks.get` runs only there and in
//! `open`) and moves its QP INIT -> RTR -> RTS. A send before that answers
//! `ERR_AGAIN` (the engine progresses and retries); peers whose keys are
//! missing are retried every 1024 progress calls, and a send to one
//! answers `ERR_UNREACHABLE`. Connecting every QP at once, rather than
//! at a peer's first message, is what RC needs: a QP must be in RTR before
//! its peer's first packet reaches it. The window between a sender's
//! first packet and the receiver's first `progress` is covered by RC
//! retries (timeout code 20, about 4.3 s, times 7 retries): a process that
//! does not call `progress` for half a minute after the fence breaks its
//! connections. Memory and QPs grow with the job (one QP and 4 to 16
//! receive buffers per peer): fine for moderate jobs, not for tens of
//! thousands of processes (which want SRQ or XRC/DC).
//!
//! # Messages
//!
//! Every message starts with a 32-byte prefix (`wire::Prefix`: kind,
//! header length, piggybacked credits, payload length, op, segment count),
//! then the engine's opaque header (up to 64 bytes), then the payload.
//! - Eager (payload up to 8 KiB): copied into a registered bounce buffer
//!   (or, when the whole message fits the QP's inline size, posted
//!   inline), and `send` returns `OK` at once. The receiver calls
//!   `arrived` with the data straight from its receive buffer, then
//!   re-posts the buffer.
//! - Rendezvous (larger): the sender registers the payload's pieces
//!   (`IBV_ACCESS_REMOTE_READ`) and sends an RTS with their addresses,
//!   lengths and rkeys; `send` returns `IN_PROGRESS`. The receiver hands
//!   the engine a token. `fetch` registers the engine's buffer
//!   (`IBV_ACCESS_LOCAL_WRITE`), posts RDMA READs (one per stretch where
//!   neither side's piece ends, see `rndv`), and when all completed
//!   deregisters, reports `completed(cookie)` and sends a FIN; `discard`
//!   sends the FIN without reading. At the FIN the sender deregisters and
//!   reports `completed(cookie, OK)`.
//!
//! Registration is on the fly, without a cache: a cache of user
//! registrations is only correct with hooks that see memory being
//! unmapped (UCX's ucm), since a freed-and-reused buffer would otherwise
//! keep its old, pinned pages. The cost is an `ibv_reg_mr` and an
//! `ibv_dereg_mr` per rendezvous on each side, small next to the 8 KiB+
//! payloads that take this path.
//!
//! # Tokens
//!
//! A token is a key of a generation-checked table (`table`):
//! `generation << 32 | index`. A used or made-up token finds nothing and
//! `fetch` answers `ERR_INVALID`. The op ids in RTS and FIN messages are
//! keys of the same kind, so a garbled FIN cannot complete another send.
//!
//! # Flow control
//!
//! Credits per peer (`credit`): a sender never has more messages in
//! flight to a peer than the peer has receive buffers posted for it. The
//! receiver hands credits back in the prefix of its own messages and, when
//! half its buffers for that peer are owed, with a 4-byte RDMA WRITE into
//! the sender's credit array, which takes no receive buffer (so returning
//! credits never needs credits). Send queue room per QP and completion
//! queue room overall are counted too. Out of any of them, `send` and
//! `fetch` return `ERR_AGAIN` (nothing started); FINs and credit writes,
//! which the engine does not retry, wait in internal queues flushed by
//! `progress`.
//!
//! # Completion and failure
//!
//! One CQ for every QP, with a completion channel whose descriptor is
//! `wake_fd`. `arm` drains the channel, calls `ibv_req_notify_cq`, then
//! polls once: completions found then are kept for the next `progress`
//! and `arm` answers `ERR_AGAIN`. It also answers `ERR_AGAIN` while
//! internal work (FINs, READs, credit writes, reports) waits, and while
//! connecting is due (before the first `progress`, a peer's packets would
//! reach QPs still in INIT and nothing would wake this process).
//! A work completion with an error status, a malformed message or a fatal
//! asynchronous event for a QP fails its peer: `failed(peer,
//! ERR_PEER_FAILED, message)` (`ERR_UNREACHABLE` when connecting failed),
//! its QP goes to the error state, and its rendezvous sends and fetches
//! complete with that error.
//!
//! # Limits and estimates (`Attr`)
//!
//! `max_header` 64; `eager_max` 8192; `inline_max` the QP's
//! `max_inline_data` less prefix and largest header (a conservative
//! figure: shorter headers inline more); `max_message` the port's
//! `max_msg_sz`. `bandwidth_mbs` is the link's data rate from
//! `active_speed` and `active_width` (lanes times the per-lane rate after
//! line encoding) less 10%; `latency_ns` a typical one-switch figure (1.3
//! us on InfiniBand, 2 us on RoCE). Both are estimates, not measurements.
//!
//! # Not done
//!
//! No SRQ, XRC or DC (memory grows with the job), no registration cache,
//! no `ibv_fork_init` (set `RDMAV_FORK_SAFE=1` if the process forks), no
//! service level or traffic class choice (SL 0), no path migration.

mod credit;
mod device;
mod rndv;
mod sys;
mod table;
mod transport;
mod verbs;
mod wire;

use std::ffi::{c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use plugin_api::plugin::{self, bytes, guard_void, pieces};
use plugin_api::{
    ABI_MAJOR, ABI_MINOR, Attr, Context, Descriptor, ERR_INVALID, ERR_TRANSPORT, Iov, OK, OpenArgs,
    Ops,
};

use crate::transport::Transport;

/// What the engine's `*mut Context` points at.
#[derive(Debug)]
struct Handle {
    transport: Transport,
    /// A panic left the transport in an unknown state: refuse further use.
    poisoned: bool,
}

static OPS: Ops = Ops {
    struct_size: std::mem::size_of::<Ops>() as u32,
    reserved: 0,
    open: Some(open),
    send: Some(send),
    fetch: Some(fetch),
    discard: Some(discard),
    progress: Some(progress),
    close: Some(close),
    wake_fd: Some(wake_fd),
    arm: Some(arm),
};

static DESCRIPTOR: Descriptor = Descriptor {
    abi_major: ABI_MAJOR,
    abi_minor: ABI_MINOR,
    struct_size: std::mem::size_of::<Descriptor>() as u32,
    reserved: 0,
    name: c"verbs".as_ptr(),
    version: c"0.1.0 (rdma-core libibverbs)".as_ptr(),
    preference: 300,
    reserved2: 0,
    ops: &OPS,
};

/// The plugin's descriptor (the symbol the engine looks up).
#[unsafe(no_mangle)]
pub extern "C" fn tessel_plugin_descriptor() -> *const Descriptor {
    &DESCRIPTOR
}

/// The names of the RDMA devices libibverbs sees, or why it sees none
/// (for tests and diagnostics).
pub fn device_names() -> Result<Vec<String>, String> {
    let list = verbs::DeviceList::get()
        .map_err(|e| format!("ibv_get_device_list: {}", verbs::errno_text(e)))?;
    Ok((0..list.len()).map(|i| list.name(i)).collect())
}

/// Run `f` on the context's transport, turning a panic into
/// `ERR_TRANSPORT` (and refusing the context afterwards).
///
/// # Safety
/// `ctx` is null or a context `open` returned and `close` has not freed,
/// used by one thread at a time (ABI).
unsafe fn with_transport(ctx: *mut Context, f: impl FnOnce(&mut Transport) -> c_int) -> c_int {
    if ctx.is_null() {
        return ERR_INVALID;
    }
    // SAFETY: per the caller, a live `Handle` that nobody else uses now.
    let h = unsafe { &mut *ctx.cast::<Handle>() };
    if h.poisoned {
        return ERR_TRANSPORT;
    }
    match catch_unwind(AssertUnwindSafe(|| f(&mut h.transport))) {
        Ok(rc) => rc,
        Err(_) => {
            h.poisoned = true;
            ERR_TRANSPORT
        }
    }
}

unsafe extern "C" fn open(
    args: *const OpenArgs,
    ctx: *mut *mut Context,
    attr: *mut Attr,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    // SAFETY: the engine's arguments to `open`, as they came (ABI).
    unsafe {
        plugin::open(args, ctx, attr, err, errlen, "verbs", |a| {
            let (transport, ours) = Transport::open(a.rank, a.size, a.engine)?;
            let handle = Box::new(Handle {
                transport,
                poisoned: false,
            });
            Ok((handle, ours))
        })
    }
}

unsafe extern "C" fn send(
    ctx: *mut Context,
    peer: u32,
    header: *const u8,
    header_len: usize,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    let run = |t: &mut Transport| {
        // SAFETY: ABI: `header_len` readable bytes during the call.
        let Some(header) = (unsafe { bytes(header, header_len) }) else {
            return ERR_INVALID;
        };
        // SAFETY: ABI: `iov_count` entries.
        let Some(iov) = (unsafe { pieces(iov, iov_count) }) else {
            return ERR_INVALID;
        };
        // SAFETY: ABI: the payload is readable and stays until the
        // completion.
        unsafe { t.send(peer, header, iov, cookie) }
    };
    // SAFETY: the engine's context (ABI).
    unsafe { with_transport(ctx, run) }
}

unsafe extern "C" fn fetch(
    ctx: *mut Context,
    token: u64,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    let run = |t: &mut Transport| {
        // SAFETY: ABI: `iov_count` entries.
        let Some(iov) = (unsafe { pieces(iov, iov_count) }) else {
            return ERR_INVALID;
        };
        // SAFETY: ABI: the buffer is writable and the engine's alone until
        // the completion.
        unsafe { t.fetch(token, iov, cookie) }
    };
    // SAFETY: the engine's context (ABI).
    unsafe { with_transport(ctx, run) }
}

unsafe extern "C" fn discard(ctx: *mut Context, token: u64) {
    // SAFETY: the engine's context (ABI).
    unsafe {
        with_transport(ctx, |t| {
            t.discard(token);
            OK
        })
    };
}

unsafe extern "C" fn progress(ctx: *mut Context, budget: u32) -> c_int {
    // SAFETY: the engine's context (ABI).
    unsafe { with_transport(ctx, |t| t.progress(budget)) }
}

unsafe extern "C" fn wake_fd(ctx: *mut Context) -> c_int {
    // SAFETY: the engine's context (ABI).
    unsafe { with_transport(ctx, |t| t.wake_fd()) }
}

unsafe extern "C" fn arm(ctx: *mut Context) -> c_int {
    // SAFETY: the engine's context (ABI).
    unsafe { with_transport(ctx, |t| t.arm()) }
}

unsafe extern "C" fn close(ctx: *mut Context) {
    if ctx.is_null() {
        return;
    }
    // SAFETY: a context `open` made (ABI), freed once: the engine does not
    // use it after close.
    let handle = unsafe { Box::from_raw(ctx.cast::<Handle>()) };
    // A panic while freeing leaks what is left rather than unwinding.
    guard_void(move || drop(handle));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn the_descriptor_is_complete() {
        // SAFETY: our own static descriptor.
        let d = unsafe { &*tessel_plugin_descriptor() };
        assert_eq!((d.abi_major, d.abi_minor), (ABI_MAJOR, ABI_MINOR));
        assert_eq!(d.struct_size as usize, std::mem::size_of::<Descriptor>());
        assert_eq!(d.preference, 300);
        // SAFETY: static C strings.
        let (name, version) = unsafe { (CStr::from_ptr(d.name), CStr::from_ptr(d.version)) };
        assert_eq!(name.to_str(), Ok("verbs"));
        assert!(version.to_str().unwrap().contains("libibverbs"));
        // SAFETY: our own static table.
        let ops = unsafe { &*d.ops };
        assert_eq!(ops.struct_size as usize, std::mem::size_of::<Ops>());
        assert!(ops.open.is_some() && ops.send.is_some() && ops.fetch.is_some());
        assert!(ops.discard.is_some() && ops.progress.is_some() && ops.close.is_some());
        assert!(ops.wake_fd.is_some() && ops.arm.is_some());
    }

    #[test]
    fn null_contexts_and_arguments_are_refused() {
        let ops = &OPS;
        // SAFETY: null contexts are allowed and refused.
        unsafe {
            assert_eq!(
                (ops.progress.unwrap())(std::ptr::null_mut(), 8),
                ERR_INVALID
            );
            assert_eq!((ops.arm.unwrap())(std::ptr::null_mut()), ERR_INVALID);
            assert_eq!(
                (ops.fetch.unwrap())(std::ptr::null_mut(), 1, std::ptr::null(), 0, 0),
                ERR_INVALID
            );
            (ops.discard.unwrap())(std::ptr::null_mut(), 1);
            (ops.close.unwrap())(std::ptr::null_mut());
        }
        let mut err = [0 as c_char; 64];
        let mut ctx = std::ptr::null_mut();
        let mut attr = Attr::default();
        // SAFETY: null args are allowed and refused; the rest is valid.
        let rc = unsafe {
            (ops.open.unwrap())(
                std::ptr::null(),
                &mut ctx,
                &mut attr,
                err.as_mut_ptr(),
                err.len(),
            )
        };
        assert_eq!(rc, ERR_INVALID);
        assert!(ctx.is_null());
        // SAFETY: NUL-terminated by write_error.
        let msg = unsafe { CStr::from_ptr(err.as_ptr()) };
        assert!(msg.to_str().unwrap().contains("null"));
    }
}

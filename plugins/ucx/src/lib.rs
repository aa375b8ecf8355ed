//! Tessel's UCX network plugin: the plugin ABI of `plugin-api` over UCP
//! active messages (UCX 1.12 or later; built and tested on Debian's 1.13).
//!
//! # On the wire
//! Each context opens one UCP context (`UCP_FEATURE_AM`, plus
//! `UCP_FEATURE_WAKEUP` when a transport offers events) and one worker in
//! single-thread mode, and publishes the worker's address under the
//! bootstrap key `tessel.ucx.<rank>`. The endpoint to a peer is made at
//! the first send to it, from the address the peer published, with
//! `UCP_ERR_HANDLING_MODE_PEER`. A message is one UCP active message of id
//! 1: its header is an 8-byte prefix (magic `TU`, version 1, the sender's
//! rank; see `wire`) followed by the engine's header, and its payload is
//! the engine's pieces (contiguous, or `UCP_DATATYPE_IOV`). Payloads up to
//! `eager_max` go eagerly (`UCP_AM_SEND_FLAG_EAGER`) and arrive as data;
//! larger ones go by UCX's rendezvous (`UCP_AM_SEND_FLAG_RNDV`): the
//! receiver gets the header and a token, and `fetch` pulls the payload
//! with `ucp_am_recv_data_nbx` (UCX picks a get, a put or pipelined
//! fragments per transport) while `discard` releases it.
//!
//! # Tokens, order, errors
//! - A token is a generation-checked index into a table of rendezvous
//!   descriptors (`tokens`): a stale or made-up token is `ERR_INVALID`.
//! - Arrivals from one peer are usually in order (one UCX endpoint, eager
//!   messages in sequence), but UCX does not promise it across lanes and
//!   rendezvous payloads end in any order: the engine restores the order.
//! - Callbacks reach the engine only inside `progress` (events that UCX
//!   reports elsewhere wait in a queue); the one exception is the
//!   bootstrap `get` of a peer's address at the first send to it.
//! - A peer whose endpoint fails is reported once with `failed`
//!   (`ERR_PEER_FAILED`); its operations complete with that code and later
//!   sends to it answer it at once. UCX lacking resources is `ERR_AGAIN`;
//!   a bad rank is `ERR_UNREACHABLE`; a bad token or header `ERR_INVALID`.
//! - `close` releases tokens, flushes the worker (2 s at most), cancels
//!   fetches, closes endpoints by force and destroys worker and context.
//!
//! The limits and costs reported at open, and where they come from, are
//! in `limits`.

use std::ffi::{CStr, c_char, c_int};
use std::mem::size_of;

use plugin_api::plugin::{self, bytes, guard, guard_void, pieces};
use plugin_api::{
    ABI_MAJOR, ABI_MINOR, Attr, Context, Descriptor, ERR_INVALID, Iov, OpenArgs, Ops,
};

mod limits;
mod sys;
mod tokens;
mod transport;
mod wire;

use transport::Transport;

/// The plugin's version and UCX's (from UCX's pkg-config file at build
/// time, the text `ucp_get_version_string` gives for that build).
const VERSION: &CStr = match CStr::from_bytes_with_nul(
    concat!(
        env!("CARGO_PKG_VERSION"),
        " (UCX ",
        env!("TESSEL_UCX_VERSION"),
        ")\0"
    )
    .as_bytes(),
) {
    Ok(v) => v,
    Err(_) => panic!("the version text has a NUL inside"),
};

static OPS: Ops = Ops {
    struct_size: size_of::<Ops>() as u32,
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
    struct_size: size_of::<Descriptor>() as u32,
    reserved: 0,
    name: c"ucx".as_ptr(),
    version: VERSION.as_ptr(),
    preference: 200,
    reserved2: 0,
    ops: &OPS,
};

/// The plugin's entry point: its static descriptor.
#[unsafe(no_mangle)]
pub extern "C" fn tessel_plugin_descriptor() -> *const Descriptor {
    &DESCRIPTOR
}

/// The transport behind a context handle; `None` for null or a handle
/// this plugin did not make.
///
/// # Safety
/// `ctx` is null or a handle `open` returned and `close` has not freed.
unsafe fn transport<'a>(ctx: *mut Context) -> Option<&'a Transport> {
    if ctx.is_null() || !ctx.cast::<Transport>().is_aligned() {
        return None;
    }
    // SAFETY: per the caller, a live boxed `Transport`; shared access only
    // (every method takes `&self`), one thread at a time (ABI rule).
    let t = unsafe { &*ctx.cast::<Transport>() };
    (t.magic == transport::MAGIC).then_some(t)
}

/// `Ops::open`.
///
/// # Safety
/// ABI contract: `args`, `ctx`, `attr` valid; `err` writable for `errlen`.
unsafe extern "C" fn open(
    args: *const OpenArgs,
    ctx: *mut *mut Context,
    attr: *mut Attr,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    // SAFETY: the engine's arguments to `open`, as they came (ABI).
    unsafe {
        plugin::open(args, ctx, attr, err, errlen, "UCX", |a| {
            if a.rank >= a.size {
                return Err((
                    ERR_INVALID,
                    format!("rank {} of a job of {}", a.rank, a.size),
                ));
            }
            Transport::open(a.rank, a.size, a.engine)
        })
    }
}

/// `Ops::send`.
///
/// # Safety
/// ABI contract: an open context; `header` readable for `header_len`;
/// `iov` readable for `iov_count` pieces whose memory stays until the send
/// completes.
unsafe extern "C" fn send(
    ctx: *mut Context,
    peer: u32,
    header: *const u8,
    header_len: usize,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the ABI's promises for every argument, as above.
        let (t, header, pieces) = unsafe {
            (
                transport(ctx),
                bytes(header, header_len),
                pieces(iov, iov_count),
            )
        };
        match (t, header, pieces) {
            (Some(t), Some(h), Some(p)) => t.send(peer, h, p, cookie),
            _ => ERR_INVALID,
        }
    })
}

/// `Ops::fetch`.
///
/// # Safety
/// ABI contract: an open context; `iov` readable for `iov_count` writable
/// pieces that stay until the fetch completes.
unsafe extern "C" fn fetch(
    ctx: *mut Context,
    token: u64,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the ABI's promises for every argument, as above.
        let (t, pieces) = unsafe { (transport(ctx), pieces(iov, iov_count)) };
        match (t, pieces) {
            (Some(t), Some(p)) => t.fetch(token, p, cookie),
            _ => ERR_INVALID,
        }
    })
}

/// `Ops::discard`.
///
/// # Safety
/// ABI contract: an open context.
unsafe extern "C" fn discard(ctx: *mut Context, token: u64) {
    guard_void(|| {
        // SAFETY: an open context (ABI).
        if let Some(t) = unsafe { transport(ctx) } {
            t.discard(token);
        }
    });
}

/// `Ops::progress`.
///
/// # Safety
/// ABI contract: an open context.
unsafe extern "C" fn progress(ctx: *mut Context, budget: u32) -> c_int {
    guard(|| {
        // SAFETY: an open context (ABI).
        match unsafe { transport(ctx) } {
            Some(t) => t.progress(budget),
            None => ERR_INVALID,
        }
    })
}

/// `Ops::close`.
///
/// # Safety
/// ABI contract: an open context, not used afterwards.
unsafe extern "C" fn close(ctx: *mut Context) {
    guard_void(|| {
        // SAFETY: an open context (ABI).
        if let Some(t) = unsafe { transport(ctx) } {
            t.close();
            t.destroy();
            // SAFETY: the box `open` leaked; UCX no longer holds pointers
            // into it (worker destroyed) and the engine does not use the
            // handle again (ABI).
            drop(unsafe { Box::from_raw(ctx.cast::<Transport>()) });
        }
    });
}

/// `Ops::wake_fd`.
///
/// # Safety
/// ABI contract: an open context.
unsafe extern "C" fn wake_fd(ctx: *mut Context) -> c_int {
    guard(|| {
        // SAFETY: an open context (ABI).
        match unsafe { transport(ctx) } {
            Some(t) => t.wake_fd(),
            None => ERR_INVALID,
        }
    })
}

/// `Ops::arm`.
///
/// # Safety
/// ABI contract: an open context.
unsafe extern "C" fn arm(ctx: *mut Context) -> c_int {
    guard(|| {
        // SAFETY: an open context (ABI).
        match unsafe { transport(ctx) } {
            Some(t) => t.arm(),
            None => ERR_INVALID,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_names_ucx_and_its_version() {
        // SAFETY: static strings of our own descriptor.
        let d = unsafe { &*tessel_plugin_descriptor() };
        assert_eq!(d.abi_major, ABI_MAJOR);
        // SAFETY: as above.
        let (name, version) = unsafe { (CStr::from_ptr(d.name), CStr::from_ptr(d.version)) };
        assert_eq!(name.to_str(), Ok("ucx"));
        let v = version.to_str().unwrap();
        assert!(v.starts_with("0.1.0 (UCX 1."), "{v}");
        // SAFETY: our static table.
        let ops = unsafe { &*d.ops };
        assert_eq!(ops.struct_size as usize, size_of::<Ops>());
    }

    #[test]
    fn the_version_built_on_is_the_version_loaded() {
        // SAFETY: UCX returns a static NUL-terminated string.
        let loaded = unsafe { CStr::from_ptr(sys::ucp_get_version_string()) };
        assert_eq!(loaded.to_str(), Ok(env!("TESSEL_UCX_VERSION")));
    }

    #[test]
    fn a_foreign_handle_is_refused() {
        let mut fake = [0u64; 4];
        // SAFETY: a readable, aligned block that is not a transport: the
        // magic check refuses it.
        let t = unsafe { transport(fake.as_mut_ptr().cast()) };
        assert!(t.is_none());
        // SAFETY: null is refused before any read.
        assert!(unsafe { transport(std::ptr::null_mut()) }.is_none());
    }
}

//! Tessel's libfabric network plugin (`libtessel_plugin_ofi.so`).
//!
//! It implements the [`plugin_api`] ABI over one reliable datagram endpoint
//! (`FI_EP_RDM`) of the first libfabric provider that opens (`FI_PROVIDER`
//! restricts the choice, `TESSEL_OFI_DOMAIN` the domain; here that is
//! `tcp;ofi_rxm`, see [`provider`]), with one completion queue and one
//! address vector. `open` publishes the endpoint's address under
//! `tessel.ofi.<rank>`; peers enter the address vector at first use.
//!
//! On the wire (details in [`wire`]) every message is one `fi_send` into a
//! pre-posted receive buffer: a 16-byte prefix (kind, version, header
//! length, sender rank, payload length), the engine's header (at most
//! 128 bytes), then
//! - EAGER: the payload (at most 8 KiB), gathered from its pieces;
//! - RTS: for a larger payload, the (address, key, length) of each piece,
//!   registered by the sender for remote reads; the receiver's engine gets
//!   a token, and `fetch` `fi_read`s the pieces into its buffer;
//! - FIN: the receiver read or discarded the payload: the sender
//!   deregisters it and completes the send.
//!
//! Every entry below catches panics (answering `ERR_TRANSPORT`) and checks
//! its pointers; callbacks run only inside `progress` (and `put` inside
//! `open`, `get` at a peer's first use, see [`context`](mod@context)).
//!
//! Environment: `FI_PROVIDER` (libfabric's own) picks the provider,
//! `TESSEL_OFI_DOMAIN` the domain (`lo`, `eth0`), and
//! `TESSEL_OFI_STALL_TIMEOUT` how many seconds a peer may answer only "no
//! resources" before it is reported unreachable (default 120, 0: never).

mod buffers;
pub mod context;
pub mod fi;
pub mod provider;
pub mod rndv;
#[allow(missing_docs)]
pub mod sys;
pub mod table;
pub mod wire;

use std::ffi::{c_char, c_int};

use plugin_api::plugin::{self, bytes, guard, guard_void};
use plugin_api::{
    ABI_MAJOR, ABI_MINOR, Attr, Context, Descriptor, ERR_INVALID, Iov, OpenArgs, Ops,
};

use crate::context::{MAX_HEADER, Ofi};

/// The plugin's version and the libfabric headers it was built on.
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (libfabric ",
    env!("TESSEL_OFI_LIBFABRIC_VERSION"),
    ")\0"
);

static OPS: Ops = Ops {
    struct_size: std::mem::size_of::<Ops>() as u32,
    reserved: 0,
    open: Some(ofi_open),
    send: Some(ofi_send),
    fetch: Some(ofi_fetch),
    discard: Some(ofi_discard),
    progress: Some(ofi_progress),
    close: Some(ofi_close),
    wake_fd: Some(ofi_wake_fd),
    arm: Some(ofi_arm),
};

static DESCRIPTOR: Descriptor = Descriptor {
    abi_major: ABI_MAJOR,
    abi_minor: ABI_MINOR,
    struct_size: std::mem::size_of::<Descriptor>() as u32,
    reserved: 0,
    name: c"ofi".as_ptr(),
    version: VERSION.as_ptr().cast(),
    preference: 100,
    reserved2: 0,
    ops: &raw const OPS,
};

/// The plugin's descriptor (the ABI's [`plugin_api::DESCRIPTOR_SYMBOL`]).
#[unsafe(no_mangle)]
pub extern "C" fn tessel_plugin_descriptor() -> *const Descriptor {
    &raw const DESCRIPTOR
}

/// The context behind a handle, or `None` for null.
///
/// # Safety
/// `ctx` is null or a handle `open` returned and `close` has not freed; the
/// engine uses it from one thread at a time (the ABI).
unsafe fn context<'a>(ctx: *mut Context) -> Option<&'a mut Ofi> {
    // SAFETY: per the caller, a non-null handle is a live `Box<Ofi>` from
    // `open` with no other reference to it during this call.
    unsafe { ctx.cast::<Ofi>().as_mut() }
}

unsafe extern "C" fn ofi_open(
    args: *const OpenArgs,
    ctx: *mut *mut Context,
    attr: *mut Attr,
    err: *mut c_char,
    errlen: usize,
) -> c_int {
    // SAFETY: the engine's arguments to `open`, as they came (ABI).
    unsafe {
        plugin::open(args, ctx, attr, err, errlen, "ofi", |a| {
            Ofi::open(a.rank, a.size, a.engine)
        })
    }
}

unsafe extern "C" fn ofi_send(
    ctx: *mut Context,
    peer: u32,
    header: *const u8,
    header_len: usize,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        let Some(me) = (unsafe { context(ctx) }) else {
            return ERR_INVALID;
        };
        if header_len > MAX_HEADER {
            return ERR_INVALID;
        }
        // SAFETY: the ABI makes `header` `header_len` readable bytes.
        let Some(header) = (unsafe { bytes(header, header_len) }) else {
            return ERR_INVALID;
        };
        // SAFETY: the ABI makes `iov` `iov_count` entries.
        let Some(pieces) = (unsafe { context::pieces(iov, iov_count) }) else {
            return ERR_INVALID;
        };
        me.send(peer, header, &pieces, cookie)
    })
}

unsafe extern "C" fn ofi_fetch(
    ctx: *mut Context,
    token: u64,
    iov: *const Iov,
    iov_count: usize,
    cookie: u64,
) -> c_int {
    guard(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        let Some(me) = (unsafe { context(ctx) }) else {
            return ERR_INVALID;
        };
        // SAFETY: the ABI makes `iov` `iov_count` entries.
        let Some(pieces) = (unsafe { context::pieces(iov, iov_count) }) else {
            return ERR_INVALID;
        };
        me.fetch(token, &pieces, cookie)
    })
}

unsafe extern "C" fn ofi_discard(ctx: *mut Context, token: u64) {
    guard_void(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        if let Some(me) = unsafe { context(ctx) } {
            me.discard(token);
        }
    })
}

unsafe extern "C" fn ofi_progress(ctx: *mut Context, budget: u32) -> c_int {
    guard(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        match unsafe { context(ctx) } {
            Some(me) => me.progress(budget),
            None => ERR_INVALID,
        }
    })
}

unsafe extern "C" fn ofi_close(ctx: *mut Context) {
    guard_void(|| {
        if !ctx.is_null() {
            // SAFETY: a handle from `open` (a `Box<Ofi>`), closed once
            // (the ABI); dropping it closes the endpoint first.
            drop(unsafe { Box::from_raw(ctx.cast::<Ofi>()) });
        }
    })
}

unsafe extern "C" fn ofi_wake_fd(ctx: *mut Context) -> c_int {
    guard(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        match unsafe { context(ctx) } {
            Some(me) => me.wake_fd(),
            None => ERR_INVALID,
        }
    })
}

unsafe extern "C" fn ofi_arm(ctx: *mut Context) -> c_int {
    guard(|| {
        // SAFETY: the engine passes its live handle (the ABI).
        match unsafe { context(ctx) } {
            Some(me) => me.arm(),
            None => ERR_INVALID,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    #[test]
    fn descriptor_names_the_plugin_and_its_library() {
        let d = tessel_plugin_descriptor();
        // SAFETY: a static descriptor with static strings.
        let (name, version) = unsafe { (CStr::from_ptr((*d).name), CStr::from_ptr((*d).version)) };
        assert_eq!(name.to_str().unwrap(), "ofi");
        assert!(version.to_str().unwrap().contains("libfabric 1."));
        // SAFETY: as above.
        let ops = unsafe { &*(*d).ops };
        assert_eq!(ops.struct_size as usize, std::mem::size_of::<Ops>());
    }
}

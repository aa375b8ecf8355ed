//! The C ABI between Tessel's engine and its network plugins.
//!
//! A plugin is a shared object (`libtessel_plugin_<name>.so`) that exports
//! one symbol, [`DESCRIPTOR_SYMBOL`]: a function returning a pointer to a
//! static [`Descriptor`]. The engine loads it at run time, checks the ABI
//! major version (equal) and minor version, and reads every table only as
//! far as its `struct_size` says, so that:
//! - a newer engine calls an optional entry only when the plugin's table is
//!   long enough to hold it (libfabric's `FI_CHECK_OP` rule);
//! - tables only grow at their end; a field is never moved or removed
//!   without a new major version.
//!
//! The plugin is a *transport*: it moves active messages (a small header
//! and a payload) between the processes of a job, numbered by their rank.
//! The engine does all tag matching. For a large payload the plugin hands
//! the engine a *token* instead of the data, and the engine, once it knows
//! where the message goes (a user buffer, or a buffer of its own for a
//! receive posted without one), calls [`Ops::fetch`] to pull the payload
//! there (a rendezvous pull or an RMA read), or [`Ops::discard`].
//!
//! Rules that hold for every entry:
//! - No panic and no Rust type crosses the boundary: every entry returns a
//!   status code ([`OK`] and the negative `ERR_*` values), and error text
//!   is written into a caller-provided buffer.
//! - [`ERR_AGAIN`] ("no resources") is never fatal: the engine queues the
//!   operation and retries it after progress.
//! - The event callbacks (`arrived`, `completed`, `failed`) run only
//!   inside [`Ops::progress`]; the bootstrap ones (`put`, `get`) may be
//!   called from any entry (a lazy connection reads a peer's address at
//!   its first send), never from inside another callback. The engine never
//!   calls into the plugin from inside a callback. Every function pointer
//!   of [`Callbacks`] is non-null.
//! - Tokens are unique per context while outstanding; their values are the
//!   plugin's own (a plugin must refuse one it did not hand out). A fetch
//!   answered [`ERR_AGAIN`] or [`ERR_INVALID`] leaves its token as it was;
//!   one that started, or failed because the peer did, consumes it.
//! - [`ERR_AGAIN`] is the answer to a momentary shortage: a plugin whose
//!   library turns a dead peer into endless "no resources" keeps its own
//!   deadline and then reports the peer ([`Callbacks::failed`]).
//! - Values published with `put` should stay under 384 bytes each: the
//!   engine splits longer ones over several bootstrap keys, which costs a
//!   lookup each (PMI-1 under Hydra takes 512 raw bytes per value).
//! - Messages from one peer need not reach [`Callbacks::arrived`] in the
//!   order they were sent: the engine numbers its headers per peer and
//!   restores the order itself (MPI's non-overtaking rule).
//! - A plugin's context is used by one thread at a time.
//!
//! The memory layout of every type here is `#[repr(C)]` and is the ABI:
//! C plugins can be written against the equivalent header.

#![deny(unsafe_op_in_unsafe_fn)]

use std::ffi::{c_char, c_int, c_void};

#[cfg(feature = "conformance")]
pub mod conformance;
#[cfg(feature = "plugin")]
pub mod plugin;

/// ABI major version: a plugin whose major differs is refused.
pub const ABI_MAJOR: u32 = 1;
/// ABI minor version: grows with every entry appended to a table. A plugin
/// of an older minor is accepted (the engine reads its shorter tables).
pub const ABI_MINOR: u32 = 0;

/// The symbol a plugin exports, of type [`DescriptorFn`].
pub const DESCRIPTOR_SYMBOL: &[u8] = b"tessel_plugin_descriptor\0";
/// File names of plugins: `libtessel_plugin_<name>.so`.
pub const FILE_PREFIX: &str = "libtessel_plugin_";
/// The file name suffix of plugins.
pub const FILE_SUFFIX: &str = ".so";

/// Success; for [`Ops::send`] and [`Ops::fetch`]: done already, no
/// completion callback follows.
pub const OK: c_int = 0;
/// Started; [`Callbacks::completed`] reports the end with the cookie.
pub const IN_PROGRESS: c_int = 1;
/// No resources now: retry after progress. Never an error.
pub const ERR_AGAIN: c_int = -1;
/// The plugin loaded, but the machine has no device it can use.
pub const ERR_NO_DEVICE: c_int = -2;
/// The peer cannot be reached (no address, connection refused).
pub const ERR_UNREACHABLE: c_int = -3;
/// A bad argument (an unknown token, a header longer than the limit).
pub const ERR_INVALID: c_int = -4;
/// The peer failed (its process died or its connection broke).
pub const ERR_PEER_FAILED: c_int = -5;
/// The underlying library failed; the message says how.
pub const ERR_TRANSPORT: c_int = -6;
/// The operation was cancelled (at close).
pub const ERR_CANCELLED: c_int = -7;

/// A short name for a status code.
pub fn status_name(code: c_int) -> &'static str {
    match code {
        OK => "ok",
        IN_PROGRESS => "in progress",
        ERR_AGAIN => "no resources (retry)",
        ERR_NO_DEVICE => "no device",
        ERR_UNREACHABLE => "peer unreachable",
        ERR_INVALID => "invalid argument",
        ERR_PEER_FAILED => "peer failed",
        ERR_TRANSPORT => "transport error",
        ERR_CANCELLED => "cancelled",
        _ => "unknown status",
    }
}

/// The plugin's exported entry point: returns its static descriptor.
pub type DescriptorFn = unsafe extern "C" fn() -> *const Descriptor;

/// What a plugin is: the first thing the engine reads.
#[repr(C)]
#[derive(Debug)]
pub struct Descriptor {
    /// [`ABI_MAJOR`] the plugin was built for.
    pub abi_major: u32,
    /// [`ABI_MINOR`] the plugin was built for.
    pub abi_minor: u32,
    /// `size_of::<Descriptor>()` as the plugin knows it.
    pub struct_size: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// The transport's name (`"ucx"`, `"verbs"`, `"ofi"`): what
    /// `TESSEL_NET` selects. NUL-terminated, static.
    pub name: *const c_char,
    /// The plugin's version and the library's it was built on, for people
    /// (`"0.1.0 (UCX 1.13.1)"`). NUL-terminated, static.
    pub version: *const c_char,
    /// A higher preference wins under `TESSEL_NET=auto` among plugins that
    /// open; RDMA transports rank above sockets-based ones.
    pub preference: u32,
    /// Reserved, zero.
    pub reserved2: u32,
    /// The operations.
    pub ops: *const Ops,
}

// SAFETY: a descriptor is immutable static data: its pointers name static
// strings and a static table.
unsafe impl Sync for Descriptor {}

/// An opaque plugin context, created by [`Ops::open`].
#[repr(C)]
#[derive(Debug)]
pub struct Context {
    _private: [u8; 0],
}

/// One piece of a buffer (a `struct iovec`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Iov {
    /// Start of the piece.
    pub base: *mut c_void,
    /// Its length in bytes.
    pub len: usize,
}

/// Flags of [`Attr::flags`]: the plugin offers a wake-up descriptor
/// ([`Ops::wake_fd`] and [`Ops::arm`]), so the engine may sleep in `poll`.
pub const ATTR_WAKE_FD: u32 = 1;
/// Flags of [`Attr::flags`]: large payloads are fetched by one-sided reads
/// (RMA), without the sender's CPU.
pub const ATTR_RMA_READ: u32 = 2;

/// A transport's limits and costs, as [`Ops::open`] reports them (UCX's
/// `uct_iface_attr` in small): the engine picks its protocols from them
/// and `tessel-info` prints them.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Attr {
    /// `size_of::<Attr>()` as the engine knows it; the plugin writes no
    /// field beyond it.
    pub struct_size: u32,
    /// `ATTR_*` flags.
    pub flags: u32,
    /// The largest header [`Ops::send`] takes (at least 64).
    pub max_header: u64,
    /// Payloads up to this size go out with the header in one packet.
    pub inline_max: u64,
    /// Payloads up to this size arrive as data in [`Callbacks::arrived`];
    /// larger ones arrive as a token to fetch.
    pub eager_max: u64,
    /// The largest payload one send carries; 0 means no limit.
    pub max_message: u64,
    /// One-way latency of a small message, in nanoseconds (an estimate).
    pub latency_ns: u64,
    /// Bandwidth of large messages, in MB/s (an estimate).
    pub bandwidth_mbs: u64,
    /// The device or provider in use, for people (`"tcp on lo"`),
    /// NUL-terminated.
    pub device: [c_char; 64],
}

impl Default for Attr {
    fn default() -> Self {
        Self {
            struct_size: std::mem::size_of::<Self>() as u32,
            flags: 0,
            max_header: 0,
            inline_max: 0,
            eager_max: 0,
            max_message: 0,
            latency_ns: 0,
            bandwidth_mbs: 0,
            device: [0; 64],
        }
    }
}

impl Attr {
    /// Write `text` into [`Attr::device`], cut to fit.
    pub fn set_device(&mut self, text: &str) {
        copy_cstr(text, &mut self.device);
    }

    /// [`Attr::device`] as text.
    pub fn device(&self) -> String {
        let bytes: Vec<u8> = self
            .device
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Copy `text` into the C string buffer `out`, cut to fit, NUL-terminated.
pub fn copy_cstr(text: &str, out: &mut [c_char]) {
    if out.is_empty() {
        return;
    }
    let n = text.len().min(out.len() - 1);
    for (o, &b) in out.iter_mut().zip(&text.as_bytes()[..n]) {
        *o = b as c_char;
    }
    out[n] = 0;
}

/// Flags of [`Callbacks::arrived`]: `data` holds the whole payload, valid
/// only during the call.
pub const ARRIVED_DATA: u32 = 1;
/// Flags of [`Callbacks::arrived`]: the payload (`len` bytes) waits at the
/// sender side; `token` names it for [`Ops::fetch`] or [`Ops::discard`],
/// exactly one of which the engine calls later.
pub const ARRIVED_TOKEN: u32 = 2;

/// What the engine offers a plugin: its bootstrap for address exchange,
/// and where to report arrivals, completions and failures. Every function
/// takes [`Callbacks::engine`] as its first argument.
#[repr(C)]
#[derive(Debug)]
pub struct Callbacks {
    /// `size_of::<Callbacks>()` as the engine knows it.
    pub struct_size: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// Opaque engine pointer for the functions below.
    pub engine: *mut c_void,
    /// Publish `len` bytes under the NUL-terminated `key` (job-global keys;
    /// use the plugin's name in them). Visible to every process after the
    /// engine's next fence: the engine fences right after [`Ops::open`].
    pub put: unsafe extern "C" fn(
        engine: *mut c_void,
        key: *const c_char,
        value: *const u8,
        len: usize,
    ) -> c_int,
    /// Read the value another process published under `key` into `buf`
    /// (`cap` bytes); `*len` gets its full length. [`ERR_UNREACHABLE`]
    /// when nothing was published under `key`; [`ERR_INVALID`] with
    /// `*len > cap` when it does not fit (call again with a larger
    /// buffer), with `*len <= cap` for a bad argument.
    pub get: unsafe extern "C" fn(
        engine: *mut c_void,
        key: *const c_char,
        buf: *mut u8,
        cap: usize,
        len: *mut usize,
    ) -> c_int,
    /// A message from `peer`: `header` (`header_len` bytes) and, as
    /// `flags` says, the payload in `data` ([`ARRIVED_DATA`]) or a `token`
    /// for a `len`-byte payload ([`ARRIVED_TOKEN`]). Header and data are
    /// valid only during the call.
    pub arrived: unsafe extern "C" fn(
        engine: *mut c_void,
        peer: u32,
        header: *const u8,
        header_len: usize,
        data: *const u8,
        len: usize,
        token: u64,
        flags: u32,
    ),
    /// An operation that returned [`IN_PROGRESS`] ended: [`OK`] or an
    /// error code.
    pub completed: unsafe extern "C" fn(engine: *mut c_void, cookie: u64, status: c_int),
    /// `peer` failed ([`ERR_PEER_FAILED`], [`ERR_UNREACHABLE`]);
    /// `message` (NUL-terminated) says how. Operations to it also complete
    /// with that error.
    pub failed:
        unsafe extern "C" fn(engine: *mut c_void, peer: u32, status: c_int, message: *const c_char),
}

/// What [`Ops::open`] is told about the job.
#[repr(C)]
#[derive(Debug)]
pub struct OpenArgs {
    /// `size_of::<OpenArgs>()` as the engine knows it.
    pub struct_size: u32,
    /// This process's rank and the job's size.
    pub rank: u32,
    /// Number of processes in the job.
    pub size: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// The engine's callbacks, valid until [`Ops::close`].
    pub callbacks: *const Callbacks,
}

/// The operations table. Entries are `Option`s so that a missing one is a
/// null pointer, which the engine reports; the required ones are those up
/// to and including `close`.
#[repr(C)]
#[derive(Debug)]
pub struct Ops {
    /// `size_of::<Ops>()` as the plugin knows it: the engine reads no entry
    /// beyond it.
    pub struct_size: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// Open the transport for this process: find a device, publish the
    /// address with `callbacks.put`, fill `attr` (as far as its
    /// `struct_size`). On failure return an error code and write a reason
    /// into `err` (`errlen` bytes, NUL-terminated): [`ERR_NO_DEVICE`] when
    /// there is nothing to run on. Connections to peers may be made
    /// lazily, at the first send or arrival.
    pub open: Option<
        unsafe extern "C" fn(
            args: *const OpenArgs,
            ctx: *mut *mut Context,
            attr: *mut Attr,
            err: *mut c_char,
            errlen: usize,
        ) -> c_int,
    >,
    /// Send `header` and the concatenation of `iov` to `peer`. The header
    /// may be reused at return; the payload must stay until completion.
    /// Returns [`OK`] (done: the payload may be reused), [`IN_PROGRESS`]
    /// (completion reports `cookie`), [`ERR_AGAIN`] (nothing was sent), or
    /// an error.
    pub send: Option<
        unsafe extern "C" fn(
            ctx: *mut Context,
            peer: u32,
            header: *const u8,
            header_len: usize,
            iov: *const Iov,
            iov_count: usize,
            cookie: u64,
        ) -> c_int,
    >,
    /// Pull the payload of `token` into `iov` (whose total equals the
    /// payload's length). [`OK`], [`IN_PROGRESS`] (completion reports
    /// `cookie`), [`ERR_AGAIN`], or an error.
    pub fetch: Option<
        unsafe extern "C" fn(
            ctx: *mut Context,
            token: u64,
            iov: *const Iov,
            iov_count: usize,
            cookie: u64,
        ) -> c_int,
    >,
    /// Drop the payload of `token` without receiving it.
    pub discard: Option<unsafe extern "C" fn(ctx: *mut Context, token: u64)>,
    /// Make progress, running callbacks; at most about `budget` events.
    /// Returns the number of events (0: nothing happened) or an error.
    pub progress: Option<unsafe extern "C" fn(ctx: *mut Context, budget: u32) -> c_int>,
    /// Cancel what is outstanding and free everything.
    pub close: Option<unsafe extern "C" fn(ctx: *mut Context)>,
    /// Optional ([`ATTR_WAKE_FD`]): a descriptor that becomes readable when
    /// [`Ops::progress`] has work after [`Ops::arm`] returned [`OK`].
    pub wake_fd: Option<unsafe extern "C" fn(ctx: *mut Context) -> c_int>,
    /// Optional ([`ATTR_WAKE_FD`]): prepare to sleep. [`OK`]: the engine may
    /// `poll` the descriptor; [`ERR_AGAIN`]: events are pending, progress
    /// again first.
    pub arm: Option<unsafe extern "C" fn(ctx: *mut Context) -> c_int>,
}

/// Size of the required part of [`Ops`] (through `close`).
pub const OPS_REQUIRED_SIZE: usize = std::mem::offset_of!(Ops, close)
    + std::mem::size_of::<Option<unsafe extern "C" fn(*mut Context)>>();

// The layout is the ABI: pin it (64-bit targets).
#[cfg(target_pointer_width = "64")]
const _: () = {
    use std::mem::{offset_of, size_of};
    assert!(size_of::<Descriptor>() == 48);
    assert!(offset_of!(Descriptor, name) == 16);
    assert!(offset_of!(Descriptor, ops) == 40);
    assert!(size_of::<Attr>() == 120);
    assert!(offset_of!(Attr, device) == 56);
    assert!(size_of::<Ops>() == 72);
    assert!(offset_of!(Ops, open) == 8);
    assert!(offset_of!(Ops, close) == 48);
    assert!(OPS_REQUIRED_SIZE == 56);
    assert!(size_of::<Callbacks>() == 56);
    assert!(size_of::<OpenArgs>() == 24);
    assert!(size_of::<Iov>() == 16);
};

/// Write `text` into a C error buffer of `len` bytes at `err` (NUL-
/// terminated, cut to fit); nothing when `err` is null.
///
/// # Safety
/// `err` is null or valid for writes of `len` bytes.
pub unsafe fn write_error(err: *mut c_char, len: usize, text: &str) {
    if err.is_null() || len == 0 {
        return;
    }
    // SAFETY: the caller guarantees `len` writable bytes at `err`.
    let out = unsafe { std::slice::from_raw_parts_mut(err, len) };
    copy_cstr(text, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_text_round_trips_and_is_cut_to_fit() {
        let mut a = Attr::default();
        a.set_device("tcp on lo");
        assert_eq!(a.device(), "tcp on lo");
        a.set_device(&"x".repeat(100));
        assert_eq!(a.device().len(), 63);
    }

    #[test]
    fn required_ops_end_at_close() {
        assert_eq!(OPS_REQUIRED_SIZE, std::mem::offset_of!(Ops, wake_fd));
        assert!(OPS_REQUIRED_SIZE < std::mem::size_of::<Ops>());
    }
}

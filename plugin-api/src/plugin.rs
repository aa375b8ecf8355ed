//! The plugin's side of the ABI, for plugins written in Rust (feature
//! `plugin`; the engine does not use it): the engine's callbacks checked
//! once at open and called through safe methods ([`Engine`]), the panic
//! guard every `extern "C"` entry runs its body in ([`guard`]), the
//! common `open` glue ([`open`]) and the small pointer checks the entries
//! share ([`bytes`], [`pieces`], [`write_attr`]).
//!
//! What differs between transports stays in the plugins: how a context
//! handle is made and checked, and everything past the engine's pointers.

use std::ffi::{CString, c_char, c_int, c_void};
use std::mem::{offset_of, size_of};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::{
    ARRIVED_DATA, ARRIVED_TOKEN, Attr, Callbacks, Context, ERR_INVALID, ERR_TRANSPORT, Iov, OK,
    OpenArgs, write_error,
};

type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const u8, usize) -> c_int;
type GetFn = unsafe extern "C" fn(*mut c_void, *const c_char, *mut u8, usize, *mut usize) -> c_int;
type ArrivedFn =
    unsafe extern "C" fn(*mut c_void, u32, *const u8, usize, *const u8, usize, u64, u32);
type CompletedFn = unsafe extern "C" fn(*mut c_void, u64, c_int);
type FailedFn = unsafe extern "C" fn(*mut c_void, u32, c_int, *const c_char);

/// [`Callbacks`] with nullable functions: [`Callbacks`] declares them as
/// non-nullable function pointers, and reading a NULL a C engine passed
/// as a Rust `fn` would be undefined behaviour.
#[repr(C)]
struct RawCallbacks {
    struct_size: u32,
    reserved: u32,
    engine: *mut c_void,
    put: Option<PutFn>,
    get: Option<GetFn>,
    arrived: Option<ArrivedFn>,
    completed: Option<CompletedFn>,
    failed: Option<FailedFn>,
}

const _: () = {
    assert!(size_of::<RawCallbacks>() == size_of::<Callbacks>());
    assert!(offset_of!(RawCallbacks, engine) == offset_of!(Callbacks, engine));
    assert!(offset_of!(RawCallbacks, put) == offset_of!(Callbacks, put));
    assert!(offset_of!(RawCallbacks, get) == offset_of!(Callbacks, get));
    assert!(offset_of!(RawCallbacks, arrived) == offset_of!(Callbacks, arrived));
    assert!(offset_of!(RawCallbacks, completed) == offset_of!(Callbacks, completed));
    assert!(offset_of!(RawCallbacks, failed) == offset_of!(Callbacks, failed));
};

/// The engine's callbacks of one context, all present, copied out of its
/// table.
///
/// Invariant (from the constructors' contracts): the functions and the
/// `engine` pointer stay valid until the context is closed (the ABI's
/// promise for [`OpenArgs::callbacks`]); a plugin drops this value at
/// close at the latest.
#[derive(Clone, Copy, Debug)]
pub struct Engine {
    engine: *mut c_void,
    put: PutFn,
    get: GetFn,
    arrived: ArrivedFn,
    completed: CompletedFn,
    failed: FailedFn,
}

/// What an arrival carries.
#[derive(Clone, Copy, Debug)]
pub enum Payload<'a> {
    /// The whole payload ([`ARRIVED_DATA`]).
    Data(&'a [u8]),
    /// A token for a payload of `len` bytes waiting at the sender
    /// ([`ARRIVED_TOKEN`]).
    Token {
        /// The plugin's token, for [`Ops::fetch`](crate::Ops::fetch) or
        /// [`Ops::discard`](crate::Ops::discard).
        token: u64,
        /// The payload's length.
        len: usize,
    },
}

/// What [`Ops::open`](crate::Ops::open) was told, checked.
#[derive(Clone, Copy, Debug)]
pub struct Opened {
    /// This process's rank.
    pub rank: u32,
    /// Number of processes in the job.
    pub size: u32,
    /// The engine's callbacks.
    pub engine: Engine,
}

impl Engine {
    /// Check `args` and the callbacks table it names: refuses null
    /// pointers, tables shorter than this ABI's and null functions, with a
    /// reason for the engine.
    ///
    /// # Safety
    /// `args` is null or points to readable `OpenArgs` of at least its
    /// `struct_size` bytes whose `callbacks` is null or as [`Engine::new`]
    /// requires (the ABI's promise to `open`).
    pub unsafe fn from_args(args: *const OpenArgs) -> Result<Opened, String> {
        if args.is_null() {
            return Err("open: null arguments".into());
        }
        // SAFETY: non-null and readable per the caller; `struct_size` is
        // the first field of every version.
        let size = unsafe { (*args).struct_size } as usize;
        if size < size_of::<OpenArgs>() {
            return Err(format!(
                "open: OpenArgs of {size} bytes, ABI 1.0 needs {}",
                size_of::<OpenArgs>()
            ));
        }
        // SAFETY: readable for a whole `OpenArgs` (checked just above).
        let a = unsafe { &*args };
        // SAFETY: the caller's promise for `callbacks`.
        let engine = unsafe { Self::new(a.callbacks) }.map_err(|e| format!("open: {e}"))?;
        Ok(Opened {
            rank: a.rank,
            size: a.size,
            engine,
        })
    }

    /// Check and copy the table at `cb`.
    ///
    /// # Safety
    /// `cb` is null or points to a callbacks table of at least
    /// `struct_size` readable bytes, whose functions (when non-null) and
    /// `engine` pointer stay valid until the context closes (the ABI's
    /// promise for [`OpenArgs::callbacks`]).
    pub unsafe fn new(cb: *const Callbacks) -> Result<Self, String> {
        if cb.is_null() {
            return Err("no callbacks table".into());
        }
        // SAFETY: non-null and readable per the caller; the first field is
        // in every version of the table.
        let size = unsafe { (*cb).struct_size } as usize;
        if size < size_of::<Callbacks>() {
            return Err(format!(
                "callbacks table of {size} bytes, ABI 1.0 needs {}",
                size_of::<Callbacks>()
            ));
        }
        // SAFETY: at least `size_of::<Callbacks>()` readable bytes (checked
        // above), and `RawCallbacks` has that layout with every function
        // pointer nullable, so any bit pattern the engine wrote is valid.
        let raw = unsafe { &*cb.cast::<RawCallbacks>() };
        match (raw.put, raw.get, raw.arrived, raw.completed, raw.failed) {
            (Some(put), Some(get), Some(arrived), Some(completed), Some(failed)) => Ok(Self {
                engine: raw.engine,
                put,
                get,
                arrived,
                completed,
                failed,
            }),
            _ => Err("the callbacks table has a null function".into()),
        }
    }

    /// Publish `value` under `key`.
    pub fn put(&self, key: &str, value: &[u8]) -> Result<(), c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        // SAFETY: the engine's function with its own pointer (valid until
        // close, type invariant); `key` is NUL-terminated and `value`
        // readable for its length during the call.
        let rc = unsafe { (self.put)(self.engine, key.as_ptr(), value.as_ptr(), value.len()) };
        if rc == OK { Ok(()) } else { Err(rc) }
    }

    /// Read the value another process published under `key`; the engine's
    /// code when it has none, [`ERR_TRANSPORT`] when it answers beside the
    /// protocol (a success longer than the buffer, or a length that keeps
    /// growing).
    pub fn get(&self, key: &str) -> Result<Vec<u8>, c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        let mut buf = vec![0u8; 512];
        for _ in 0..4 {
            let mut len = 0usize;
            // SAFETY: as in `put`; `buf` is writable for its length and
            // `len` is a valid place for the full length.
            let rc = unsafe {
                (self.get)(
                    self.engine,
                    key.as_ptr(),
                    buf.as_mut_ptr(),
                    buf.len(),
                    &mut len,
                )
            };
            match rc {
                OK if len <= buf.len() => {
                    buf.truncate(len);
                    return Ok(buf);
                }
                // Too small: the engine said how long the value is.
                ERR_INVALID if len > buf.len() => buf.resize(len, 0),
                OK => return Err(ERR_TRANSPORT),
                rc => return Err(rc),
            }
        }
        Err(ERR_TRANSPORT)
    }

    /// Report an arrival from `peer`.
    pub fn arrived(&self, peer: u32, header: &[u8], payload: Payload<'_>) {
        let (data, len, token, flags) = match payload {
            Payload::Data(d) => (d.as_ptr(), d.len(), 0, ARRIVED_DATA),
            Payload::Token { token, len } => (std::ptr::null(), len, token, ARRIVED_TOKEN),
        };
        // SAFETY: as in `put`; header and data are readable for their
        // lengths during the call, which is all the ABI asks.
        unsafe {
            (self.arrived)(
                self.engine,
                peer,
                header.as_ptr(),
                header.len(),
                data,
                len,
                token,
                flags,
            )
        };
    }

    /// Report an arrival whose payload is `data`.
    pub fn arrived_data(&self, peer: u32, header: &[u8], data: &[u8]) {
        self.arrived(peer, header, Payload::Data(data));
    }

    /// Report an arrival whose `len`-byte payload waits behind `token`.
    pub fn arrived_token(&self, peer: u32, header: &[u8], len: u64, token: u64) {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        self.arrived(peer, header, Payload::Token { token, len });
    }

    /// Report the end of an operation that returned
    /// [`IN_PROGRESS`](crate::IN_PROGRESS).
    pub fn completed(&self, cookie: u64, status: c_int) {
        // SAFETY: as in `put`.
        unsafe { (self.completed)(self.engine, cookie, status) };
    }

    /// Report that `peer` failed (a NUL in `message` becomes a space).
    pub fn failed(&self, peer: u32, status: c_int, message: &str) {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: as in `put`; `message` is NUL-terminated.
        unsafe { (self.failed)(self.engine, peer, status, message.as_ptr()) };
    }
}

/// Run an entry's body; a panic becomes [`ERR_TRANSPORT`], never an
/// unwind into C.
pub fn guard(body: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or(ERR_TRANSPORT)
}

/// [`guard`] for the entries that return nothing (`discard`, `close`): a
/// panic is swallowed.
pub fn guard_void(body: impl FnOnce()) {
    let _ = catch_unwind(AssertUnwindSafe(body));
}

/// The common body of [`Ops::open`](crate::Ops::open): checks the
/// pointers and the engine's tables ([`Engine::from_args`]), runs `make`
/// (the transport's own open) under a panic guard, then writes the
/// limits `make` returned into `attr` ([`write_attr`]) and the boxed
/// context into `ctx`. On failure `*ctx` stays null and the reason goes
/// into `err`; a panic is [`ERR_TRANSPORT`] with "the `name` plugin
/// panicked in open".
///
/// # Safety
/// The arguments are those the engine passed to `open` (the ABI's
/// contract: `args` as [`Engine::from_args`] requires, `ctx` a writable
/// handle, `attr` the engine's `Attr` of at least its `struct_size`
/// bytes, `err` null or writable for `errlen` bytes); null pointers are
/// refused.
pub unsafe fn open<T>(
    args: *const OpenArgs,
    ctx: *mut *mut Context,
    attr: *mut Attr,
    err: *mut c_char,
    errlen: usize,
    name: &str,
    make: impl FnOnce(Opened) -> Result<(Box<T>, Attr), (c_int, String)>,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if ctx.is_null() || attr.is_null() {
            return Err((ERR_INVALID, "open: a null argument".to_string()));
        }
        // SAFETY: non-null, and writable per the ABI.
        unsafe { *ctx = std::ptr::null_mut() };
        // SAFETY: the engine's arguments (the caller's promise).
        let opened = unsafe { Engine::from_args(args) }.map_err(|m| (ERR_INVALID, m))?;
        let (state, ours) = make(opened)?;
        // SAFETY: the engine's non-null `Attr` (checked above, ABI).
        unsafe { write_attr(attr, &ours) };
        // SAFETY: non-null and writable (ABI); the engine owns the context
        // until `close`, which turns it back into the box.
        unsafe { *ctx = Box::into_raw(state).cast() };
        Ok(())
    }));
    let (rc, message) = match result {
        Ok(Ok(())) => return OK,
        Ok(Err(e)) => e,
        Err(_) => (ERR_TRANSPORT, format!("the {name} plugin panicked in open")),
    };
    // SAFETY: `err` is null or holds `errlen` writable bytes (caller).
    unsafe { write_error(err, errlen, &message) };
    rc
}

/// Copy `ours` into the engine's `out` as far as its `struct_size` says,
/// leaving `struct_size` itself alone; nothing when `out` is null.
///
/// # Safety
/// `out` is null or points to a writable `Attr` of at least its
/// `struct_size` bytes.
pub unsafe fn write_attr(out: *mut Attr, ours: &Attr) {
    if out.is_null() {
        return;
    }
    // SAFETY: readable per the caller; `struct_size` is the first field of
    // every version.
    let theirs = unsafe { (*out).struct_size } as usize;
    let n = theirs.min(size_of::<Attr>());
    let skip = size_of::<u32>();
    if n <= skip {
        return;
    }
    // SAFETY: `ours` is a whole `Attr`; the engine's holds at least `n`
    // writable bytes (caller); the two are distinct.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (ours as *const Attr).cast::<u8>().add(skip),
            out.cast::<u8>().add(skip),
            n - skip,
        )
    };
}

/// `len` bytes at `p`; `None` for a null pointer with a length.
///
/// # Safety
/// `p` is null or readable for `len` bytes for `'a`.
pub unsafe fn bytes<'a>(p: *const u8, len: usize) -> Option<&'a [u8]> {
    match (p.is_null(), len) {
        (_, 0) => Some(&[]),
        (true, _) => None,
        // SAFETY: non-null and readable for `len` bytes per the caller.
        (false, _) => Some(unsafe { std::slice::from_raw_parts(p, len) }),
    }
}

/// The list of `count` pieces at `iov`; `None` for a null list with a
/// count, or a null piece with a length.
///
/// # Safety
/// `iov` is null or readable for `count` entries for `'a`.
pub unsafe fn pieces<'a>(iov: *const Iov, count: usize) -> Option<&'a [Iov]> {
    let list = match (iov.is_null(), count) {
        (_, 0) => &[][..],
        (true, _) => return None,
        // SAFETY: non-null and readable for `count` entries per the caller.
        (false, _) => unsafe { std::slice::from_raw_parts(iov, count) },
    };
    list.iter()
        .all(|p| p.len == 0 || !p.base.is_null())
        .then_some(list)
}

/// The bindings a plugin's build script generated into
/// `$OUT_DIR/<file>` (bindgen's raw output: C names, no docs, unsafe
/// functions without `# Safety`), as a module `generated` with the lints
/// that do not apply to generated code allowed, its items re-exported
/// where the macro stands. Used in each plugin's `src/sys.rs`.
#[macro_export]
macro_rules! bindings {
    ($file:literal) => {
        #[allow(
            non_camel_case_types,
            non_upper_case_globals,
            non_snake_case,
            dead_code,
            missing_docs,
            missing_debug_implementations,
            unsafe_op_in_unsafe_fn,
            clippy::all,
            clippy::undocumented_unsafe_blocks
        )]
        mod generated {
            include!(concat!(env!("OUT_DIR"), "/", $file));
        }
        pub use generated::*;
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_is_written_only_as_far_as_the_engine_knows_it() {
        let ours = Attr {
            flags: 3,
            max_header: 64,
            eager_max: 8192,
            ..Attr::default()
        };
        let mut theirs = Attr {
            struct_size: 16, // an engine that knows struct_size, flags, max_header
            max_header: 0,
            eager_max: 7,
            ..Attr::default()
        };
        // SAFETY: a whole Attr is writable.
        unsafe { write_attr(&mut theirs, &ours) };
        assert_eq!(theirs.struct_size, 16);
        assert_eq!(theirs.flags, 3);
        assert_eq!(theirs.max_header, 64);
        assert_eq!(theirs.eager_max, 7, "beyond struct_size: untouched");
    }

    #[test]
    fn short_and_null_tables_are_refused() {
        // SAFETY: null is refused before any read.
        assert!(unsafe { Engine::from_args(std::ptr::null()) }.is_err());
        let args = OpenArgs {
            struct_size: 8,
            rank: 0,
            size: 1,
            reserved: 0,
            callbacks: std::ptr::null(),
        };
        // SAFETY: a whole, readable OpenArgs.
        let e = unsafe { Engine::from_args(&args) }.unwrap_err();
        assert!(e.contains("OpenArgs of 8 bytes"), "{e}");
        let args = OpenArgs {
            struct_size: size_of::<OpenArgs>() as u32,
            ..args
        };
        // SAFETY: as above; a null table is refused before any read.
        let e = unsafe { Engine::from_args(&args) }.unwrap_err();
        assert!(e.contains("no callbacks"), "{e}");
        let mut raw = [0u64; 7];
        raw[0] = size_of::<Callbacks>() as u64;
        let args = OpenArgs {
            callbacks: raw.as_ptr().cast(),
            ..args
        };
        // SAFETY: a readable, aligned table of the full size whose
        // functions are all null: read as `RawCallbacks`, then refused.
        let e = unsafe { Engine::from_args(&args) }.unwrap_err();
        assert!(e.contains("null function"), "{e}");
    }

    #[test]
    fn guard_turns_a_panic_into_a_code() {
        assert_eq!(guard(|| 5), 5);
        assert_eq!(guard(|| panic!("boom")), ERR_TRANSPORT);
        guard_void(|| panic!("boom"));
    }

    #[test]
    fn null_pieces_with_a_length_are_refused() {
        // SAFETY: null lists and pointers are refused before any read.
        unsafe {
            assert!(pieces(std::ptr::null(), 0).is_some());
            assert!(pieces(std::ptr::null(), 1).is_none());
            assert!(bytes(std::ptr::null(), 0).is_some());
            assert!(bytes(std::ptr::null(), 1).is_none());
        }
        let bad = Iov {
            base: std::ptr::null_mut(),
            len: 3,
        };
        // SAFETY: one readable entry.
        assert!(unsafe { pieces(&bad, 1) }.is_none());
    }
}

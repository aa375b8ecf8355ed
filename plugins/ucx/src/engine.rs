//! The engine's callbacks, checked once at open and called through safe
//! methods.
//!
//! [`plugin_api::Callbacks`] declares its functions as non-nullable
//! function pointers; a C engine could still pass NULL, and reading that
//! as a Rust `fn` would be undefined behaviour. [`Engine::new`] reads the
//! table through [`RawCallbacks`], the same layout with `Option`s, and
//! refuses a table with a missing function.

use std::ffi::{CString, c_char, c_int, c_void};
use std::mem::{offset_of, size_of};

use plugin_api::{Callbacks, ERR_INVALID, OK};

type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const u8, usize) -> c_int;
type GetFn = unsafe extern "C" fn(*mut c_void, *const c_char, *mut u8, usize, *mut usize) -> c_int;
type ArrivedFn =
    unsafe extern "C" fn(*mut c_void, u32, *const u8, usize, *const u8, usize, u64, u32);
type CompletedFn = unsafe extern "C" fn(*mut c_void, u64, c_int);
type FailedFn = unsafe extern "C" fn(*mut c_void, u32, c_int, *const c_char);

/// [`Callbacks`] with nullable functions.
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
    assert!(offset_of!(RawCallbacks, failed) == offset_of!(Callbacks, failed));
};

/// The engine's callbacks, all present.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Engine {
    engine: *mut c_void,
    put: PutFn,
    get: GetFn,
    arrived: ArrivedFn,
    completed: CompletedFn,
    failed: FailedFn,
}

/// What an arrival carries.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Payload<'a> {
    /// The whole payload.
    Data(&'a [u8]),
    /// A token for a payload of `len` bytes waiting at the sender.
    Token { token: u64, len: usize },
}

impl Engine {
    /// Check and copy the table at `cb`.
    ///
    /// # Safety
    /// `cb` is null or points to a callbacks table of at least
    /// `struct_size` readable bytes, whose functions (when non-null) and
    /// `engine` pointer stay valid until the context closes (the ABI's
    /// promise for `OpenArgs::callbacks`).
    pub(crate) unsafe fn new(cb: *const Callbacks) -> Result<Self, String> {
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
    pub(crate) fn put(&self, key: &str, value: &[u8]) -> Result<(), c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        // SAFETY: the engine's function with its own pointer (valid until
        // close, `new`'s contract); `key` is NUL-terminated and `value`
        // readable for its length during the call.
        let rc = unsafe { (self.put)(self.engine, key.as_ptr(), value.as_ptr(), value.len()) };
        if rc == OK { Ok(()) } else { Err(rc) }
    }

    /// Read the value published under `key`.
    pub(crate) fn get(&self, key: &str) -> Result<Vec<u8>, c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        let mut buf = vec![0u8; 512];
        for _ in 0..2 {
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
                OK => return Err(ERR_INVALID),
                rc => return Err(rc),
            }
        }
        Err(ERR_INVALID)
    }

    /// Report an arrival from `peer`.
    pub(crate) fn arrived(&self, peer: u32, header: &[u8], payload: Payload<'_>) {
        let (data, len, token, flags) = match payload {
            Payload::Data(d) => (d.as_ptr(), d.len(), 0, plugin_api::ARRIVED_DATA),
            Payload::Token { token, len } => {
                (std::ptr::null(), len, token, plugin_api::ARRIVED_TOKEN)
            }
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

    /// Report the end of an operation that returned `IN_PROGRESS`.
    pub(crate) fn completed(&self, cookie: u64, status: c_int) {
        // SAFETY: as in `put`.
        unsafe { (self.completed)(self.engine, cookie, status) };
    }

    /// Report that `peer` failed.
    pub(crate) fn failed(&self, peer: u32, status: c_int, message: &CString) {
        // SAFETY: as in `put`; `message` is NUL-terminated.
        unsafe { (self.failed)(self.engine, peer, status, message.as_ptr()) };
    }
}

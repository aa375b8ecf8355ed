//! The engine's callbacks, as the transport calls them: the bootstrap
//! (`put`, `get`) and the event reports. The only place that calls
//! through the `Callbacks` table.

use std::ffi::{CString, c_char, c_int, c_void};

use plugin_api::{ARRIVED_DATA, ARRIVED_TOKEN, Callbacks, ERR_INVALID, ERR_TRANSPORT, OK};

type PutFn = unsafe extern "C" fn(*mut c_void, *const c_char, *const u8, usize) -> c_int;
type GetFn = unsafe extern "C" fn(*mut c_void, *const c_char, *mut u8, usize, *mut usize) -> c_int;
type ArrivedFn =
    unsafe extern "C" fn(*mut c_void, u32, *const u8, usize, *const u8, usize, u64, u32);
type CompletedFn = unsafe extern "C" fn(*mut c_void, u64, c_int);
type FailedFn = unsafe extern "C" fn(*mut c_void, u32, c_int, *const c_char);

/// The callbacks of one context, copied out of the engine's table.
#[derive(Debug)]
pub(crate) struct Engine {
    engine: *mut c_void,
    put: PutFn,
    get: GetFn,
    arrived: ArrivedFn,
    completed: CompletedFn,
    failed: FailedFn,
}

impl Engine {
    /// # Safety
    /// `cb` is the engine's full table (its `struct_size` checked by the
    /// caller); its functions and `engine` pointer stay valid until the
    /// context is closed, which drops this value.
    pub(crate) unsafe fn new(cb: &Callbacks) -> Self {
        Self {
            engine: cb.engine,
            put: cb.put,
            get: cb.get,
            arrived: cb.arrived,
            completed: cb.completed,
            failed: cb.failed,
        }
    }

    /// Publish `value` under `key`.
    pub(crate) fn put(&self, key: &str, value: &[u8]) -> Result<(), c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        // SAFETY: the engine's put (valid until close, per `new`); a C
        // string and `value.len()` readable bytes.
        let rc = unsafe { (self.put)(self.engine, key.as_ptr(), value.as_ptr(), value.len()) };
        if rc == OK { Ok(()) } else { Err(rc) }
    }

    /// Read what another process published under `key`.
    pub(crate) fn get(&self, key: &str) -> Result<Vec<u8>, c_int> {
        let key = CString::new(key).map_err(|_| ERR_INVALID)?;
        let mut buf = vec![0u8; 128];
        for _ in 0..4 {
            let mut len = 0usize;
            // SAFETY: the engine's get (valid until close); a C string,
            // `buf.len()` writable bytes and a writable length.
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
                // Too small: the engine told us the length.
                ERR_INVALID if len > buf.len() => buf.resize(len, 0),
                OK => return Err(ERR_TRANSPORT),
                rc => return Err(rc),
            }
        }
        Err(ERR_TRANSPORT)
    }

    /// A message whose payload is `data`.
    pub(crate) fn arrived_data(&self, peer: u32, header: &[u8], data: &[u8]) {
        // SAFETY: the engine's arrived (valid until close); header and data
        // are valid for the call.
        unsafe {
            (self.arrived)(
                self.engine,
                peer,
                header.as_ptr(),
                header.len(),
                data.as_ptr(),
                data.len(),
                0,
                ARRIVED_DATA,
            )
        }
    }

    /// A message whose `len`-byte payload waits behind `token`.
    pub(crate) fn arrived_token(&self, peer: u32, header: &[u8], len: u64, token: u64) {
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        // SAFETY: the engine's arrived (valid until close); the header is
        // valid for the call; no data pointer.
        unsafe {
            (self.arrived)(
                self.engine,
                peer,
                header.as_ptr(),
                header.len(),
                std::ptr::null(),
                len,
                token,
                ARRIVED_TOKEN,
            )
        }
    }

    pub(crate) fn completed(&self, cookie: u64, status: c_int) {
        // SAFETY: the engine's completed (valid until close).
        unsafe { (self.completed)(self.engine, cookie, status) }
    }

    pub(crate) fn failed(&self, peer: u32, status: c_int, message: &str) {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: the engine's failed (valid until close); a C string valid
        // for the call.
        unsafe { (self.failed)(self.engine, peer, status, message.as_ptr()) }
    }
}

//! The engine's side, as the plugin sees it: a safe face over the
//! [`plugin_api::Callbacks`] table the engine passed to `open`.

use std::ffi::{CString, c_int, c_void};

use plugin_api::{ARRIVED_DATA, ARRIVED_TOKEN, Callbacks, OK};

/// The engine's callbacks, copied out of its table.
///
/// Invariant: `engine` and the functions stay valid until the context is
/// closed (the ABI's promise for `OpenArgs::callbacks`), and the engine
/// never calls into the plugin from inside them.
#[derive(Debug)]
pub struct Engine {
    engine: *mut c_void,
    put: unsafe extern "C" fn(*mut c_void, *const std::ffi::c_char, *const u8, usize) -> c_int,
    get: unsafe extern "C" fn(
        *mut c_void,
        *const std::ffi::c_char,
        *mut u8,
        usize,
        *mut usize,
    ) -> c_int,
    arrived: unsafe extern "C" fn(*mut c_void, u32, *const u8, usize, *const u8, usize, u64, u32),
    completed: unsafe extern "C" fn(*mut c_void, u64, c_int),
    failed: unsafe extern "C" fn(*mut c_void, u32, c_int, *const std::ffi::c_char),
}

impl Engine {
    /// Copy the engine's table.
    ///
    /// # Safety
    /// `cb` is the engine's table (at least `size_of::<Callbacks>()`
    /// bytes, checked by the caller), valid with its `engine` pointer until
    /// the context is closed.
    pub unsafe fn new(cb: &Callbacks) -> Self {
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
    pub fn put(&self, key: &str, value: &[u8]) -> Result<(), c_int> {
        let key = CString::new(key).map_err(|_| plugin_api::ERR_INVALID)?;
        // SAFETY: the engine's function and pointer are valid (type
        // invariant); key and value are valid for the call.
        let rc = unsafe { (self.put)(self.engine, key.as_ptr(), value.as_ptr(), value.len()) };
        if rc == OK { Ok(()) } else { Err(rc) }
    }

    /// Read what another process published under `key`.
    pub fn get(&self, key: &str) -> Result<Vec<u8>, c_int> {
        let key = CString::new(key).map_err(|_| plugin_api::ERR_INVALID)?;
        let mut buf = vec![0u8; 256];
        loop {
            let mut len = 0usize;
            // SAFETY: type invariant; `buf` holds `buf.len()` writable
            // bytes, `len` is writable.
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
                plugin_api::ERR_INVALID if len > buf.len() => buf.resize(len, 0),
                OK => return Err(plugin_api::ERR_TRANSPORT),
                rc => return Err(rc),
            }
        }
    }

    /// A payload that arrived whole.
    pub fn arrived_data(&self, peer: u32, header: &[u8], data: &[u8]) {
        // SAFETY: type invariant; header and data are valid for the call.
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

    /// A payload of `len` bytes waiting behind `token`.
    pub fn arrived_token(&self, peer: u32, header: &[u8], len: u64, token: u64) {
        // SAFETY: type invariant; the header is valid for the call.
        unsafe {
            (self.arrived)(
                self.engine,
                peer,
                header.as_ptr(),
                header.len(),
                std::ptr::null(),
                len as usize,
                token,
                ARRIVED_TOKEN,
            )
        }
    }

    /// An operation that returned `IN_PROGRESS` ended.
    pub fn completed(&self, cookie: u64, status: c_int) {
        // SAFETY: type invariant.
        unsafe { (self.completed)(self.engine, cookie, status) }
    }

    /// `peer` failed.
    pub fn failed(&self, peer: u32, status: c_int, message: &str) {
        let m = CString::new(message.replace('\0', " ")).unwrap_or_default();
        // SAFETY: type invariant; the message is a C string for the call.
        unsafe { (self.failed)(self.engine, peer, status, m.as_ptr()) }
    }
}

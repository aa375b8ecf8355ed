//! The safe face of a network plugin: the engine's only user of
//! `plugin-api`.
//!
//! [`discover`] finds plugin files (`libtessel_plugin_NAME.so`) along
//! `TESSEL_PLUGIN_PATH` and the default places, loads each with
//! `libloading`, and checks its descriptor: the ABI major version equal to
//! ours, the descriptor and operations table long enough, every required
//! entry present. A plugin that fails a check is kept with the reason, for
//! `tessel-info` and for the message of a job that needs one. [`open`]
//! picks the plugin `TESSEL_NET` names (or, for `auto`, the one of highest
//! preference that opens) and returns a [`Transport`]: an open context
//! whose calls return typed results and whose callbacks become
//! [`NetEvent`]s.
//!
//! Address exchange goes through the engine's bootstrap: the plugin's
//! `put`/`get` callbacks reach the endpoint's [`Bootstrap`]. Values longer
//! than a PMI-1 value may be (Hydra allows 512 raw bytes) are split over
//! several keys and joined again on `get`.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use plugin_api as api;

use crate::bootstrap::Bootstrap;
use crate::config::{Config, NetMode};

/// What a plugin reported about its transport when it opened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest engine header a send takes.
    pub max_header: usize,
    /// Payloads up to this size travel with the header in one packet.
    pub inline_max: usize,
    /// Payloads up to this size arrive as data; larger ones are fetched.
    pub eager_max: usize,
    /// The largest payload of one send (0: no limit).
    pub max_message: usize,
    /// Estimated one-way latency of a small message, in nanoseconds.
    pub latency_ns: u64,
    /// Estimated bandwidth of large messages, in MB/s.
    pub bandwidth_mbs: u64,
    /// Whether the plugin offers a wake-up descriptor.
    pub wake_fd: bool,
    /// Whether large payloads are read one-sided (RMA).
    pub rma_read: bool,
    /// The device or provider in use.
    pub device: String,
}

impl Limits {
    fn from_attr(a: &api::Attr) -> Self {
        Self {
            max_header: a.max_header as usize,
            inline_max: a.inline_max as usize,
            eager_max: a.eager_max as usize,
            max_message: a.max_message as usize,
            latency_ns: a.latency_ns,
            bandwidth_mbs: a.bandwidth_mbs,
            wake_fd: a.flags & api::ATTR_WAKE_FD != 0,
            rma_read: a.flags & api::ATTR_RMA_READ != 0,
            device: a.device(),
        }
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "device {}; inline <= {} B, eager <= {} B, max message {}; latency ~{:.1} us, \
             bandwidth ~{} MB/s; {}{}",
            self.device,
            self.inline_max,
            self.eager_max,
            if self.max_message == 0 {
                "unlimited".to_string()
            } else {
                format!("{} B", self.max_message)
            },
            self.latency_ns as f64 / 1000.0,
            self.bandwidth_mbs,
            if self.rma_read {
                "RMA reads"
            } else {
                "rendezvous pulls"
            },
            if self.wake_fd { ", wake-up fd" } else { "" },
        )
    }
}

/// A plugin file that loaded and passed the checks.
#[derive(Clone, Debug)]
pub struct Plugin {
    /// Its name (what `TESSEL_NET` selects).
    pub name: String,
    /// Its version text.
    pub version: String,
    /// The ABI version it was built for.
    pub abi: (u32, u32),
    /// Its rank under `TESSEL_NET=auto` (higher first).
    pub preference: u32,
    /// Where it was loaded from.
    pub path: PathBuf,
    ops: &'static api::Ops,
    /// Only the `struct_size` first bytes of `ops` may be read.
    ops_size: usize,
    // Declared last: unloaded after everything that points into it.
    _lib: Arc<libloading::Library>,
}

/// A plugin file that did not load or failed a check, and why.
#[derive(Clone, Debug)]
pub struct Refused {
    /// The file.
    pub path: PathBuf,
    /// Why it was refused.
    pub reason: String,
}

/// What [`discover`] found.
#[derive(Debug, Default)]
pub struct Found {
    /// Plugins that passed the checks, one per name (the first found wins).
    pub plugins: Vec<Plugin>,
    /// Files that were refused.
    pub refused: Vec<Refused>,
    /// The directories searched, in order.
    pub searched: Vec<PathBuf>,
}

/// The directories searched for plugins: `TESSEL_PLUGIN_PATH` first, then
/// the directory of the object holding this engine (`libmpi.so`) and its
/// `tessel/` subdirectory, then the program's directory, its parent, and
/// the parent's `lib/tessel` (an installation's `bin/` beside its plugins).
pub fn search_path(cfg: &Config) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = cfg.plugin_path.clone();
    if let Some(own) = crate::sys::object_path_of(search_path as *const c_void)
        && let Some(dir) = own.parent()
    {
        dirs.push(dir.to_path_buf());
        dirs.push(dir.join("tessel"));
    }
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        dirs.push(dir.to_path_buf());
        if let Some(up) = dir.parent() {
            dirs.push(up.to_path_buf());
            // An installation's bin/ next to its lib/tessel.
            dirs.push(up.join("lib/tessel"));
        }
    }
    let mut seen = Vec::new();
    dirs.retain(|d| {
        let key = d.canonicalize().unwrap_or_else(|_| d.clone());
        let new = !seen.contains(&key);
        seen.push(key);
        new
    });
    dirs
}

/// Find, load and check every plugin on the search path.
pub fn discover(cfg: &Config) -> Found {
    let mut found = Found {
        searched: search_path(cfg),
        ..Found::default()
    };
    for dir in found.searched.clone() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| {
                p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                    n.starts_with(api::FILE_PREFIX) && n.ends_with(api::FILE_SUFFIX)
                })
            })
            .collect();
        files.sort();
        for path in files {
            match load(&path) {
                Ok(p) => {
                    if !found.plugins.iter().any(|q| q.name == p.name) {
                        found.plugins.push(p);
                    }
                }
                Err(reason) => found.refused.push(Refused { path, reason }),
            }
        }
    }
    found
        .plugins
        .sort_by_key(|p| std::cmp::Reverse(p.preference));
    found
}

/// The required entries of the operations table, by name.
fn missing_entry(ops: &api::Ops) -> Option<&'static str> {
    [
        ("open", ops.open.is_none()),
        ("send", ops.send.is_none()),
        ("fetch", ops.fetch.is_none()),
        ("discard", ops.discard.is_none()),
        ("progress", ops.progress.is_none()),
        ("close", ops.close.is_none()),
    ]
    .into_iter()
    .find_map(|(name, missing)| missing.then_some(name))
}

/// # Safety
/// `p` is null or a NUL-terminated string that lives as long as the plugin.
unsafe fn text(p: *const c_char) -> Option<String> {
    // SAFETY: per the caller, a live C string when non-null.
    (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// Load one plugin file and check its descriptor.
pub fn load(path: &Path) -> Result<Plugin, String> {
    // SAFETY: loading runs the library's initialisers; plugin files are
    // trusted code the user installed (as any shared library they link).
    let lib = unsafe { libloading::Library::new(path) }.map_err(|e| format!("cannot load: {e}"))?;
    // SAFETY: the symbol's type is the ABI's descriptor function.
    let get: libloading::Symbol<'_, api::DescriptorFn> = unsafe { lib.get(api::DESCRIPTOR_SYMBOL) }
        .map_err(|_| {
            "not a Tessel plugin: it does not export tessel_plugin_descriptor".to_string()
        })?;
    // SAFETY: the plugin's exported function, called as the ABI says.
    let d = unsafe { get() };
    if d.is_null() {
        return Err("its descriptor function returned null".into());
    }
    // SAFETY: non-null; the ABI says the descriptor is static in the
    // library, which we keep loaded as long as the `Plugin` lives. Only
    // the leading fields every ABI version has are read before the checks.
    let (major, minor, size) = unsafe { ((*d).abi_major, (*d).abi_minor, (*d).struct_size) };
    if major != api::ABI_MAJOR {
        return Err(format!(
            "built for plugin ABI {major}.{minor}, this engine speaks {}.{}: rebuild the plugin \
             against this Tessel",
            api::ABI_MAJOR,
            api::ABI_MINOR
        ));
    }
    if (size as usize) < std::mem::size_of::<api::Descriptor>() {
        return Err(format!(
            "descriptor of {size} bytes, ABI {major}.{minor} needs {}",
            std::mem::size_of::<api::Descriptor>()
        ));
    }
    // SAFETY: as above, and now known to be a full descriptor.
    let d: &'static api::Descriptor = unsafe { &*d };
    // SAFETY: static strings of the descriptor (ABI).
    let (name, version) = unsafe { (text(d.name), text(d.version)) };
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or("descriptor without a name")?;
    if d.ops.is_null() {
        return Err(format!("plugin {name}: no operations table"));
    }
    // SAFETY: non-null static table (ABI); its first field says how much
    // of it exists, and only that much is read below.
    let ops_size = unsafe { (*d.ops).struct_size } as usize;
    if ops_size < api::OPS_REQUIRED_SIZE {
        return Err(format!(
            "plugin {name}: operations table of {ops_size} bytes; the required entries need {}",
            api::OPS_REQUIRED_SIZE
        ));
    }
    // SAFETY: at least the required part exists; optional entries past
    // `ops_size` are never read (see `Transport::optional`).
    let ops: &'static api::Ops = unsafe { &*d.ops };
    if let Some(entry) = missing_entry(ops) {
        return Err(format!("plugin {name}: missing required entry `{entry}`"));
    }
    Ok(Plugin {
        name,
        version: version.unwrap_or_default(),
        abi: (major, minor),
        preference: d.preference,
        path: path.to_path_buf(),
        ops,
        ops_size,
        _lib: Arc::new(lib),
    })
}

/// An event a plugin reported through its callbacks.
#[derive(Debug)]
pub enum NetEvent {
    /// A message arrived: the engine's header, and the payload itself or
    /// a token to fetch it with.
    Arrived {
        /// The sender.
        peer: u32,
        /// The engine's header.
        header: Vec<u8>,
        /// The payload, or its length and token.
        payload: Payload,
    },
    /// An operation that was in progress ended.
    Completed {
        /// What the engine passed when it started it.
        cookie: u64,
        /// `Ok` or the transport's error.
        result: Result<(), NetError>,
    },
    /// A peer failed.
    Failed {
        /// The peer.
        peer: u32,
        /// What the plugin said.
        error: NetError,
    },
}

/// A payload as it arrived.
#[derive(Debug)]
pub enum Payload {
    /// The bytes.
    Data(Vec<u8>),
    /// `len` bytes wait at the sender; fetch or discard `token`.
    Token {
        /// The payload's length.
        len: usize,
        /// The plugin's name for it.
        token: u64,
    },
}

/// A transport's error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NetError {
    /// The plugin's status code (`plugin_api::ERR_*`).
    pub code: i32,
    /// What happened.
    pub message: String,
}

impl NetError {
    fn of(code: c_int, what: &str) -> Self {
        Self {
            code,
            message: format!("{what}: {}", api::status_name(code)),
        }
    }
}

impl fmt::Display for NetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NetError {}

/// What a call that may lack resources answered.
#[derive(Debug, PartialEq, Eq)]
pub enum Started {
    /// Done already.
    Done,
    /// In progress: a [`NetEvent::Completed`] with the cookie follows.
    InProgress,
    /// No resources now: retry after progress.
    Again,
}

/// Most bytes of a bootstrap value part (Hydra's PMI-1 takes 1024 hex
/// digits, 512 raw bytes).
const PART: usize = 384;

/// The engine side of the callbacks: the bootstrap for address exchange,
/// and the events recorded during one plugin call.
struct Host {
    boot: *mut dyn Bootstrap,
    events: Vec<NetEvent>,
}

impl Host {
    fn put(&mut self, key: &str, value: &[u8]) -> bool {
        // SAFETY: `boot` points into the endpoint's boxed bootstrap, which
        // outlives the transport; callbacks run only inside plugin calls
        // the engine makes, while it uses the bootstrap for nothing else.
        let boot = unsafe { &mut *self.boot };
        // Part count first, then the parts under KEY.1, KEY.2, ...
        let parts: Vec<&[u8]> = value.chunks(PART).collect();
        let mut head = vec![parts.len() as u8];
        if parts.len() == 1 {
            head.extend_from_slice(parts[0]);
            return boot.put(key, &head).is_ok();
        }
        if parts.len() > 255 {
            return false;
        }
        parts
            .iter()
            .enumerate()
            .all(|(i, p)| boot.put(&format!("{key}.{}", i + 1), p).is_ok())
            && boot.put(key, &head).is_ok()
    }

    fn get(&mut self, key: &str) -> Option<Vec<u8>> {
        // SAFETY: as in `put`.
        let boot = unsafe { &mut *self.boot };
        let head = boot.get(key).ok()?;
        let (&n, rest) = head.split_first()?;
        if n <= 1 {
            return Some(rest.to_vec());
        }
        let mut value = Vec::new();
        for i in 1..=n {
            value.extend(boot.get(&format!("{key}.{i}")).ok()?);
        }
        Some(value)
    }
}

/// # Safety
/// `engine` is the `Host` this module handed to the plugin; no other
/// reference to it is live (callbacks run inside plugin calls only).
unsafe fn host<'a>(engine: *mut c_void) -> &'a mut Host {
    // SAFETY: per the caller.
    unsafe { &mut *engine.cast::<Host>() }
}

/// # Safety
/// `key` is a NUL-terminated string.
unsafe fn key_of(key: *const c_char) -> String {
    // SAFETY: per the caller.
    unsafe { CStr::from_ptr(key) }
        .to_string_lossy()
        .into_owned()
}

unsafe extern "C" fn cb_put(
    engine: *mut c_void,
    key: *const c_char,
    value: *const u8,
    len: usize,
) -> c_int {
    if key.is_null() || (value.is_null() && len > 0) {
        return api::ERR_INVALID;
    }
    // SAFETY: ABI: a C string and `len` readable bytes; our host pointer.
    let (key, value, h) = unsafe {
        (
            key_of(key),
            if len == 0 {
                &[][..]
            } else {
                std::slice::from_raw_parts(value, len)
            },
            host(engine),
        )
    };
    if h.put(&key, value) {
        api::OK
    } else {
        api::ERR_TRANSPORT
    }
}

unsafe extern "C" fn cb_get(
    engine: *mut c_void,
    key: *const c_char,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> c_int {
    if key.is_null() || len.is_null() {
        return api::ERR_INVALID;
    }
    // SAFETY: ABI: a C string; our host pointer.
    let (key, h) = unsafe { (key_of(key), host(engine)) };
    let Some(v) = h.get(&key) else {
        return api::ERR_UNREACHABLE;
    };
    // SAFETY: `len` is writable (ABI).
    unsafe { *len = v.len() };
    if v.len() > cap || (buf.is_null() && !v.is_empty()) {
        return api::ERR_INVALID;
    }
    // SAFETY: `buf` holds `cap >= v.len()` writable bytes (ABI).
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf, v.len()) };
    api::OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn cb_arrived(
    engine: *mut c_void,
    peer: u32,
    header: *const u8,
    header_len: usize,
    data: *const u8,
    len: usize,
    token: u64,
    flags: u32,
) {
    let bytes = |p: *const u8, n: usize| {
        if n == 0 || p.is_null() {
            Vec::new()
        } else {
            // SAFETY: ABI: header and data are valid during the call.
            unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
        }
    };
    let payload = if flags & api::ARRIVED_DATA != 0 {
        Payload::Data(bytes(data, len))
    } else {
        Payload::Token { len, token }
    };
    let header = bytes(header, header_len);
    // SAFETY: our host pointer, inside a plugin call.
    let h = unsafe { host(engine) };
    h.events.push(NetEvent::Arrived {
        peer,
        header,
        payload,
    });
}

unsafe extern "C" fn cb_completed(engine: *mut c_void, cookie: u64, status: c_int) {
    let result = if status == api::OK {
        Ok(())
    } else {
        Err(NetError::of(status, "transfer failed"))
    };
    // SAFETY: our host pointer, inside a plugin call.
    let h = unsafe { host(engine) };
    h.events.push(NetEvent::Completed { cookie, result });
}

unsafe extern "C" fn cb_failed(engine: *mut c_void, peer: u32, status: c_int, msg: *const c_char) {
    // SAFETY: ABI: a C string or null.
    let said = unsafe { text(msg) }.unwrap_or_default();
    // SAFETY: our host pointer, inside a plugin call.
    let h = unsafe { host(engine) };
    h.events.push(NetEvent::Failed {
        peer,
        error: NetError {
            code: status,
            message: if said.is_empty() {
                api::status_name(status).to_string()
            } else {
                said
            },
        },
    });
}

/// Where the optional `wake_fd` and `arm` entries end in the table.
const ARM_END: usize =
    std::mem::offset_of!(api::Ops, arm) + std::mem::size_of::<Option<unsafe extern "C" fn()>>();

/// An open plugin context.
pub struct Transport {
    ctx: *mut api::Context,
    limits: Limits,
    // Owned here, pointed to by the plugin until close.
    host: Box<Host>,
    _callbacks: Box<api::Callbacks>,
    plugin: Plugin,
}

// SAFETY: the context is used by one thread at a time (ABI rule, kept by
// `&mut self` on every call); `host.boot` points into the bootstrap owned by
// the same endpoint, which moves between threads together with it.
unsafe impl Send for Transport {}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transport")
            .field("plugin", &self.plugin.name)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Why no transport could be opened.
#[derive(Debug)]
pub struct OpenError {
    /// One line per plugin tried or refused, and what `TESSEL_NET` asked.
    pub reasons: Vec<String>,
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reasons.join("; "))
    }
}

impl Plugin {
    /// Open this plugin for process `rank` of `size`, exchanging addresses
    /// through `boot`.
    ///
    /// # Safety
    /// `boot` stays valid, and is not used by anyone else while a method
    /// of the returned transport runs, until the transport is dropped.
    pub unsafe fn open(
        &self,
        boot: *mut dyn Bootstrap,
        rank: u32,
        size: u32,
    ) -> Result<Transport, NetError> {
        let mut host = Box::new(Host {
            boot,
            events: Vec::new(),
        });
        let callbacks = Box::new(api::Callbacks {
            struct_size: std::mem::size_of::<api::Callbacks>() as u32,
            reserved: 0,
            engine: (&mut *host as *mut Host).cast(),
            put: cb_put,
            get: cb_get,
            arrived: cb_arrived,
            completed: cb_completed,
            failed: cb_failed,
        });
        let args = api::OpenArgs {
            struct_size: std::mem::size_of::<api::OpenArgs>() as u32,
            rank,
            size,
            reserved: 0,
            callbacks: &*callbacks,
        };
        let mut ctx = std::ptr::null_mut();
        let mut attr = api::Attr::default();
        let mut err = [0 as c_char; 512];
        let open = self.ops.open.expect("checked at load");
        // SAFETY: every pointer is valid for the call; `callbacks` and
        // `host` are boxed and stay in the transport until close; `boot`
        // is valid per our caller.
        let rc = unsafe { open(&args, &mut ctx, &mut attr, err.as_mut_ptr(), err.len()) };
        if rc != api::OK || ctx.is_null() {
            err[err.len() - 1] = 0;
            // SAFETY: NUL-terminated within `err` (forced above).
            let said = unsafe { text(err.as_ptr()) }.unwrap_or_default();
            let code = if rc == api::OK {
                api::ERR_TRANSPORT
            } else {
                rc
            };
            let message = if said.is_empty() {
                api::status_name(code).to_string()
            } else {
                said
            };
            return Err(NetError { code, message });
        }
        Ok(Transport {
            ctx,
            limits: Limits::from_attr(&attr),
            host,
            _callbacks: callbacks,
            plugin: self.clone(),
        })
    }
}

/// Open the transport `cfg.net` asks for. `Ok(None)` for `TESSEL_NET=none`.
///
/// # Safety
/// As for [`Plugin::open`].
pub unsafe fn open(
    cfg: &Config,
    boot: *mut dyn Bootstrap,
    rank: u32,
    size: u32,
) -> Result<Option<Transport>, OpenError> {
    let want = match &cfg.net {
        NetMode::None => return Ok(None),
        NetMode::Auto => None,
        NetMode::Named(n) => Some(n.clone()),
    };
    let found = discover(cfg);
    let mut reasons = Vec::new();
    for p in found.plugins {
        if want.as_ref().is_some_and(|w| *w != p.name) {
            continue;
        }
        let name = p.name.clone();
        // SAFETY: forwarded: our caller keeps `boot` valid and unshared.
        match unsafe { p.open(boot, rank, size) } {
            Ok(t) => return Ok(Some(t)),
            Err(e) => reasons.push(format!("plugin {name} did not open: {e}")),
        }
    }
    for r in found.refused {
        reasons.push(format!("{} refused: {}", r.path.display(), r.reason));
    }
    if reasons.is_empty() {
        reasons.push(match &want {
            Some(w) => format!("no plugin named {w} was found"),
            None => "no network plugin was found".into(),
        });
    }
    reasons.push(format!(
        "searched {}",
        found
            .searched
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":")
    ));
    Err(OpenError { reasons })
}

impl Transport {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.plugin.name
    }

    /// The plugin's version text.
    pub fn version(&self) -> &str {
        &self.plugin.version
    }

    /// The transport's limits and costs.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether the table holds the optional entry ending at byte `end`.
    fn has(&self, end: usize) -> bool {
        self.plugin.ops_size >= end
    }

    fn started(rc: c_int, what: &str) -> Result<Started, NetError> {
        match rc {
            api::OK => Ok(Started::Done),
            api::IN_PROGRESS => Ok(Started::InProgress),
            api::ERR_AGAIN => Ok(Started::Again),
            code => Err(NetError::of(code, what)),
        }
    }

    /// Send `header` and the concatenation of `pieces` to `peer`.
    ///
    /// # Safety
    /// The pieces stay valid and unmodified until the send is done
    /// (`Started::Done`) or its completion event arrives.
    pub unsafe fn send(
        &mut self,
        peer: u32,
        header: &[u8],
        pieces: &[api::Iov],
        cookie: u64,
    ) -> Result<Started, NetError> {
        let send = self.plugin.ops.send.expect("checked at load");
        // SAFETY: ctx is open; header and list are valid for the call; the
        // pieces per our caller.
        let rc = unsafe {
            send(
                self.ctx,
                peer,
                header.as_ptr(),
                header.len(),
                pieces.as_ptr(),
                pieces.len(),
                cookie,
            )
        };
        Self::started(rc, "send")
    }

    /// Pull the payload of `token` into `pieces`.
    ///
    /// # Safety
    /// The pieces are valid for writes, hold exactly the payload's length,
    /// and are not otherwise accessed until done or completed.
    pub unsafe fn fetch(
        &mut self,
        token: u64,
        pieces: &[api::Iov],
        cookie: u64,
    ) -> Result<Started, NetError> {
        let fetch = self.plugin.ops.fetch.expect("checked at load");
        // SAFETY: ctx is open; the pieces per our caller.
        let rc = unsafe { fetch(self.ctx, token, pieces.as_ptr(), pieces.len(), cookie) };
        Self::started(rc, "fetch")
    }

    /// Drop the payload of `token`.
    pub fn discard(&mut self, token: u64) {
        let discard = self.plugin.ops.discard.expect("checked at load");
        // SAFETY: ctx is open; a token the plugin refuses is ignored by it.
        unsafe { discard(self.ctx, token) };
    }

    /// Progress (at most about `budget` events) and hand out what the
    /// callbacks reported, in order.
    pub fn progress(&mut self, budget: u32, events: &mut Vec<NetEvent>) -> Result<(), NetError> {
        let progress = self.plugin.ops.progress.expect("checked at load");
        // SAFETY: ctx is open; callbacks reach `self.host`, which nothing
        // else borrows during the call.
        let rc = unsafe { progress(self.ctx, budget) };
        events.append(&mut self.host.events);
        if rc < 0 {
            return Err(NetError::of(rc, "progress"));
        }
        Ok(())
    }

    /// Events recorded by callbacks outside `progress` (during `send`,
    /// which may connect and so read the bootstrap, none are recorded; a
    /// plugin that reports completions from `send` is tolerated).
    pub fn take_events(&mut self, events: &mut Vec<NetEvent>) {
        events.append(&mut self.host.events);
    }

    /// The wake-up descriptor, if the plugin offers one.
    pub fn wake_fd(&mut self) -> Option<i32> {
        if !self.limits.wake_fd || !self.has(ARM_END) {
            return None;
        }
        let wake_fd = self.plugin.ops.wake_fd?;
        // SAFETY: ctx is open; the entry lies within the table's size.
        let fd = unsafe { wake_fd(self.ctx) };
        (fd >= 0).then_some(fd)
    }

    /// Prepare to sleep on [`wake_fd`](Self::wake_fd): false when events
    /// are pending (progress again instead).
    pub fn arm(&mut self) -> bool {
        if !self.has(ARM_END) {
            return false;
        }
        let Some(arm) = self.plugin.ops.arm else {
            return false;
        };
        // SAFETY: ctx is open; the entry lies within the table's size.
        unsafe { arm(self.ctx) == api::OK }
    }
}

impl Drop for Transport {
    fn drop(&mut self) {
        let close = self.plugin.ops.close.expect("checked at load");
        // SAFETY: ctx is open and not used after this.
        unsafe { close(self.ctx) };
    }
}

/// What `tessel-info` shows of one plugin.
#[derive(Debug)]
pub struct Survey {
    /// The file.
    pub path: PathBuf,
    /// Name, version, ABI: `None` when the file was refused.
    pub plugin: Option<(String, String, (u32, u32), u32)>,
    /// The limits when it opened (as a one-process job), or why not.
    pub status: Result<Limits, String>,
}

/// Load every plugin on the search path and open each as a one-process job,
/// to report its limits or why it cannot run here.
pub fn survey(cfg: &Config) -> (Vec<Survey>, Vec<PathBuf>) {
    let found = discover(cfg);
    let mut out = Vec::new();
    for p in found.plugins {
        let info = (p.name.clone(), p.version.clone(), p.abi, p.preference);
        let path = p.path.clone();
        let mut boot: Box<dyn Bootstrap> = Box::new(crate::bootstrap::Singleton::default());
        // SAFETY: `boot` outlives the transport, dropped at the end of this
        // iteration, and nothing else uses it meanwhile.
        let status = match unsafe { p.open(&mut *boot, 0, 1) } {
            Ok(t) => Ok(t.limits().clone()),
            Err(e) => Err(e.message),
        };
        out.push(Survey {
            path,
            plugin: Some(info),
            status,
        });
    }
    for r in found.refused {
        out.push(Survey {
            path: r.path,
            plugin: None,
            status: Err(r.reason),
        });
    }
    (out, found.searched)
}

//! A conformance check of one plugin at the transport level: two contexts
//! (ranks 0 and 1 of a two-process job) open in one process over an
//! in-memory key-value store, and every rule of the ABI is exercised:
//! messages of every size class both ways with checksums, payloads in
//! several pieces, tokens fetched and discarded, completions reported once,
//! "no resources" retried, and bad arguments refused with a code.
//!
//! The engine's own suite (multi-process jobs through the launcher) runs
//! on top of this; this one finds a plugin's faults without a launcher.
//!
//! The test host it runs on is public, for a plugin's own tests of what
//! the check does not reach: [`Side::open`] opens one context over a
//! [`Store`] shared by the contexts of one test job, [`Side::progress`]
//! returns the [`Event`]s its callbacks recorded, and [`wait`] progresses
//! several sides until one of them sees a wanted event.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::*;

/// What the check saw.
#[derive(Debug, Default)]
pub struct Report {
    /// The plugin's name and version.
    pub name: String,
    /// The limits rank 0's context reported.
    pub attr: Option<Attr>,
    /// Messages sent and checked, per size.
    pub sizes: Vec<(usize, usize)>,
    /// Payloads that arrived as data, fetched through a token, discarded.
    pub data: usize,
    /// Payloads fetched through a token.
    pub fetched: usize,
    /// Tokens discarded.
    pub discarded: usize,
    /// Times a send or fetch answered "no resources" and was retried.
    pub again: usize,
    /// Whether every peer's messages arrived in the order sent.
    pub in_order: bool,
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "plugin {}", self.name)?;
        if let Some(a) = &self.attr {
            writeln!(
                f,
                "  device {:?}; header <= {} B, inline <= {} B, eager <= {} B, max {} B",
                a.device(),
                a.max_header,
                a.inline_max,
                a.eager_max,
                a.max_message
            )?;
        }
        let n: usize = self.sizes.iter().map(|s| s.1).sum();
        writeln!(
            f,
            "  {n} messages over {} sizes: {} as data, {} fetched, {} discarded; {} retries; {}",
            self.sizes.len(),
            self.data,
            self.fetched,
            self.discarded,
            self.again,
            if self.in_order {
                "in order"
            } else {
                "reordered (the engine restores order)"
            }
        )
    }
}

/// The bootstrap store the contexts of one test job share (what `put`
/// publishes, `get` reads).
pub type Store = Arc<Mutex<HashMap<String, Vec<u8>>>>;

/// One event a context's callbacks recorded.
#[derive(Debug, PartialEq, Eq)]
pub enum Event {
    /// [`Callbacks::arrived`].
    Arrived {
        /// The sender.
        peer: u32,
        /// The engine's header.
        header: Vec<u8>,
        /// The payload ([`ARRIVED_DATA`]), or `None` for a token.
        data: Option<Vec<u8>>,
        /// The payload's length.
        len: usize,
        /// The token ([`ARRIVED_TOKEN`]; 0 with data).
        token: u64,
    },
    /// [`Callbacks::completed`].
    Completed {
        /// The operation's cookie.
        cookie: u64,
        /// Its status.
        status: c_int,
    },
    /// [`Callbacks::failed`].
    Failed {
        /// The failed peer.
        peer: u32,
        /// [`ERR_PEER_FAILED`] or [`ERR_UNREACHABLE`].
        status: c_int,
        /// The plugin's text.
        message: String,
    },
}

/// The engine side of one context: the shared store and recorded events.
#[derive(Debug)]
struct Host {
    kv: Store,
    events: Mutex<Vec<Event>>,
}

/// # Safety
/// `engine` is a live `Host`.
unsafe fn host<'a>(engine: *mut c_void) -> &'a Host {
    // SAFETY: the caller passes the pointer we gave the plugin, which
    // outlives the context.
    unsafe { &*engine.cast::<Host>() }
}

unsafe extern "C" fn cb_put(
    engine: *mut c_void,
    key: *const c_char,
    value: *const u8,
    len: usize,
) -> c_int {
    // SAFETY: the ABI says `key` is a C string and `value` holds `len` bytes.
    let (key, value) = unsafe {
        (
            CStr::from_ptr(key).to_string_lossy().into_owned(),
            std::slice::from_raw_parts(value, len).to_vec(),
        )
    };
    // SAFETY: the plugin passes back our engine pointer.
    let h = unsafe { host(engine) };
    h.kv.lock().unwrap().insert(key, value);
    OK
}

unsafe extern "C" fn cb_get(
    engine: *mut c_void,
    key: *const c_char,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: the ABI says `key` is a C string.
    let key = unsafe { CStr::from_ptr(key).to_string_lossy().into_owned() };
    // SAFETY: the plugin passes back our engine pointer.
    let h = unsafe { host(engine) };
    let kv = h.kv.lock().unwrap();
    let Some(v) = kv.get(&key) else {
        return ERR_UNREACHABLE;
    };
    // SAFETY: `len` is writable per the ABI.
    unsafe { *len = v.len() };
    if v.len() > cap {
        return ERR_INVALID;
    }
    // SAFETY: `buf` holds `cap >= v.len()` writable bytes per the ABI.
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf, v.len()) };
    OK
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
    // SAFETY: header and data are valid during the call per the ABI.
    let (header, data) = unsafe {
        (
            if header_len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(header, header_len).to_vec()
            },
            (flags & ARRIVED_DATA != 0).then(|| {
                if len == 0 {
                    Vec::new()
                } else {
                    std::slice::from_raw_parts(data, len).to_vec()
                }
            }),
        )
    };
    // SAFETY: the plugin passes back our engine pointer.
    let h = unsafe { host(engine) };
    h.events.lock().unwrap().push(Event::Arrived {
        peer,
        header,
        data,
        len,
        token,
    });
}

unsafe extern "C" fn cb_completed(engine: *mut c_void, cookie: u64, status: c_int) {
    // SAFETY: the plugin passes back our engine pointer.
    let h = unsafe { host(engine) };
    h.events
        .lock()
        .unwrap()
        .push(Event::Completed { cookie, status });
}

unsafe extern "C" fn cb_failed(engine: *mut c_void, peer: u32, status: c_int, msg: *const c_char) {
    // SAFETY: the ABI says `msg` is a C string (or null).
    let message = if msg.is_null() {
        String::new()
    } else {
        // SAFETY: as above.
        unsafe { CStr::from_ptr(msg).to_string_lossy().into_owned() }
    };
    // SAFETY: the plugin passes back our engine pointer.
    let h = unsafe { host(engine) };
    h.events.lock().unwrap().push(Event::Failed {
        peer,
        status,
        message,
    });
}

/// One open context of a plugin with its host: the engine's side of a
/// context, for tests. Close it with [`Side::close`] (dropping it leaks
/// the context).
#[derive(Debug)]
pub struct Side {
    ctx: *mut Context,
    ops: &'static Ops,
    host: Box<Host>,
    // Kept alive for the plugin: it may hold the pointer until close.
    _callbacks: Box<Callbacks>,
    attr: Attr,
}

/// The plugin's table, checked.
struct Plugin {
    name: String,
    ops: &'static Ops,
}

impl Plugin {
    fn load(desc: DescriptorFn) -> Result<Self, String> {
        // SAFETY: `desc` is the plugin's exported descriptor function.
        let d = unsafe { desc() };
        if d.is_null() {
            return Err("the descriptor function returned null".into());
        }
        // SAFETY: non-null, static per the ABI.
        let d: &'static Descriptor = unsafe { &*d };
        if d.abi_major != ABI_MAJOR {
            return Err(format!("ABI major {} (want {ABI_MAJOR})", d.abi_major));
        }
        if d.ops.is_null() || d.name.is_null() {
            return Err("descriptor without a name or operations".into());
        }
        // SAFETY: static C strings and table per the ABI.
        let (name, ops) = unsafe { (CStr::from_ptr(d.name), &*d.ops) };
        if (ops.struct_size as usize) < OPS_REQUIRED_SIZE {
            return Err(format!("operations table of {} bytes", ops.struct_size));
        }
        Ok(Self {
            name: name.to_string_lossy().into_owned(),
            ops,
        })
    }

    fn open(&self, rank: u32, size: u32, kv: &Store) -> Result<Side, (c_int, String)> {
        let host = Box::new(Host {
            kv: kv.clone(),
            events: Mutex::new(Vec::new()),
        });
        let callbacks = Box::new(Callbacks {
            struct_size: std::mem::size_of::<Callbacks>() as u32,
            reserved: 0,
            engine: (&*host as *const Host).cast_mut().cast(),
            put: cb_put,
            get: cb_get,
            arrived: cb_arrived,
            completed: cb_completed,
            failed: cb_failed,
        });
        let args = OpenArgs {
            struct_size: std::mem::size_of::<OpenArgs>() as u32,
            rank,
            size,
            reserved: 0,
            callbacks: &*callbacks,
        };
        let mut ctx = std::ptr::null_mut();
        let mut attr = Attr::default();
        let mut err = [0 as c_char; 256];
        let open = self.ops.open.ok_or((ERR_INVALID, "no open entry".into()))?;
        // SAFETY: every pointer is valid for the call; `callbacks` and `host`
        // stay alive until close (owned by the returned Side).
        let rc = unsafe { open(&args, &mut ctx, &mut attr, err.as_mut_ptr(), err.len()) };
        if rc != OK {
            // SAFETY: the plugin NUL-terminates within `err`.
            let msg = unsafe { CStr::from_ptr(err.as_ptr()) };
            return Err((rc, msg.to_string_lossy().into_owned()));
        }
        Ok(Side {
            ctx,
            ops: self.ops,
            host,
            _callbacks: callbacks,
            attr,
        })
    }
}

impl Side {
    /// Open a context of the plugin whose descriptor is `desc`, as `rank`
    /// of a job of `size` whose bootstrap is `store`. The error is the
    /// plugin's code and text (or [`ERR_INVALID`] for a broken
    /// descriptor).
    pub fn open(
        desc: DescriptorFn,
        rank: u32,
        size: u32,
        store: &Store,
    ) -> Result<Side, (c_int, String)> {
        Plugin::load(desc)
            .map_err(|e| (ERR_INVALID, e))?
            .open(rank, size, store)
    }

    /// Ranks 0 and 1 of a two-process job over a new store.
    pub fn pair(desc: DescriptorFn) -> Result<(Side, Side), String> {
        let store = Store::default();
        let open = |rank| {
            Side::open(desc, rank, 2, &store)
                .map_err(|(rc, m)| format!("open rank {rank}: {} ({m})", status_name(rc)))
        };
        Ok((open(0)?, open(1)?))
    }

    /// The plugin's context handle.
    pub fn ctx(&self) -> *mut Context {
        self.ctx
    }

    /// The plugin's operations.
    pub fn ops(&self) -> &'static Ops {
        self.ops
    }

    /// The limits the context reported at open.
    pub fn attr(&self) -> &Attr {
        &self.attr
    }

    /// [`Ops::send`] of `header` and the pieces `iov` to `peer`.
    ///
    /// # Safety
    /// Every piece is readable for its length and stays so until the
    /// send is done ([`OK`] at once, or its completion).
    pub unsafe fn send(&self, peer: u32, header: &[u8], iov: &[Iov], cookie: u64) -> c_int {
        let Some(send) = self.ops.send else {
            return ERR_INVALID;
        };
        // SAFETY: an open context; the header is valid for the call, the
        // pieces per the caller.
        unsafe {
            send(
                self.ctx,
                peer,
                header.as_ptr(),
                header.len(),
                iov.as_ptr(),
                iov.len(),
                cookie,
            )
        }
    }

    /// [`Ops::fetch`] of `token` into the pieces `iov`.
    ///
    /// # Safety
    /// Every piece is writable for its length, and the caller's alone,
    /// until the fetch is done ([`OK`] at once, or its completion).
    pub unsafe fn fetch(&self, token: u64, iov: &[Iov], cookie: u64) -> c_int {
        let Some(fetch) = self.ops.fetch else {
            return ERR_INVALID;
        };
        // SAFETY: an open context; the pieces per the caller.
        unsafe { fetch(self.ctx, token, iov.as_ptr(), iov.len(), cookie) }
    }

    /// [`Ops::discard`] of `token`.
    pub fn discard(&self, token: u64) {
        if let Some(discard) = self.ops.discard {
            // SAFETY: an open context; any token value is allowed (the
            // plugin refuses one it did not hand out).
            unsafe { discard(self.ctx, token) };
        }
    }

    /// Progress the context once and take the events its callbacks
    /// recorded (those it ran now, and any given back with
    /// [`Side::keep`]).
    pub fn progress(&self) -> Result<Vec<Event>, String> {
        let progress = self.ops.progress.ok_or("no progress entry")?;
        // SAFETY: `self.ctx` is open.
        let rc = unsafe { progress(self.ctx, 64) };
        if rc < 0 {
            return Err(format!("progress failed: {}", status_name(rc)));
        }
        Ok(std::mem::take(&mut *self.host.events.lock().unwrap()))
    }

    /// Give `events` back, for the next [`Side::progress`] to return.
    pub fn keep(&self, events: Vec<Event>) {
        self.host.events.lock().unwrap().extend(events);
    }

    /// [`Ops::close`] the context.
    pub fn close(self) {
        if let Some(close) = self.ops.close {
            // SAFETY: `self.ctx` is open and not used after this.
            unsafe { close(self.ctx) };
        }
    }
}

/// Progress every side in turn until `want` picks something out of an
/// event of side `of`; other events are dropped. An error when progress
/// fails or after `timeout`, with the events seen.
pub fn wait<T>(
    sides: &[&Side],
    of: usize,
    timeout: Duration,
    mut want: impl FnMut(Event) -> Option<T>,
) -> Result<T, String> {
    let deadline = Instant::now() + timeout;
    let mut seen = Vec::new();
    loop {
        for (i, s) in sides.iter().enumerate() {
            for ev in s.progress()? {
                if i != of {
                    seen.push(format!("{i}: {ev:?}"));
                    continue;
                }
                let text = format!("{i}: {ev:?}");
                match want(ev) {
                    Some(t) => return Ok(t),
                    None => seen.push(text),
                }
            }
        }
        if Instant::now() > deadline {
            seen.truncate(20);
            return Err(format!(
                "no such event on side {of} in {timeout:?}; saw {seen:?}"
            ));
        }
        std::thread::yield_now();
    }
}

/// Open one context (rank 0 of a one-process job) and report why it
/// failed: `None` when it opened (it is closed again).
pub fn open_error(desc: DescriptorFn) -> Option<(c_int, String)> {
    let p = match Plugin::load(desc) {
        Ok(p) => p,
        Err(e) => return Some((ERR_INVALID, e)),
    };
    let kv = Arc::default();
    match p.open(0, 1, &kv) {
        Ok(s) => {
            s.close();
            None
        }
        Err(e) => Some(e),
    }
}

/// The test header: message index, size, checksum of the payload.
fn header(index: u32, size: usize, sum: u64) -> [u8; 40] {
    let mut h = [0u8; 40];
    h[..4].copy_from_slice(&index.to_le_bytes());
    h[8..16].copy_from_slice(&(size as u64).to_le_bytes());
    h[16..24].copy_from_slice(&sum.to_le_bytes());
    h[24..32].copy_from_slice(b"tessel-c");
    h
}

fn parse(h: &[u8]) -> Option<(u32, usize, u64)> {
    if h.len() != 40 || &h[24..32] != b"tessel-c" {
        return None;
    }
    let u = |r: std::ops::Range<usize>| u64::from_le_bytes(h[r].try_into().unwrap());
    Some((
        u32::from_le_bytes(h[..4].try_into().unwrap()),
        u(8..16) as usize,
        u(16..24),
    ))
}

fn checksum(data: &[u8]) -> u64 {
    // FNV-1a: enough to catch a misplaced or missing byte.
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn payload(size: usize, seed: u32) -> Vec<u8> {
    (0..size)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8)
        .collect()
}

/// A buffer as two pieces (the second starting at a third of it).
fn two_pieces(buf: &mut [u8]) -> Vec<Iov> {
    let k = buf.len() / 3;
    let (a, b) = buf.split_at_mut(k);
    [a, b]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(|p| Iov {
            base: p.as_mut_ptr().cast(),
            len: p.len(),
        })
        .collect()
}

/// A fetch in flight: its buffer and what it must hold.
struct Fetch {
    buf: Vec<u8>,
    sum: u64,
}

/// Run the check. Sizes cover inline, eager and token payloads up to
/// 8 MiB (or the plugin's `max_message`); every size goes both ways, three
/// messages each; every fourth token is discarded, the rest fetched into
/// two pieces. Fails on the first broken rule, or after 120 s without the
/// expected events.
pub fn run(desc: DescriptorFn) -> Result<Report, String> {
    let p = Plugin::load(desc)?;
    let kv = Arc::default();
    let mut sides = Vec::new();
    for rank in 0..2 {
        let s = p
            .open(rank, 2, &kv)
            .map_err(|(rc, m)| format!("open rank {rank}: {} ({m})", status_name(rc)))?;
        sides.push(s);
    }
    let attr = sides[0].attr;
    let mut report = Report {
        name: p.name.clone(),
        attr: Some(attr),
        in_order: true,
        ..Report::default()
    };
    if attr.max_header < 40 {
        return Err(format!("max_header {} < 40", attr.max_header));
    }
    let result = exchange(&p, &sides, &attr, &mut report).and_then(|()| bad_arguments(&p, &sides));
    for s in sides {
        s.close();
    }
    result.map(|()| report)
}

fn exchange(p: &Plugin, sides: &[Side], attr: &Attr, report: &mut Report) -> Result<(), String> {
    let send = p.ops.send.ok_or("no send entry")?;
    let fetch = p.ops.fetch.ok_or("no fetch entry")?;
    let discard = p.ops.discard.ok_or("no discard entry")?;
    let max = if attr.max_message == 0 {
        usize::MAX
    } else {
        attr.max_message as usize
    };
    let (inl, eag) = (attr.inline_max as usize, attr.eager_max as usize);
    let mut sizes = vec![
        0,
        1,
        7,
        64,
        inl,
        inl + 1,
        eag,
        eag + 1,
        65536,
        (1 << 20) + 3,
        8 << 20,
    ];
    sizes.retain(|&s| s <= max);
    sizes.sort_unstable();
    sizes.dedup();
    const PER_SIZE: u32 = 3;
    for &size in &sizes {
        // Payloads stay alive until their sends complete.
        let mut payloads: Vec<Vec<u8>> = Vec::new();
        let mut pending_sends: HashMap<u64, (usize, usize)> = HashMap::new();
        let mut expected = [0u32; 2]; // messages still to arrive at each side
        let mut next_index = [0u32; 2];
        for from in 0..2usize {
            for k in 0..PER_SIZE {
                let mut data = payload(size, k + 31 * from as u32);
                let sum = checksum(&data);
                let h = header(k, size, sum);
                let iov = if k % 2 == 1 {
                    two_pieces(&mut data)
                } else if size > 0 {
                    vec![Iov {
                        base: data.as_mut_ptr().cast(),
                        len: size,
                    }]
                } else {
                    Vec::new()
                };
                payloads.push(data);
                let cookie = (size as u64) << 8 | (from as u64) << 4 | u64::from(k);
                let deadline = Instant::now() + Duration::from_secs(120);
                loop {
                    // SAFETY: ctx open; header and iov valid; the payload
                    // lives in `payloads` until completion.
                    let rc = unsafe {
                        send(
                            sides[from].ctx,
                            (1 - from) as u32,
                            h.as_ptr(),
                            h.len(),
                            iov.as_ptr(),
                            iov.len(),
                            cookie,
                        )
                    };
                    match rc {
                        OK => break,
                        IN_PROGRESS => {
                            pending_sends.insert(cookie, (from, size));
                            break;
                        }
                        ERR_AGAIN => {
                            report.again += 1;
                            for s in sides {
                                let evs = s.progress()?;
                                // Events found while retrying are replayed below.
                                s.keep(evs);
                            }
                            if Instant::now() > deadline {
                                return Err(format!("send of {size} B: no resources for 120 s"));
                            }
                        }
                        rc => return Err(format!("send of {size} B failed: {}", status_name(rc))),
                    }
                }
                expected[1 - from] += 1;
            }
        }
        // Keyed by (side, cookie): the two contexts may hand out equal tokens.
        let mut fetches: HashMap<(usize, u64), Fetch> = HashMap::new();
        let mut next_fetch: u64 = 1 << 63;
        let mut tokens_seen = 0usize;
        let deadline = Instant::now() + Duration::from_secs(120);
        while expected != [0, 0] || !pending_sends.is_empty() || !fetches.is_empty() {
            if Instant::now() > deadline {
                return Err(format!(
                    "{size} B: stalled (still expected {expected:?}, {} sends, {} fetches)",
                    pending_sends.len(),
                    fetches.len()
                ));
            }
            for (me, s) in sides.iter().enumerate() {
                for ev in s.progress()? {
                    match ev {
                        Event::Arrived {
                            peer,
                            header,
                            data,
                            len,
                            token,
                        } => {
                            if peer as usize != 1 - me {
                                return Err(format!("rank {me}: arrival from peer {peer}"));
                            }
                            let (index, hsize, sum) =
                                parse(&header).ok_or("the header arrived changed")?;
                            if hsize != size || len != size {
                                return Err(format!("{size} B: arrived with size {hsize}/{len}"));
                            }
                            if index != next_index[me] {
                                report.in_order = false;
                            }
                            next_index[me] = index + 1;
                            expected[me] = expected[me]
                                .checked_sub(1)
                                .ok_or("more arrivals than sends")?;
                            match data {
                                Some(d) => {
                                    if checksum(&d) != sum {
                                        return Err(format!("{size} B: data corrupted"));
                                    }
                                    report.data += 1;
                                }
                                None => {
                                    tokens_seen += 1;
                                    if tokens_seen.is_multiple_of(4) {
                                        // SAFETY: a token handed to us, used once.
                                        unsafe { discard(s.ctx, token) };
                                        report.discarded += 1;
                                        continue;
                                    }
                                    next_fetch += 1;
                                    let cookie = next_fetch;
                                    let mut f = Fetch {
                                        buf: vec![0; len],
                                        sum,
                                    };
                                    let iov = two_pieces(&mut f.buf);
                                    loop {
                                        // SAFETY: ctx open; the buffer lives
                                        // in `fetches` until completion.
                                        let rc = unsafe {
                                            fetch(s.ctx, token, iov.as_ptr(), iov.len(), cookie)
                                        };
                                        match rc {
                                            OK => {
                                                if checksum(&f.buf) != sum {
                                                    return Err(format!(
                                                        "{size} B: fetched data corrupted"
                                                    ));
                                                }
                                                report.fetched += 1;
                                                break;
                                            }
                                            IN_PROGRESS => {
                                                fetches.insert((me, cookie), f);
                                                break;
                                            }
                                            ERR_AGAIN => {
                                                report.again += 1;
                                                let evs = s.progress()?;
                                                s.keep(evs);
                                            }
                                            rc => {
                                                return Err(format!(
                                                    "fetch of {size} B failed: {}",
                                                    status_name(rc)
                                                ));
                                            }
                                        }
                                    }
                                }
                            }
                        }
                        Event::Completed { cookie, status } => {
                            if status != OK {
                                return Err(format!(
                                    "operation {cookie:#x} completed with {}",
                                    status_name(status)
                                ));
                            }
                            if let Some(f) = fetches.remove(&(me, cookie)) {
                                if checksum(&f.buf) != f.sum {
                                    return Err(format!("{size} B: fetched data corrupted"));
                                }
                                report.fetched += 1;
                            } else if pending_sends.remove(&cookie).is_none() {
                                return Err(format!("unknown or repeated completion {cookie:#x}"));
                            }
                        }
                        Event::Failed {
                            peer,
                            status,
                            message,
                        } => {
                            return Err(format!(
                                "peer {peer} failed ({}): {message}",
                                status_name(status)
                            ));
                        }
                    }
                }
            }
        }
        drop(payloads);
        report.sizes.push((size, 2 * PER_SIZE as usize));
    }
    Ok(())
}

fn bad_arguments(p: &Plugin, sides: &[Side]) -> Result<(), String> {
    let send = p.ops.send.ok_or("no send entry")?;
    let fetch = p.ops.fetch.ok_or("no fetch entry")?;
    let h = header(0, 0, 0);
    // SAFETY: ctx open; header valid; no payload.
    let rc = unsafe { send(sides[0].ctx, 7, h.as_ptr(), h.len(), std::ptr::null(), 0, 1) };
    if rc != ERR_UNREACHABLE && rc != ERR_INVALID {
        return Err(format!(
            "send to rank 7 of 2: {} (want an error)",
            status_name(rc)
        ));
    }
    let long = vec![0u8; sides[0].attr.max_header as usize + 1];
    // SAFETY: as above.
    let rc = unsafe {
        send(
            sides[0].ctx,
            1,
            long.as_ptr(),
            long.len(),
            std::ptr::null(),
            0,
            2,
        )
    };
    if rc != ERR_INVALID {
        return Err(format!("a header over max_header: {}", status_name(rc)));
    }
    let mut buf = [0u8; 8];
    let iov = Iov {
        base: buf.as_mut_ptr().cast(),
        len: buf.len(),
    };
    // SAFETY: ctx open; the token is bogus on purpose: the plugin must
    // refuse it, not follow it.
    let rc = unsafe { fetch(sides[0].ctx, 0xdead_beef_0000_0001, &iov, 1, 3) };
    if rc != ERR_INVALID {
        return Err(format!("fetch of an unknown token: {}", status_name(rc)));
    }
    Ok(())
}

/// The name of the plugin whose descriptor is `desc`, for messages.
pub fn name(desc: DescriptorFn) -> String {
    Plugin::load(desc).map_or_else(|e| format!("<{e}>"), |p| p.name)
}

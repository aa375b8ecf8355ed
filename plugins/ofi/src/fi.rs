//! The libfabric calls the plugin makes, in one place.
//!
//! Most of libfabric's API is `static inline` functions in its headers that
//! call through the ops tables of its objects (`fi_domain` is
//! `fabric->ops->domain(...)`, `fi_send` is `ep->msg->send(...)`), so bindgen
//! gives no function for them: this module makes those calls through the
//! tables' function pointers, checking each for null (`-FI_ENOSYS`).
//!
//! [`InfoList`] owns an `fi_getinfo` answer; [`Endpoint`] owns one fabric,
//! domain, address vector, completion queue and RDM endpoint, and the memory
//! registrations made on them, and closes everything in the order libfabric
//! wants when dropped. Posting an operation is `unsafe`: the buffer and the
//! operation context must outlive its completion.

use std::ffi::{CStr, CString, c_int, c_void};
use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::sys;
use crate::table::Table;

/// A peer's address in the address vector.
pub type Addr = sys::fi_addr_t;

/// A failed libfabric call: which one, and its (positive) `FI_E*` code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FiError {
    /// The libfabric function that failed.
    pub call: &'static str,
    /// The positive `FI_E*` error number.
    pub code: i32,
}

impl FiError {
    fn from_rc(call: &'static str, rc: isize) -> Self {
        Self {
            call,
            code: i32::try_from(-rc).unwrap_or(sys::FI_EOTHER as i32),
        }
    }

    fn missing(call: &'static str) -> Self {
        Self {
            call,
            code: sys::FI_ENOSYS as i32,
        }
    }

    /// "No resources now": retry after progress.
    pub fn is_again(&self) -> bool {
        self.code == sys::FI_EAGAIN as i32
    }
}

impl fmt::Display for FiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.call, strerror(self.code), self.code)
    }
}

/// libfabric's text for a positive `FI_E*` code.
pub fn strerror(code: i32) -> String {
    // SAFETY: fi_strerror returns a static NUL-terminated string for any
    // number (an "unknown error" text for numbers it does not know).
    let s = unsafe { sys::fi_strerror(code) };
    if s.is_null() {
        return format!("error {code}");
    }
    // SAFETY: non-null, NUL-terminated, static (see above).
    unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
}

/// The API version the plugin asks for: that of the headers it was built
/// on (`FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION)`).
pub fn api_version() -> u32 {
    sys::FI_MAJOR_VERSION << 16 | sys::FI_MINOR_VERSION
}

/// The version of the libfabric loaded at run time, as `major.minor`.
pub fn runtime_version() -> String {
    // SAFETY: fi_version takes nothing and returns a number.
    let v = unsafe { sys::fi_version() };
    format!("{}.{}", v >> 16, v & 0xffff)
}

fn check(call: &'static str, rc: isize) -> Result<isize, FiError> {
    if rc < 0 {
        Err(FiError::from_rc(call, rc))
    } else {
        Ok(rc)
    }
}

/// What the plugin asks `fi_getinfo` for.
#[derive(Debug)]
pub struct Hints {
    /// `FI_*` capabilities.
    pub caps: u64,
    /// `FI_*` mode bits the plugin supports.
    pub mode: u64,
    /// `FI_MR_*` bits the plugin handles.
    pub mr_mode: u32,
    /// Only this domain (`lo`, `eth0`, `cxi0`), when set.
    pub domain: Option<CString>,
}

/// An owned list of `fi_info` (from `fi_getinfo` or `fi_allocinfo`).
#[derive(Debug)]
pub struct InfoList(NonNull<sys::fi_info>);

impl Drop for InfoList {
    fn drop(&mut self) {
        // SAFETY: the list is ours (fi_getinfo or fi_dupinfo made it) and
        // nobody uses it after this.
        unsafe { sys::fi_freeinfo(self.0.as_ptr()) };
    }
}

impl InfoList {
    /// Ask libfabric for the RDM endpoints that match `hints`: `None` when
    /// no provider does (`-FI_ENODATA`).
    pub fn get(hints: &Hints) -> Result<Option<Self>, FiError> {
        // SAFETY: fi_dupinfo(NULL) (the `fi_allocinfo` macro) returns a
        // zeroed fi_info with every attribute struct allocated, or null.
        let h = NonNull::new(unsafe { sys::fi_dupinfo(ptr::null()) })
            .ok_or(FiError::from_rc("fi_allocinfo", -(sys::FI_ENOMEM as isize)))?;
        let h = InfoList(h);
        let dup_name = match &hints.domain {
            // SAFETY: strdup of a valid C string; fi_freeinfo frees it with
            // free(), as libfabric's own tools do.
            Some(d) => unsafe { libc::strdup(d.as_ptr()) },
            None => ptr::null_mut(),
        };
        // SAFETY: `h` is a fresh fi_info whose attribute pointers
        // fi_allocinfo filled (checked for null below); we own it.
        unsafe {
            let i = &mut *h.0.as_ptr();
            i.caps = hints.caps;
            i.mode = hints.mode;
            if i.ep_attr.is_null() || i.domain_attr.is_null() {
                libc::free(dup_name.cast());
                return Err(FiError::from_rc("fi_allocinfo", -(sys::FI_ENOMEM as isize)));
            }
            (*i.ep_attr).type_ = sys::FI_EP_RDM;
            let d = &mut *i.domain_attr;
            d.mr_mode = hints.mr_mode as c_int;
            d.threading = sys::FI_THREAD_DOMAIN;
            d.av_type = sys::FI_AV_TABLE;
            d.name = dup_name;
        }
        let mut out = ptr::null_mut();
        // SAFETY: valid hints, an out-pointer of ours; no node or service
        // (the provider picks local addresses).
        let rc = unsafe {
            sys::fi_getinfo(
                api_version(),
                ptr::null(),
                ptr::null(),
                0,
                h.0.as_ptr(),
                &mut out,
            )
        };
        if rc == -(sys::FI_ENODATA as c_int) {
            return Ok(None);
        }
        check("fi_getinfo", rc as isize)?;
        Ok(NonNull::new(out).map(InfoList))
    }

    /// The entries, in libfabric's order of preference.
    pub fn iter(&self) -> impl Iterator<Item = InfoRef<'_>> {
        let mut next = Some(self.0);
        std::iter::from_fn(move || {
            let cur = next?;
            // SAFETY: `cur` is an entry of the list we own; its `next` is
            // the following entry or null.
            next = NonNull::new(unsafe { (*cur.as_ptr()).next });
            Some(InfoRef {
                ptr: cur,
                _list: PhantomData,
            })
        })
    }
}

/// One entry of an [`InfoList`].
#[derive(Clone, Copy, Debug)]
pub struct InfoRef<'a> {
    ptr: NonNull<sys::fi_info>,
    _list: PhantomData<&'a InfoList>,
}

fn text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: libfabric's names are NUL-terminated strings owned by the
    // fi_info, which outlives this call.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

impl InfoRef<'_> {
    fn info(&self) -> &sys::fi_info {
        // SAFETY: the entry lives as long as the list `self` borrows.
        unsafe { self.ptr.as_ref() }
    }

    fn domain_attr(&self) -> Option<&sys::fi_domain_attr> {
        // SAFETY: null or an attribute struct owned by the entry.
        unsafe { self.info().domain_attr.as_ref() }
    }

    fn fabric_attr(&self) -> Option<&sys::fi_fabric_attr> {
        // SAFETY: null or an attribute struct owned by the entry.
        unsafe { self.info().fabric_attr.as_ref() }
    }

    /// The provider (`tcp;ofi_rxm`).
    pub fn provider(&self) -> String {
        self.fabric_attr()
            .map_or_else(String::new, |f| text(f.prov_name))
    }

    /// The domain (`lo`, `eth0`).
    pub fn domain(&self) -> String {
        self.domain_attr()
            .map_or_else(String::new, |d| text(d.name))
    }

    /// The `FI_MR_*` bits the provider asks for.
    pub fn mr_mode(&self) -> u32 {
        self.domain_attr().map_or(0, |d| d.mr_mode as u32)
    }

    /// Whether data moves without the application's calls.
    pub fn auto_progress(&self) -> bool {
        self.domain_attr()
            .is_some_and(|d| d.data_progress == sys::FI_PROGRESS_AUTO)
    }

    /// The largest message (and RMA transfer) of the endpoint.
    pub fn max_msg_size(&self) -> u64 {
        // SAFETY: null or an attribute struct owned by the entry.
        unsafe { self.info().ep_attr.as_ref() }.map_or(0, |e| e.max_msg_size as u64)
    }

    /// Depths of the transmit and receive queues.
    pub fn queue_sizes(&self) -> (usize, usize) {
        let i = self.info();
        // SAFETY: null or attribute structs owned by the entry.
        let (tx, rx) = unsafe { (i.tx_attr.as_ref(), i.rx_attr.as_ref()) };
        (tx.map_or(0, |t| t.size), rx.map_or(0, |r| r.size))
    }

    /// The link speed the provider reports, in bits per second (0: none).
    pub fn link_speed(&self) -> u64 {
        // SAFETY: `nic` is null or a NIC description owned by the entry,
        // whose `link_attr` is null or owned by it.
        unsafe {
            self.info()
                .nic
                .as_ref()
                .and_then(|n| n.link_attr.as_ref())
                .map_or(0, |l| l.speed as u64)
        }
    }
}

/// A CQ error entry, read out.
#[derive(Debug)]
pub struct CqError {
    /// The operation context the failed operation was posted with.
    pub context: *mut c_void,
    /// The positive `FI_E*` code.
    pub code: i32,
    /// The provider's explanation.
    pub message: String,
}

/// A memory registration made by an [`Endpoint`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MrId(u64);

/// One RDM endpoint with its fabric, domain, address vector and completion
/// queue, and the memory registrations made on its domain.
///
/// Invariant: each pointer is null or a live object of ours; objects are
/// created fabric, domain, av, cq, ep and closed in the reverse order.
#[derive(Debug)]
pub struct Endpoint {
    fabric: *mut sys::fid_fabric,
    domain: *mut sys::fid_domain,
    av: *mut sys::fid_av,
    cq: *mut sys::fid_cq,
    ep: *mut sys::fid_ep,
    mrs: Table<NonNull<sys::fid_mr>>,
    mr_mode: u32,
    next_key: u64,
    wait_fd: Option<c_int>,
    name: Vec<u8>,
}

/// The `struct fid` every libfabric object begins with.
fn fid<T>(p: *mut T) -> *mut sys::fid {
    p.cast()
}

/// `fid->ops`, checked.
///
/// # Safety
/// `f` is a live libfabric object.
unsafe fn fid_ops<'a>(f: *mut sys::fid) -> Result<&'a sys::fi_ops, FiError> {
    // SAFETY: a live object's `ops` is null or its static ops table.
    unsafe { (*f).ops.as_ref() }.ok_or(FiError::missing("fid ops"))
}

/// `fi_close`.
///
/// # Safety
/// `f` is a live libfabric object, not used after this.
unsafe fn close(f: *mut sys::fid) -> Result<(), FiError> {
    // SAFETY: as the caller promises.
    let ops = unsafe { fid_ops(f) }?;
    let c = ops.close.ok_or(FiError::missing("fi_close"))?;
    // SAFETY: `f` is live and its own close entry is called once.
    check("fi_close", unsafe { c(f) } as isize).map(drop)
}

/// `fi_bind` / `fi_ep_bind` / `fi_mr_bind`.
///
/// # Safety
/// `f` and `to` are live objects of one domain.
unsafe fn bind(f: *mut sys::fid, to: *mut sys::fid, flags: u64) -> Result<(), FiError> {
    // SAFETY: as the caller promises.
    let ops = unsafe { fid_ops(f) }?;
    let b = ops.bind.ok_or(FiError::missing("fi_bind"))?;
    // SAFETY: both live, per the caller.
    check("fi_bind", unsafe { b(f, to, flags) } as isize).map(drop)
}

/// `fi_control`.
///
/// # Safety
/// `f` is live; `arg` is what `command` expects.
unsafe fn control(f: *mut sys::fid, command: u32, arg: *mut c_void) -> Result<(), FiError> {
    // SAFETY: as the caller promises.
    let ops = unsafe { fid_ops(f) }?;
    let c = ops.control.ok_or(FiError::missing("fi_control"))?;
    // SAFETY: per the caller.
    check("fi_control", unsafe { c(f, command as c_int, arg) }
        as isize)
    .map(drop)
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // Providers that bind registrations to the endpoint
        // (FI_MR_ENDPOINT) refuse to close it while they exist; others
        // close the endpoint first, so no posted receive still points
        // into memory whose registration is gone.
        let mrs_first = self.mr_mode & sys::FI_MR_ENDPOINT != 0;
        if mrs_first {
            self.close_mrs();
        }
        // SAFETY: each pointer is null or a live object of ours, closed
        // once, endpoint before what it is bound to (invariant).
        unsafe {
            if !self.ep.is_null() {
                let _ = close(fid(self.ep));
                self.ep = ptr::null_mut();
            }
        }
        if !mrs_first {
            self.close_mrs();
        }
        // SAFETY: as above; cq and av before their domain, the domain
        // before its fabric.
        unsafe {
            for f in [
                fid(self.cq),
                fid(self.av),
                fid(self.domain),
                fid(self.fabric),
            ] {
                if !f.is_null() {
                    let _ = close(f);
                }
            }
        }
    }
}

impl Endpoint {
    /// Open fabric, domain, address vector (a table for `peers`
    /// addresses), completion queue (`cq_size` deep; with a wait
    /// descriptor when the provider has one) and an enabled endpoint for
    /// `info`.
    pub fn open(info: InfoRef<'_>, peers: usize, cq_size: usize) -> Result<Self, FiError> {
        let mut e = Endpoint {
            fabric: ptr::null_mut(),
            domain: ptr::null_mut(),
            av: ptr::null_mut(),
            cq: ptr::null_mut(),
            ep: ptr::null_mut(),
            mrs: Table::default(),
            mr_mode: info.mr_mode(),
            next_key: 1,
            wait_fd: None,
            name: Vec::new(),
        };
        let i = info.ptr.as_ptr();
        // SAFETY: `i` is a live fi_info entry (owned by the list `info`
        // borrows); every out-pointer is a field of `e`, which closes what
        // was opened if a later step fails (its Drop).
        unsafe {
            check(
                "fi_fabric",
                sys::fi_fabric((*i).fabric_attr, &mut e.fabric, ptr::null_mut()) as isize,
            )?;
            let fops = (*e.fabric)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_domain"))?;
            let f = fops.domain.ok_or(FiError::missing("fi_domain"))?;
            check(
                "fi_domain",
                f(e.fabric, i, &mut e.domain, ptr::null_mut()) as isize,
            )?;
            let dops = (*e.domain)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_av_open"))?;

            let mut av_attr = sys::fi_av_attr {
                type_: sys::FI_AV_TABLE,
                count: peers,
                ..Default::default()
            };
            let f = dops.av_open.ok_or(FiError::missing("fi_av_open"))?;
            check(
                "fi_av_open",
                f(e.domain, &mut av_attr, &mut e.av, ptr::null_mut()) as isize,
            )?;

            let f = dops.cq_open.ok_or(FiError::missing("fi_cq_open"))?;
            let mut cq_attr = sys::fi_cq_attr {
                size: cq_size,
                format: sys::FI_CQ_FORMAT_MSG,
                wait_obj: sys::FI_WAIT_FD,
                ..Default::default()
            };
            if f(e.domain, &mut cq_attr, &mut e.cq, ptr::null_mut()) < 0 {
                // No file descriptor to wait on: poll only.
                e.cq = ptr::null_mut();
                cq_attr.wait_obj = sys::FI_WAIT_NONE;
                check(
                    "fi_cq_open",
                    f(e.domain, &mut cq_attr, &mut e.cq, ptr::null_mut()) as isize,
                )?;
            } else {
                let mut fd: c_int = -1;
                if control(fid(e.cq), sys::FI_GETWAIT, (&raw mut fd).cast()).is_ok() && fd >= 0 {
                    e.wait_fd = Some(fd);
                }
            }

            let f = dops.endpoint.ok_or(FiError::missing("fi_endpoint"))?;
            check(
                "fi_endpoint",
                f(e.domain, i, &mut e.ep, ptr::null_mut()) as isize,
            )?;
            bind(fid(e.ep), fid(e.av), 0)?;
            bind(
                fid(e.ep),
                fid(e.cq),
                u64::from(sys::FI_TRANSMIT | sys::FI_RECV),
            )?;
            control(fid(e.ep), sys::FI_ENABLE, ptr::null_mut())?;
        }
        e.name = e.getname()?;
        Ok(e)
    }

    fn getname(&self) -> Result<Vec<u8>, FiError> {
        let mut buf = vec![0u8; 64];
        for _ in 0..2 {
            let mut len = buf.len();
            // SAFETY: `ep` is live (opened); `cm` is its static table;
            // `buf` holds `len` writable bytes.
            let rc = unsafe {
                let cm = (*self.ep)
                    .cm
                    .as_ref()
                    .ok_or(FiError::missing("fi_getname"))?;
                let f = cm.getname.ok_or(FiError::missing("fi_getname"))?;
                f(fid(self.ep), buf.as_mut_ptr().cast(), &mut len)
            };
            if rc == -(sys::FI_ETOOSMALL as c_int) {
                buf.resize(len, 0);
                continue;
            }
            check("fi_getname", rc as isize)?;
            buf.truncate(len);
            return Ok(buf);
        }
        Err(FiError::from_rc(
            "fi_getname",
            -(sys::FI_ETOOSMALL as isize),
        ))
    }

    /// The endpoint's address, for peers' address vectors.
    pub fn name(&self) -> &[u8] {
        &self.name
    }

    /// The CQ's wait descriptor, when it has one.
    pub fn wait_fd(&self) -> Option<c_int> {
        self.wait_fd
    }

    /// Whether local buffers need a registration (`FI_MR_LOCAL`).
    pub fn local_mr(&self) -> bool {
        self.mr_mode & sys::FI_MR_LOCAL != 0
    }

    /// Whether remote addresses are virtual addresses (`FI_MR_VIRT_ADDR`)
    /// rather than offsets into the registration.
    pub fn virt_addr(&self) -> bool {
        self.mr_mode & sys::FI_MR_VIRT_ADDR != 0
    }

    /// Add a peer's address (as its [`Endpoint::name`] gave it) to the
    /// address vector.
    pub fn av_insert(&self, addr: &[u8]) -> Result<Addr, FiError> {
        // The provider reads as many bytes as its address format says: an
        // address shorter than ours is not one of this provider's.
        if addr.len() < self.name.len() {
            return Err(FiError::from_rc("fi_av_insert", -(sys::FI_EINVAL as isize)));
        }
        let mut out: Addr = sys::FI_ADDR_UNSPEC;
        // SAFETY: `av` is live; `addr` holds one address of our format
        // (checked above); `out` receives one fi_addr_t.
        let rc = unsafe {
            let ops = (*self.av)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_av_insert"))?;
            let f = ops.insert.ok_or(FiError::missing("fi_av_insert"))?;
            f(
                self.av,
                addr.as_ptr().cast(),
                1,
                &mut out,
                0,
                ptr::null_mut(),
            )
        };
        match check("fi_av_insert", rc as isize)? {
            1 => Ok(out),
            _ => Err(FiError::from_rc("fi_av_insert", -(sys::FI_EINVAL as isize))),
        }
    }

    /// Register `len` bytes at `buf` for `access` (`FI_*` bits), bound to
    /// the endpoint if the provider wants that.
    ///
    /// # Safety
    /// `buf..buf+len` stays allocated until [`Endpoint::mr_close`] of the
    /// returned id or the endpoint's drop; while it is registered for
    /// remote access, peers may read it at any time.
    pub unsafe fn mr_reg(
        &mut self,
        buf: *const u8,
        len: usize,
        access: u64,
    ) -> Result<MrId, FiError> {
        let key = if self.mr_mode & sys::FI_MR_PROV_KEY != 0 {
            0
        } else {
            self.next_key += 1;
            self.next_key
        };
        let mut mr: *mut sys::fid_mr = ptr::null_mut();
        // SAFETY: `domain` is live; its `mr` table is static; the buffer
        // stays allocated per the caller.
        unsafe {
            let ops = (*self.domain)
                .mr
                .as_ref()
                .ok_or(FiError::missing("fi_mr_reg"))?;
            let f = ops.reg.ok_or(FiError::missing("fi_mr_reg"))?;
            check(
                "fi_mr_reg",
                f(
                    fid(self.domain),
                    buf.cast(),
                    len,
                    access,
                    0,
                    key,
                    0,
                    &mut mr,
                    ptr::null_mut(),
                ) as isize,
            )?;
        }
        let mr = NonNull::new(mr).ok_or(FiError::missing("fi_mr_reg"))?;
        if self.mr_mode & sys::FI_MR_ENDPOINT != 0 {
            // SAFETY: `mr` and `ep` are live objects of one domain; a
            // failed bind closes the registration again.
            let bound = unsafe {
                bind(fid(mr.as_ptr()), fid(self.ep), 0)
                    .and_then(|()| control(fid(mr.as_ptr()), sys::FI_ENABLE, ptr::null_mut()))
            };
            if let Err(e) = bound {
                // SAFETY: `mr` is live and not used after this.
                let _ = unsafe { close(fid(mr.as_ptr())) };
                return Err(e);
            }
        }
        Ok(MrId(self.mrs.insert(mr)))
    }

    fn mr(&self, id: MrId) -> Option<&sys::fid_mr> {
        // SAFETY: registrations in the table are live until mr_close.
        self.mrs.get(id.0).map(|m| unsafe { m.as_ref() })
    }

    /// The registration's local descriptor (for `desc` arguments).
    pub fn mr_desc(&self, id: MrId) -> *mut c_void {
        self.mr(id).map_or(ptr::null_mut(), |m| m.mem_desc)
    }

    /// The registration's remote key (`fi_mr_key`; the plugin never asks
    /// for `FI_MR_RAW`, so the key is the `key` field).
    pub fn mr_key(&self, id: MrId) -> u64 {
        self.mr(id).map_or(0, |m| m.key)
    }

    /// Drop a registration.
    pub fn mr_close(&mut self, id: MrId) {
        if let Some(m) = self.mrs.remove(id.0) {
            // SAFETY: the registration was live (in the table) and is not
            // used after this.
            let _ = unsafe { close(fid(m.as_ptr())) };
        }
    }

    fn close_mrs(&mut self) {
        for m in self.mrs.drain() {
            // SAFETY: as in mr_close.
            let _ = unsafe { close(fid(m.as_ptr())) };
        }
    }

    fn msg_ops(&self) -> Result<&sys::fi_ops_msg, FiError> {
        // SAFETY: `ep` is live; `msg` is null or its static table.
        unsafe { (*self.ep).msg.as_ref() }.ok_or(FiError::missing("fi_send"))
    }

    /// `fi_send`.
    ///
    /// # Safety
    /// `buf` (`len` bytes) and `ctx` (an `fi_context2`-sized area) stay
    /// valid and unchanged until the completion for `ctx` is read or the
    /// endpoint is dropped; `desc` is null or a descriptor of a live
    /// registration covering `buf`.
    pub unsafe fn send(
        &self,
        buf: *const u8,
        len: usize,
        desc: *mut c_void,
        dest: Addr,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        let f = self.msg_ops()?.send.ok_or(FiError::missing("fi_send"))?;
        // SAFETY: `ep` is live; buffer and context per the caller.
        check("fi_send", unsafe {
            f(self.ep, buf.cast(), len, desc, dest, ctx)
        })
        .map(drop)
    }

    /// `fi_recv` from any peer.
    ///
    /// # Safety
    /// As [`Endpoint::send`], and nobody reads or writes `buf` until the
    /// completion.
    pub unsafe fn recv(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        let f = self.msg_ops()?.recv.ok_or(FiError::missing("fi_recv"))?;
        // SAFETY: `ep` is live; buffer and context per the caller.
        check("fi_recv", unsafe {
            f(self.ep, buf.cast(), len, desc, sys::FI_ADDR_UNSPEC, ctx)
        })
        .map(drop)
    }

    /// `fi_read`: `len` bytes at the peer's (`addr`, `key`) into `buf`.
    ///
    /// # Safety
    /// As [`Endpoint::recv`].
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn read(
        &self,
        buf: *mut u8,
        len: usize,
        desc: *mut c_void,
        src: Addr,
        addr: u64,
        key: u64,
        ctx: *mut c_void,
    ) -> Result<(), FiError> {
        // SAFETY: `ep` is live; `rma` is null or its static table.
        let ops = unsafe { (*self.ep).rma.as_ref() }.ok_or(FiError::missing("fi_read"))?;
        let f = ops.read.ok_or(FiError::missing("fi_read"))?;
        // SAFETY: `ep` is live; buffer and context per the caller.
        check("fi_read", unsafe {
            f(self.ep, buf.cast(), len, desc, src, addr, key, ctx)
        })
        .map(drop)
    }

    /// Read completions into `out`: how many (0 when none). An error entry
    /// waiting shows as `Err` with code `FI_EAVAIL`: read it with
    /// [`Endpoint::cq_readerr`].
    pub fn cq_read(&self, out: &mut [sys::fi_cq_msg_entry]) -> Result<usize, FiError> {
        // SAFETY: `cq` is live (FI_CQ_FORMAT_MSG); `out` holds `len`
        // entries of that format.
        let rc = unsafe {
            let ops = (*self.cq)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_cq_read"))?;
            let f = ops.read.ok_or(FiError::missing("fi_cq_read"))?;
            f(self.cq, out.as_mut_ptr().cast(), out.len())
        };
        if rc == -(sys::FI_EAGAIN as isize) {
            return Ok(0);
        }
        check("fi_cq_read", rc).map(|n| n as usize)
    }

    /// Read one error entry.
    pub fn cq_readerr(&self) -> Result<CqError, FiError> {
        let mut e = sys::fi_cq_err_entry::default();
        // SAFETY: `cq` is live; `e` is an error entry with err_data_size 0
        // (the provider points err_data at its own buffer, valid until the
        // next read, which is after the strerror call below).
        unsafe {
            let ops = (*self.cq)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_cq_readerr"))?;
            let f = ops.readerr.ok_or(FiError::missing("fi_cq_readerr"))?;
            check("fi_cq_readerr", f(self.cq, &mut e, 0))?;
            let mut message = strerror(e.err);
            if let Some(s) = ops.strerror {
                let mut buf = [0 as std::ffi::c_char; 256];
                let p = s(
                    self.cq,
                    e.prov_errno,
                    e.err_data,
                    buf.as_mut_ptr(),
                    buf.len(),
                );
                let detail = text(p);
                if !detail.is_empty() && detail != message {
                    message = format!("{message} ({detail})");
                }
            }
            Ok(CqError {
                context: e.op_context,
                code: e.err,
                message,
            })
        }
    }

    /// `fi_trywait` on the CQ: `true` when the caller may block on the wait
    /// descriptor, `false` when completions are pending.
    pub fn trywait(&self) -> Result<bool, FiError> {
        let mut fids = [fid(self.cq)];
        // SAFETY: `fabric` and `cq` are live; `fids` holds one fid.
        let rc = unsafe {
            let ops = (*self.fabric)
                .ops
                .as_ref()
                .ok_or(FiError::missing("fi_trywait"))?;
            let f = ops.trywait.ok_or(FiError::missing("fi_trywait"))?;
            f(self.fabric, fids.as_mut_ptr(), 1)
        };
        if rc == -(sys::FI_EAGAIN as c_int) {
            return Ok(false);
        }
        check("fi_trywait", rc as isize).map(|_| true)
    }
}

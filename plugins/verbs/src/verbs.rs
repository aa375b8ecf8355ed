//! Owning handles for the libibverbs objects the plugin uses, and the
//! data-path verbs that `verbs.h` defines `static inline`.
//!
//! Each handle frees its object on drop. The handles do not borrow their
//! parents (a QP does not hold a `&Pd`): the owner, [`crate::transport`],
//! drops them in the order libibverbs needs (QPs, then memory regions,
//! then the CQ, the completion channel, the PD, and the device last).
//!
//! `ibv_post_send`, `ibv_post_recv`, `ibv_poll_cq` and `ibv_req_notify_cq`
//! are inline calls through `qp->context->ops` / `cq->context->ops` in
//! `verbs.h`; here they call the same function-pointer fields of the
//! generated `ibv_context_ops`. `ibv_query_port` is an inline that falls
//! back to the exported compat symbol; the plugin calls that symbol with a
//! zeroed full `ibv_port_attr`, as the inline's fallback does. `ibv_reg_mr`
//! is a macro that calls the exported function when no optional access
//! flag is asked for, which is always the case here.

use std::alloc::Layout;
use std::ffi::{CStr, c_int, c_void};
use std::ptr::NonNull;

use crate::sys;

/// `errno` as text, without Rust's " (os error N)" suffix.
pub(crate) fn errno_text(code: c_int) -> String {
    let text = std::io::Error::from_raw_os_error(code).to_string();
    match text.rsplit_once(" (os error") {
        Some((head, _)) => head.to_string(),
        None => text,
    }
}

/// The calling thread's `errno` (for the verbs that return null).
pub(crate) fn last_errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// A verbs return code: zero is success, anything else an `errno` value.
fn check(rc: c_int) -> Result<(), c_int> {
    if rc == 0 {
        Ok(())
    } else {
        // Some providers return -1 and set errno instead.
        Err(if rc < 0 { last_errno() } else { rc })
    }
}

/// A static C string from libibverbs (`ibv_wc_status_str` and friends).
fn static_text(p: *const std::ffi::c_char) -> String {
    if p.is_null() {
        return "?".into();
    }
    // SAFETY: the `*_str` functions return pointers to static,
    // NUL-terminated strings.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// `ibv_wc_status_str`.
pub(crate) fn wc_status_text(status: sys::ibv_wc_status) -> String {
    // SAFETY: a pure lookup; any value is accepted ("unknown").
    static_text(unsafe { sys::ibv_wc_status_str(status) })
}

/// `ibv_port_state_str`.
pub(crate) fn port_state_text(state: sys::ibv_port_state) -> String {
    // SAFETY: a pure lookup; any value is accepted.
    static_text(unsafe { sys::ibv_port_state_str(state) })
}

/// `ibv_event_type_str`.
pub(crate) fn event_text(kind: sys::ibv_event_type) -> String {
    // SAFETY: a pure lookup; any value is accepted.
    static_text(unsafe { sys::ibv_event_type_str(kind) })
}

fn set_nonblocking(fd: c_int) -> Result<(), c_int> {
    // SAFETY: fcntl on a descriptor we own; F_GETFL/F_SETFL touch no memory.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(last_errno());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(last_errno());
    }
    Ok(())
}

/// The list of RDMA devices (`ibv_get_device_list`).
#[derive(Debug)]
pub(crate) struct DeviceList {
    list: NonNull<*mut sys::ibv_device>,
    len: usize,
}

impl DeviceList {
    /// The devices, or the `errno` of a failed `ibv_get_device_list`
    /// (`ENOSYS` where the kernel has no RDMA support).
    pub(crate) fn get() -> Result<Self, c_int> {
        let mut n: c_int = 0;
        // SAFETY: `n` is a valid out pointer.
        let list = unsafe { sys::ibv_get_device_list(&mut n) };
        match NonNull::new(list) {
            Some(list) => Ok(Self {
                list,
                len: usize::try_from(n).unwrap_or(0),
            }),
            None => Err(last_errno()),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    fn device(&self, i: usize) -> *mut sys::ibv_device {
        assert!(i < self.len, "device {i} of {}", self.len);
        // SAFETY: the list holds `len` device pointers (then a null).
        unsafe { *self.list.as_ptr().add(i) }
    }

    pub(crate) fn name(&self, i: usize) -> String {
        // SAFETY: a device of the live list; the name is a static string of
        // the device, valid while the list is.
        static_text(unsafe { sys::ibv_get_device_name(self.device(i)) })
    }

    /// Whether device `i` speaks the InfiniBand transport (InfiniBand or
    /// RoCE), the only one whose RC QPs connect by `ibv_modify_qp` alone
    /// (iWARP needs rdma_cm).
    pub(crate) fn is_ib_transport(&self, i: usize) -> bool {
        // SAFETY: a device of the live list; a plain field read.
        unsafe { (*self.device(i)).transport_type == sys::IBV_TRANSPORT_IB }
    }

    pub(crate) fn open(&self, i: usize) -> Result<Device, c_int> {
        // SAFETY: a device of the live list. The context stays valid after
        // the list is freed (ibv_get_device_list(3)).
        let ctx = unsafe { sys::ibv_open_device(self.device(i)) };
        NonNull::new(ctx)
            .map(|ctx| Device { ctx })
            .ok_or_else(last_errno)
    }
}

impl Drop for DeviceList {
    fn drop(&mut self) {
        // SAFETY: the list ibv_get_device_list returned, freed once.
        unsafe { sys::ibv_free_device_list(self.list.as_ptr()) };
    }
}

/// An asynchronous event, acknowledged already.
#[derive(Clone, Copy, Debug)]
pub(crate) struct AsyncEvent {
    pub(crate) kind: sys::ibv_event_type,
    /// The QP number, for QP events.
    pub(crate) qp_num: Option<u32>,
}

/// An open device (`struct ibv_context`).
#[derive(Debug)]
pub(crate) struct Device {
    ctx: NonNull<sys::ibv_context>,
}

impl Device {
    pub(crate) fn as_ptr(&self) -> *mut sys::ibv_context {
        self.ctx.as_ptr()
    }

    pub(crate) fn query(&self) -> Result<sys::ibv_device_attr, c_int> {
        let mut attr = sys::ibv_device_attr::default();
        // SAFETY: a live context and a writable attribute struct.
        check(unsafe { sys::ibv_query_device(self.as_ptr(), &mut attr) })?;
        Ok(attr)
    }

    pub(crate) fn query_port(&self, port: u8) -> Result<sys::ibv_port_attr, c_int> {
        let mut attr = sys::ibv_port_attr::default();
        // SAFETY: a live context; the full-size struct, zeroed, cast to the
        // compat type exactly as verbs.h's inline `___ibv_query_port` does
        // on its fallback path (the compat struct is a prefix of it).
        check(unsafe {
            sys::ibv_query_port(
                self.as_ptr(),
                port,
                (&mut attr as *mut sys::ibv_port_attr).cast(),
            )
        })?;
        Ok(attr)
    }

    pub(crate) fn gid(&self, port: u8, index: u8) -> Result<[u8; 16], c_int> {
        let mut gid = sys::ibv_gid::default();
        // SAFETY: a live context and a writable GID.
        check(unsafe { sys::ibv_query_gid(self.as_ptr(), port, c_int::from(index), &mut gid) })?;
        // SAFETY: every bit pattern is a valid `raw` byte array.
        Ok(unsafe { gid.raw })
    }

    /// The GID table entry's type (`IBV_GID_TYPE_*`), or `None` when the
    /// entry is empty or the kernel cannot say.
    pub(crate) fn gid_type(&self, port: u8, index: u8) -> Option<u32> {
        let mut entry = sys::ibv_gid_entry::default();
        // SAFETY: a live context; `entry` is writable and its size is
        // passed, as verbs.h's inline `ibv_query_gid_ex` does.
        let rc = unsafe {
            sys::_ibv_query_gid_ex(
                self.as_ptr(),
                u32::from(port),
                u32::from(index),
                &mut entry,
                0,
                std::mem::size_of::<sys::ibv_gid_entry>(),
            )
        };
        (rc == 0).then_some(entry.gid_type)
    }

    /// Make the asynchronous event descriptor non-blocking, so that
    /// [`next_async_event`](Self::next_async_event) never waits.
    pub(crate) fn set_async_nonblocking(&self) -> Result<(), c_int> {
        // SAFETY: a live context; a plain field read.
        set_nonblocking(unsafe { (*self.as_ptr()).async_fd })
    }

    /// The next asynchronous event, acknowledged, or `None`.
    pub(crate) fn next_async_event(&self) -> Option<AsyncEvent> {
        let mut ev = sys::ibv_async_event::default();
        // SAFETY: a live context whose async fd is non-blocking; `ev` is
        // writable.
        if unsafe { sys::ibv_get_async_event(self.as_ptr(), &mut ev) } != 0 {
            return None;
        }
        let qp_event = matches!(
            ev.event_type,
            sys::IBV_EVENT_QP_FATAL
                | sys::IBV_EVENT_QP_REQ_ERR
                | sys::IBV_EVENT_QP_ACCESS_ERR
                | sys::IBV_EVENT_COMM_EST
                | sys::IBV_EVENT_SQ_DRAINED
                | sys::IBV_EVENT_PATH_MIG
                | sys::IBV_EVENT_PATH_MIG_ERR
                | sys::IBV_EVENT_QP_LAST_WQE_REACHED
        );
        let qp_num = if qp_event {
            // SAFETY: for QP events the union holds the QP, one of ours and
            // alive (we destroy QPs only at close).
            unsafe { ev.element.qp.as_ref().map(|qp| qp.qp_num) }
        } else {
            None
        };
        let out = AsyncEvent {
            kind: ev.event_type,
            qp_num,
        };
        // SAFETY: the event ibv_get_async_event returned, acknowledged once.
        unsafe { sys::ibv_ack_async_event(&mut ev) };
        Some(out)
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // SAFETY: the context we opened; every object made on it was
        // destroyed before (the owner's drop order).
        unsafe { sys::ibv_close_device(self.as_ptr()) };
    }
}

/// A protection domain.
#[derive(Debug)]
pub(crate) struct Pd {
    pd: NonNull<sys::ibv_pd>,
}

impl Pd {
    pub(crate) fn alloc(dev: &Device) -> Result<Self, c_int> {
        // SAFETY: a live context.
        let pd = unsafe { sys::ibv_alloc_pd(dev.as_ptr()) };
        NonNull::new(pd)
            .map(|pd| Self { pd })
            .ok_or_else(last_errno)
    }

    fn as_ptr(&self) -> *mut sys::ibv_pd {
        self.pd.as_ptr()
    }
}

impl Drop for Pd {
    fn drop(&mut self) {
        // SAFETY: our PD; its QPs and MRs are gone (the owner's drop order).
        unsafe { sys::ibv_dealloc_pd(self.as_ptr()) };
    }
}

/// A completion channel: its descriptor is the plugin's wake-up fd.
#[derive(Debug)]
pub(crate) struct Channel {
    ch: NonNull<sys::ibv_comp_channel>,
}

impl Channel {
    /// A channel whose descriptor is non-blocking.
    pub(crate) fn create(dev: &Device) -> Result<Self, c_int> {
        // SAFETY: a live context.
        let ch = unsafe { sys::ibv_create_comp_channel(dev.as_ptr()) };
        let ch = NonNull::new(ch)
            .map(|ch| Self { ch })
            .ok_or_else(last_errno)?;
        set_nonblocking(ch.fd())?;
        Ok(ch)
    }

    pub(crate) fn fd(&self) -> c_int {
        // SAFETY: our live channel; a plain field read.
        unsafe { (*self.ch.as_ptr()).fd }
    }

    /// Take one completion event off the channel: whether there was one.
    /// The caller acknowledges it on the CQ ([`Cq::ack_events`]).
    pub(crate) fn take_event(&self) -> bool {
        let mut cq = std::ptr::null_mut();
        let mut cq_ctx = std::ptr::null_mut();
        // SAFETY: our live, non-blocking channel; valid out pointers.
        unsafe { sys::ibv_get_cq_event(self.ch.as_ptr(), &mut cq, &mut cq_ctx) == 0 }
    }
}

impl Drop for Channel {
    fn drop(&mut self) {
        // SAFETY: our channel; its CQ is destroyed (the owner's drop order).
        unsafe { sys::ibv_destroy_comp_channel(self.ch.as_ptr()) };
    }
}

/// A completion queue.
#[derive(Debug)]
pub(crate) struct Cq {
    cq: NonNull<sys::ibv_cq>,
}

impl Cq {
    pub(crate) fn create(dev: &Device, entries: u32, channel: &Channel) -> Result<Self, c_int> {
        let entries = c_int::try_from(entries).map_err(|_| libc::EINVAL)?;
        // SAFETY: a live context and channel of it.
        let cq = unsafe {
            sys::ibv_create_cq(
                dev.as_ptr(),
                entries,
                std::ptr::null_mut(),
                channel.ch.as_ptr(),
                0,
            )
        };
        NonNull::new(cq)
            .map(|cq| Self { cq })
            .ok_or_else(last_errno)
    }

    fn ops(&self) -> &sys::ibv_context_ops {
        // SAFETY: a live CQ points at its live context.
        unsafe { &(*(*self.cq.as_ptr()).context).ops }
    }

    /// `ibv_poll_cq`: completions into `wcs`; how many.
    pub(crate) fn poll(&self, wcs: &mut [sys::ibv_wc]) -> Result<usize, c_int> {
        let poll = self.ops().poll_cq.ok_or(libc::EOPNOTSUPP)?;
        let n = c_int::try_from(wcs.len()).unwrap_or(c_int::MAX);
        // SAFETY: the provider's poll on our live CQ; `wcs` has room for
        // `n` entries.
        let rc = unsafe { poll(self.cq.as_ptr(), n, wcs.as_mut_ptr()) };
        usize::try_from(rc).map_err(|_| libc::EIO)
    }

    /// `ibv_req_notify_cq` for every completion.
    pub(crate) fn req_notify(&self) -> Result<(), c_int> {
        let notify = self.ops().req_notify_cq.ok_or(libc::EOPNOTSUPP)?;
        // SAFETY: the provider's arm on our live CQ.
        check(unsafe { notify(self.cq.as_ptr(), 0) })
    }

    /// Acknowledge `n` events taken off the channel.
    pub(crate) fn ack_events(&self, n: u32) {
        // SAFETY: our live CQ; `n` events were taken for it.
        unsafe { sys::ibv_ack_cq_events(self.cq.as_ptr(), n) };
    }
}

impl Drop for Cq {
    fn drop(&mut self) {
        // SAFETY: our CQ; its QPs are destroyed and its events acknowledged
        // (the owner acknowledges each event as it takes it).
        unsafe { sys::ibv_destroy_cq(self.cq.as_ptr()) };
    }
}

/// A queue pair.
#[derive(Debug)]
pub(crate) struct Qp {
    qp: NonNull<sys::ibv_qp>,
    caps: sys::ibv_qp_cap,
}

impl Qp {
    /// A reliable connected QP whose two queues complete on `cq`. The
    /// device may round the capacities up; [`caps`](Self::caps) says what
    /// it granted.
    pub(crate) fn create_rc(pd: &Pd, cq: &Cq, caps: sys::ibv_qp_cap) -> Result<Self, c_int> {
        let mut init = sys::ibv_qp_init_attr {
            qp_context: std::ptr::null_mut(),
            send_cq: cq.cq.as_ptr(),
            recv_cq: cq.cq.as_ptr(),
            srq: std::ptr::null_mut(),
            cap: caps,
            qp_type: sys::IBV_QPT_RC,
            sq_sig_all: 0,
        };
        // SAFETY: a live PD and CQ of the same context; `init` is valid and
        // gets the granted capacities back.
        let qp = unsafe { sys::ibv_create_qp(pd.as_ptr(), &mut init) };
        NonNull::new(qp)
            .map(|qp| Self { qp, caps: init.cap })
            .ok_or_else(last_errno)
    }

    pub(crate) fn num(&self) -> u32 {
        // SAFETY: our live QP; a plain field read.
        unsafe { (*self.qp.as_ptr()).qp_num }
    }

    pub(crate) fn caps(&self) -> sys::ibv_qp_cap {
        self.caps
    }

    /// `ibv_modify_qp` with `mask` (`IBV_QP_*` bits).
    pub(crate) fn modify(&self, attr: &mut sys::ibv_qp_attr, mask: u32) -> Result<(), c_int> {
        let mask = c_int::try_from(mask).map_err(|_| libc::EINVAL)?;
        // SAFETY: our live QP and a valid attribute struct.
        check(unsafe { sys::ibv_modify_qp(self.qp.as_ptr(), attr, mask) })
    }

    /// Move the QP to the error state: it stops, and what it had posted
    /// completes with `IBV_WC_WR_FLUSH_ERR`.
    pub(crate) fn set_error(&self) -> Result<(), c_int> {
        let mut attr = sys::ibv_qp_attr {
            qp_state: sys::IBV_QPS_ERR,
            ..Default::default()
        };
        self.modify(&mut attr, sys::IBV_QP_STATE)
    }

    fn ops(&self) -> &sys::ibv_context_ops {
        // SAFETY: a live QP points at its live context.
        unsafe { &(*(*self.qp.as_ptr()).context).ops }
    }

    /// `ibv_post_send` of one work request (its `next` must be null).
    ///
    /// # Safety
    /// The request's scatter/gather entries name memory registered on this
    /// QP's PD that stays valid (and, for RDMA READ targets, unaliased)
    /// until the request completes; with `IBV_SEND_INLINE`, memory valid
    /// for the call only. Remote addresses and keys are the peer's own.
    pub(crate) unsafe fn post_send(&self, wr: &mut sys::ibv_send_wr) -> Result<(), c_int> {
        debug_assert!(wr.next.is_null());
        let post = self.ops().post_send.ok_or(libc::EOPNOTSUPP)?;
        let mut bad = std::ptr::null_mut();
        // SAFETY: the provider's post on our live QP; the memory the request
        // names is valid as the caller guarantees.
        check(unsafe { post(self.qp.as_ptr(), wr, &mut bad) })
    }

    /// `ibv_post_recv` of one work request (its `next` must be null).
    ///
    /// # Safety
    /// The request's scatter entries name memory registered on this QP's
    /// PD with local write access, which nothing else uses until the
    /// request completes.
    pub(crate) unsafe fn post_recv(&self, wr: &mut sys::ibv_recv_wr) -> Result<(), c_int> {
        debug_assert!(wr.next.is_null());
        let post = self.ops().post_recv.ok_or(libc::EOPNOTSUPP)?;
        let mut bad = std::ptr::null_mut();
        // SAFETY: the provider's post on our live QP; the buffers are ours
        // to give as the caller guarantees.
        check(unsafe { post(self.qp.as_ptr(), wr, &mut bad) })
    }
}

impl Drop for Qp {
    fn drop(&mut self) {
        // SAFETY: our QP, destroyed once; after this the device no longer
        // touches any memory through it.
        unsafe { sys::ibv_destroy_qp(self.qp.as_ptr()) };
    }
}

/// A registered memory region.
#[derive(Debug)]
pub(crate) struct Mr {
    mr: NonNull<sys::ibv_mr>,
}

impl Mr {
    /// Register `len` bytes at `addr` with `access` (`IBV_ACCESS_*`).
    ///
    /// # Safety
    /// The memory stays mapped until the region is dropped, and while it
    /// is registered the device may read it (and write it, if `access`
    /// allows) whenever a posted request or a remote peer asks to: the
    /// caller keeps every such access within what the memory's owner
    /// allowed.
    pub(crate) unsafe fn register(
        pd: &Pd,
        addr: *mut c_void,
        len: usize,
        access: u32,
    ) -> Result<Self, c_int> {
        let access = c_int::try_from(access).map_err(|_| libc::EINVAL)?;
        // SAFETY: a live PD; the memory is mapped per the caller.
        let mr = unsafe { sys::ibv_reg_mr(pd.as_ptr(), addr, len, access) };
        NonNull::new(mr)
            .map(|mr| Self { mr })
            .ok_or_else(last_errno)
    }

    pub(crate) fn lkey(&self) -> u32 {
        // SAFETY: our live MR; a plain field read.
        unsafe { (*self.mr.as_ptr()).lkey }
    }

    pub(crate) fn rkey(&self) -> u32 {
        // SAFETY: as above.
        unsafe { (*self.mr.as_ptr()).rkey }
    }
}

impl Drop for Mr {
    fn drop(&mut self) {
        // SAFETY: our MR, deregistered once.
        unsafe { sys::ibv_dereg_mr(self.mr.as_ptr()) };
    }
}

/// Page-aligned, zeroed memory of the plugin's own, registered.
#[derive(Debug)]
pub(crate) struct Region {
    /// Deregistered first (in `drop`), then the memory is freed.
    mr: Option<Mr>,
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Region {
    pub(crate) fn new(pd: &Pd, len: usize, access: u32) -> Result<Self, c_int> {
        let layout = Layout::from_size_align(len.max(1).next_multiple_of(4096), 4096)
            .map_err(|_| libc::ENOMEM)?;
        // SAFETY: a non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) }).ok_or(libc::ENOMEM)?;
        let mut region = Self {
            mr: None,
            ptr,
            layout,
        };
        // SAFETY: the memory is ours and lives until `drop`, which
        // deregisters before freeing it.
        region.mr = Some(unsafe { Mr::register(pd, ptr.as_ptr().cast(), layout.size(), access) }?);
        Ok(region)
    }

    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn addr(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    fn mr(&self) -> &Mr {
        self.mr.as_ref().expect("registered until drop")
    }

    pub(crate) fn lkey(&self) -> u32 {
        self.mr().lkey()
    }

    pub(crate) fn rkey(&self) -> u32 {
        self.mr().rkey()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        drop(self.mr.take());
        // SAFETY: allocated in `new` with this layout, freed once, after
        // the device lost access to it.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_text_has_no_rust_suffix() {
        for code in [libc::ENOSYS, libc::ENOMEM] {
            let full = std::io::Error::from_raw_os_error(code).to_string();
            let text = errno_text(code);
            // The OS's words, without Rust's " (os error N)" tail.
            assert!(!text.is_empty() && !text.contains("os error"), "{text}");
            assert_eq!(full, format!("{text} (os error {code})"));
        }
    }

    #[test]
    fn status_strings_come_from_libibverbs() {
        assert_eq!(wc_status_text(sys::IBV_WC_SUCCESS), "success");
        assert!(wc_status_text(sys::IBV_WC_RETRY_EXC_ERR).contains("retry"));
        assert_eq!(port_state_text(sys::IBV_PORT_ACTIVE), "active");
        assert!(!event_text(sys::IBV_EVENT_QP_FATAL).is_empty());
    }
}

//! The plugin's own memory and the contexts of posted operations.
//!
//! Every operation is posted with the address of a [`Ctx`]: the provider's
//! scratch area (`FI_CONTEXT2`) first, then what routes the completion
//! back (kind, buffer or read index, fetch id). Contexts live in fixed
//! arrays (of a [`Slots`], or of a fetch), so their addresses stay put
//! while the provider holds them.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ffi::c_void;
use std::ptr::NonNull;

use crate::fi::MrId;
use crate::sys;

/// What a posted operation was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// A receive into a receive buffer.
    Recv,
    /// A send from a send buffer.
    Send,
    /// A read of a fetch.
    Read,
}

/// The context of a posted operation: the provider's scratch area first
/// (`FI_CONTEXT2`: 8 pointers, written by the provider until the
/// completion), then what the plugin needs to route the completion.
#[repr(C)]
#[derive(Debug)]
pub struct Ctx {
    scratch: UnsafeCell<sys::fi_context2>,
    pub kind: Kind,
    /// Receive or send buffer index; read context index in its fetch.
    pub slot: u32,
    /// The fetch of a read.
    pub id: u64,
}

impl Ctx {
    /// A context for an operation of `kind`.
    pub fn new(kind: Kind, slot: u32, id: u64) -> Self {
        Self {
            scratch: UnsafeCell::new(sys::fi_context2::default()),
            kind,
            slot,
            id,
        }
    }

    /// The pointer posted with the operation (the provider writes the
    /// scratch area through it).
    pub fn as_op_context(&self) -> *mut c_void {
        self.scratch.get().cast()
    }
}

/// Page-aligned zeroed memory.
#[derive(Debug)]
pub struct Region {
    ptr: NonNull<u8>,
    layout: Layout,
}

impl Region {
    /// `len` zeroed bytes (at least one).
    pub fn new(len: usize) -> Self {
        let layout = Layout::from_size_align(len.max(1), 4096).expect("a sane buffer size");
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self { ptr, layout }
    }
}

impl Region {
    /// Start of the memory.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// A set of equal buffers, each with its operation context.
#[derive(Debug)]
pub struct Slots {
    mem: Region,
    size: usize,
    /// Each buffer's operation context.
    pub ctxs: Box<[Ctx]>,
    /// The registration of the whole region, under `FI_MR_LOCAL`.
    pub mr: Option<MrId>,
}

impl Slots {
    /// `n` buffers of `size` bytes for operations of `kind`.
    pub fn new(kind: Kind, n: usize, size: usize) -> Self {
        Self {
            mem: Region::new(n * size),
            size,
            ctxs: (0..n).map(|i| Ctx::new(kind, i as u32, 0)).collect(),
            mr: None,
        }
    }

    /// Number of buffers.
    pub fn len(&self) -> usize {
        self.ctxs.len()
    }

    /// The whole region (for its registration).
    pub fn region(&self) -> (*mut u8, usize) {
        (self.mem.as_ptr(), self.mem.len())
    }

    /// Start of buffer `i`.
    pub fn ptr(&self, i: usize) -> *mut u8 {
        assert!(i < self.len());
        // SAFETY: `i` is in bounds, so the offset stays inside the region.
        unsafe { self.mem.ptr.as_ptr().add(i * self.size) }
    }

    /// Buffer `i`, to fill or read. Only while no operation on it is
    /// posted (the caller's business: a send buffer is taken from the
    /// free list, a receive buffer is read at its completion).
    pub fn bytes(&mut self, i: usize) -> &mut [u8] {
        // SAFETY: `ptr(i)` starts `size` bytes inside the region,
        // borrowed mutably with `self`; no operation is posted on it (see
        // above), so the provider does not touch it meanwhile.
        unsafe { std::slice::from_raw_parts_mut(self.ptr(i), self.size) }
    }
}

//! Buffers the engine allocates for receives posted without one.

use crate::heap;

/// A receive buffer the engine allocated for a receive posted without one
/// ([`Endpoint::irecv_managed`](super::Endpoint::irecv_managed)): in the shared heap, so the sender and
/// idle processes can copy into it directly (no cross-memory attach on
/// that side), or in private memory when the heap cannot grow. The memory
/// is returned when the `RecvBuf` is dropped.
pub struct RecvBuf {
    ptr: std::ptr::NonNull<u8>,
    /// Bytes of the message.
    len: usize,
    /// Bytes allocated (at least `len`).
    cap: usize,
    in_heap: bool,
}

// SAFETY: a RecvBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for RecvBuf {}

impl RecvBuf {
    /// A buffer of `len` bytes (at least one byte is allocated, so every
    /// buffer has its own address).
    pub(super) fn new(len: usize) -> Self {
        if let Ok(ptr) = heap::alloc(len.max(1)) {
            return Self {
                ptr,
                len,
                cap: len,
                in_heap: true,
            };
        }
        let layout = Self::private_layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { std::alloc::alloc(layout) };
        let ptr =
            std::ptr::NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        Self {
            ptr,
            len,
            cap: len,
            in_heap: false,
        }
    }

    fn private_layout(len: usize) -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(len.max(1), 64).expect("buffer size fits a layout")
    }

    /// The first byte.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The received bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `len` bytes allocated here and written by the receive
        // before the completion handed the buffer out.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable (the application may reuse them until it drops
    /// the buffer).
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as for `as_slice`; `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Keep only the first `n` bytes visible (the memory stays allocated
    /// until the buffer is dropped).
    pub(super) fn truncate(&mut self, n: usize) {
        self.len = self.len.min(n);
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether it lies in the shared heap.
    pub fn in_shared_heap(&self) -> bool {
        self.in_heap
    }
}

impl Drop for RecvBuf {
    fn drop(&mut self) {
        if self.in_heap {
            // SAFETY: allocated by heap::alloc in `new`, freed once here.
            let _ = unsafe { heap::free(self.ptr) };
        } else {
            // SAFETY: allocated by std::alloc with this layout in `new`.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::private_layout(self.cap)) };
        }
    }
}

impl std::fmt::Debug for RecvBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecvBuf")
            .field("len", &self.len)
            .field("in_heap", &self.in_heap)
            .finish()
    }
}

impl PartialEq for RecvBuf {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for RecvBuf {}

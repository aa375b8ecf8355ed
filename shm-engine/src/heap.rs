//! The shared heap (interface only in this commit; the allocator follows).

use std::ptr::NonNull;

/// Where a shared-heap byte range lives, as a local peer names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapRef {
    /// The owning process.
    pub pid: u32,
    /// The arena's file descriptor in the owner.
    pub fd: u32,
    /// The arena's length.
    pub arena_len: u64,
    /// Offset of the range in the arena.
    pub offset: u64,
}

/// Why the heap failed.
#[derive(Debug)]
pub enum HeapError {
    /// Not available yet.
    Unavailable,
}

/// Allocate from the shared heap.
pub fn alloc(_size: usize) -> Result<NonNull<u8>, HeapError> {
    Err(HeapError::Unavailable)
}

/// Where `ptr..ptr+len` lies in this process's heap.
pub fn locate(_ptr: *const u8, _len: usize) -> Option<HeapRef> {
    None
}

/// Peers' arenas mapped here.
#[derive(Debug, Default)]
pub struct PeerHeaps;

impl PeerHeaps {
    /// An empty cache.
    pub fn new() -> Self {
        Self
    }

    /// The local address of `r`.
    pub fn resolve(&mut self, _r: &HeapRef) -> Result<*mut u8, HeapError> {
        Err(HeapError::Unavailable)
    }
}

/// Return a block to the heap.
///
/// # Safety
/// `ptr` came from [`alloc`] and is not used afterwards.
pub unsafe fn free(_ptr: NonNull<u8>) -> Result<(), HeapError> {
    Err(HeapError::Unavailable)
}

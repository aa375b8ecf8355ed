//! The shared heap: memory that every process of the node can map, so that
//! any local process (the receiver, the sender, a stealer) copies into or
//! out of it with plain loads and stores.
//!
//! # Layout
//! Each process has its own heap, made of *arenas*. An arena is a memfd
//! (close-on-exec, sealed against shrinking and growing, no name in
//! `/dev/shm` or any other file system) of `max(64 MiB, request)` bytes
//! (requests above 64 MiB rounded up to 2 MiB), mapped `MAP_SHARED` once in
//! its owner. Pages cost memory only when first touched, so a mostly empty
//! arena costs address space, not memory. Blocks are carved from arenas in
//! multiples of [`ALIGN`] (64) bytes at 64-byte aligned offsets, by first
//! fit over a per-arena free list kept in address order; a freed block is
//! merged with its free neighbours at once. When no arena has room, a new
//! one is added (at most [`MAX_ARENAS`]).
//!
//! The allocator's bookkeeping (free lists, live blocks) lives in this
//! process's private memory, never in the arenas: a peer that writes
//! anywhere in an arena can spoil data, never the allocator, and [`free`]
//! of anything but a live block is an error.
//!
//! # Naming memory across processes
//! A byte range of an arena is named by a [`HeapRef`]: the owner's pid, the
//! arena's descriptor number *in the owner*, the arena's length and the
//! offset. [`locate`] answers it for a pointer of this process without a
//! system call or a lock (arenas are published once, in order, in a fixed
//! table). A peer turns it into an address with [`PeerHeaps::resolve`]:
//! the first time it meets an arena it takes a copy of the descriptor with
//! `pidfd_open` + `pidfd_getfd`, or where the kernel lacks them opens it
//! through `/proc/PID/fd` (the kernel asks for `ptrace` permission: to
//! attach, as for cross-memory attach, or to read) and maps it shared; later
//! resolves are a table look-up. Where the kernel refuses, the error says
//! so and the engine treats that end as private memory.
//!
//! # Lifetime
//! Arenas are never unmapped and their descriptors never closed while the
//! process lives: peers name an arena by its descriptor number, which must
//! keep meaning that arena as long as anyone may still ask, and mappings in
//! peers keep addresses stable. Blocks freed return to their arena's free
//! list. When the process ends, normally or by `kill -9`, the kernel
//! closes its descriptors and its mappings; a memfd disappears with the
//! last descriptor or mapping of it, so an arena outlives its owner only
//! while some peer still has it mapped, and nothing is left behind once
//! every process of the job is gone.
//!
//! A child made by `fork` inherits the parent's arenas, mapped shared: it
//! may read and write them and [`locate`] in it names the parent's arenas,
//! but [`alloc`] and [`free`] there fail with [`HeapError::Forked`], since
//! the parent still allocates from the same memory.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::os::fd::IntoRawFd;
use std::ptr::NonNull;
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::sys::{self, Mapping};

/// Alignment and size granule of every block, in bytes (a cache line pair
/// on most machines; 64 suits AVX-512 loads).
pub const ALIGN: usize = 64;

/// The smallest arena: 64 MiB.
pub const ARENA_MIN: usize = 64 << 20;

/// Larger arenas are rounded up to this many bytes (2 MiB, so that a huge
/// page never spans two arenas).
const ARENA_GRANULE: usize = 2 << 20;

/// Most arenas a process may have.
pub const MAX_ARENAS: usize = 256;

/// Where a shared-heap byte range lives, as a local peer names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeapRef {
    /// The process whose heap holds the range.
    pub pid: u32,
    /// The arena's descriptor number in that process.
    pub fd: u32,
    /// The arena's length in bytes.
    pub arena_len: u64,
    /// Offset of the range's first byte in the arena.
    pub offset: u64,
}

/// Why the shared heap could not allocate, free or map.
#[derive(Debug)]
#[non_exhaustive]
pub enum HeapError {
    /// The request, rounded up to [`ALIGN`], does not fit in a `usize`.
    TooLarge {
        /// The size asked for.
        size: usize,
    },
    /// The process already has [`MAX_ARENAS`] arenas and none has room.
    TooManyArenas,
    /// Creating, sizing or mapping an arena failed (ENOMEM, EMFILE...).
    Os {
        /// The failing step.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// [`free`] of an address that is not a live block of this heap.
    NotAllocated {
        /// The address given.
        addr: usize,
    },
    /// [`alloc`] or [`free`] in a child forked from the process whose heap
    /// it inherited.
    Forked,
    /// The kernel refused to hand over the peer's arena (EPERM or EACCES:
    /// `ptrace` policy, another user, a non-dumpable process).
    PeerRefused {
        /// The peer.
        pid: u32,
        /// The OS error.
        source: io::Error,
    },
    /// The peer process no longer exists (ESRCH).
    PeerGone {
        /// The peer.
        pid: u32,
    },
    /// Another OS error while mapping a peer's arena.
    Peer {
        /// The peer.
        pid: u32,
        /// The failing step.
        what: &'static str,
        /// The OS error.
        source: io::Error,
    },
    /// The reference names no arena: its offset is outside the arena, the
    /// peer's descriptor is shorter than the arena length it claims, or an
    /// arena already mapped under that name has another length.
    BadRef {
        /// The reference given.
        reference: HeapRef,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl HeapError {
    fn os(what: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| Self::Os { what, source }
    }

    fn peer(pid: u32, what: &'static str) -> impl FnOnce(io::Error) -> Self {
        move |source| match source.raw_os_error() {
            Some(libc::EPERM | libc::EACCES) => Self::PeerRefused { pid, source },
            Some(libc::ESRCH) => Self::PeerGone { pid },
            _ => Self::Peer { pid, what, source },
        }
    }
}

impl fmt::Display for HeapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { size } => write!(f, "cannot allocate {size} bytes: too large"),
            Self::TooManyArenas => {
                write!(
                    f,
                    "the shared heap already has {MAX_ARENAS} arenas, all full"
                )
            }
            Self::Os { what, source } => write!(f, "shared heap: {what}: {source}"),
            Self::NotAllocated { addr } => {
                write!(f, "{addr:#x} is not a live block of the shared heap")
            }
            Self::Forked => write!(
                f,
                "this process was forked from the shared heap's owner and may not allocate from it"
            ),
            Self::PeerRefused { pid, source } => write!(
                f,
                "process {pid} refused access to its shared heap ({source}); check the ptrace policy"
            ),
            Self::PeerGone { pid } => write!(f, "process {pid} has exited"),
            Self::Peer { pid, what, source } => {
                write!(f, "shared heap of process {pid}: {what}: {source}")
            }
            Self::BadRef { reference, reason } => {
                write!(f, "bad shared heap reference {reference:?}: {reason}")
            }
        }
    }
}

impl std::error::Error for HeapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Os { source, .. }
            | Self::PeerRefused { source, .. }
            | Self::Peer { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The free ranges of one arena, `offset -> length`, in address order,
/// never two adjacent (they are merged when freed).
#[derive(Debug, Default)]
struct FreeList(BTreeMap<u64, u64>);

impl FreeList {
    /// A list with one free range `0..len`.
    fn whole(len: u64) -> Self {
        Self(BTreeMap::from([(0, len)]))
    }

    /// Take `len` bytes from the lowest free range that holds them (first
    /// fit); returns their offset.
    fn take(&mut self, len: u64) -> Option<u64> {
        let (&off, &have) = self.0.iter().find(|&(_, &have)| have >= len)?;
        self.0.remove(&off);
        if have > len {
            self.0.insert(off + len, have - len);
        }
        Some(off)
    }

    /// Return `off..off + len`, merging it with free neighbours.
    fn give(&mut self, mut off: u64, mut len: u64) {
        if let Some((&prev, &plen)) = self.0.range(..off).next_back()
            && prev + plen == off
        {
            self.0.remove(&prev);
            off = prev;
            len += plen;
        }
        if let Some(next_len) = self.0.remove(&(off + len)) {
            len += next_len;
        }
        self.0.insert(off, len);
    }
}

/// An arena as published for lock-free look-ups.
#[derive(Debug)]
struct Arena {
    base: usize,
    len: usize,
    fd: u32,
    pid: u32,
}

impl Arena {
    /// `addr - base` when `addr..addr + len` lies inside this arena.
    fn offset_of(&self, addr: usize, len: usize) -> Option<usize> {
        let off = addr.checked_sub(self.base)?;
        (off < self.len && len <= self.len - off).then_some(off)
    }
}

/// Arenas in creation order; slot `i` is set once, under the heap lock,
/// before slot `i + 1`, so readers stop at the first empty slot.
static ARENAS: [OnceLock<Arena>; MAX_ARENAS] = [const { OnceLock::new() }; MAX_ARENAS];

/// A live block: its arena (index in [`ARENAS`]) and length.
#[derive(Debug, Clone, Copy)]
struct Block {
    arena: usize,
    len: u64,
}

/// The allocator's private state.
#[derive(Debug)]
struct Heap {
    /// The process that created the arenas (0 before the first).
    pid: u32,
    /// Free list of arena `i`.
    free: Vec<FreeList>,
    /// Live blocks by address.
    live: BTreeMap<usize, Block>,
}

static HEAP: Mutex<Heap> = Mutex::new(Heap {
    pid: 0,
    free: Vec::new(),
    live: BTreeMap::new(),
});

impl Heap {
    fn check_owner(&mut self) -> Result<(), HeapError> {
        let me = sys::pid();
        match self.pid {
            0 => self.pid = me,
            p if p != me => return Err(HeapError::Forked),
            _ => {}
        }
        Ok(())
    }

    fn alloc(&mut self, size: usize) -> Result<NonNull<u8>, HeapError> {
        self.check_owner()?;
        let need = size
            .max(1)
            .checked_next_multiple_of(ALIGN)
            .ok_or(HeapError::TooLarge { size })?;
        let found = self
            .free
            .iter_mut()
            .enumerate()
            .find_map(|(i, list)| Some((i, list.take(need as u64)?)));
        let (arena, off) = match found {
            Some(hit) => hit,
            None => {
                let i = self.add_arena(need)?;
                let off = self.free[i]
                    .take(need as u64)
                    .ok_or(HeapError::TooLarge { size })?;
                (i, off)
            }
        };
        let addr = arena_at(arena).base + off as usize;
        self.live.insert(
            addr,
            Block {
                arena,
                len: need as u64,
            },
        );
        // SAFETY: `addr` lies inside a live mapping, whose base is non-null.
        Ok(unsafe { NonNull::new_unchecked(addr as *mut u8) })
    }

    fn free(&mut self, addr: usize) -> Result<(), HeapError> {
        self.check_owner()?;
        let block = self
            .live
            .remove(&addr)
            .ok_or(HeapError::NotAllocated { addr })?;
        let off = (addr - arena_at(block.arena).base) as u64;
        self.free[block.arena].give(off, block.len);
        Ok(())
    }

    /// Create, map and publish an arena of at least `need` bytes; returns
    /// its index.
    fn add_arena(&mut self, need: usize) -> Result<usize, HeapError> {
        let i = self.free.len();
        if i == MAX_ARENAS {
            return Err(HeapError::TooManyArenas);
        }
        let len = need
            .checked_next_multiple_of(ARENA_GRANULE)
            .ok_or(HeapError::TooLarge { size: need })?
            .max(ARENA_MIN);
        let fd = sys::memfd_sized(c"tessel-heap", len as u64).map_err(HeapError::os("memfd"))?;
        let map = Mapping::map_shared(&fd, len).map_err(HeapError::os("mmap"))?;
        let arena = Arena {
            base: map.leak() as usize,
            len,
            fd: fd.into_raw_fd() as u32,
            pid: self.pid,
        };
        if ARENAS[i].set(arena).is_err() {
            unreachable!("arena slots are filled in order under the heap lock");
        }
        self.free.push(FreeList::whole(len as u64));
        Ok(i)
    }
}

/// Published arena `i` (set before any block of it exists).
fn arena_at(i: usize) -> &'static Arena {
    ARENAS[i]
        .get()
        .expect("a block's arena was published before the block")
}

fn heap() -> std::sync::MutexGuard<'static, Heap> {
    // The state is updated only by code that cannot panic half-way.
    HEAP.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Allocate `size` bytes (at least one block of [`ALIGN`] bytes) from this
/// process's shared heap, aligned to [`ALIGN`]. The bytes are zero the
/// first time an arena hands them out, and whatever they last held when
/// reused.
pub fn alloc(size: usize) -> Result<NonNull<u8>, HeapError> {
    heap().alloc(size)
}

/// Return a block to the heap. A pointer that is not the start of a live
/// block of this heap (never allocated, already freed, inside a block)
/// returns [`HeapError::NotAllocated`] and changes nothing.
///
/// # Safety
/// Nothing uses the block's bytes after the call (no reference to them
/// lives on, no peer still copies into or out of them).
pub unsafe fn free(ptr: NonNull<u8>) -> Result<(), HeapError> {
    heap().free(ptr.as_ptr() as usize)
}

/// Some when `ptr..ptr + len` lies inside one arena of this process's heap
/// (or, in a forked child, of the heap it inherited). No system call, no
/// lock: one acquire load per arena.
pub fn locate(ptr: *const u8, len: usize) -> Option<HeapRef> {
    let addr = ptr as usize;
    ARENAS.iter().map_while(OnceLock::get).find_map(|a| {
        let off = a.offset_of(addr, len)?;
        Some(HeapRef {
            pid: a.pid,
            fd: a.fd,
            arena_len: a.len as u64,
            offset: off as u64,
        })
    })
}

/// Map the arena `r` names, afresh: a copy of its descriptor
/// ([`sys::peer_fd`]) and `mmap`.
/// Allocates nothing.
fn map_arena(r: &HeapRef) -> Result<Mapping, HeapError> {
    if r.offset >= r.arena_len {
        return Err(HeapError::BadRef {
            reference: *r,
            reason: "offset outside the arena",
        });
    }
    let len = usize::try_from(r.arena_len).map_err(|_| HeapError::BadRef {
        reference: *r,
        reason: "arena larger than the address space",
    })?;
    let fd = sys::peer_fd(r.pid, r.fd).map_err(HeapError::peer(r.pid, "copying its descriptor"))?;
    let size = sys::file_size(&fd).map_err(HeapError::peer(r.pid, "fstat"))?;
    if size < r.arena_len {
        return Err(HeapError::BadRef {
            reference: *r,
            reason: "the peer's descriptor is shorter than the arena",
        });
    }
    Mapping::map_shared(&fd, len).map_err(HeapError::peer(r.pid, "mmap"))
}

/// Whether this process can reach the arena `r` names the way
/// [`PeerHeaps::resolve`] does: maps it afresh, swaps the 8 bytes at
/// `r.offset` (which must be 8-aligned) for `value`, returns the bytes it
/// found and unmaps. Allocates nothing, so a child forked from a
/// multi-threaded process may call it.
pub fn probe_peer(r: &HeapRef, value: u64) -> Result<u64, HeapError> {
    if !r.offset.is_multiple_of(8) || r.offset.saturating_add(8) > r.arena_len {
        return Err(HeapError::BadRef {
            reference: *r,
            reason: "probe word not inside the arena or not aligned",
        });
    }
    let map = map_arena(r)?;
    // SAFETY: offset + 8 <= arena_len == the mapping's length (checked
    // above and in map_arena) and the word is 8-aligned in a page-aligned
    // mapping; the caller arranges that nobody else uses the word meanwhile.
    unsafe {
        let word = map.base().add(r.offset as usize).cast::<u64>();
        let old = word.read_volatile();
        word.write_volatile(value);
        Ok(old)
    }
}

/// A process's cache of local peers' arenas, mapped on first use and kept
/// until the cache is dropped.
#[derive(Debug, Default)]
pub struct PeerHeaps {
    maps: HashMap<(u32, u32), Mapping>,
}

impl PeerHeaps {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The local address of `r.offset`. An arena of this process's own heap
    /// resolves without a system call; a peer's arena is mapped the first
    /// time (see the module docs) and found in the cache afterwards.
    /// Errors say why the peer's memory cannot be reached: the caller then
    /// treats it as private memory.
    pub fn resolve(&mut self, r: &HeapRef) -> Result<*mut u8, HeapError> {
        let bad = |reason| HeapError::BadRef {
            reference: *r,
            reason,
        };
        if r.offset >= r.arena_len {
            return Err(bad("offset outside the arena"));
        }
        let own = ARENAS
            .iter()
            .map_while(OnceLock::get)
            .find(|a| a.pid == r.pid && a.fd == r.fd);
        if let Some(a) = own {
            if a.len as u64 != r.arena_len {
                return Err(bad("the arena has another length"));
            }
            return Ok((a.base + r.offset as usize) as *mut u8);
        }
        let map = match self.maps.entry((r.pid, r.fd)) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(map_arena(r)?),
        };
        if map.len() as u64 != r.arena_len {
            return Err(bad("the arena has another length"));
        }
        // SAFETY: offset < arena_len == the mapping's length.
        Ok(unsafe { map.base().add(r.offset as usize) })
    }
}

/// Compile-time check that `T` fits the heap's blocks.
const fn check_type<T>() {
    assert!(
        align_of::<T>() <= ALIGN,
        "alignment above the heap's 64 bytes"
    );
    assert!(
        size_of::<T>() > 0,
        "zero-sized types have no bytes to share"
    );
}

/// A value in the shared heap, freed on drop.
///
/// Use it for data that other processes of the node copy into or out of
/// (a message payload, a receive buffer): any local process can reach it
/// with plain loads and stores, so stealers and the sender copy into or
/// out of it directly, where private memory needs the owner or a
/// cross-memory-attach system call. [`heap_ref`](Self::heap_ref) names it
/// for a peer.
pub struct SharedBox<T: Copy> {
    ptr: NonNull<T>,
    _owns: PhantomData<T>,
}

// SAFETY: a SharedBox owns its block alone, like a Box.
unsafe impl<T: Copy + Send> Send for SharedBox<T> {}
// SAFETY: shared access only reads through `&T`, like a Box.
unsafe impl<T: Copy + Sync> Sync for SharedBox<T> {}

impl<T: Copy> SharedBox<T> {
    /// Put `value` in the shared heap.
    pub fn new(value: T) -> Result<Self, HeapError> {
        const { check_type::<T>() };
        let ptr = alloc(size_of::<T>())?.cast::<T>();
        // SAFETY: a fresh block of at least size_of::<T>() bytes, aligned
        // to ALIGN >= align_of::<T>() (checked above), owned by us.
        unsafe { ptr.write(value) };
        Ok(Self {
            ptr,
            _owns: PhantomData,
        })
    }

    /// The value's address.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// Where the value lives, as a local peer names it.
    pub fn heap_ref(&self) -> Option<HeapRef> {
        locate(self.ptr.as_ptr().cast(), size_of::<T>())
    }
}

impl<T: Copy> Deref for SharedBox<T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: initialised in `new`, owned by `self`.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T: Copy> DerefMut for SharedBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: initialised in `new`, owned by `self`, borrowed mutably.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for SharedBox<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SharedBox").field(&**self).finish()
    }
}

impl<T: Copy> Drop for SharedBox<T> {
    fn drop(&mut self) {
        // SAFETY: the block is ours and nothing uses it after drop. An
        // error (only in a forked child) leaves the block allocated.
        let _ = unsafe { free(self.ptr.cast()) };
    }
}

/// A growable array in the shared heap, freed on drop.
///
/// Use it for buffers that other processes of the node copy into or out
/// of: any local process can reach them with plain loads and stores, so
/// stealers and the sender copy into or out of them directly, where
/// private memory needs the owner or a cross-memory-attach system call.
/// Growing moves the elements to a new block (as `Vec` does), so a
/// [`HeapRef`] taken earlier no longer names them; fix the capacity before
/// handing the buffer out. Growth can fail (the heap asks the OS for
/// memory), hence the `Result`s.
pub struct SharedVec<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

// SAFETY: a SharedVec owns its block alone, like a Vec.
unsafe impl<T: Copy + Send> Send for SharedVec<T> {}
// SAFETY: shared access only reads through `&[T]`, like a Vec.
unsafe impl<T: Copy + Sync> Sync for SharedVec<T> {}

impl<T: Copy> Default for SharedVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> SharedVec<T> {
    /// An empty vector; allocates nothing.
    pub const fn new() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
        }
    }

    /// An empty vector with room for `cap` elements.
    pub fn with_capacity(cap: usize) -> Result<Self, HeapError> {
        let mut v = Self::new();
        v.reserve(cap)?;
        Ok(v)
    }

    /// A vector holding a copy of `items`.
    pub fn from_slice(items: &[T]) -> Result<Self, HeapError> {
        let mut v = Self::with_capacity(items.len())?;
        v.extend_from_slice(items)?;
        Ok(v)
    }

    /// Elements held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Elements it can hold without moving.
    pub fn capacity(&self) -> usize {
        self.cap
    }

    /// Drop every element, keeping the block.
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Make room for `extra` more elements, moving to a larger block (at
    /// least double the capacity) when needed.
    pub fn reserve(&mut self, extra: usize) -> Result<(), HeapError> {
        const { check_type::<T>() };
        let want = self
            .len
            .checked_add(extra)
            .ok_or(HeapError::TooLarge { size: usize::MAX })?;
        if want <= self.cap {
            return Ok(());
        }
        let cap = want.max(self.cap.saturating_mul(2));
        let bytes = cap
            .checked_mul(size_of::<T>())
            .ok_or(HeapError::TooLarge { size: usize::MAX })?;
        let block = alloc(bytes)?.cast::<T>();
        if self.cap > 0 {
            // SAFETY: the old block holds `len` initialised elements, the
            // new one has room for `cap >= len`; distinct blocks. The old
            // block is ours and unused after this.
            unsafe {
                std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), block.as_ptr(), self.len);
                let _ = free(self.ptr.cast());
            }
        }
        self.ptr = block;
        self.cap = cap;
        Ok(())
    }

    /// Append `value`.
    pub fn push(&mut self, value: T) -> Result<(), HeapError> {
        self.reserve(1)?;
        // SAFETY: reserve left room for index `len`.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
        Ok(())
    }

    /// Append a copy of `items`.
    pub fn extend_from_slice(&mut self, items: &[T]) -> Result<(), HeapError> {
        self.reserve(items.len())?;
        // SAFETY: reserve left room for `items.len()` more elements; `items`
        // is borrowed, so it cannot be our own block being written.
        unsafe {
            std::ptr::copy_nonoverlapping(
                items.as_ptr(),
                self.ptr.as_ptr().add(self.len),
                items.len(),
            );
        }
        self.len += items.len();
        Ok(())
    }

    /// The first element's address.
    pub fn as_ptr(&self) -> *const T {
        self.ptr.as_ptr()
    }

    /// The first element's address, for writing.
    pub fn as_mut_ptr(&mut self) -> *mut T {
        self.ptr.as_ptr()
    }

    /// Where the elements live, as a local peer names them (None while
    /// nothing is allocated).
    pub fn heap_ref(&self) -> Option<HeapRef> {
        if self.cap == 0 {
            return None;
        }
        locate(self.ptr.as_ptr().cast(), self.len * size_of::<T>())
    }
}

impl<T: Copy> Deref for SharedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: `len` initialised elements at `ptr` (dangling but aligned
        // when empty), owned by `self`.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for SharedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as in `deref`, borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy + fmt::Debug> fmt::Debug for SharedVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Copy> Drop for SharedVec<T> {
    fn drop(&mut self) {
        if self.cap > 0 {
            // SAFETY: the block is ours and nothing uses it after drop. An
            // error (only in a forked child) leaves the block allocated.
            let _ = unsafe { free(self.ptr.cast()) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_list_takes_first_fit_and_merges_neighbours() {
        let mut l = FreeList::whole(1024);
        assert_eq!(l.take(64), Some(0));
        assert_eq!(l.take(128), Some(64));
        assert_eq!(l.take(64), Some(192));
        assert_eq!(l.take(1024), None);
        // Free the middle: a hole of 128 before the tail.
        l.give(64, 128);
        assert_eq!(l.0.len(), 2);
        // First fit reuses the hole, not the tail.
        assert_eq!(l.take(64), Some(64));
        assert_eq!(l.take(64), Some(128));
        // Free everything in a scattered order: one range again.
        l.give(128, 64);
        l.give(0, 64);
        l.give(192, 64);
        l.give(64, 64);
        assert_eq!(l.0, BTreeMap::from([(0, 1024)]));
        assert_eq!(l.take(1024), Some(0));
    }

    #[test]
    fn blocks_are_aligned_distinct_and_writable() {
        let sizes = [0, 1, 63, 64, 65, 1000, 4096];
        let blocks: Vec<_> = sizes.iter().map(|&s| alloc(s).unwrap()).collect();
        for (b, &s) in blocks.iter().zip(&sizes) {
            assert_eq!(b.as_ptr() as usize % ALIGN, 0);
            // SAFETY: a live block of at least max(s, 1) bytes.
            unsafe { std::ptr::write_bytes(b.as_ptr(), 0xAB, s.max(1)) };
            assert!(locate(b.as_ptr(), s.max(1)).is_some());
        }
        for (i, a) in blocks.iter().enumerate() {
            for b in &blocks[i + 1..] {
                assert_ne!(a, b);
            }
        }
        for b in blocks {
            // SAFETY: our live block, unused afterwards.
            unsafe { free(b).unwrap() };
        }
    }

    #[test]
    fn bad_frees_are_errors_and_change_nothing() {
        let b = alloc(256).unwrap();
        let inside = NonNull::new(b.as_ptr().wrapping_add(64)).unwrap();
        let mut local = 0u8;
        // SAFETY: each call fails before touching memory.
        unsafe {
            assert!(matches!(free(inside), Err(HeapError::NotAllocated { .. })));
            assert!(matches!(
                free(NonNull::from(&mut local)),
                Err(HeapError::NotAllocated { .. })
            ));
        }
        // The block is still live: freeing it works once, then not again.
        // SAFETY: our live block, unused afterwards.
        unsafe {
            free(b).unwrap();
            assert!(matches!(free(b), Err(HeapError::NotAllocated { .. })));
        }
    }

    #[test]
    fn freed_blocks_are_reused() {
        // Other tests allocate concurrently, so reuse shows as: after
        // freeing a large block, its space serves later requests rather
        // than a new arena.
        let big = alloc(ARENA_MIN / 2).unwrap();
        let r = locate(big.as_ptr(), ARENA_MIN / 2).unwrap();
        // SAFETY: our live block, unused afterwards.
        unsafe { free(big).unwrap() };
        let again = alloc(ARENA_MIN / 2).unwrap();
        let r2 = locate(again.as_ptr(), ARENA_MIN / 2).unwrap();
        assert_eq!(
            (r.pid, r.fd),
            (r2.pid, r2.fd),
            "no new arena for a freed size"
        );
        // SAFETY: our live block, unused afterwards.
        unsafe { free(again).unwrap() };
    }

    #[test]
    fn large_requests_get_their_own_arena() {
        let size = ARENA_MIN + 1;
        let b = alloc(size).unwrap();
        let r = locate(b.as_ptr(), size).unwrap();
        assert!(r.arena_len >= size as u64);
        assert_eq!(r.arena_len % ARENA_GRANULE as u64, 0);
        // SAFETY: our live block, unused afterwards.
        unsafe { free(b).unwrap() };
    }

    #[test]
    fn locate_finds_ranges_inside_one_arena_only() {
        let b = alloc(128).unwrap();
        let r = locate(b.as_ptr(), 128).unwrap();
        assert_eq!(r.pid, std::process::id());
        assert_eq!(r.offset % ALIGN as u64, 0);
        let a = locate(b.as_ptr().wrapping_add(100), 28).unwrap();
        assert_eq!(a.offset, r.offset + 100);
        assert_eq!((a.fd, a.arena_len), (r.fd, r.arena_len));
        // Straddling the arena's end.
        let end = r.arena_len - r.offset;
        assert!(locate(b.as_ptr(), end as usize).is_some());
        assert!(locate(b.as_ptr(), end as usize + 1).is_none());
        // Outside: the stack and a Box.
        let local = [0u8; 16];
        assert!(locate(local.as_ptr(), 16).is_none());
        let boxed = Box::new([0u8; 64]);
        assert!(locate(boxed.as_ptr(), 64).is_none());
        // SAFETY: our live block, unused afterwards.
        unsafe { free(b).unwrap() };
    }

    #[test]
    fn own_references_resolve_to_the_local_address() {
        let v = SharedVec::from_slice(&[1u32, 2, 3]).unwrap();
        let r = v.heap_ref().unwrap();
        let mut peers = PeerHeaps::new();
        assert_eq!(peers.resolve(&r).unwrap(), v.as_ptr() as *mut u8);
        assert!(peers.maps.is_empty(), "own arenas are not mapped again");
        let past = HeapRef {
            offset: r.arena_len,
            ..r
        };
        assert!(matches!(
            peers.resolve(&past),
            Err(HeapError::BadRef { .. })
        ));
        let resized = HeapRef {
            arena_len: r.arena_len * 2,
            ..r
        };
        assert!(matches!(
            peers.resolve(&resized),
            Err(HeapError::BadRef { .. })
        ));
    }

    #[test]
    fn unreachable_peers_are_typed_errors() {
        let mut peers = PeerHeaps::new();
        // Above the kernel's largest pid_max (2^22): no such process.
        let gone = HeapRef {
            pid: 1 << 30,
            fd: 3,
            arena_len: 4096,
            offset: 0,
        };
        assert!(matches!(
            peers.resolve(&gone),
            Err(HeapError::PeerGone { .. })
        ));
        // Our own stdin is no arena: too short for the length claimed.
        let not_arena = HeapRef {
            pid: std::process::id(),
            fd: 0,
            arena_len: 1 << 40,
            offset: 0,
        };
        let e = peers.resolve(&not_arena).unwrap_err();
        assert!(
            matches!(e, HeapError::BadRef { .. } | HeapError::Peer { .. }),
            "{e}"
        );
    }

    #[test]
    fn shared_vec_grows_and_keeps_its_elements() {
        let mut v = SharedVec::new();
        assert!(v.is_empty() && v.heap_ref().is_none());
        for i in 0..1000u64 {
            v.push(i).unwrap();
        }
        v.extend_from_slice(&[7; 24]).unwrap();
        assert_eq!(v.len(), 1024);
        assert!(v.capacity() >= 1024);
        assert_eq!(v[999], 999);
        assert_eq!(&v[1000..], &[7; 24]);
        v[0] = 42;
        assert_eq!(v.iter().take(2).copied().collect::<Vec<_>>(), [42, 1]);
        let r = v.heap_ref().unwrap();
        assert_eq!(locate(v.as_ptr().cast(), 1024 * 8), Some(r));
        v.clear();
        assert!(v.is_empty());
    }

    #[test]
    fn shared_box_holds_its_value() {
        let mut b = SharedBox::new([3u16; 40]).unwrap();
        b[5] = 9;
        assert_eq!(b[5], 9);
        assert_eq!(b[4], 3);
        assert_eq!(b.heap_ref().unwrap().offset % ALIGN as u64, 0);
    }

    /// Environment variable through which [`peer_child`] gets its
    /// reference: `pid fd arena_len offset`.
    const PEER_REF: &str = "SHM_ENGINE_HEAP_TEST_REF";

    fn parse_ref(s: &str) -> HeapRef {
        let f: Vec<u64> = s.split(' ').map(|x| x.parse().unwrap()).collect();
        HeapRef {
            pid: f[0] as u32,
            fd: f[1] as u32,
            arena_len: f[2],
            offset: f[3],
        }
    }

    /// Run by [`peers_read_and_write_each_others_heap`] in a child process:
    /// resolve the parent's buffer, check it holds 0..=255, write 255..=0.
    #[test]
    #[ignore = "child process of peers_read_and_write_each_others_heap"]
    fn peer_child() {
        let r = parse_ref(&std::env::var(PEER_REF).expect("run by the parent test"));
        let mut peers = PeerHeaps::new();
        let p = peers.resolve(&r).unwrap();
        assert_eq!(peers.resolve(&r).unwrap(), p, "cached mapping");
        // SAFETY: the parent's 256-byte buffer, which it leaves alone until
        // this process exits.
        let buf = unsafe { std::slice::from_raw_parts_mut(p, 256) };
        assert!(buf.iter().enumerate().all(|(i, &b)| b == i as u8));
        for (i, b) in buf.iter_mut().enumerate() {
            *b = 255 - i as u8;
        }
    }

    #[test]
    fn peers_read_and_write_each_others_heap() {
        let mut v = SharedVec::with_capacity(256).unwrap();
        v.extend_from_slice(&(0..=255u8).collect::<Vec<_>>())
            .unwrap();
        let r = v.heap_ref().unwrap();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "heap::tests::peer_child", "--ignored"])
            .env(
                PEER_REF,
                format!("{} {} {} {}", r.pid, r.fd, r.arena_len, r.offset),
            )
            .output()
            .unwrap();
        let log = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{log}");
        assert!(log.contains("1 passed"), "the child ran: {log}");
        assert!(v.iter().enumerate().all(|(i, &b)| b == 255 - i as u8));
    }
}

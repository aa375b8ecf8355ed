//! The messages of a window: their tags and kinds, and how they are
//! written and read (native-endian words: the job's processes share one
//! machine architecture).

use shm_engine::heap::HeapRef;

use crate::core::{Class, MpiError, MpiResult};

/// Engine tags on the window's context: requests to a target, and
/// replies and notices to an origin.
pub(super) const TO_TARGET: i32 = 1;
pub(super) const TO_ORIGIN: i32 = 2;

/// The kinds of message.
pub(super) mod kind {
    pub const PUT: u32 = 1;
    pub const GET: u32 = 2;
    pub const ACC: u32 = 3;
    pub const GET_ACC: u32 = 4;
    pub const CAS: u32 = 5;
    pub const LOCK: u32 = 6;
    pub const UNLOCK: u32 = 7;
    pub const FLUSH: u32 = 8;
    pub const DONE: u32 = 9;
    /// To an origin: the reply to request `id` (data, a grant, an
    /// acknowledgement).
    pub const REPLY: u32 = 10;
    /// To an origin: an exposure epoch is open for it (`MPI_Win_post`).
    pub const POST: u32 = 11;
}

/// A message being written.
pub(super) struct Out(pub(super) Vec<u8>);

impl Out {
    pub(super) fn new(kind: u32, id: u64) -> Self {
        let mut o = Out(Vec::with_capacity(64));
        o.u32(kind);
        o.u32(0);
        o.u64(id);
        o
    }
    pub(super) fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_ne_bytes());
    }
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

/// A message being read.
pub(super) struct In<'a>(pub(super) &'a [u8]);

impl In<'_> {
    pub(super) fn u32(&mut self) -> MpiResult<u32> {
        Ok(u32::from_ne_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub(super) fn u64(&mut self) -> MpiResult<u64> {
        Ok(u64::from_ne_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub(super) fn take(&mut self, n: usize) -> MpiResult<&[u8]> {
        if self.0.len() < n {
            return Err(MpiError::new(Class::Intern, "short window message"));
        }
        let (a, b) = self.0.split_at(n);
        self.0 = b;
        Ok(a)
    }
}

/// Write where memory lies in the shared heap (or that it does not).
pub(super) fn put_ref(o: &mut Out, r: Option<&HeapRef>) {
    match r {
        Some(r) => {
            o.u64(1);
            o.u64(u64::from(r.pid));
            o.u64(u64::from(r.fd));
            o.u64(r.arena_len);
            o.u64(r.offset);
        }
        None => o.u64(0),
    }
}

pub(super) fn take_ref(i: &mut In) -> MpiResult<Option<HeapRef>> {
    if i.u64()? == 0 {
        return Ok(None);
    }
    Ok(Some(HeapRef {
        pid: i.u64()? as u32,
        fd: i.u64()? as u32,
        arena_len: i.u64()?,
        offset: i.u64()?,
    }))
}

//! The buffers of buffered sends (MPI-4.1 §3.6): one a process may attach
//! (`MPI_Buffer_attach`, for the communicators of the world model), one
//! per session and one per communicator. A buffered send uses its
//! communicator's buffer, else the buffer of the session the
//! communicator derives from, else the process's.
//!
//! Each buffered message is copied into the buffer, which it occupies
//! (with [`BSEND_OVERHEAD`] bytes of bookkeeping) until the engine is done
//! with it. A buffer attached as `MPI_BUFFER_AUTOMATIC` is the library's:
//! each message gets a copy of its own, so no send finds it full.

use shm_engine::Endpoint;

use super::{Class, MpiError, MpiResult, Req, Runtime};

/// Bookkeeping bytes each buffered message occupies in the attached
/// buffer besides its data. Each ABI's `MPI_BSEND_OVERHEAD` promises the
/// application at most this much (MPICH's is 96, the standard ABI's 512;
/// the entry layers assert it).
pub const BSEND_OVERHEAD: usize = 96;

/// An attached buffer.
#[derive(Debug)]
pub struct Attached {
    /// The application's memory and its size; `None` for
    /// `MPI_BUFFER_AUTOMATIC`.
    memory: Option<(*mut u8, usize)>,
    /// Messages in flight from the application's memory: offset, bytes
    /// occupied (with the overhead), engine request; in offset order.
    used: Vec<(usize, usize, shm_engine::Request)>,
    /// Messages in flight from copies of their own (automatic buffer).
    owned: Vec<(Vec<u8>, shm_engine::Request)>,
}

impl Attached {
    /// The application's `size` bytes at `ptr`.
    pub fn new(ptr: *mut u8, size: usize) -> Self {
        Self {
            memory: Some((ptr, size)),
            used: Vec::new(),
            owned: Vec::new(),
        }
    }

    /// A buffer the library allocates as messages need (`MPI_BUFFER_AUTOMATIC`).
    pub fn automatic() -> Self {
        Self {
            memory: None,
            used: Vec::new(),
            owned: Vec::new(),
        }
    }

    /// Release the space of messages the engine is done with.
    fn reclaim(&mut self, ep: &mut Endpoint) -> MpiResult<()> {
        ep.progress();
        let mut i = 0;
        while i < self.used.len() {
            if ep.is_complete(&self.used[i].2) {
                let (_, _, req) = self.used.remove(i);
                ep.wait(req)?;
            } else {
                i += 1;
            }
        }
        let mut i = 0;
        while i < self.owned.len() {
            if ep.is_complete(&self.owned[i].1) {
                let (_, req) = self.owned.remove(i);
                ep.wait(req)?;
            } else {
                i += 1;
            }
        }
        Ok(())
    }

    /// Whether every message sent from the buffer is delivered.
    pub fn is_flushed(&self, ep: &Endpoint) -> bool {
        self.used.iter().all(|(_, _, r)| ep.is_complete(r))
            && self.owned.iter().all(|(_, r)| ep.is_complete(r))
    }

    /// The offset of the first gap of `size` bytes that holds `need`.
    fn first_fit(&self, size: usize, need: usize) -> Option<usize> {
        let mut start = 0;
        for &(off, len, _) in &self.used {
            if off - start >= need {
                return Some(start);
            }
            start = off + len;
        }
        (size - start >= need).then_some(start)
    }

    /// Copy `data` into the buffer and start sending it from there to
    /// `to` with `tag`; `MPI_ERR_BUFFER` when no gap is large enough.
    pub fn send(&mut self, ep: &mut Endpoint, to: u32, tag: u64, data: &[u8]) -> MpiResult<()> {
        self.reclaim(ep)?;
        let Some((ptr, size)) = self.memory else {
            let copy = data.to_vec();
            // SAFETY: the copy moves into `owned` below, its heap storage
            // staying put, and stays there until the engine is done.
            let req = unsafe { ep.isend_raw(to, tag, copy.as_ptr(), copy.len())? };
            self.owned.push((copy, req));
            return Ok(());
        };
        let need = data.len() + BSEND_OVERHEAD;
        let off = self.first_fit(size, need).ok_or_else(|| {
            MpiError::new(
                Class::Buffer,
                format!(
                    "the attached buffer ({size} bytes) has no room for a {need}-byte message (with MPI_BSEND_OVERHEAD)"
                ),
            )
        })?;
        // SAFETY: `off + need <= size` (first_fit): the copy stays inside
        // the attached buffer, which the application lent the library
        // until it detaches it; no other message uses this range.
        let dst = unsafe { ptr.add(off) };
        // SAFETY: as above; `data` is the library's copy or the caller's
        // buffer, never the attached range itself.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, data.len()) };
        // SAFETY: the range stays reserved (and the buffer attached) until
        // the engine request completes: `drain` waits for every one.
        let req = unsafe { ep.isend_raw(to, tag, dst, data.len())? };
        let at = self.used.partition_point(|&(o, _, _)| o < off);
        self.used.insert(at, (off, need, req));
        Ok(())
    }

    /// Wait until every buffered message is delivered (detaching): the
    /// application's memory and size back, `None` for an automatic buffer.
    pub fn drain(mut self, ep: &mut Endpoint) -> MpiResult<Option<(*mut u8, usize)>> {
        for (_, _, req) in self.used.drain(..) {
            ep.wait(req)?;
        }
        for (_, req) in self.owned.drain(..) {
            ep.wait(req)?;
        }
        Ok(self.memory)
    }
}

/// Whose buffer: the process's, a session's or a communicator's (slots).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Process,
    Session(usize),
    Comm(usize),
}

impl Runtime {
    /// The buffer slot of `scope` (checking the session or communicator).
    fn buffer_slot(&mut self, scope: Scope) -> MpiResult<&mut Option<Attached>> {
        Ok(match scope {
            Scope::Process => &mut self.bsend,
            Scope::Session(s) => {
                self.session(s)?;
                &mut self.sessions.get_mut(s).expect("checked").bsend
            }
            Scope::Comm(c) => &mut self.comm_mut(c)?.bsend,
        })
    }

    /// Attach `buffer` to `scope` (`MPI_ERR_BUFFER` if one is attached).
    pub fn attach_buffer(&mut self, scope: Scope, buffer: Attached) -> MpiResult<()> {
        let slot = self.buffer_slot(scope)?;
        if slot.is_some() {
            return Err(MpiError::new(Class::Buffer, "a buffer is already attached"));
        }
        *slot = Some(buffer);
        Ok(())
    }

    /// Detach `scope`'s buffer once its messages are delivered: what
    /// [`Attached::drain`] returns, or `None` when nothing was attached.
    #[allow(clippy::type_complexity)]
    pub fn detach_buffer(&mut self, scope: Scope) -> MpiResult<Option<Option<(*mut u8, usize)>>> {
        let Some(b) = self.buffer_slot(scope)?.take() else {
            return Ok(None);
        };
        self.wait_until(|rt| Ok(b.is_flushed(&rt.ep).then_some(()).into()))?;
        b.drain(&mut self.ep).map(Some)
    }

    /// Whether `scope`'s buffered messages are all delivered (true when
    /// it has no buffer).
    pub fn buffer_flushed(&self, scope: Scope) -> bool {
        let b = match scope {
            Scope::Process => self.bsend.as_ref(),
            Scope::Session(s) => self.sessions.get(s).and_then(|s| s.bsend.as_ref()),
            Scope::Comm(c) => self
                .comms
                .get(c)
                .and_then(Option::as_ref)
                .and_then(|c| c.bsend.as_ref()),
        };
        b.is_none_or(|b| b.is_flushed(&self.ep))
    }

    /// Wait until `scope`'s buffered messages are delivered, leaving the
    /// buffer attached (`MPI_Buffer_flush` and friends).
    pub fn flush_buffer(&mut self, scope: Scope) -> MpiResult<()> {
        self.buffer_slot(scope)?;
        self.wait_until(|rt| Ok(rt.buffer_flushed(scope).then_some(()).into()))?;
        match self.buffer_and_endpoint(scope) {
            (Some(b), ep) => b.reclaim(ep),
            (None, _) => Ok(()),
        }
    }

    /// A request complete once `scope`'s buffered messages are delivered
    /// (`MPI_Buffer_iflush` and friends).
    pub fn iflush_buffer(&mut self, scope: Scope) -> MpiResult<Req> {
        self.buffer_slot(scope)?;
        Ok(Req::Flush(scope))
    }

    /// Send `data` to `to` with `tag` from communicator `comm`'s buffer:
    /// its own, its session's, or the process's.
    pub fn bsend(&mut self, comm: usize, to: u32, tag: u64, data: &[u8]) -> MpiResult<()> {
        let c = self.comm(comm)?;
        let scope = if c.bsend.is_some() {
            Scope::Comm(comm)
        } else {
            match c.session {
                Some(s) if self.sessions.get(s).is_some_and(|s| s.bsend.is_some()) => {
                    Scope::Session(s)
                }
                _ => Scope::Process,
            }
        };
        let (b, ep) = self.buffer_and_endpoint(scope);
        b.ok_or_else(|| MpiError::new(Class::Buffer, "buffered send without an attached buffer"))?
            .send(ep, to, tag, data)
    }

    /// `scope`'s buffer, if any, and the endpoint, borrowed together.
    fn buffer_and_endpoint(&mut self, scope: Scope) -> (Option<&mut Attached>, &mut Endpoint) {
        let Runtime {
            bsend,
            sessions,
            comms,
            ep,
            ..
        } = self;
        let b = match scope {
            Scope::Process => bsend.as_mut(),
            Scope::Session(s) => sessions.get_mut(s).and_then(|s| s.bsend.as_mut()),
            Scope::Comm(c) => comms
                .get_mut(c)
                .and_then(Option::as_mut)
                .and_then(|c| c.bsend.as_mut()),
        };
        (b, ep)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use shm_engine::bootstrap::Singleton;
    use shm_engine::{Config, Source, TagMatch};

    /// A one-process endpoint whose messages to itself take its ring, so
    /// that rendezvous-sized ones stay in flight until received
    /// (`TESSEL_SELF=ring`; directly, they would be copied at once).
    fn endpoint() -> Endpoint {
        let cfg = Config {
            self_direct: false,
            ..Config::default()
        };
        Endpoint::with_config(Box::new(Singleton::default()), cfg).expect("endpoint")
    }

    #[test]
    fn attached_buffer_holds_messages_until_delivered() {
        let mut ep = endpoint();
        // Rendezvous-sized messages stay in flight until received.
        let n = ep.config().eager_max + 1;
        let mut mem = vec![0u8; 2 * (n + BSEND_OVERHEAD)];
        let mut att = Attached::new(mem.as_mut_ptr(), mem.len());
        let data: Vec<u8> = (0..n).map(|i| i as u8).collect();
        att.send(&mut ep, 0, 1, &data).unwrap();
        att.send(&mut ep, 0, 2, &data).unwrap();
        let full = att.send(&mut ep, 0, 3, &data).unwrap_err();
        assert_eq!(full.code, Class::Buffer);
        // Once the first is received, its space is reused.
        let mut got = vec![0u8; n];
        ep.recv(Source::Any, TagMatch::exact(1), &mut got).unwrap();
        assert_eq!(got, data);
        att.send(&mut ep, 0, 3, &data).unwrap();
        for tag in [2, 3] {
            ep.recv(Source::Any, TagMatch::exact(tag), &mut got)
                .unwrap();
            assert_eq!(got, data);
        }
        let back = att.drain(&mut ep).unwrap();
        assert_eq!(back, Some((mem.as_mut_ptr(), mem.len())));
    }

    #[test]
    fn automatic_buffer_never_fills() {
        let mut ep = endpoint();
        let n = ep.config().eager_max + 1;
        let mut att = Attached::automatic();
        let data: Vec<u8> = (0..n).map(|i| (i * 7) as u8).collect();
        for tag in 0..4 {
            att.send(&mut ep, 0, tag, &data).unwrap();
        }
        assert!(!att.is_flushed(&ep));
        let mut got = vec![0u8; n];
        for tag in 0..4 {
            ep.recv(Source::Any, TagMatch::exact(tag), &mut got)
                .unwrap();
            assert_eq!(got, data);
        }
        ep.progress();
        assert!(att.is_flushed(&ep));
        assert_eq!(att.drain(&mut ep).unwrap(), None);
    }
}

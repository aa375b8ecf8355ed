//! The endpoint: one per process, the engine's public face.
//!
//! An endpoint moves tagged messages between processes of a job, identified
//! by their rank in the bootstrap. It is a facade over:
//! - the request table (`request`): every operation in flight;
//! - the router (`route`): process id -> local index on this node, or
//!   another node;
//! - one matcher for every path (`delivery`): posted and unexpected
//!   queues keyed by process id, and delivery into the matched request;
//! - the intra-node path (`shm`): the node segment's rings, staging and
//!   transfer slots, and its protocols (inline, eager, put into granted
//!   buffers, rendezvous by GET, in chunks with work stealing, or through
//!   the staging pipeline);
//! - the inter-node path (`remote`, over `crate::net`): a network plugin
//!   carries messages to other nodes, and large payloads are fetched into
//!   the matched buffer;
//! - one progress loop (`progress`) over both paths, and waits that back
//!   off to a sleep every path in use can end;
//! - statistics ([`crate::stats`]).
//!
//! A buffer is a list of [`Piece`]s (an I/O vector; a contiguous buffer is
//! the one-piece case), which every path reads and writes in place. A
//! receive posted without a buffer ([`Endpoint::irecv_managed`]) gets one
//! at the match, from the shared heap, where every process of the node can
//! copy into it (and a network transfer can start at once).
//!
//! Beyond send and receive (MPI-4.0 §3.4-§3.8): a synchronous send
//! ([`Endpoint::issend`]) completes once a receive matched it (an inline or
//! eager message carries the sender's request and the receiver answers
//! with an ACK at the match; a rendezvous's FIN implies the match);
//! probes and cancels are in `probe`. Waiting loops back off through
//! [`Backoff`] (spin, yield, then sleep).

mod delivery;
mod probe;
mod progress;
mod recvbuf;
mod remote;
mod request;
mod route;
mod shm;
#[cfg(test)]
mod tests;

pub use delivery::Message;
pub use progress::Backoff;
pub use recvbuf::RecvBuf;
pub use request::{Completion, Request, Status};
pub use shm::{Next, Waker};

use delivery::{Ack, Arrival};
use request::Requests;
use route::{Route, Router};
use shm::{Join, Shm};

use crate::bootstrap::Bootstrap;
use crate::config::Config;
use crate::error::{Error, InitError};
use crate::iov::{self, Buf, Piece, total};
use crate::locality::Place;
use crate::matching::{Matcher, Posted, Source, TagMatch};
use crate::net::{Incoming, Net};
use crate::stats::{Protocol, Stats};
use crate::{sys, transport};

/// Idle progress polls before a waiting process advertises itself as an
/// idle stealer ([`crate::steal`]), when fewer than its spin polls.
pub const ADVERTISE_AFTER: u32 = 16;

/// A process's endpoint.
#[derive(Debug)]
pub struct Endpoint {
    reqs: Requests,
    matcher: Matcher<Arrival>,
    router: Router,
    stats: Stats,
    rank: u32,
    size: u32,
    /// The ids of our job's processes.
    world: std::ops::Range<u32>,
    /// The node of every id.
    nodes: Vec<u32>,
    universe_id: u64,
    node: u32,
    cfg: Config,
    shm: Shm,
    /// The inter-node path, when the job spans nodes and a plugin opened.
    /// Declared before `boot`: the plugin uses the bootstrap until closed.
    net: Option<Net>,
    /// Scratch for [`Net::poll`].
    incoming: Vec<Incoming>,
    /// Board flags the next back-off step watches ([`Endpoint::watch`]).
    watched: Vec<crate::board::Watch>,
    /// This job's processes on this node (on this machine, when its nodes
    /// are virtual ones) outnumber its online CPUs, or those they may run
    /// on (`cpus`): a waiting process yields at its first idle poll, since
    /// the peer it waits for may need its core.
    oversubscribed: bool,
    /// CPUs this job's processes on this node may run on between them.
    cpus: usize,
    boot: Box<dyn Bootstrap>,
}

impl Endpoint {
    /// Join the job described by `boot`, with configuration from the
    /// environment. Collective over all processes of the job.
    pub fn new(boot: Box<dyn Bootstrap>) -> Result<Self, InitError> {
        Self::with_config(boot, Config::from_env()?)
    }

    /// Join the job with an explicit configuration. Collective.
    pub fn with_config(mut boot: Box<dyn Bootstrap>, cfg: Config) -> Result<Self, InitError> {
        cfg.validate()?;
        let uni = boot.universe();
        let (rank, size) = (uni.base + boot.rank(), uni.size);
        let node = boot.node_of(boot.rank());
        let world = uni.base..uni.base + boot.size();
        // Ids outside our job (a universe larger than it) share our node.
        let node_of = |id: u32| {
            if world.contains(&id) {
                boot.node_of(id - uni.base)
            } else {
                node
            }
        };
        let (mut router, locals) = Router::new(size, node, node_of, world.clone());
        let me = router.local(rank).expect("this process is on its own node");
        let nodes = (0..size).map(node_of).collect();
        // A job that spans nodes opens a network plugin now: it publishes
        // its address before the segment's fence.
        let net = if locals.len() < size as usize {
            let boot_ptr: *mut dyn Bootstrap = &mut *boot;
            // SAFETY: `boot` is boxed, so its contents stay put when the box
            // moves into the endpoint; the transport is dropped before it
            // (field order), and the plugin reaches it only inside calls
            // the endpoint makes while using the bootstrap for nothing else.
            match unsafe { transport::open(&cfg, boot_ptr, rank, size) } {
                Ok(t) => t.map(Net::new),
                Err(e) => {
                    return Err(InitError::Net(format!(
                        "process {rank} (node {node}) has peers on other nodes, but no network \
                         plugin could be used: {e}. Set TESSEL_NET (auto, ucx, verbs, ofi, none) \
                         and TESSEL_PLUGIN_PATH (where libtessel_plugin_*.so are); \
                         `tessel-info` lists the plugins it finds"
                    )));
                }
            }
        } else {
            None
        };
        if net.is_some() {
            router.enable_remote();
        }
        let mut cfg = cfg;
        // The job that `mpiexec` started creates the segment; jobs started
        // later join it.
        let join = Join {
            create: uni.base == 0,
            present: locals.iter().filter(|&r| world.contains(r)).count() as u32,
        };
        let shm = Shm::attach(&mut *boot, &mut cfg, node, &locals, me, net.is_some(), join)?;
        // Virtual nodes share this machine's cores: then all of the job's
        // processes count, not only those of this node, against the CPUs
        // the launcher may use. And a job confined to fewer CPUs than it
        // has processes here (`taskset`, a batch system's cpuset) is
        // oversubscribed whatever the machine has.
        let (here, machine) = if boot.one_machine() {
            let launcher = crate::locality::job_cpus().unwrap_or(usize::MAX);
            (boot.size(), sys::online_cpus().min(launcher))
        } else {
            (join.present, sys::online_cpus())
        };
        let ours = (0..locals.len() as u32).filter(|&j| world.contains(&locals[j as usize]));
        let cpus = shm.cpus_among(ours);
        let oversubscribed = here as usize > machine || join.present as usize > cpus;
        Ok(Self {
            reqs: Requests::default(),
            matcher: Matcher::default(),
            router,
            stats: Stats::default(),
            rank,
            size,
            world,
            nodes,
            universe_id: uni.id,
            node,
            cfg,
            shm,
            net,
            incoming: Vec::new(),
            watched: Vec::new(),
            oversubscribed,
            cpus,
            boot,
        })
    }

    /// Whether this job's processes on this node outnumber its online
    /// CPUs, or the CPUs their affinity masks allow them; when its nodes
    /// are virtual ones, whether all of its processes outnumber the CPUs
    /// of the machine that `mpiexec` may use. Waiting processes then yield
    /// their core almost at once.
    pub fn oversubscribed(&self) -> bool {
        self.oversubscribed
    }

    /// How many CPUs the local processes `ids` may run on between them:
    /// the union of the affinity masks they published when they attached.
    /// Each publishes its mask once, so every process computes the same
    /// number for the same `ids`, and a protocol they must agree on may
    /// depend on it. Ids of other nodes are left out.
    pub fn cpus_of(&self, ids: &[u32]) -> usize {
        self.shm
            .cpus_among(ids.iter().filter_map(|&id| self.router.local(id)))
    }

    /// This process's id: its rank in the bootstrap, plus its job's
    /// [`base`](crate::bootstrap::Universe::base) in the universe.
    pub fn rank(&self) -> u32 {
        self.rank
    }

    /// The ids of this process's job (`MPI_COMM_WORLD`): `0..n` for the job
    /// the launcher started, the next ids for jobs started later.
    pub fn world(&self) -> std::ops::Range<u32> {
        self.world.clone()
    }

    /// A number that tells this universe from others on the machine
    /// ([`Universe::id`](crate::bootstrap::Universe::id)): processes of
    /// two universes cannot reach each other.
    pub fn universe_id(&self) -> u64 {
        self.universe_id
    }

    /// The node process `id` runs on.
    pub fn node_of(&self, id: u32) -> u32 {
        self.nodes.get(id as usize).copied().unwrap_or(u32::MAX)
    }

    /// Let `peers` processes that are about to join this node (a job this
    /// process starts) fetch the node segment: the serving end (drop it
    /// once they have joined) and the key-value pair that tells them where
    /// it is, for their job's key-value space.
    pub fn share_segment(
        &self,
        peers: u32,
    ) -> Result<(crate::segment::FdServer, (String, Vec<u8>)), InitError> {
        self.shm.share(self.node, peers)
    }

    /// Number of processes in this process's job: its ids are
    /// [`world`](Self::world), `0..size()` for the job the launcher started.
    pub fn size(&self) -> u32 {
        self.world.len() as u32
    }

    /// Number of process ids in the universe: the job, and the processes
    /// the launcher may add ([`crate::bootstrap::Universe`]).
    pub fn universe_size(&self) -> u32 {
        self.size
    }

    /// Let this process send to and receive from processes `ids` outside
    /// its job (added by the launcher, and met through the layer above);
    /// until then they are invalid peers.
    pub fn admit(&mut self, ids: impl IntoIterator<Item = u32>) {
        self.router.admit(ids);
    }

    /// The node this process runs on.
    pub fn node(&self) -> u32 {
        self.node
    }

    /// Processes on this node, including this one.
    pub fn local_size(&self) -> u32 {
        self.shm.local_size()
    }

    /// Where process `rank` runs, if it is on this node (`None` for ranks
    /// of other nodes). Waits for a local peer that has not attached yet.
    pub fn place(&self, rank: u32) -> Option<Place> {
        Some(self.shm.place(self.router.local(rank)?))
    }

    /// Whether large messages use cross-memory attach (`process_vm_readv`)
    /// or the pipelined staging copy.
    pub fn uses_cma(&self) -> bool {
        self.shm.uses_cma()
    }

    /// Whether each of processes `ids` runs on this node and takes part
    /// in collectives on flag boards: its `TESSEL_COLL` allows them, and
    /// it can map its peers' shared heaps ([`crate::heap::PeerHeaps`]:
    /// cross-memory attach allowed, and their descriptors reachable with
    /// `pidfd_getfd` or through `/proc`). Every process of the node
    /// gets the same answer for the same `ids`, whatever its own
    /// environment: each published its own when it attached, and this
    /// waits for a process still attaching (one that joined the job
    /// moments ago).
    pub fn boards_among(&self, ids: &[u32]) -> bool {
        ids.iter().all(|&id| {
            self.router
                .local(id)
                .is_some_and(|j| self.shm.takes_boards(j))
        })
    }

    /// The configuration in force (after the segment creator's geometry).
    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// The bootstrap this endpoint was built on, for further key exchange.
    pub fn bootstrap(&mut self) -> &mut dyn Bootstrap {
        &mut *self.boot
    }

    /// The name of the network plugin in use, and its limits.
    pub fn network(&self) -> Option<(&str, &transport::Limits)> {
        self.net
            .as_ref()
            .map(|n| (n.transport().name(), n.transport().limits()))
    }

    /// The statistics `TESSEL_STATS=1` prints at finalize, as lines.
    pub fn stats_lines(&self) -> Vec<String> {
        let mut lines = self.stats.lines(self.rank);
        lines.push(format!(
            "tessel-stats: rank {} cpus={} oversubscribed={}",
            self.rank,
            self.cpus,
            u8::from(self.oversubscribed)
        ));
        lines
    }

    /// Transfers received with protocol `p` so far (all size classes).
    pub fn transfers(&self, p: Protocol) -> u64 {
        self.stats.transfers(p)
    }
}

impl Endpoint {
    /// Start sending `data` to `dest` with `tag`. The engine owns the
    /// buffer until the request completes.
    pub fn isend(&mut self, dest: u32, tag: u64, data: Vec<u8>) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(data.as_ptr().cast_mut(), data.len()));
        self.start_send(dest, tag, one, Some(data), false)
    }

    /// Start a synchronous send of `data` (MPI-4.0 §3.4): it completes
    /// only once a receive (or a matched probe) at `dest` matched it.
    pub fn issend(&mut self, dest: u32, tag: u64, data: Vec<u8>) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(data.as_ptr().cast_mut(), data.len()));
        self.start_send(dest, tag, one, Some(data), true)
    }

    /// Start a synchronous send of `len` bytes at `ptr` (see
    /// [`issend`](Self::issend)).
    ///
    /// # Safety
    /// As for [`isend_raw`](Self::isend_raw).
    pub unsafe fn issend_raw(
        &mut self,
        dest: u32,
        tag: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(ptr.cast_mut(), len));
        self.start_send(dest, tag, one, None, true)
    }

    /// Start a synchronous send of the concatenation of `pieces` (see
    /// [`issend`](Self::issend) and [`isend_iov_raw`](Self::isend_iov_raw)).
    ///
    /// # Safety
    /// As for [`isend_iov_raw`](Self::isend_iov_raw).
    pub unsafe fn issend_iov_raw(
        &mut self,
        dest: u32,
        tag: u64,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_send(dest, tag, Buf::of(pieces), None, true)
    }

    /// Send the concatenation of `pieces` to `dest` with `tag` at once,
    /// without a request, when it can: a message of at most `eager_max`
    /// bytes to another process of this node whose ring has room (and,
    /// above `inline_max`, whose staging has a free slot) and for which
    /// nothing waits. Returns whether it was sent; when not, nothing
    /// happened, and the caller starts a send as usual
    /// ([`isend_iov_raw`](Self::isend_iov_raw)). A blocking or nonblocking
    /// send of a small message then completes without a trip through the
    /// request table.
    ///
    /// # Safety
    /// Every piece is valid for reads during the call.
    pub unsafe fn try_send_iov_now(
        &mut self,
        dest: u32,
        tag: u64,
        pieces: &[Piece],
    ) -> Result<bool, Error> {
        let Route::Local(j) = self.router.route(dest)? else {
            return Ok(false);
        };
        let len = total(pieces);
        if dest == self.rank || len > self.cfg.eager_max {
            return Ok(false);
        }
        // SAFETY: forwarded from the caller.
        Ok(unsafe { self.send_now(j, tag, pieces, len) })
    }

    /// Start sending the concatenation of `pieces`, in order, to `dest`
    /// with `tag`, without packing them: the data moves straight from
    /// the pieces (the receiver sees one message of their total size).
    /// The list itself is copied; only the memory it names must stay.
    ///
    /// # Safety
    /// Every piece stays valid for reads and unmodified until the request
    /// completes (through [`wait`](Self::wait) or [`test`](Self::test)).
    pub unsafe fn isend_iov_raw(
        &mut self,
        dest: u32,
        tag: u64,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_send(dest, tag, Buf::of(pieces), None, false)
    }

    /// Start sending `len` bytes at `ptr` to `dest` with `tag`.
    ///
    /// # Safety
    /// `ptr..ptr+len` stays valid for reads and unmodified until the request
    /// completes (through [`wait`](Self::wait) or [`test`](Self::test)).
    pub unsafe fn isend_raw(
        &mut self,
        dest: u32,
        tag: u64,
        ptr: *const u8,
        len: usize,
    ) -> Result<Request, Error> {
        let one = Buf::One(Piece::new(ptr.cast_mut(), len));
        self.start_send(dest, tag, one, None, false)
    }

    /// Send and wait for completion.
    pub fn send(&mut self, dest: u32, tag: u64, data: &[u8]) -> Result<(), Error> {
        // SAFETY: `data` outlives the request: we wait for it here.
        let r = unsafe { self.isend_raw(dest, tag, data.as_ptr(), data.len())? };
        self.wait(r).map(drop)
    }

    fn start_send(
        &mut self,
        dest: u32,
        tag: u64,
        buf: Buf,
        owned: Option<Vec<u8>>,
        sync: bool,
    ) -> Result<Request, Error> {
        let route = self.router.route(dest)?;
        let len = total(buf.pieces());
        let id = self
            .reqs
            .add(buf, owned, Status::new(self.rank, tag, len), false);
        match route {
            Route::Local(j) if dest == self.rank && self.cfg.self_direct => {
                self.send_self(j, id, tag, len, sync)
            }
            Route::Local(j) => self.send_local(j, id, tag, len, sync),
            Route::Remote => self.send_remote(dest, id, tag, len, sync)?,
        }
        Ok(Request { id })
    }
}

impl Endpoint {
    /// Start receiving a message of at most `capacity` bytes from `source`
    /// whose tag `tag` accepts. The data comes back in the completion.
    pub fn irecv(
        &mut self,
        source: Source,
        tag: TagMatch,
        capacity: usize,
    ) -> Result<Request, Error> {
        let mut buf = vec![0u8; capacity];
        let one = Buf::One(Piece::new(buf.as_mut_ptr(), capacity));
        self.start_recv(source, tag, one, Some(buf), None)
    }

    /// Start a receive without a buffer, of at most `capacity` bytes: when
    /// a message matches, the engine allocates a buffer of its size in the
    /// shared heap, where the sender and idle processes can copy into it
    /// directly; the completion hands it out ([`Completion::buffer`]).
    pub fn irecv_managed(
        &mut self,
        source: Source,
        tag: TagMatch,
        capacity: usize,
    ) -> Result<Request, Error> {
        let none = Buf::One(Piece::new(std::ptr::null_mut(), 0));
        self.start_recv(source, tag, none, None, Some(capacity))
    }

    /// Start receiving into `cap` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr..ptr+cap` stays valid for writes and is not otherwise accessed
    /// until the request completes.
    pub unsafe fn irecv_raw(
        &mut self,
        source: Source,
        tag: TagMatch,
        ptr: *mut u8,
        cap: usize,
    ) -> Result<Request, Error> {
        self.start_recv(source, tag, Buf::One(Piece::new(ptr, cap)), None, None)
    }

    /// Start receiving into `pieces`, in order, as if they were one buffer
    /// of their total size: the data lands straight in the pieces (a
    /// message larger than the total is truncated as for
    /// [`irecv_raw`](Self::irecv_raw)). The list itself is copied.
    ///
    /// # Safety
    /// Every piece stays valid for writes and is not otherwise accessed
    /// until the request completes; pieces do not overlap.
    pub unsafe fn irecv_iov_raw(
        &mut self,
        source: Source,
        tag: TagMatch,
        pieces: &[Piece],
    ) -> Result<Request, Error> {
        self.start_recv(source, tag, Buf::of(pieces), None, None)
    }

    /// Whether any message arrived that no receive matched yet (cheap: a
    /// receive asks before [`try_recv_iov_now`](Self::try_recv_iov_now)).
    #[inline]
    pub fn has_unexpected(&self) -> bool {
        self.matcher.has_unexpected()
    }

    /// Receive into `pieces` at once, when the oldest message from
    /// `source` with `tag` that arrived and waits unmatched is a whole
    /// one (a copy) that fits: the receive then completes without a trip
    /// through the request table, and a blocking receive returns without
    /// waiting. `None`: no such message (post a receive instead, which
    /// then matches the same oldest message, whatever it is).
    ///
    /// # Safety
    /// Every piece is valid for writes during the call; pieces do not
    /// overlap.
    pub unsafe fn try_recv_iov_now(
        &mut self,
        source: Source,
        tag: TagMatch,
        pieces: &[Piece],
    ) -> Option<Status> {
        let cap = total(pieces);
        let (from, tag, body) = self.matcher.take_unexpected_if(
            source,
            tag,
            |body| matches!(body, Arrival::Data { bytes, .. } if bytes.len() <= cap),
        )?;
        let Arrival::Data { bytes, ack } = body else {
            unreachable!("taken only if whole")
        };
        self.acknowledge(ack);
        // SAFETY: the pieces are writable (the caller), `cap` bytes in
        // all, and `bytes` (at most `cap`) is our own copy.
        unsafe { iov::scatter(pieces, bytes.as_ptr(), bytes.len()) };
        Some(Status::new(from, tag, bytes.len()))
    }

    /// Receive into `buf` and wait for the message.
    pub fn recv(&mut self, source: Source, tag: TagMatch, buf: &mut [u8]) -> Result<Status, Error> {
        // SAFETY: `buf` outlives the request: we wait for it here.
        let r = unsafe { self.irecv_raw(source, tag, buf.as_mut_ptr(), buf.len())? };
        self.wait(r).map(|c| c.status)
    }

    fn start_recv(
        &mut self,
        source: Source,
        tag: TagMatch,
        buf: Buf,
        owned: Option<Vec<u8>>,
        managed: Option<usize>,
    ) -> Result<Request, Error> {
        let route = match source {
            Source::Rank(r) => Some(self.router.route(r)?),
            Source::Any => None,
        };
        let id = self.reqs.add(buf, owned, Status::new(0, 0, 0), true);
        if let Some(r) = self.reqs.get_mut(id) {
            r.managed = managed;
        }
        // A managed receive from one peer: lend it a landing buffer, so
        // that its next large message is written at once (no RTS, no CTS).
        // Not to ourselves when our own messages arrive at once.
        if let (Some(cap), Some(Route::Local(j))) = (managed, route)
            && !(source == Source::Rank(self.rank) && self.cfg.self_direct)
            && cap > self.cfg.eager_max
            && cap <= self.cfg.grant_max
        {
            self.grant(j, cap);
        }
        let posted = Posted {
            req: id,
            source,
            tag,
        };
        if let Some((from, tag, body)) = self.matcher.post(posted) {
            self.receive_arrival(id, from, tag, body);
        }
        Ok(Request { id })
    }
}

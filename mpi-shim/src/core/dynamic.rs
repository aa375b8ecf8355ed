//! Dynamic processes (MPI-4.1 §11.8): starting processes, ports, names,
//! and joining over a socket.
//!
//! Every process a launcher starts, at the beginning or later, has an id in
//! one *universe* ([`shm_engine::bootstrap::Universe`]), whose node segment
//! has room for all of them: a new process maps the running node's segment
//! and reaches every other process at once, through the same rings. So
//! each way two groups meet ends the same way: their leaders trade member
//! lists and context ids ([`Runtime::intercomm_via`]); only how the
//! leaders find each other differs.
//!
//! - `MPI_Comm_spawn`: the root lets the new processes fetch the segment
//!   (a descriptor server), asks the launcher to start them with its own
//!   id and where the segment is in their key-value space, and tells its
//!   group the new job's first id. The new job's rank 0, in `MPI_Init`,
//!   trades with the root ([`Runtime::connect_parent`]).
//! - Ports: a port name says which process opened it
//!   (`tessel:UNIVERSE:ID:N`); the connecting leader sends its id there,
//!   the accepting leader takes the first such hello on the port, and the
//!   two trade.
//! - `MPI_Comm_join`: the two processes write their ids to the socket.
//! - Names: the launcher's table, shared by all its jobs.
//!
//! The handshakes use a context id that no communicator is ever agreed
//! ([`DYN_CTX`]). They run with the library lock held (see
//! `core::threads`): a thread blocked in `MPI_Comm_accept` holds up the
//! process's other threads.

use shm_engine::bootstrap::{BootstrapError, SpawnApp};
use shm_engine::{Source, TagMatch};

use super::{Class, MpiError, MpiResult, Runtime, SELF, WORLD};

/// The context of the handshakes: in the block below
/// [`super::session::BOOT_CTX_BASE`], which `take_ctx` never hands out.
const DYN_CTX: u32 = super::session::BOOT_CTX_BASE - 2;
/// Tags on [`DYN_CTX`]: the leaders' trade of a spawn and of a join; a
/// port's hello (`PORT | n << 1`) and trade (`PORT | n << 1 | 1`).
const SPAWN: u32 = 1;
const JOIN: u32 = 2;
const PORT: u32 = 0x4000_0000;
/// Most ports one process opens.
const MAX_PORTS: u32 = 1 << 28;
/// The key, in a spawned job's key-value space, of the spawning root's id.
const PARENT_KEY: &str = "tessel.parent";
/// How port names begin.
const PORT_PREFIX: &str = "tessel:";

fn tag(t: u32) -> u64 {
    u64::from(DYN_CTX) << 32 | u64::from(t)
}

/// One command of a spawn, as the root passes it.
#[derive(Clone, Debug, Default)]
pub struct Command {
    pub command: String,
    pub args: Vec<String>,
    /// `maxprocs`.
    pub procs: i32,
    /// The info's keys and values.
    pub info: Vec<(String, String)>,
}

/// This process's dynamic-process state.
#[derive(Debug, Default)]
pub struct Dynamic {
    /// The intercommunicator with the spawning group, while it exists.
    parent: Option<usize>,
    /// Ports open here.
    open_ports: Vec<u32>,
    next_port: u32,
    /// `MPI_APPNUM`: the index of this process's command in the spawn
    /// that started it (0 otherwise).
    pub appnum: u32,
}

fn boot_error(class: Class) -> impl FnOnce(BootstrapError) -> MpiError {
    move |e| MpiError::new(class, e.to_string())
}

impl Runtime {
    /// In `MPI_Init` of a spawned job: the intercommunicator with the
    /// group that spawned it (`MPI_Comm_get_parent`). Collective over the
    /// job, and with the spawning group.
    pub(super) fn connect_parent(&mut self) -> MpiResult<()> {
        if self.ep.world().start == 0 {
            return Ok(()); // the job mpiexec started has no parent
        }
        self.dynamic.appnum = self.ep.bootstrap().appnum();
        let raw = match self.ep.bootstrap().get(PARENT_KEY) {
            Ok(raw) => raw,
            // Started by a resource change, not by a spawn: no parent.
            Err(BootstrapError::MissingKey(_)) => return Ok(()),
            Err(e) => return Err(boot_error(Class::Spawn)(e)),
        };
        let parent = raw
            .get(..4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
            .ok_or_else(|| MpiError::new(Class::Spawn, "malformed parent id"))?;
        let slot = self.intercomm_via(WORLD, 0, |rt, members, max| {
            rt.ep.admit([parent]);
            rt.leaders_trade(members, max, parent, tag(SPAWN))
        })?;
        self.dynamic.parent = Some(slot);
        Ok(())
    }

    /// `MPI_Comm_get_parent`: the parent intercommunicator, until freed.
    pub fn parent(&self) -> Option<usize> {
        self.dynamic.parent.filter(|&s| self.comm(s).is_ok())
    }

    /// `MPI_Comm_spawn(_multiple)` (MPI-4.1 §11.8.2): collective over
    /// intracommunicator `comm`; `cmds` matter at rank `root` only.
    /// Returns the intercommunicator with the new processes, or
    /// [`Class::Spawn`] when none could be started (all or nothing).
    pub fn spawn(
        &mut self,
        comm: usize,
        root: i32,
        cmds: Option<Vec<Command>>,
    ) -> MpiResult<usize> {
        let c = self.intra(comm)?;
        let (members, me, ctx) = (c.members.clone(), c.rank as usize, c.ctx + 1);
        let root_at = usize::try_from(root)
            .ok()
            .filter(|&r| r < members.len())
            .ok_or_else(|| MpiError::new(Class::Root, format!("invalid root {root}")))?;
        let mut lease = None;
        let mut failed = None;
        let outcome = (me == root_at).then(|| match self.start_job(cmds.unwrap_or_default()) {
            Ok((first, server)) => {
                lease = Some(server);
                first.to_ne_bytes().to_vec()
            }
            Err(e) => {
                failed = Some(e);
                Vec::new()
            }
        });
        let outcome = self.bcast_among(&members, me, root_at, ctx, outcome)?;
        if let Some(e) = failed {
            return Err(e);
        }
        let first = outcome
            .get(..4)
            .map(|b| u32::from_ne_bytes(b.try_into().expect("4 bytes")))
            .ok_or_else(|| MpiError::new(Class::Spawn, "the root could not start the processes"))?;
        let slot = self.intercomm_via(comm, root, |rt, members, max| {
            rt.ep.admit([first]);
            rt.leaders_trade(members, max, first, tag(SPAWN))
        });
        // The new processes hold the segment once they have connected.
        drop(lease);
        slot
    }

    /// The root's part of a spawn: the new job's first id, and the server
    /// that hands them the segment.
    fn start_job(&mut self, cmds: Vec<Command>) -> MpiResult<(u32, shm_engine::segment::FdServer)> {
        if cmds.is_empty() {
            return Err(MpiError::new(Class::Arg, "no command to spawn"));
        }
        let mut apps = Vec::with_capacity(cmds.len());
        for c in cmds {
            let procs = u32::try_from(c.procs)
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| {
                    MpiError::new(Class::Arg, format!("maxprocs {} is not positive", c.procs))
                })?;
            if c.command.is_empty() {
                return Err(MpiError::new(Class::Arg, "empty command"));
            }
            apps.push(SpawnApp {
                command: c.command,
                args: c.args,
                procs,
                info: c.info,
            });
        }
        let n: u32 = apps.iter().map(|a| a.procs).sum();
        let (server, segment) = self
            .ep
            .share_segment(n)
            .map_err(|e| MpiError::new(Class::Spawn, format!("sharing the node segment: {e}")))?;
        let me = self.ep.rank();
        let preput = [segment, (PARENT_KEY.to_owned(), me.to_le_bytes().to_vec())];
        let first = self
            .ep
            .bootstrap()
            .spawn(&apps, &preput)
            .map_err(boot_error(Class::Spawn))?;
        Ok((first, server))
    }

    /// `MPI_Open_port`: a new port of this process.
    pub fn open_port(&mut self) -> MpiResult<String> {
        if self.dynamic.next_port >= MAX_PORTS {
            return Err(MpiError::new(Class::Port, "too many ports opened"));
        }
        let n = self.dynamic.next_port;
        self.dynamic.next_port += 1;
        self.dynamic.open_ports.push(n);
        Ok(format!(
            "{PORT_PREFIX}{}:{}:{n}",
            self.ep.universe_id(),
            self.ep.rank()
        ))
    }

    /// The process and number a port name stands for.
    fn parse_port(&self, name: &str) -> MpiResult<(u32, u32)> {
        let bad = || {
            MpiError::new(
                Class::Port,
                format!("{name:?} is not a port name of this library"),
            )
        };
        let rest = name.strip_prefix(PORT_PREFIX).ok_or_else(bad)?;
        let mut it = rest.split(':');
        let (Some(u), Some(id), Some(n), None) = (it.next(), it.next(), it.next(), it.next())
        else {
            return Err(bad());
        };
        let (u, id, n) = (
            u.parse::<u64>().map_err(|_| bad())?,
            id.parse::<u32>().map_err(|_| bad())?,
            n.parse::<u32>().map_err(|_| bad())?,
        );
        if u != self.ep.universe_id() {
            return Err(MpiError::new(
                Class::Port,
                format!(
                    "port {name:?} belongs to a job of another mpiexec: only jobs of one \
                     mpiexec (the first and those it spawned) can connect"
                ),
            ));
        }
        if id >= self.ep.universe_size() || n >= MAX_PORTS {
            return Err(bad());
        }
        Ok((id, n))
    }

    /// The number of port `name`, which this process must have open.
    fn own_port(&self, name: &str) -> MpiResult<u32> {
        let (id, n) = self.parse_port(name)?;
        if id != self.ep.rank() || !self.dynamic.open_ports.contains(&n) {
            return Err(MpiError::new(
                Class::Port,
                format!("port {name:?} is not open in this process"),
            ));
        }
        Ok(n)
    }

    /// `MPI_Close_port`.
    pub fn close_port(&mut self, name: &str) -> MpiResult<()> {
        let n = self.own_port(name)?;
        self.dynamic.open_ports.retain(|&p| p != n);
        Ok(())
    }

    /// `MPI_Comm_accept` (MPI-4.1 §11.8.4): collective over `comm`; `port`
    /// matters at rank `root` only, which takes the first connection
    /// waiting on it.
    pub fn accept(&mut self, port: Option<&str>, root: i32, comm: usize) -> MpiResult<usize> {
        self.intercomm_via(comm, root, |rt, members, max| {
            let n = rt.own_port(port.unwrap_or_default())?;
            let mut hello = [0u8; 4];
            rt.ep
                .recv(Source::Any, TagMatch::exact(tag(PORT | n << 1)), &mut hello)?;
            let other = u32::from_ne_bytes(hello);
            if other >= rt.ep.universe_size() {
                return Err(MpiError::new(
                    Class::Intern,
                    "a malformed connection request",
                ));
            }
            rt.ep.admit([other]);
            rt.leaders_trade(members, max, other, tag(PORT | n << 1 | 1))
        })
    }

    /// `MPI_Comm_connect`: collective over `comm`; `port` matters at rank
    /// `root` only.
    pub fn connect(&mut self, port: Option<&str>, root: i32, comm: usize) -> MpiResult<usize> {
        self.intercomm_via(comm, root, |rt, members, max| {
            let (owner, n) = rt.parse_port(port.unwrap_or_default())?;
            if owner == rt.ep.rank() {
                return Err(MpiError::new(
                    Class::Port,
                    "a process cannot connect to a port it opened itself",
                ));
            }
            let me = rt.ep.rank();
            rt.ep.admit([owner]);
            rt.ep.send(owner, tag(PORT | n << 1), &me.to_ne_bytes())?;
            rt.leaders_trade(members, max, owner, tag(PORT | n << 1 | 1))
        })
    }

    /// `MPI_Comm_join` (MPI-4.1 §11.8.6): an intercommunicator with the
    /// process at the other end of `socket`, which calls it too.
    pub fn join(&mut self, socket: &mut std::fs::File) -> MpiResult<usize> {
        use std::io::{Read, Write};
        let io = |e: std::io::Error| MpiError::new(Class::Other, format!("MPI_Comm_join: {e}"));
        let mine = format!("{}:{}\n", self.ep.universe_id(), self.ep.rank());
        socket.write_all(mine.as_bytes()).map_err(io)?;
        let mut theirs = Vec::new();
        let mut byte = [0u8; 1];
        while theirs.len() < 64 {
            socket.read_exact(&mut byte).map_err(io)?;
            if byte[0] == b'\n' {
                break;
            }
            theirs.push(byte[0]);
        }
        let theirs = String::from_utf8_lossy(&theirs).into_owned();
        let bad = || {
            MpiError::new(
                Class::Other,
                format!("MPI_Comm_join: the other end sent {theirs:?}"),
            )
        };
        let (u, id) = theirs.split_once(':').ok_or_else(bad)?;
        let (u, other) = (
            u.parse::<u64>().map_err(|_| bad())?,
            id.parse::<u32>().map_err(|_| bad())?,
        );
        if u != self.ep.universe_id() || other >= self.ep.universe_size() || other == self.ep.rank()
        {
            return Err(MpiError::new(
                Class::Other,
                "MPI_Comm_join: the process at the other end is not another process of this \
                 job's universe (the jobs of one mpiexec)",
            ));
        }
        self.intercomm_via(SELF, 0, |rt, members, max| {
            rt.ep.admit([other]);
            rt.leaders_trade(members, max, other, tag(JOIN))
        })
    }

    /// `MPI_Publish_name`: for every job of the launcher.
    pub fn publish_name(&mut self, service: &str, port: &str) -> MpiResult<()> {
        self.ep
            .bootstrap()
            .publish_name(service, port)
            .map_err(boot_error(Class::Service))
    }

    /// `MPI_Unpublish_name`.
    pub fn unpublish_name(&mut self, service: &str) -> MpiResult<()> {
        self.ep
            .bootstrap()
            .unpublish_name(service)
            .map_err(boot_error(Class::Service))
    }

    /// `MPI_Lookup_name`.
    pub fn lookup_name(&mut self, service: &str) -> MpiResult<String> {
        self.ep
            .bootstrap()
            .lookup_name(service)
            .map_err(boot_error(Class::Name))?
            .ok_or_else(|| {
                MpiError::new(Class::Name, format!("no port is published as {service:?}"))
            })
    }
}

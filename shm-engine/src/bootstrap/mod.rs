//! How processes of a job find each other: a key-value store with a fence.
//!
//! The engine needs four facts from its launcher: its rank, the job size, the
//! node each process runs on, and a place to publish small values (a
//! segment's socket address) that peers read after a fence. A launcher that
//! starts processes while the job runs also gives the job's place in a
//! larger [`Universe`] of ids, starts new jobs ([`Bootstrap::spawn`]) and
//! keeps a table of published names. [`Bootstrap`] is that contract;
//! [`pmi::PmiClient`] implements it over PMI-1 (our `mpiexec`, or MPICH's
//! Hydra), [`Singleton`] for a process started alone.

pub mod pmi;
pub mod pset;

use std::fmt;

/// A bootstrap failure: the launcher went away or answered something we do
/// not understand.
#[derive(Debug)]
#[non_exhaustive]
pub enum BootstrapError {
    /// The connection to the process manager failed.
    Io(std::io::Error),
    /// The process manager answered with an error code or a malformed line.
    Protocol(String),
    /// A key that should have been published before the fence is missing.
    MissingKey(String),
    /// The process manager cannot do what was asked (start processes,
    /// publish a name), for the reason given.
    Refused(String),
}

impl fmt::Display for BootstrapError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "bootstrap I/O error: {e}"),
            Self::Protocol(m) => write!(f, "bootstrap protocol error: {m}"),
            Self::MissingKey(k) => write!(f, "bootstrap key {k:?} was not published"),
            Self::Refused(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for BootstrapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for BootstrapError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// The launcher's view of the job, as the engine needs it.
///
/// Values put before a [`fence`](Bootstrap::fence) by any process are
/// visible to every process after it. Keys are job-global.
pub trait Bootstrap: Send + std::fmt::Debug {
    /// This process's rank in `0..size()`.
    fn rank(&self) -> u32;
    /// Number of processes in the job.
    fn size(&self) -> u32;
    /// The node (host, or virtual node) that `rank` runs on, numbered from 0.
    fn node_of(&self, rank: u32) -> u32;
    /// Publish `value` under `key`.
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError>;
    /// Read a value published by any process before the last fence.
    fn get(&mut self, key: &str) -> Result<Vec<u8>, BootstrapError>;
    /// Collective: returns once every process has called it; puts made
    /// before it are visible to gets after it.
    fn fence(&mut self) -> Result<(), BootstrapError>;
    /// Tell the launcher the job must end now with `code`.
    fn abort(&mut self, code: i32, message: &str);
    /// Leave the job cleanly (collective under PMI-1).
    fn finalize(&mut self) -> Result<(), BootstrapError>;
    /// Whether every process of the job runs on this machine, its nodes
    /// being virtual ones that share its cores (Tessel's `mpiexec`, which
    /// starts processes on its own machine only).
    fn one_machine(&self) -> bool {
        false
    }
    /// Whether the launcher is gone (its connection closed): nobody will
    /// end this job any more. Cheap enough to ask before each sleep.
    fn launcher_gone(&self) -> bool {
        false
    }
    /// The process ids of this job's universe ([`Universe`]). A launcher
    /// that cannot add processes makes it the job itself.
    fn universe(&self) -> Universe {
        Universe {
            base: 0,
            size: self.size(),
            id: u64::from(std::process::id()),
        }
    }
    /// Ask the launcher to start the processes of `apps` as one new job,
    /// whose key-value space holds `preput` before any of them starts.
    /// Returns the universe id of the new job's first process (the others
    /// follow in order).
    fn spawn(
        &mut self,
        apps: &[SpawnApp],
        preput: &[(String, Vec<u8>)],
    ) -> Result<u32, BootstrapError> {
        let _ = (apps, preput);
        Err(BootstrapError::Refused(
            "this process was not started by a launcher that can add processes (use Tessel's \
             mpiexec)"
                .into(),
        ))
    }
    /// The index of this process's command in the spawn that started its
    /// job (`MPI_APPNUM`); 0 when the launcher does not say.
    fn appnum(&mut self) -> u32 {
        0
    }
    /// Register a new process set of `members` (universe ids) made by set
    /// operation `op` (`union`, `difference`, `intersection`): the
    /// launcher names it, `mpix://OP/N`, uniquely for the life of all its
    /// jobs, and every process sees it through [`created_psets`](Self::created_psets).
    fn create_pset(&mut self, op: &str, members: &[u32]) -> Result<String, BootstrapError> {
        let _ = (op, members);
        Err(BootstrapError::Refused(
            "this process's launcher keeps no process sets that change (use Tessel's mpiexec)"
                .into(),
        ))
    }
    /// The process sets created so far, after the first `known` of them
    /// (the list only grows).
    fn created_psets(&mut self, known: usize) -> Result<Vec<(String, Vec<u32>)>, BootstrapError> {
        let _ = known;
        Ok(Vec::new())
    }
    /// The resource change the launcher proposes now (it acts as the
    /// job's resource manager), proposing one if its policy has one.
    fn dynres_get(&mut self) -> Result<Option<DynresChange>, BootstrapError> {
        Err(no_dynres())
    }
    /// Accept change `tag`: processes it adds start now, get `info`, and
    /// find the node segment under `segment` (a key and value for their
    /// key-value space, from [`crate::Endpoint::share_segment`]).
    fn dynres_accept(
        &mut self,
        tag: u32,
        info: &[(String, String)],
        segment: &(String, Vec<u8>),
    ) -> Result<(), BootstrapError> {
        let _ = (tag, info, segment);
        Err(no_dynres())
    }
    /// Publish `port` under `service` for every job of the launcher.
    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        let _ = (service, port);
        Err(BootstrapError::Refused(
            "no name service without a launcher".into(),
        ))
    }
    /// Withdraw the name `service` published.
    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        let _ = service;
        Err(BootstrapError::Refused(
            "no name service without a launcher".into(),
        ))
    }
    /// The port published under `service`, if any.
    fn lookup_name(&mut self, service: &str) -> Result<Option<String>, BootstrapError> {
        let _ = service;
        Err(BootstrapError::Refused(
            "no name service without a launcher".into(),
        ))
    }
}

/// The process ids a job can reach: `0..size`. The job that `mpiexec`
/// started holds `0..n`; jobs it starts later, at the request of a running
/// one, take the next free ids, `base..base + n`. Every id of a universe
/// larger than its first job is on that job's one node, whose segment is
/// sized for `size` processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Universe {
    /// The id of this job's process of rank 0.
    pub base: u32,
    /// How many ids exist.
    pub size: u32,
    /// A number that tells this universe from the others running on the
    /// machine (a process of one cannot reach a process of another).
    pub id: u64,
}

/// A resource change the launcher proposes ([`Bootstrap::dynres_get`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynresChange {
    /// Processes are added (or removed).
    pub add: bool,
    /// The delta process set's name (its members are the processes added
    /// or removed).
    pub delta: String,
    /// What names the change when accepting it.
    pub tag: u32,
    /// How many processes it adds or removes.
    pub procs: u32,
}

/// The key, in the key-value space of processes a resource change added,
/// of the info the accepting process gave them (hex of `key=value`
/// lines).
pub const DYNRES_INFO_KEY: &str = "tessel.dynres.info";

/// One command of a [`Bootstrap::spawn`] request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpawnApp {
    /// The program to run.
    pub command: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// How many processes run it.
    pub procs: u32,
    /// Hints (`wdir`, `path`...), passed to the launcher as they are.
    pub info: Vec<(String, String)>,
}

/// The exit status of a process, and of its job, that aborted with `code`
/// (`MPI_Abort`'s error code): `code` itself, unless its low byte, which is
/// all an exit status keeps, would read as success (0, 256, ...): then 1.
/// An aborted job never reports success.
pub fn abort_status(code: i32) -> i32 {
    if code & 0xff == 0 { 1 } else { code }
}

/// Pick the bootstrap the process was started with: PMI-1 when the launcher
/// set `PMI_FD` (our `mpiexec`, Hydra), otherwise a one-process job.
pub fn from_env() -> Result<Box<dyn Bootstrap>, BootstrapError> {
    match pmi::PmiClient::from_env()? {
        Some(client) => Ok(Box::new(client)),
        None => Ok(Box::new(Singleton::default())),
    }
}

/// A job of one process, for programs started without a launcher.
#[derive(Debug, Default)]
pub struct Singleton {
    kvs: std::collections::HashMap<String, Vec<u8>>,
}

impl Bootstrap for Singleton {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn node_of(&self, _rank: u32) -> u32 {
        0
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        self.kvs.insert(key.to_owned(), value.to_vec());
        Ok(())
    }
    fn get(&mut self, key: &str) -> Result<Vec<u8>, BootstrapError> {
        self.kvs
            .get(key)
            .cloned()
            .ok_or_else(|| BootstrapError::MissingKey(key.to_owned()))
    }
    fn fence(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }
    fn abort(&mut self, code: i32, message: &str) {
        say(&format!("abort({code}): {message}\n"));
        std::process::exit(abort_status(code));
    }
    fn finalize(&mut self) -> Result<(), BootstrapError> {
        Ok(())
    }
}

/// Why a launcher without a resource manager refuses resource changes.
fn no_dynres() -> BootstrapError {
    BootstrapError::Refused(
        "this process's launcher proposes no resource changes (Tessel's mpiexec --dynres does)"
            .into(),
    )
}

/// Write `text` to standard error in one call, so that it does not
/// interleave with what other processes of the job write there.
pub(crate) fn say(text: &str) {
    use std::io::Write;
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::abort_status;

    #[test]
    fn an_abort_never_exits_with_success() {
        assert_eq!(abort_status(7), 7);
        assert_eq!(abort_status(-1), -1);
        assert_eq!(abort_status(0), 1);
        assert_eq!(abort_status(256), 1);
        assert_eq!(abort_status(257), 257);
    }
}

//! Starting the ranks, serving their PMI requests and watching them.
//!
//! One thread runs one loop: poll(2) over the PMI sockets of all ranks with
//! a 20 ms timeout, then `waitpid(-1, WNOHANG)` until no child is left to
//! reap, then the signal, timeout and kill-grace checks. `mpiexec` is a
//! child subreaper, so what the ranks leave behind is reaped here too.
//!
//! A rank that fails ends the job: every remaining process group gets
//! SIGTERM, SIGKILL two seconds later, and `mpiexec` exits with the first
//! failure's code once all ranks are reaped. A rank fails when it
//! - exits non-zero or dies by a signal;
//! - sends `cmd=abort` (exit code as [`abort_status`] says: never 0). A
//!   rank often aborts because a peer died under it (a copy from a dead
//!   process fails): the launcher first gives the dead peer
//!   [`ABORT_SETTLE`] to be reaped, and names it rather than the
//!   survivor;
//! - exits with code 0 after PMI `init` without `finalize` (returned from
//!   `main` without `MPI_Finalize`): its peers may wait for it forever;
//! - leaves without `finalize` (before `init`, or closing its connection)
//!   while other ranks wait for it in a PMI barrier it can never enter.
//!
//! Ranks die with the launcher: each gets SIGKILL as its parent-death
//! signal, so a `kill -9` of `mpiexec` leaves no rank behind.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::binding::{Binding, bind_name, bind_places};
use crate::cli::Bind;
use crate::mapping::Mapping;
use crate::pmi_server::Stage;
use crate::pmi_server::{DynresRequest, PmiServer, SpawnRequest};
use crate::sys::{self, CpuSet};
use shm_engine::bootstrap::abort_status;
use shm_engine::locality::{CpuMask, JOB_CPUS_VAR, PLACE_VAR};

/// How long poll(2) waits before the children are checked again.
const POLL_INTERVAL_MS: i32 = 20;
/// How long an abort waits for a dead peer of the aborting rank to be
/// reaped, so that the report names the rank that died (see the module
/// docs). A fresh zombie appears within milliseconds of the death.
const ABORT_SETTLE: Duration = Duration::from_millis(200);
/// How long a spawn that finds the universe full waits for spawned
/// processes to exit and free their ids.
const SPAWN_PATIENCE: Duration = Duration::from_secs(5);
/// Time between SIGTERM and SIGKILL when the job is torn down.
const KILL_GRACE: Duration = Duration::from_secs(2);
/// Longest PMI request line accepted; longer ones are answered with an
/// error and skipped.
const MAX_REQUEST_LINE: usize = 64 * 1024;
/// Stop reading a rank's requests while this much of its answers is unsent.
const OUTPUT_HIGH_WATER: usize = 1 << 20;
/// Read at most this many chunks from one rank per loop turn, so a chatty
/// rank cannot starve the others.
const READS_PER_TURN: usize = 16;

/// Exit code when `--timeout` expires (as timeout(1)).
pub const EXIT_TIMEOUT: i32 = 124;
/// Exit code when PROGRAM exists but cannot be executed.
pub const EXIT_CANNOT_EXECUTE: i32 = 126;
/// Exit code when PROGRAM is not found.
pub const EXIT_NOT_FOUND: i32 = 127;

/// PMI variables of an enclosing job that would mislead the ranks.
const FOREIGN_PMI_VARIABLES: [&str; 3] = ["PMI_PORT", "PMI_ID", "PMI_SPAWNED"];

/// Everything needed to start a job.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// Program to run in every process.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Number of ranks and their virtual nodes.
    pub mapping: Mapping,
    /// How many processes the job may hold, those spawns add included.
    pub universe: u32,
    /// The resource-change policy (`--dynres`).
    pub dynres: Option<crate::dynres::Policy>,
    /// Extra environment variables, set on top of the inherited ones.
    pub env: Vec<(String, String)>,
    /// Named process sets, `(full name, ranks)`, published through PMI.
    pub psets: Vec<(String, Vec<u32>)>,
    /// CPU binding.
    pub bind: Bind,
    /// Kill the job after this long.
    pub timeout: Option<Duration>,
}

/// Run the job to its end and return the exit code `mpiexec` should exit
/// with. Reports problems on stderr.
pub fn run(spec: &JobSpec) -> i32 {
    let started = Instant::now();
    if let Err(e) = sys::catch_termination_signals() {
        eprintln!("mpiexec: cannot install signal handlers: {e}");
        return 1;
    }
    // Best effort: without it, orphans of the ranks are reaped by init
    // instead, which only makes the teardown wait for them longer.
    let _ = sys::become_subreaper();
    let places = match bind_places(spec.bind, spec.mapping.np()) {
        Ok(places) => places,
        Err(e) => {
            eprintln!("mpiexec: --bind {}: {e}", bind_name(spec.bind));
            return 1;
        }
    };
    let kvsname = format!("tessel_{}", std::process::id());
    let mut server = PmiServer::new(&kvsname, &spec.mapping);
    server.set_universe(spec.universe);
    if let Err(e) = server.publish_psets(&spec.psets) {
        eprintln!("mpiexec: {e}");
        return 1;
    }
    let mut job = Job {
        spec,
        server,
        procs: Vec::with_capacity(spec.mapping.np() as usize),
        phase: Phase::Running,
        gone: Vec::new(),
        started,
        dynres: spec
            .dynres
            .clone()
            .map(|p| crate::dynres::Manager::new(p, (0..spec.mapping.np()).collect())),
        places,
        waiting_spawns: Vec::new(),
        control: None,
    };
    if spec.dynres.is_some() {
        match control_listener() {
            Ok(l) => job.control = Some(l),
            Err(e) => {
                eprintln!("mpiexec: --dynres: cannot take requests from outside the job: {e}");
                return 1;
            }
        }
    }
    for rank in 0..spec.mapping.np() {
        let m = &spec.mapping;
        let start = Start {
            program: &spec.program,
            args: &spec.args,
            id: rank,
            rank,
            size: m.np(),
            node: m.node_of(rank),
            local_rank: m.local_rank(rank),
            local_size: m.local_size(rank),
            base: 0,
            wdir: None,
        };
        match start_process(spec, &start, &job.places) {
            Ok(proc) => job.procs.push(proc),
            Err(e) => {
                eprintln!(
                    "mpiexec: cannot execute {}: {e}",
                    Path::new(&spec.program).display()
                );
                let code = if e.kind() == io::ErrorKind::NotFound {
                    EXIT_NOT_FOUND
                } else {
                    EXIT_CANNOT_EXECUTE
                };
                job.end(code, libc::SIGTERM, None);
                break;
            }
        }
    }
    job.event_loop()
}

/// What one process is started as.
struct Start<'a> {
    program: &'a std::ffi::OsStr,
    args: &'a [OsString],
    /// Its id among all processes of the launcher (the universe's).
    id: u32,
    /// Its rank in its job, the job's size, its virtual node and its place
    /// there.
    rank: u32,
    size: u32,
    node: u32,
    local_rank: u32,
    local_size: u32,
    /// The id of its job's rank 0.
    base: u32,
    /// Where it starts (a spawn's `wdir`).
    wdir: Option<&'a Path>,
}

/// Start a process: a new process group, its end of a socket pair as
/// `PMI_FD`, the job variables, and bound to the (id mod n)-th of the n
/// `places` if there are any (and told so in `TESSEL_PLACE`).
fn start_process(spec: &JobSpec, start: &Start, places: &[Binding]) -> io::Result<Proc> {
    let rank = start.rank;
    let (ours, theirs) = UnixStream::pair()?;
    // Keep the child's descriptor clear of 0..=2, which Command may replace
    // with the child's stdio (possible if mpiexec was started with one
    // closed). try_clone duplicates to the lowest free descriptor >= 3.
    let theirs = if theirs.as_raw_fd() <= 2 {
        theirs.try_clone()?
    } else {
        theirs
    };
    ours.set_nonblocking(true)?;
    let fd = theirs.as_raw_fd();

    let mut cmd = Command::new(start.program);
    cmd.args(start.args);
    if let Some(dir) = start.wdir {
        cmd.current_dir(dir);
    }
    for var in FOREIGN_PMI_VARIABLES {
        cmd.env_remove(var);
    }
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    cmd.env("PMI_FD", fd.to_string())
        .env("PMI_RANK", rank.to_string())
        .env("PMI_SIZE", start.size.to_string())
        .env("TESSEL_NODE", start.node.to_string())
        .env("TESSEL_LOCAL_RANK", start.local_rank.to_string())
        .env("TESSEL_LOCAL_SIZE", start.local_size.to_string())
        .env(JOB_CPUS_VAR, CpuMask::current().count().to_string())
        .env(
            shm_engine::bootstrap::pmi::UNIVERSE_VAR,
            format!("{} {} {}", start.base, spec.universe, std::process::id()),
        );
    // Process 0 reads mpiexec's standard input, unless that is a terminal:
    // the ranks are not in the terminal's foreground process group, so a
    // read would stop the rank with SIGTTIN and hang the job.
    if start.id != 0 || io::stdin().is_terminal() {
        cmd.stdin(Stdio::null());
    }
    cmd.process_group(0);
    // Round robin by rank, not by local rank: every process this mpiexec
    // starts runs on this machine, virtual nodes included, so two virtual
    // nodes must not pile their processes onto the same first cores.
    let binding = (!places.is_empty()).then(|| &places[start.id as usize % places.len()]);
    if let Some(b) = binding {
        cmd.env(PLACE_VAR, &b.place);
    } else {
        cmd.env_remove(PLACE_VAR);
    }
    let cpu = binding.map(|b| b.cpus);
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the child between fork and exec, where
    // only async-signal-safe operations are allowed: `child_setup` makes
    // prctl, getppid, raise, fcntl, sched_setaffinity and write calls only,
    // and allocates nothing (the CPU set was built before the fork).
    unsafe {
        cmd.pre_exec(move || child_setup(fd, cpu.as_ref(), parent));
    }
    // spawn returns only once exec succeeded (or with exec's error, read
    // from a close-on-exec pipe), so the child is in its own group by now.
    // The Child handle is not kept: the event loop reaps with
    // waitpid(-1), and dropping a Child neither waits nor kills.
    let child = cmd.spawn()?;
    drop(theirs);
    let pid = i32::try_from(child.id()).map_err(io::Error::other)?;
    Ok(Proc {
        rank: start.id,
        pid,
        status: None,
        conn: Some(Conn {
            stream: ours,
            input: Vec::new(),
            output: Vec::new(),
            discarding: false,
        }),
    })
}

/// The control socket of `--dynres` (see [`crate::dynres::control_name`]),
/// non-blocking: the event loop takes what waits on it each turn.
fn control_listener() -> io::Result<std::os::unix::net::UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    let name = crate::dynres::control_name(std::process::id());
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
    let l = std::os::unix::net::UnixListener::bind_addr(&addr)?;
    l.set_nonblocking(true)?;
    Ok(l)
}

/// The file a spawn's `program` names: a path (relative to `wdir`), or a
/// name looked up in `path` (a spawn's `path` hint, `:`-separated) and
/// then `PATH`; it must be an executable file.
fn resolve(
    program: &str,
    wdir: Option<&Path>,
    path: Option<&str>,
) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt;
    let runnable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return Err("empty command".into());
    }
    if program.contains('/') {
        let p = match wdir {
            Some(dir) if !program.starts_with('/') => dir.join(program),
            _ => std::path::PathBuf::from(program),
        };
        return if runnable(&p) {
            Ok(p)
        } else {
            Err(format!("{} is not an executable file", p.display()))
        };
    }
    let env_path = std::env::var("PATH").unwrap_or_default();
    path.into_iter()
        .chain([env_path.as_str()])
        .flat_map(|list| list.split(':'))
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(program))
        .find(|p| runnable(p))
        .ok_or_else(|| format!("{program} was not found in PATH"))
}

/// In the child before exec: die with the launcher, let the PMI socket
/// survive exec, and bind.
fn child_setup(fd: i32, cpu: Option<&CpuSet>, parent: libc::pid_t) -> io::Result<()> {
    if let Err(e) = sys::die_with_parent(parent) {
        sys::write_stderr_raw(b"mpiexec: cannot set the parent-death signal\n");
        return Err(e);
    }
    if let Err(e) = sys::clear_cloexec(fd) {
        sys::write_stderr_raw(b"mpiexec: cannot pass the PMI socket to the process\n");
        return Err(e);
    }
    if let Some(set) = cpu
        && let Err(e) = sys::set_affinity(set)
    {
        sys::write_stderr_raw(b"mpiexec: --bind: sched_setaffinity failed\n");
        return Err(e);
    }
    Ok(())
}

/// One process and its PMI connection.
#[derive(Debug)]
struct Proc {
    /// Its id (its rank, for the job `mpiexec` started).
    rank: u32,
    pid: i32,
    /// Set once the process has been reaped.
    status: Option<ExitStatus>,
    /// `None` once the connection is closed (by either side).
    conn: Option<Conn>,
}

/// The launcher's end of a PMI connection with its buffers.
#[derive(Debug)]
struct Conn {
    stream: UnixStream,
    /// Bytes received, not yet a complete line.
    input: Vec<u8>,
    /// Answers not yet written.
    output: Vec<u8>,
    /// Skipping the rest of an over-long line.
    discarding: bool,
}

#[derive(Debug)]
enum Phase {
    Running,
    /// The job is being torn down; `mpiexec` exits with `code`.
    Ending {
        code: i32,
        since: Instant,
        /// Process groups signalled (SIGKILLed when the grace expires).
        groups: Vec<i32>,
        killed: bool,
    },
}

#[derive(Debug)]
struct Job<'a> {
    spec: &'a JobSpec,
    server: PmiServer,
    procs: Vec<Proc>,
    phase: Phase,
    /// Ranks whose connection closed, still to be reported to the server.
    gone: Vec<u32>,
    started: Instant,
    places: Vec<Binding>,
    /// Spawn requests waiting for finalized processes to exit.
    waiting_spawns: Vec<(SpawnRequest, Instant)>,
    /// The resource manager, with `--dynres`.
    dynres: Option<crate::dynres::Manager>,
    /// Where `tessel-dynres` asks for changes, with `--dynres`.
    control: Option<std::os::unix::net::UnixListener>,
}

impl Job<'_> {
    fn event_loop(mut self) -> i32 {
        loop {
            self.serve_connections();
            self.serve_control();
            self.release_gone();
            self.check_signals();
            self.reap();
            self.release_gone();
            for (req, since) in std::mem::take(&mut self.waiting_spawns) {
                self.spawn_job(req, since);
            }
            self.check_departures();
            self.check_deadlines();
            if let Some(code) = self.finished() {
                return code;
            }
        }
    }

    /// Wait up to one poll interval for PMI traffic and serve it.
    fn serve_connections(&mut self) {
        let mut fds = Vec::with_capacity(self.procs.len());
        let mut owners = Vec::with_capacity(self.procs.len());
        for (index, proc) in self.procs.iter().enumerate() {
            if let Some(conn) = &proc.conn {
                let mut events = 0;
                if conn.output.len() < OUTPUT_HIGH_WATER {
                    events |= libc::POLLIN;
                }
                if !conn.output.is_empty() {
                    events |= libc::POLLOUT;
                }
                fds.push(libc::pollfd {
                    fd: conn.stream.as_raw_fd(),
                    events,
                    revents: 0,
                });
                owners.push(index);
            }
        }
        if let Err(e) = sys::poll(&mut fds, POLL_INTERVAL_MS) {
            eprintln!("mpiexec: poll failed: {e}");
            std::thread::sleep(Duration::from_millis(POLL_INTERVAL_MS as u64));
            return;
        }
        for (pollfd, index) in fds.iter().zip(owners) {
            if pollfd.revents & libc::POLLNVAL != 0 {
                self.close_conn(index);
                continue;
            }
            if pollfd.revents & libc::POLLOUT != 0 {
                self.flush(index);
            }
            if pollfd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0 {
                self.read_from(index);
            }
        }
    }

    /// Read what rank `index` sent and answer complete lines.
    fn read_from(&mut self, index: usize) {
        let mut buf = [0u8; 8192];
        for _ in 0..READS_PER_TURN {
            let Some(conn) = self.procs[index].conn.as_mut() else {
                return;
            };
            match (&conn.stream).read(&mut buf) {
                Ok(0) => {
                    self.close_conn(index);
                    return;
                }
                Ok(n) => {
                    conn.input.extend_from_slice(&buf[..n]);
                    self.handle_input(index);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    self.close_conn(index);
                    return;
                }
            }
        }
    }

    /// Answer every complete line in rank `index`'s input buffer.
    fn handle_input(&mut self, index: usize) {
        let rank = self.procs[index].rank;
        loop {
            if !matches!(self.phase, Phase::Running) {
                return;
            }
            let Some(conn) = self.procs[index].conn.as_mut() else {
                return;
            };
            let Some(newline) = conn.input.iter().position(|&b| b == b'\n') else {
                if conn.input.len() > MAX_REQUEST_LINE {
                    conn.input.clear();
                    if !conn.discarding {
                        conn.discarding = true;
                        eprintln!(
                            "mpiexec: rank {rank} sent a PMI line longer than \
                             {MAX_REQUEST_LINE} bytes; answered rc=-1"
                        );
                        self.deliver(vec![(rank, PmiServer::error_line("line_too_long"))]);
                    }
                }
                return;
            };
            let mut line: Vec<u8> = conn.input.drain(..=newline).collect();
            line.pop();
            if std::mem::take(&mut conn.discarding) {
                continue;
            }
            let outcome = self.server.handle_line(rank, &line);
            if let Some(warning) = outcome.warning {
                eprintln!("mpiexec: {warning}");
            }
            self.deliver(outcome.replies);
            if let Some(code) = outcome.abort {
                self.aborted(index, code);
                return;
            }
            if let Some(req) = outcome.spawn {
                self.spawn_job(req, Instant::now());
            }
            if let Some(req) = outcome.dynres {
                self.resource_change(req);
            }
        }
    }

    /// Start the processes a running one asked for (MPI_Comm_spawn) as a
    /// new job, and answer it.
    ///
    /// A job's ids are free only once its processes have exited: when the
    /// universe is full but spawned processes still run (usually ones that
    /// disconnected and are finishing), the request waits for them to
    /// exit, up to [`SPAWN_PATIENCE`] after `since`.
    fn spawn_job(&mut self, req: SpawnRequest, since: Instant) {
        let by = req.by;
        let refuse = |job: &mut Self, msg: String| {
            let msg: String = msg
                .chars()
                .map(|c| if c.is_whitespace() { '_' } else { c })
                .collect();
            job.deliver(vec![(by, format!("cmd=spawn_result rc=-1 msg={msg}"))]);
        };
        let mut programs = Vec::with_capacity(req.apps.len());
        for app in &req.apps {
            let info = |k: &str| {
                app.info
                    .iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.as_str())
            };
            let wdir = info("wdir").map(std::path::PathBuf::from);
            match resolve(&app.program, wdir.as_deref(), info("path")) {
                Ok(p) => programs.push((p, wdir)),
                Err(e) => return refuse(self, e),
            }
        }
        let procs: Vec<u32> = req.apps.iter().map(|a| a.procs).collect();
        let ended = |id: u32| {
            self.procs
                .get(id as usize)
                .is_none_or(|p| p.status.is_some_and(|s| s.success()))
        };
        let base = match self.server.add_job(&procs, &req.preput, ended) {
            Ok(base) => base,
            Err(msg) => {
                // Could fit once spawned processes still running exit.
                let np = self.spec.mapping.np();
                let fits = procs.iter().sum::<u32>() <= self.spec.universe - np;
                let exiting = self.procs[np as usize..].iter().any(|p| p.status.is_none());
                if fits && exiting && since.elapsed() < SPAWN_PATIENCE {
                    self.waiting_spawns.push((req, since));
                    return;
                }
                return refuse(self, msg);
            }
        };
        let size: u32 = procs.iter().sum();
        let mut id = base;
        for (app, (program, wdir)) in req.apps.iter().zip(&programs) {
            let args: Vec<OsString> = app.args.iter().map(OsString::from).collect();
            for _ in 0..app.procs {
                let (_, rank) = self.server.job_of(id);
                let start = Start {
                    program: program.as_os_str(),
                    args: &args,
                    id,
                    rank,
                    size,
                    node: 0,
                    local_rank: rank,
                    local_size: size,
                    base,
                    wdir: wdir.as_deref(),
                };
                if !self.start_added(&start, "MPI_Comm_spawn") {
                    return;
                }
                id += 1;
            }
        }
        self.deliver(vec![(by, format!("cmd=spawn_result rc=0 base={base}"))]);
    }

    /// Start a process added while the job runs, in the place of its id
    /// (a new id, one whose job has ended, or a reserved one); on failure
    /// end the job and return false.
    fn start_added(&mut self, start: &Start, why: &str) -> bool {
        match start_process(self.spec, start, &self.places) {
            Ok(proc) => {
                match self.procs.get_mut(start.id as usize) {
                    Some(old) => *old = proc,
                    None => self.procs.push(proc),
                }
                true
            }
            Err(e) => {
                eprintln!(
                    "mpiexec: cannot execute {} for {why}: {e}",
                    Path::new(start.program).display()
                );
                self.end(EXIT_CANNOT_EXECUTE, libc::SIGTERM, None);
                false
            }
        }
    }

    /// Answer a resource-change request (`crate::dynres`).
    fn resource_change(&mut self, req: DynresRequest) {
        match req {
            DynresRequest::Get { by } => {
                let line = self.dynres_get();
                self.deliver(vec![(by, line)]);
            }
            DynresRequest::Accept {
                by,
                tag,
                info,
                seg_key,
                seg_value,
            } => {
                let Some(m) = self.dynres.as_mut() else {
                    return self.deliver(vec![(
                        by,
                        "cmd=rc_accept_result rc=-1 msg=no_policy".into(),
                    )]);
                };
                let Some(change) = m.accept(tag) else {
                    let msg = format!(
                        "cmd=rc_accept_result rc=-1 msg=no_pending_change_{tag}_(accepted_already?)"
                    );
                    return self.deliver(vec![(by, msg)]);
                };
                if change.add {
                    let preput = [
                        (seg_key, seg_value),
                        ("tessel.dynres.info".to_owned(), info),
                    ];
                    let base = change.ids[0];
                    self.server.start_reserved(base, &preput);
                    let n = change.ids.len() as u32;
                    for &id in &change.ids {
                        let start = Start {
                            program: &self.spec.program,
                            args: &self.spec.args,
                            id,
                            rank: id - base,
                            size: n,
                            node: 0,
                            local_rank: id - base,
                            local_size: n,
                            base,
                            wdir: None,
                        };
                        if !self.start_added(&start, "a resource change") {
                            return;
                        }
                    }
                }
                self.deliver(vec![(by, "cmd=rc_accept_result rc=0 msg=success".into())]);
            }
        }
    }

    /// Answer the requests for changes waiting on the control socket.
    fn serve_control(&mut self) {
        loop {
            let Some(Ok((mut stream, _))) = self.control.as_ref().map(|l| l.accept()) else {
                return;
            };
            let reply = self.control_request(&stream);
            let _ = writeln!(stream, "{reply}");
        }
    }

    /// One request (`add N` or `remove N`) from `tessel-dynres`.
    fn control_request(&mut self, stream: &std::os::unix::net::UnixStream) -> String {
        use std::io::BufRead;
        if sys::peer_uid(stream).ok() != Some(sys::euid()) {
            return "error: only the job's user may ask for changes".into();
        }
        let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
        let mut line = String::new();
        if io::BufReader::new(stream)
            .take(256)
            .read_line(&mut line)
            .is_err()
        {
            return "error: no request read".into();
        }
        let step = match crate::dynres::Policy::schedule(&line) {
            Ok(crate::dynres::Policy::Schedule(steps)) if steps.len() == 1 => steps[0],
            _ => return format!("error: {:?} is not `add N` or `remove N`", line.trim()),
        };
        let universe = self.spec.universe;
        match self.dynres.as_mut().map(|m| m.request(step, universe)) {
            Some(Ok(before)) => format!("ok: queued, after {before} other requests"),
            Some(Err(e)) => format!("error: {e}"),
            None => "error: the job has no resource manager (mpiexec --dynres)".into(),
        }
    }

    /// The pending change, proposing the policy's next one if none is.
    fn dynres_get(&mut self) -> String {
        use crate::dynres::Step;
        let none = "cmd=rc_get_result rc=0 msg=success type=none delta= tag=0 procs=0".to_owned();
        let Some(m) = self.dynres.as_ref() else {
            return "cmd=rc_get_result rc=-1 \
                    msg=the_job_was_started_without_a_resource_policy_(mpiexec_--dynres)"
                .into();
        };
        if m.pending.is_none() {
            let (add, ids) = match m.next_step() {
                None => return none,
                Some(Step::Remove(n)) => (false, m.removal(n)),
                Some(Step::Add(n)) => match self.reserve(n) {
                    Some(ids) => (true, ids),
                    None => return none, // no room now: nothing proposed
                },
            };
            let delta = self
                .server
                .register_pset(if add { "add" } else { "remove" }, ids.clone());
            let m = self.dynres.as_mut().expect("checked above");
            m.propose(add, ids, delta);
        }
        let m = self.dynres.as_ref().expect("checked above");
        let c = m.pending.as_ref().expect("proposed above");
        format!(
            "cmd=rc_get_result rc=0 msg=success type={} delta={} tag={} procs={}",
            if c.add { "add" } else { "sub" },
            c.delta,
            c.tag,
            c.ids.len()
        )
    }

    /// Reserve `n` ids for processes a resource change adds, holding
    /// their places with already-reaped placeholders (nothing waits for
    /// them, and no signal reaches them) until the change is accepted.
    fn reserve(&mut self, n: u32) -> Option<Vec<u32>> {
        let ended = |id: u32| {
            self.procs
                .get(id as usize)
                .is_none_or(|p| p.status.is_some_and(|s| s.success()))
        };
        let base = self.server.reserve_job(n, ended).ok()?;
        for id in base..base + n {
            let placeholder = Proc {
                rank: id,
                pid: 0,
                status: Some(ExitStatus::from_raw(0)),
                conn: None,
            };
            match self.procs.get_mut(id as usize) {
                Some(old) => *old = placeholder,
                None => self.procs.push(placeholder),
            }
        }
        Some((base..base + n).collect())
    }

    /// Queue answers and try to send them right away.
    fn deliver(&mut self, replies: Vec<(u32, String)>) {
        for (rank, line) in replies {
            let index = rank as usize;
            if let Some(conn) = self.procs.get_mut(index).and_then(|p| p.conn.as_mut()) {
                conn.output.extend_from_slice(line.as_bytes());
                conn.output.push(b'\n');
                self.flush(index);
            }
        }
    }

    /// Write as much of rank `index`'s pending answers as the socket takes.
    fn flush(&mut self, index: usize) {
        let Some(conn) = self.procs[index].conn.as_mut() else {
            return;
        };
        while !conn.output.is_empty() {
            match (&conn.stream).write(&conn.output) {
                Ok(0) => break,
                Ok(n) => {
                    conn.output.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(_) => break,
            }
        }
        if !conn.output.is_empty() {
            // The rank is not reading any more (EPIPE, reset).
            self.close_conn(index);
        }
    }

    fn close_conn(&mut self, index: usize) {
        if self.procs[index].conn.take().is_some() {
            self.gone.push(self.procs[index].rank);
        }
    }

    /// Tell the server about closed connections (which may end a barrier).
    fn release_gone(&mut self) {
        while let Some(rank) = self.gone.pop() {
            let replies = self.server.rank_gone(rank);
            self.deliver(replies);
        }
    }

    /// Rank `index` asked to abort the job with `code`. Before blaming it,
    /// give a peer that died under it (the usual reason for an abort in
    /// the middle of a transfer) [`ABORT_SETTLE`] to be reaped: a failure
    /// found then is reported instead.
    fn aborted(&mut self, index: usize, code: i32) {
        let deadline = Instant::now() + ABORT_SETTLE;
        loop {
            while let Some((pid, raw)) = sys::wait_any() {
                let Some(other) = self.running_index(pid) else {
                    continue;
                };
                let status = ExitStatus::from_raw(raw);
                if other != index && !status.success() {
                    self.exited(other, status);
                    return;
                }
                self.procs[other].status = Some(status);
                self.close_conn(other);
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let (rank, pid) = (self.procs[index].rank, self.procs[index].pid);
        let status = abort_status(code);
        let exit = if status == code {
            String::new()
        } else {
            format!(" (the job exits with {status}: an aborted job never reports success)")
        };
        eprintln!(
            "mpiexec: rank {rank} (pid {pid}) called abort with exit code {code}; \
             aborting the job{exit}"
        );
        self.end(status, libc::SIGTERM, None);
    }

    /// The index of the rank with process `pid`, if not reaped yet.
    fn running_index(&self, pid: i32) -> Option<usize> {
        self.procs
            .iter()
            .position(|p| p.pid == pid && p.status.is_none())
    }

    /// Reap exited children (ranks and the orphans they left), and end the
    /// job on the first failing rank.
    fn reap(&mut self) {
        while let Some((pid, raw)) = sys::wait_any() {
            if let Some(index) = self.running_index(pid) {
                self.exited(index, ExitStatus::from_raw(raw));
            }
        }
    }

    /// A rank that left without finalizing holds up a barrier others wait
    /// in: end the job, naming it (and how it left, if it has exited:
    /// its connection may close a moment before it can be reaped).
    fn check_departures(&mut self) {
        if !matches!(self.phase, Phase::Running) {
            return;
        }
        let Some(rank) = self.server.blocking_departure() else {
            return;
        };
        let index = rank as usize;
        let deadline = Instant::now() + ABORT_SETTLE;
        while self.procs[index].status.is_none() && Instant::now() < deadline {
            self.reap();
            if !matches!(self.phase, Phase::Running) {
                return; // it, or another rank, failed on its own
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let proc = &self.procs[index];
        // A rank that exited otherwise than with 0 ended the job in `exited`.
        let how = if proc.status.is_some() {
            "exited with code 0"
        } else {
            "closed its PMI connection"
        };
        let before = match self.server.stage(rank) {
            Stage::Started => "before calling MPI_Init",
            _ => "without calling MPI_Finalize",
        };
        eprintln!(
            "mpiexec: rank {rank} (pid {}) {how} {before} while other ranks wait for it; \
             aborting the job",
            proc.pid
        );
        let pid = proc.pid;
        self.end(1, libc::SIGTERM, Some(pid));
    }

    fn exited(&mut self, index: usize, status: ExitStatus) {
        // Serve what the rank sent before it exited (an abort, say).
        self.read_from(index);
        self.procs[index].status = Some(status);
        self.close_conn(index);
        if !matches!(self.phase, Phase::Running) {
            return;
        }
        let rank = self.procs[index].rank;
        let (code, how) = match (status.code(), status.signal()) {
            (Some(0), _) if self.server.stage(rank) == Stage::Initialized => (
                1,
                "exited with code 0 without calling MPI_Finalize".to_owned(),
            ),
            (Some(0), _) => return,
            (Some(code), _) => (code, format!("exited with code {code}")),
            (None, Some(signal)) => (
                128 + signal,
                format!(
                    "was killed by {}{}",
                    sys::describe_signal(signal),
                    if status.core_dumped() {
                        " (core dumped)"
                    } else {
                        ""
                    }
                ),
            ),
            (None, None) => (1, format!("ended with {status}")),
        };
        let proc = &self.procs[index];
        let others_running = self.procs.iter().any(|p| p.status.is_none());
        eprintln!(
            "mpiexec: rank {} (pid {}) {how}{}",
            proc.rank,
            proc.pid,
            if others_running {
                "; aborting the job"
            } else {
                ""
            }
        );
        let pid = proc.pid;
        self.end(code, libc::SIGTERM, Some(pid));
    }

    /// Start tearing the job down: `signal` to every running rank's process
    /// group (and to `extra_group`), connections closed, exit with `code`.
    fn end(&mut self, code: i32, signal: i32, extra_group: Option<i32>) {
        let mut groups: Vec<i32> = self
            .procs
            .iter()
            .filter(|p| p.status.is_none())
            .map(|p| p.pid)
            .collect();
        groups.extend(extra_group);
        for proc in &mut self.procs {
            proc.conn = None;
        }
        self.gone.clear();
        for &group in &groups {
            sys::kill_group(group, signal);
        }
        self.phase = Phase::Ending {
            code,
            since: Instant::now(),
            groups,
            killed: false,
        };
    }

    /// Forward SIGINT/SIGTERM/SIGHUP to the job; a second one kills it.
    fn check_signals(&mut self) {
        let Some(signal) = sys::take_signal() else {
            return;
        };
        match &mut self.phase {
            Phase::Running => {
                eprintln!(
                    "mpiexec: received {}; forwarding it to the job",
                    sys::describe_signal(signal)
                );
                self.end(128 + signal, signal, None);
            }
            Phase::Ending { groups, killed, .. } => {
                if !*killed {
                    eprintln!(
                        "mpiexec: received {} while ending the job; killing it",
                        sys::describe_signal(signal)
                    );
                    for &group in groups.iter() {
                        sys::kill_group(group, libc::SIGKILL);
                    }
                    *killed = true;
                }
            }
        }
    }

    /// The job's timeout, and the SIGKILL after the grace period.
    fn check_deadlines(&mut self) {
        match &mut self.phase {
            Phase::Running => {
                let Some(timeout) = self.spec.timeout else {
                    return;
                };
                if self.started.elapsed() >= timeout {
                    eprintln!(
                        "mpiexec: timeout of {} s expired; killing the job",
                        timeout.as_secs()
                    );
                    self.end(EXIT_TIMEOUT, libc::SIGTERM, None);
                }
            }
            Phase::Ending {
                since,
                groups,
                killed,
                ..
            } => {
                if *killed || since.elapsed() < KILL_GRACE {
                    return;
                }
                let mut survivors = false;
                for &group in groups.iter() {
                    survivors |= sys::kill_group(group, libc::SIGKILL);
                }
                if survivors {
                    eprintln!(
                        "mpiexec: processes still running {} s after SIGTERM; sent SIGKILL",
                        KILL_GRACE.as_secs()
                    );
                }
                *killed = true;
            }
        }
    }

    /// The exit code, once every rank is reaped (and, when the job was torn
    /// down, every signalled process group is empty or was SIGKILLed).
    fn finished(&self) -> Option<i32> {
        if self.procs.iter().any(|p| p.status.is_none()) {
            return None;
        }
        match &self.phase {
            Phase::Running => Some(0),
            Phase::Ending {
                code,
                groups,
                killed,
                ..
            } => (*killed || !groups.iter().any(|&g| sys::group_exists(g))).then_some(*code),
        }
    }
}

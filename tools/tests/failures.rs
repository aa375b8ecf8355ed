//! No orphan and no hang, whatever dies and however it exits.
//!
//! `mpi-shim/tests/c/failures.c`, built with the installed `mpicc`
//! (`tools/install.sh`), runs as a 4-process job in which rank 1 is killed
//! (SIGKILL), leaves without `MPI_Finalize`, never initializes or calls
//! `MPI_Abort` with code 0 while the other ranks are blocked in MPI
//! (point-to-point, a 64 MiB transfer, collectives, communicator creation,
//! session initialization); in mode `launcher` every rank blocks and the
//! test kills the launcher itself. Each test checks that:
//! - the launcher ends (a watchdog turns a hang into a failure), with a
//!   non-zero status and a message naming rank 1 (Hydra's own messages are
//!   not checked);
//! - no process of the job is left, not even a zombie (except, once the
//!   launcher was killed, ranks waiting for init to reap them): the job's
//!   processes are those whose command line carries the run's unique
//!   marker argument, and those of the launcher's process tree seen once
//!   every rank printed `ready` (which covers Hydra's proxies);
//! - nothing new is left in `/dev/shm`.
//!
//! A few cases run under MPICH's Hydra too, and an ignored stress test
//! kills a random rank of a busy job again and again:
//! `cargo test -p tools --test failures -- --ignored --nocapture stress`
//! (trials from `TESSEL_STRESS_TRIALS`, default 100).
//!
//! Nothing is timed except by the watchdog and by how long the job's
//! processes may take to disappear once the launcher has ended. Whatever
//! a failing test leaves is killed (by pid, after checking the process is
//! the job's) when the test ends.

mod common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{Launched, Run, dev_shm, hydra, launch, mpiexec, tessel_prefix};

/// A job ends within seconds: this only turns a hang into a failure (for
/// the ranks to get ready, then again for the launcher to end).
const WATCHDOG: Duration = Duration::from_secs(60);
/// Processes in every job.
const RANKS: usize = 4;
/// The rank that fails, in every mode but `launcher` and `stress`.
const VICTIM: u32 = 1;
/// How long the job's processes may outlive a launcher that ended.
const GONE_AFTER_END: Duration = Duration::from_secs(5);
/// How long the ranks may outlive a launcher that was killed.
const GONE_AFTER_LAUNCHER_KILLED: Duration = Duration::from_secs(10);
const POLL: Duration = Duration::from_millis(20);

/// `failures.c`, built once per test binary.
fn exe() -> &'static Path {
    static EXE: OnceLock<PathBuf> = OnceLock::new();
    EXE.get_or_init(build)
}

fn build() -> PathBuf {
    common::build_c(&tessel_prefix().join("bin/mpicc"), "failures", "tessel")
}

/// The name the kernel gives the program's processes (`comm`, at most 15
/// bytes): how a zombie rank, which has no command line, is recognized.
fn exe_comm() -> String {
    let name = exe()
        .file_name()
        .expect("the executable has a file name")
        .to_string_lossy();
    name.chars().take(15).collect()
}

#[derive(Clone, Copy, Debug)]
enum Launcher {
    Ours,
    Hydra,
}

/// Zombies of the job: left (nobody reaped them), or ignored because the
/// launcher was killed and reaping its ranks is then up to init, which
/// this test does not control.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Zombies {
    Count,
    Ignore,
}

/// The status a case must end with.
#[derive(Clone, Copy, Debug)]
enum Expect {
    Code(i32),
    Failure,
}

/// One process: the fields of `/proc/PID/stat` the tests use.
#[derive(Debug)]
struct ProcInfo {
    pid: i32,
    ppid: i32,
    state: char,
    /// Start time since boot, in clock ticks: with the pid, it tells a
    /// process from a later one that reused its pid.
    start: u64,
    comm: String,
}

fn proc_info(pid: i32) -> Option<ProcInfo> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The name is in parentheses and may hold anything: split at the last ')'.
    let (head, tail) = stat.rsplit_once(')')?;
    let comm = head.split_once('(')?.1.to_owned();
    let fields: Vec<&str> = tail.split_whitespace().collect();
    Some(ProcInfo {
        pid,
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
        comm,
    })
}

/// The command line of `pid`, arguments separated by spaces (empty for a
/// zombie or a process gone).
fn cmdline(pid: i32) -> String {
    fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

fn all_pids() -> Vec<i32> {
    fs::read_dir("/proc")
        .expect("read /proc")
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

fn describe(p: &ProcInfo) -> String {
    let cmd = cmdline(p.pid);
    let what = if cmd.is_empty() {
        format!("[{}]", p.comm)
    } else {
        cmd
    };
    format!(
        "pid {} (parent {}, state {}): {}",
        p.pid,
        p.ppid,
        p.state,
        what.trim_end()
    )
}

fn kill_pid(pid: i32, signal: i32) {
    // SAFETY: kill(2) has no memory-safety preconditions; the callers
    // checked that `pid` is a process of the test's job.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Rank → pid, from the complete `failures: rank R pid P ready` lines.
fn ready_pids(stdout: &str) -> BTreeMap<u32, i32> {
    stdout
        .split_inclusive('\n')
        .filter_map(|line| {
            let rest = line
                .strip_suffix(" ready\n")?
                .strip_prefix("failures: rank ")?;
            let (rank, pid) = rest.split_once(" pid ")?;
            Some((rank.parse().ok()?, pid.parse().ok()?))
        })
        .collect()
}

/// A string no other job's command line holds.
fn new_marker(mode: &str) -> String {
    static JOBS: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!(
        "tessel-failures-{mode}-{}-{}-{nanos:x}",
        std::process::id(),
        JOBS.fetch_add(1, Ordering::Relaxed)
    )
}

/// A running job of `failures MODE MARKER`. Dropping it kills whatever is
/// left of the job.
struct Job {
    marker: String,
    launched: Option<Launched>,
    shm_before: BTreeSet<String>,
    /// (pid, start time) of every process of the job seen while it ran.
    seen: BTreeSet<(i32, u64)>,
}

impl Job {
    fn start(launcher: Launcher, mode: &str) -> Job {
        let exe = exe();
        let shm_before = dev_shm();
        let marker = new_marker(mode);
        let mut cmd = match launcher {
            Launcher::Ours => mpiexec(&[]),
            Launcher::Hydra => Command::new(hydra()),
        };
        cmd.args(["-n", &RANKS.to_string()])
            .arg(exe)
            .args([mode, &marker]);
        let launched = launch(&format!("failures-{mode}"), cmd);
        Job {
            marker,
            launched: Some(launched),
            shm_before,
            seen: BTreeSet::new(),
        }
    }

    fn launched(&mut self) -> &mut Launched {
        self.launched
            .as_mut()
            .expect("the launcher was already waited for")
    }

    /// Wait until every rank printed `ready` (or the launcher ended first),
    /// note the job's processes, and return the ranks' pids.
    fn wait_ready(&mut self) -> BTreeMap<u32, i32> {
        let deadline = Instant::now() + WATCHDOG;
        loop {
            let launched = self.launched();
            let pids = ready_pids(&launched.read_outputs().0);
            let ended = launched.child.try_wait().expect("try_wait").is_some();
            if pids.len() == RANKS || ended {
                self.note_processes(&pids);
                return pids;
            }
            if Instant::now() >= deadline {
                let (stdout, stderr) = launched.read_outputs();
                panic!(
                    "watchdog: not every rank was ready within {WATCHDOG:?}\n\
                     --- stdout:\n{stdout}\n--- stderr:\n{stderr}"
                );
            }
            thread::sleep(POLL);
        }
    }

    /// Note the job's processes: the launcher's process tree, whatever
    /// carries the marker, and ranks already dead but not yet reaped.
    fn note_processes(&mut self, ranks: &BTreeMap<u32, i32>) {
        let launcher = i32::try_from(self.launched().child.id()).expect("pid fits in pid_t");
        let procs: Vec<ProcInfo> = all_pids().into_iter().filter_map(proc_info).collect();
        let parent: HashMap<i32, i32> = procs.iter().map(|p| (p.pid, p.ppid)).collect();
        let in_tree = |mut pid: i32| {
            for _ in 0..64 {
                if pid == launcher {
                    return true;
                }
                match parent.get(&pid) {
                    Some(&ppid) if ppid > 1 => pid = ppid,
                    _ => return false,
                }
            }
            false
        };
        let comm = exe_comm();
        let dead_rank =
            |p: &ProcInfo| p.state == 'Z' && p.comm == comm && ranks.values().any(|&r| r == p.pid);
        for p in &procs {
            if in_tree(p.pid) || dead_rank(p) || cmdline(p.pid).contains(&self.marker) {
                self.seen.insert((p.pid, p.start));
            }
        }
    }

    /// Wait for the launcher to end, under the watchdog.
    fn wait(&mut self) -> Run {
        self.launched
            .take()
            .expect("the launcher was already waited for")
            .wait_for(WATCHDOG)
    }

    /// SIGKILL the launcher itself and reap it.
    fn kill_launcher(&mut self) -> Run {
        common::signal(&self.launched().child, libc::SIGKILL);
        self.wait()
    }

    /// Poll for the launcher's end for at most `limit`; `false` if it is
    /// still running.
    fn ended_within(&mut self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self
                .launched()
                .child
                .try_wait()
                .expect("try_wait")
                .is_some()
            {
                return true;
            }
            thread::sleep(Duration::from_millis(1));
        }
        false
    }

    /// The job's processes still there, described.
    fn leftovers(&self, zombies: Zombies) -> Vec<String> {
        let mut left = BTreeMap::new();
        let counted = |p: &ProcInfo| zombies == Zombies::Count || p.state != 'Z';
        for &(pid, start) in &self.seen {
            if let Some(p) = proc_info(pid).filter(|p| p.start == start && counted(p)) {
                left.insert(pid, describe(&p));
            }
        }
        for pid in all_pids() {
            if cmdline(pid).contains(&self.marker)
                && let Some(p) = proc_info(pid).filter(counted)
            {
                left.insert(pid, describe(&p));
            }
        }
        left.into_values().collect()
    }

    /// The job's processes still there after `within` (polled).
    fn leftovers_after(&self, within: Duration, zombies: Zombies) -> Vec<String> {
        let deadline = Instant::now() + within;
        loop {
            let left = self.leftovers(zombies);
            if left.is_empty() || Instant::now() >= deadline {
                return left;
            }
            thread::sleep(POLL);
        }
    }

    fn leftover_problem(&self, within: Duration, zombies: Zombies) -> Option<String> {
        let left = self.leftovers_after(within, zombies);
        (!left.is_empty()).then(|| {
            format!(
                "{} process(es) of the job left {within:?} after the launcher ended:\n  {}",
                left.len(),
                left.join("\n  ")
            )
        })
    }

    fn new_in_dev_shm(&self) -> Vec<String> {
        dev_shm().difference(&self.shm_before).cloned().collect()
    }

    fn shm_problem(&self) -> Option<String> {
        let new = self.new_in_dev_shm();
        (!new.is_empty()).then(|| format!("left in /dev/shm: {new:?}"))
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // Whatever a failed test left (the launcher carries the marker too),
        // then reap the launcher if nobody waited for it.
        for pid in all_pids() {
            if cmdline(pid).contains(&self.marker) {
                kill_pid(pid, libc::SIGKILL);
            }
        }
        for &(pid, start) in &self.seen {
            if proc_info(pid).is_some_and(|p| p.start == start && p.state != 'Z') {
                kill_pid(pid, libc::SIGKILL);
            }
        }
        if let Some(mut launched) = self.launched.take() {
            let _ = launched.child.kill();
            let _ = launched.child.wait();
        }
    }
}

fn status_problem(status: ExitStatus, expect: Expect) -> Option<String> {
    match expect {
        Expect::Code(code) if status.code() != Some(code) => {
            Some(format!("ended with {status}, expected exit code {code}"))
        }
        Expect::Failure if status.success() => {
            Some(format!("ended with {status}, expected a failure"))
        }
        _ => None,
    }
}

/// `text` lacks one of `fragments`.
fn output_problem(what: &str, text: &str, fragments: &[&str]) -> Option<String> {
    let missing: Vec<&str> = fragments
        .iter()
        .copied()
        .filter(|f| !text.contains(f))
        .collect();
    (!missing.is_empty()).then(|| format!("{what} lacks {missing:?}"))
}

/// Fail with every problem found, and the launcher's output.
fn report(run: &Run, problems: impl IntoIterator<Item = Option<String>>) {
    let problems: Vec<String> = problems.into_iter().flatten().collect();
    assert!(
        problems.is_empty(),
        "{}\n--- stdout:\n{}\n--- stderr:\n{}",
        problems.join("\n"),
        run.stdout,
        run.stderr
    );
}

/// The pid of `rank`, from its ready line.
fn pid_of(run: &Run, rank: u32) -> i32 {
    *ready_pids(&run.stdout).get(&rank).unwrap_or_else(|| {
        panic!(
            "rank {rank} printed no ready line\n--- stdout:\n{}\n--- stderr:\n{}",
            run.stdout, run.stderr
        )
    })
}

/// Run `mode` to its end; check the status, that stderr holds every
/// fragment (`{pid}` stands for rank 1's pid), and that nothing is left.
fn check_case(launcher: Launcher, mode: &str, expect: Expect, stderr_has: &[&str]) {
    let mut job = Job::start(launcher, mode);
    job.wait_ready();
    let run = job.wait();
    let fragments: Vec<String> = if stderr_has.iter().any(|f| f.contains("{pid}")) {
        let pid = pid_of(&run, VICTIM).to_string();
        stderr_has
            .iter()
            .map(|f| f.replace("{pid}", &pid))
            .collect()
    } else {
        stderr_has.iter().map(|f| f.to_string()).collect()
    };
    let fragments: Vec<&str> = fragments.iter().map(String::as_str).collect();
    report(
        &run,
        [
            status_problem(run.status, expect),
            output_problem("stderr", &run.stderr, &fragments),
            job.leftover_problem(GONE_AFTER_END, Zombies::Count),
            job.shm_problem(),
        ],
    );
}

/// The message for rank 1 killed by SIGKILL, with status 128 + 9.
fn victim_killed(mode: &str) {
    check_case(
        Launcher::Ours,
        mode,
        Expect::Code(128 + 9),
        &["mpiexec: rank 1 (pid {pid}) was killed by signal 9 (SIGKILL)"],
    );
}

#[test]
fn killed_peer_ends_ranks_blocked_in_recv() {
    victim_killed("recv");
}

#[test]
fn killed_peer_ends_ranks_blocked_in_probe() {
    victim_killed("probe");
}

/// Rank 1 dies in the middle of a 64 MiB send to rank 0: rank 0's copy
/// fails, but the job's failure is rank 1's death, not rank 0's abort.
#[test]
fn killed_peer_ends_ranks_blocked_in_wait_for_64_mib() {
    victim_killed("wait64m");
}

#[test]
fn killed_peer_ends_ranks_blocked_in_barrier() {
    victim_killed("barrier");
}

#[test]
fn killed_peer_ends_ranks_blocked_in_allreduce() {
    victim_killed("allreduce");
}

#[test]
fn killed_peer_ends_ranks_blocked_in_comm_create_from_group() {
    victim_killed("create_from_group");
}

#[test]
fn killed_peer_ends_ranks_blocked_in_session_init() {
    check_case(
        Launcher::Ours,
        "session_init",
        Expect::Failure,
        &["rank 1 (pid {pid})"],
    );
}

#[test]
fn exit_0_without_finalize_ends_the_job() {
    check_case(
        Launcher::Ours,
        "exit0",
        Expect::Failure,
        &["rank 1 (pid {pid})", "MPI_Finalize"],
    );
}

#[test]
fn underscore_exit_0_without_finalize_ends_the_job() {
    check_case(
        Launcher::Ours,
        "_exit0",
        Expect::Failure,
        &["rank 1 (pid {pid})", "MPI_Finalize"],
    );
}

#[test]
fn rank_that_never_initializes_ends_the_job() {
    check_case(
        Launcher::Ours,
        "noinit",
        Expect::Failure,
        &["rank 1 (pid {pid})"],
    );
}

#[test]
fn abort_with_code_0_fails_the_job() {
    // The library's own line says "rank 1 of 4: abort(0)": the launcher's
    // names the pid.
    check_case(
        Launcher::Ours,
        "abort0",
        Expect::Failure,
        &["rank 1 (pid {pid})"],
    );
}

/// Every rank blocked, the launcher is SIGKILLed: no rank outlives it for
/// long. A rank that died but waits for init to reap it counts as gone.
fn kill_the_launcher(launcher: Launcher) {
    let mut job = Job::start(launcher, "launcher");
    let ranks = job.wait_ready();
    let run = job.kill_launcher();
    report(
        &run,
        [
            (ranks.len() != RANKS).then(|| format!("only ranks {ranks:?} were ready")),
            job.leftover_problem(GONE_AFTER_LAUNCHER_KILLED, Zombies::Ignore),
            job.shm_problem(),
        ],
    );
}

#[test]
fn killed_launcher_leaves_no_rank_behind() {
    kill_the_launcher(Launcher::Ours);
}

/// Under Hydra only the end, the status and what is left are checked:
/// Hydra's messages are its own.
#[test]
fn hydra_killed_peer_ends_ranks_blocked_in_recv() {
    check_case(Launcher::Hydra, "recv", Expect::Failure, &[]);
}

/// Under Hydra, the library itself names the rank that leaves without
/// `MPI_Finalize`; both streams are searched for it, without the
/// program's own lines (`failures: rank 1 pid P ready`).
#[test]
fn hydra_exit_0_without_finalize_ends_the_job() {
    let mut job = Job::start(Launcher::Hydra, "exit0");
    job.wait_ready();
    let run = job.wait();
    let output: String = run
        .stdout
        .lines()
        .chain(run.stderr.lines())
        .filter(|l| !l.starts_with("failures: "))
        .collect::<Vec<_>>()
        .join("\n");
    report(
        &run,
        [
            status_problem(run.status, Expect::Failure),
            output_problem("the output", &output, &["rank 1"]),
            job.leftover_problem(GONE_AFTER_END, Zombies::Count),
            job.shm_problem(),
        ],
    );
}

#[test]
fn hydra_killed_launcher_leaves_no_rank_behind() {
    kill_the_launcher(Launcher::Hydra);
}

/// xorshift64, seeded from the clock: random enough, no dependency.
struct XorShift(u64);

impl XorShift {
    fn from_time() -> XorShift {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        XorShift(nanos | 1)
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Kinds of stress problems, counted apart in the summary.
const LEFT_PROCESSES: &str = "processes left";
const LEFT_IN_DEV_SHM: &str = "/dev/shm entries left";

/// One stress trial: kill a random rank of a busy job at a random moment.
/// Returns the time from the kill to the launcher's exit (if it exited)
/// and the problems found, by kind.
fn stress_trial(rng: &mut XorShift) -> (Option<Duration>, Vec<(&'static str, String)>) {
    let mut job = Job::start(Launcher::Ours, "stress");
    let ranks = job.wait_ready();
    if ranks.len() != RANKS {
        let run = job.wait();
        return (
            None,
            vec![(
                "not ready",
                format!("ranks {ranks:?} ready\n{}", run.stderr),
            )],
        );
    }
    thread::sleep(Duration::from_millis(50 + rng.below(451)));
    let rank = u32::try_from(rng.below(RANKS as u64)).expect("a rank fits in u32");
    let pid = ranks[&rank];
    kill_pid(pid, libc::SIGKILL);
    let killed = Instant::now();
    let ended = job.ended_within(WATCHDOG);
    let took = killed.elapsed();
    let mut problems = Vec::new();
    if !ended {
        problems.push((
            "hang",
            format!("rank {rank} killed, launcher still running"),
        ));
        common::signal(&job.launched().child, libc::SIGKILL);
    }
    let run = job.wait();
    let message = format!("rank {rank} (pid {pid}) was killed by signal 9 (SIGKILL)");
    let kinds = [
        ("status", status_problem(run.status, Expect::Code(128 + 9))),
        (
            "message",
            output_problem("stderr", &run.stderr, &[&message]),
        ),
        (
            LEFT_PROCESSES,
            job.leftover_problem(GONE_AFTER_END, Zombies::Count),
        ),
        (LEFT_IN_DEV_SHM, job.shm_problem()),
    ];
    for (kind, problem) in kinds {
        if let Some(p) = problem {
            problems.push((kind, format!("{p}\n--- stderr:\n{}", run.stderr)));
        }
    }
    (ended.then_some(took), problems)
}

#[test]
#[ignore = "stress: cargo test -p tools --test failures -- --ignored --nocapture stress"]
fn stress_killing_a_random_rank_of_a_busy_job() {
    let trials: usize = std::env::var("TESSEL_STRESS_TRIALS")
        .ok()
        .map(|v| v.parse().expect("TESSEL_STRESS_TRIALS is a number"))
        .unwrap_or(100);
    let mut rng = XorShift::from_time();
    let mut times = Vec::new();
    let mut tally: BTreeMap<&str, usize> = BTreeMap::new();
    let mut examples: Vec<String> = Vec::new();
    for trial in 0..trials {
        let (took, problems) = stress_trial(&mut rng);
        times.extend(took);
        for (kind, problem) in problems {
            *tally.entry(kind).or_default() += 1;
            if examples.len() < 5 {
                examples.push(format!("trial {trial}: {kind}: {problem}"));
            }
        }
    }
    times.sort_unstable();
    let show = |t: Option<&Duration>| {
        t.map_or("-".to_owned(), |t| {
            format!("{:.1} ms", t.as_secs_f64() * 1e3)
        })
    };
    let count = |kind: &str| tally.get(kind).copied().unwrap_or(0);
    println!(
        "stress: {trials} trials, {} ended; from the kill to the launcher's exit: median {}, \
         worst {}\nstress: left behind: processes after {} trial(s), /dev/shm entries after {} \
         trial(s)\nstress: trials with problems, by kind: {tally:?}",
        times.len(),
        show(times.get(times.len() / 2)),
        show(times.last()),
        count(LEFT_PROCESSES),
        count(LEFT_IN_DEV_SHM),
    );
    assert!(
        tally.is_empty(),
        "problems in {tally:?}; the first ones:\n{}",
        examples.join("\n\n")
    );
}

//! Running the programs: the job list, the alternating schedule, a
//! watchdog per job, and the progress display.

use std::io::{IsTerminal, Read};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use super::competitors::{Machine, tail};
use super::stats::{Sample, parse_line};

/// Start-up modes of `startup.c`.
pub const STARTUP_MODES: [&str; 3] = ["init", "session", "sparse"];

/// One run of one program on some processes, the same for every MPI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub program: &'static str,
    pub procs: u32,
    pub args: Vec<String>,
}

impl Job {
    /// `stencil np=4` / `startup --mode init np=8`, for progress and failures.
    pub fn label(&self) -> String {
        let args = self.args.iter().filter(|a| *a != "--quick");
        let mut words: Vec<String> = vec![self.program.to_string()];
        words.extend(args.cloned());
        words.push(format!("np={}", self.procs));
        words.join(" ")
    }
}

/// Every MPI job of one repetition: ping-pong and one-sided communication
/// on 2 processes, the stencil
/// and collectives on each of `np`, the collectives under
/// `MPI_THREAD_MULTIPLE` (as mpi4py runs them) on the first of `np`,
/// start-up in each mode on each of `startup_np`. Programs get `--quick`
/// when `quick`.
pub fn mpi_jobs(np: &[u32], startup_np: &[u32], quick: bool) -> Vec<Job> {
    let extra = |mut a: Vec<String>| {
        if quick {
            a.push("--quick".into());
        }
        a
    };
    let mut jobs: Vec<Job> = ["pingpong", "rma"]
        .into_iter()
        .map(|program| Job {
            program,
            procs: 2,
            args: extra(vec![]),
        })
        .collect();
    for program in ["stencil", "colls"] {
        jobs.extend(np.iter().map(|&n| Job {
            program,
            procs: n,
            args: extra(vec![]),
        }));
    }
    jobs.extend(np.first().map(|&n| Job {
        program: "colls",
        procs: n,
        args: extra(vec!["--thread-multiple".into()]),
    }));
    for mode in STARTUP_MODES {
        jobs.extend(startup_np.iter().map(|&n| Job {
            program: "startup",
            procs: n,
            args: extra(vec!["--mode".into(), mode.into()]),
        }));
    }
    jobs
}

/// A run that produced no usable results.
#[derive(Debug, Clone, Serialize)]
pub struct Failure {
    pub mpi: String,
    pub job: String,
    pub rep: u32,
    pub reason: String,
}

impl Failure {
    /// `rep` 0 for what is not a run (a build).
    pub fn new(mpi: &str, job: &str, rep: u32, reason: &str) -> Failure {
        Failure {
            mpi: mpi.into(),
            job: job.into(),
            rep,
            reason: reason.into(),
        }
    }
}

/// Who ran a job, to label its samples.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    pub mpi: &'a str,
    pub rep: u32,
    pub procs: u32,
    pub machine: Machine,
}

/// Run `cmd` under a watchdog and turn its `result` lines into samples.
/// A non-zero exit, a timeout, a malformed line or no result line at all
/// is a failure (the samples of a failed run are dropped).
pub fn run_job(cmd: Command, timeout: Duration, who: Origin) -> Result<Vec<Sample>, String> {
    run_job_output(cmd, timeout, who).map(|(samples, _)| samples)
}

/// [`run_job`], also returning the job's stderr (where an MPI prints its
/// own statistics).
pub fn run_job_output(
    mut cmd: Command,
    timeout: Duration,
    who: Origin,
) -> Result<(Vec<Sample>, String), String> {
    let out = run_with_watchdog(&mut cmd, timeout)?;
    let mut samples = Vec::new();
    for line in out.stdout.lines() {
        if let Some(r) = parse_line(line)? {
            samples.push(Sample {
                mpi: who.mpi.to_string(),
                bench: r.bench,
                metric: r.metric,
                keys: r.keys,
                value: r.value,
                unit: r.unit,
                rep: who.rep,
                procs: who.procs,
                oversubscribed: who.procs > who.machine.cores,
            });
        }
    }
    if samples.is_empty() {
        return Err(format!(
            "no `result` line in the output: {}",
            tail(&out.stdout, 4)
        ));
    }
    Ok((samples, out.stderr))
}

/// What a job that exited with 0 printed.
#[derive(Debug, Clone, Default)]
pub struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// Run `cmd` in its own process group with stdin closed; kill the whole
/// group after `timeout`. Returns its output when it exits with 0.
pub fn run_with_watchdog(cmd: &mut Command, timeout: Duration) -> Result<Output, String> {
    use std::os::unix::process::CommandExt;
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", cmd.get_program()))?;
    let group = child.id() as libc::pid_t;
    let reader = |mut r: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = r.read_to_end(&mut buf);
            String::from_utf8_lossy(&buf).into_owned()
        })
    };
    let stdout = reader(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = reader(Box::new(child.stderr.take().expect("piped stderr")));
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() >= timeout => break None,
            Ok(None) => thread::sleep(Duration::from_millis(10)),
            Err(e) => return Err(format!("waiting for the job: {e}")),
        }
    };
    let status = match status {
        Some(s) => {
            // Whatever the launcher left in its group goes now, so that
            // the pipes close and nothing runs into the next job.
            kill_group(group, libc::SIGKILL);
            s
        }
        None => {
            stop_job(&mut child, group);
            return Err(format!("timed out after {} s: killed", timeout.as_secs()));
        }
    };
    let out = stdout.join().unwrap_or_default();
    let err = stderr.join().unwrap_or_default();
    if !status.success() {
        let text = format!("{out}\n{err}");
        return Err(format!("{status}: {}", tail(&text, 4)));
    }
    Ok(Output {
        stdout: out,
        stderr: err,
    })
}

/// One run of a schedule, repeated in every repetition.
pub struct Task<'a> {
    /// Competitor name the samples carry (`reference` for `reference.c`).
    pub mpi: &'a str,
    /// What progress lines and failures call it (`stencil np=4`).
    pub label: String,
    pub procs: u32,
    /// Keys added to every sample of the run (`rndv=get`): settings the
    /// program cannot know, such as its MPI's environment.
    pub keys: Vec<(String, String)>,
    /// Makes the command that starts the run.
    pub command: Box<dyn Fn() -> Command + 'a>,
}

impl std::fmt::Debug for Task<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Task")
            .field("mpi", &self.mpi)
            .field("label", &self.label)
            .field("procs", &self.procs)
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

/// Every task in turn, `reps` times over (A B C A B C ...), so that drifts
/// of the machine spread over all tasks alike. Returns the samples and the
/// failed runs; `stderr(task, rep, text)` receives the stderr of each run
/// that succeeded.
pub fn run_schedule(
    tasks: &[Task],
    reps: u32,
    machine: Machine,
    timeout: Duration,
    stderr: &mut dyn FnMut(usize, u32, &str),
) -> (Vec<Sample>, Vec<Failure>) {
    let mut progress = Progress::new(tasks.len() as u64 * u64::from(reps));
    let (mut samples, mut failures) = (Vec::new(), Vec::new());
    for rep in 1..=reps {
        for (i, task) in tasks.iter().enumerate() {
            progress.start(&format!("rep {rep}/{reps}: {} {}", task.mpi, task.label));
            let who = Origin {
                mpi: task.mpi,
                rep,
                procs: task.procs,
                machine,
            };
            let note = match run_job_output((task.command)(), timeout, who) {
                Ok((mut got, err)) => {
                    for s in &mut got {
                        s.keys.extend(task.keys.iter().cloned());
                    }
                    samples.extend(got);
                    stderr(i, rep, &err);
                    None
                }
                Err(e) => {
                    let line = format!("FAILED {} {} (rep {rep}): {e}", task.mpi, task.label);
                    failures.push(Failure::new(task.mpi, &task.label, rep, &e));
                    Some(line)
                }
            };
            progress.finish(note.as_deref());
        }
    }
    progress.close();
    (samples, failures)
}

/// Seconds a launcher gets to tear its job down after SIGTERM.
const GRACE: Duration = Duration::from_secs(3);

/// End a job that outlived its time: SIGTERM to the launcher (launchers
/// then tear down their ranks, which may live in process groups of their
/// own), then SIGKILL to the launcher's group and to every process that
/// descended from it when the watchdog fired.
fn stop_job(child: &mut std::process::Child, group: libc::pid_t) {
    let tree = descendants(group);
    kill_group(group, libc::SIGTERM);
    let start = Instant::now();
    while start.elapsed() < GRACE && matches!(child.try_wait(), Ok(None)) {
        thread::sleep(Duration::from_millis(20));
    }
    kill_group(group, libc::SIGKILL);
    for pid in tree {
        // SAFETY: kill(2) only sends a signal; it touches no memory. The
        // pids were descendants of the job a moment ago (reuse within the
        // grace period is not a practical concern).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let _ = child.wait();
}

fn kill_group(group: libc::pid_t, signal: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals the process group that
    // the job's launcher leads (`process_group(0)` at spawn); it touches no
    // memory.
    unsafe { libc::kill(-group, signal) };
}

/// Every process below `root`, from the parent pids in `/proc/*/stat`.
fn descendants(root: libc::pid_t) -> Vec<libc::pid_t> {
    let mut children: std::collections::HashMap<libc::pid_t, Vec<libc::pid_t>> = Default::default();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse().ok());
        if let Some(ppid) = ppid {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut todo = vec![root];
    while let Some(p) = todo.pop() {
        for &c in children.get(&p).map_or(&[][..], Vec::as_slice) {
            found.push(c);
            todo.push(c);
        }
    }
    found
}

/// What runs now: a progress bar on a terminal, plain lines otherwise (CI
/// logs).
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
    total: u64,
    done: u64,
}

impl Progress {
    pub fn new(total: u64) -> Progress {
        let bar = std::io::stdout().is_terminal().then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stdout());
            let style =
                ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {wide_msg}")
                    .expect("valid template")
                    .progress_chars("=> ");
            bar.set_style(style);
            bar
        });
        Progress {
            bar,
            total,
            done: 0,
        }
    }

    /// A job starts.
    pub fn start(&mut self, what: &str) {
        match &self.bar {
            Some(bar) => bar.set_message(what.to_string()),
            None => println!("[{}/{}] {what}", self.done + 1, self.total),
        }
    }

    /// The job that started last ended; `note` is printed when given.
    pub fn finish(&mut self, note: Option<&str>) {
        self.done += 1;
        match (&self.bar, note) {
            (Some(bar), Some(n)) => bar.println(n),
            (None, Some(n)) => println!("{n}"),
            _ => {}
        }
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// A line that is not about a job.
    pub fn say(&self, line: &str) {
        match &self.bar {
            Some(bar) => bar.println(line),
            None => println!("{line}"),
        }
    }

    pub fn close(self) {
        if let Some(bar) = self.bar {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_cover_every_program_and_mode() {
        let jobs = mpi_jobs(&[2, 4], &[1, 2], true);
        let labels: Vec<String> = jobs.iter().map(Job::label).collect();
        assert_eq!(
            labels,
            [
                "pingpong np=2",
                "rma np=2",
                "stencil np=2",
                "stencil np=4",
                "colls np=2",
                "colls np=4",
                "colls --thread-multiple np=2",
                "startup --mode init np=1",
                "startup --mode init np=2",
                "startup --mode session np=1",
                "startup --mode session np=2",
                "startup --mode sparse np=1",
                "startup --mode sparse np=2",
            ]
        );
        assert!(
            jobs.iter()
                .all(|j| j.args.last().map(String::as_str) == Some("--quick"))
        );
        assert!(
            mpi_jobs(&[2], &[1], false)
                .iter()
                .all(|j| !j.args.contains(&"--quick".into()))
        );
    }

    const M: Machine = Machine {
        cores: 2,
        root: false,
    };

    fn sh(script: &str) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }

    fn origin(procs: u32) -> Origin<'static> {
        Origin {
            mpi: "fake",
            rep: 3,
            procs,
            machine: M,
        }
    }

    #[test]
    fn a_job_yields_its_result_lines() {
        let cmd = sh("echo hello; echo 'result bench=b metric=m size=8 value=1.5 unit=us'");
        let s = run_job(cmd, Duration::from_secs(30), origin(4)).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].mpi.as_str(), s[0].rep, s[0].procs), ("fake", 3, 4));
        assert!(s[0].oversubscribed);
        assert_eq!(s[0].value, 1.5);
    }

    #[test]
    fn failures_are_reported_not_raised() {
        let t = Duration::from_secs(30);
        let e = run_job(
            sh("echo 'result bench=b metric=m value=1 unit=us'; echo boom >&2; exit 3"),
            t,
            origin(1),
        )
        .unwrap_err();
        assert!(e.contains("boom"), "{e}");
        let e = run_job(sh("echo nothing"), t, origin(1)).unwrap_err();
        assert!(e.contains("no `result` line"), "{e}");
        let e = run_job(sh("echo 'result bench=b value=1 unit=us'"), t, origin(1)).unwrap_err();
        assert!(e.contains("metric"), "{e}");
    }

    #[test]
    fn descendants_are_found_through_proc() {
        let mut child = sh("sleep 30 & wait").spawn().unwrap();
        let pid = child.id() as libc::pid_t;
        let start = Instant::now();
        while descendants(pid).is_empty() && start.elapsed() < Duration::from_secs(10) {
            thread::sleep(Duration::from_millis(10));
        }
        let found = descendants(pid);
        let _ = child.kill();
        for p in &found {
            // SAFETY: kill(2) touches no memory; p is the test's own sleep.
            unsafe { libc::kill(*p, libc::SIGKILL) };
        }
        let _ = child.wait();
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn the_watchdog_kills_a_hanging_job_and_its_children() {
        // The grandchild keeps stdout open: only killing the group ends it.
        let e = run_job(
            sh("sleep 30 & sleep 30"),
            Duration::from_millis(300),
            origin(1),
        )
        .unwrap_err();
        assert!(e.contains("timed out"), "{e}");
    }
}

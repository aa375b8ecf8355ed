//! The harness the multi-process tests share: launch a job with its output
//! in files, wait under a watchdog, and report everything on failure.
//!
//! Every run has a watchdog: a launcher that does not finish in time is
//! sent SIGTERM, then SIGKILL, and the test fails instead of hanging.

#![allow(dead_code)] // each test crate uses its own part of the harness

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

pub const MPIEXEC: &str = env!("CARGO_BIN_EXE_mpiexec");

/// Far more than any of these jobs needs, far less than the `sleep`s of
/// the ranks that must be killed: a launcher that waited for those sleeps
/// trips it.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// A finished launcher run.
#[derive(Debug)]
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Stdout lines, sorted (ranks print in any order).
    pub fn sorted_lines(&self) -> Vec<&str> {
        let mut lines: Vec<&str> = self.stdout.lines().collect();
        lines.sort_unstable();
        lines
    }
}

/// A launcher process whose output goes to files (so that processes it
/// leaves behind cannot block the test by holding a pipe open).
pub struct Launched {
    pub child: Child,
    what: String,
    stdout: PathBuf,
    stderr: PathBuf,
}

/// Output files for the run called `name` (each test uses its own name).
fn output_paths(name: &str) -> (PathBuf, PathBuf) {
    // Tests of one binary run in parallel threads of one process and may
    // launch under the same name: a counter keeps their files apart.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let stem = format!("launcher-{name}-{}-{run}", std::process::id());
    (
        dir.join(format!("{stem}.out")),
        dir.join(format!("{stem}.err")),
    )
}

pub fn launch(name: &str, mut cmd: Command) -> Launched {
    let (stdout, stderr) = output_paths(name);
    cmd.stdin(Stdio::null())
        .stdout(File::create(&stdout).expect("create stdout file"))
        .stderr(File::create(&stderr).expect("create stderr file"));
    let what = format!("{cmd:?}");
    let child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    Launched {
        child,
        what,
        stdout,
        stderr,
    }
}

impl Launched {
    pub fn read_outputs(&self) -> (String, String) {
        (
            fs::read_to_string(&self.stdout).unwrap_or_default(),
            fs::read_to_string(&self.stderr).unwrap_or_default(),
        )
    }

    /// Wait for the launcher, failing the test if it overruns `WATCHDOG`.
    pub fn wait(self) -> Run {
        self.wait_for(WATCHDOG)
    }

    /// Wait for the launcher, failing the test if it overruns `limit`.
    pub fn wait_for(mut self, limit: Duration) -> Run {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                let (stdout, stderr) = self.read_outputs();
                let _ = fs::remove_file(&self.stdout);
                let _ = fs::remove_file(&self.stderr);
                return Run {
                    status,
                    stdout,
                    stderr,
                };
            }
            if Instant::now() >= deadline {
                self.kill_overrun(limit);
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    fn kill_overrun(&mut self, limit: Duration) -> ! {
        // SIGTERM first: a working launcher forwards it to its ranks.
        signal(&self.child, libc::SIGTERM);
        let grace = Instant::now() + Duration::from_secs(5);
        while Instant::now() < grace {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        let (stdout, stderr) = self.read_outputs();
        panic!(
            "watchdog: {} did not finish within {limit:?}\n--- stdout:\n{stdout}\n--- stderr:\n{stderr}",
            self.what
        );
    }
}

pub fn signal(child: &Child, signal: i32) {
    let pid = i32::try_from(child.id()).expect("pid fits in pid_t");
    // SAFETY: kill(2) has no memory-safety preconditions; `pid` is our own
    // child, not yet reaped.
    unsafe {
        libc::kill(pid, signal);
    }
}

pub fn mpiexec(args: &[&str]) -> Command {
    let mut cmd = Command::new(MPIEXEC);
    cmd.args(args);
    cmd
}

/// Run `mpiexec ARGS` under the watchdog.
pub fn run_mpiexec(name: &str, args: &[&str]) -> Run {
    launch(name, mpiexec(args)).wait()
}

pub fn assert_code(run: &Run, code: i32) {
    assert_eq!(
        run.status.code(),
        Some(code),
        "expected exit code {code}, got {:?}\n--- stdout:\n{}\n--- stderr:\n{}",
        run.status,
        run.stdout,
        run.stderr
    );
}

/// The path of the `tools` example `name`, built next to `mpiexec`.
pub fn example(name: &str) -> PathBuf {
    let path = Path::new(MPIEXEC)
        .parent()
        .expect("mpiexec has a parent directory")
        .join("examples")
        .join(name);
    assert!(
        path.exists(),
        "{} is missing; `cargo test -p tools` builds it (examples are built for tests)",
        path.display()
    );
    path
}

/// `program` in a directory of the PATH.
pub fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|dir| dir.join(program))
            .find(|candidate| candidate.is_file())
    })
}

/// `mpiexec.mpich` on the PATH; the tests that need MPICH's Hydra fail
/// with a set-up hint when it is missing.
pub fn hydra() -> PathBuf {
    on_path("mpiexec.mpich").unwrap_or_else(|| {
        panic!(
            "mpiexec.mpich (MPICH's Hydra launcher) is not on the PATH: run tools/setup.sh, \
             which installs the Debian package `mpich` (tools/test.sh does this)"
        )
    })
}

/// The MPI installation `tools/install.sh` makes: `target/tessel`, or
/// `$TESSEL_PREFIX`.
pub fn tessel_prefix() -> PathBuf {
    let p = std::env::var_os("TESSEL_PREFIX").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/tessel"),
        PathBuf::from,
    );
    assert!(
        p.join("bin/mpicc").exists() && p.join("lib/libmpi.so.12").exists(),
        "no Tessel MPI installation in {}: run tools/install.sh first",
        p.display()
    );
    p
}

/// Every rank of an `n`-process `engine_check CASE` run reported success,
/// and nothing else was printed.
pub fn assert_all_ok(run: &Run, case: &str, n: u32) {
    assert_code(run, 0);
    let want: std::collections::BTreeSet<String> = (0..n)
        .map(|r| format!("engine_check {case}: rank {r} ok"))
        .collect();
    let got: std::collections::BTreeSet<String> = run.stdout.lines().map(str::to_owned).collect();
    assert_eq!(got, want, "stderr:\n{}", run.stderr);
}

/// Entries of /dev/shm. Tessel creates none (its memory is memfds, its
/// sockets abstract): a test compares the sets before and after a job, and
/// any new entry is a leak (at the small risk of blaming an unrelated
/// program that created one meanwhile; the names are reported).
pub fn dev_shm() -> BTreeSet<String> {
    fs::read_dir("/dev/shm")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The C test program `mpi-shim/tests/c/NAME.c`.
pub fn c_source(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../mpi-shim/tests/c/{name}.c"))
}

/// Compile the C test program `mpi-shim/tests/c/NAME.c` with `compiler`
/// into `NAME.FLAVOUR` in the test's temporary directory; returns the
/// executable.
pub fn build_c(compiler: &Path, name: &str, flavour: &str) -> PathBuf {
    let source = c_source(name);
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.{flavour}"));
    let out = Command::new(compiler)
        .args(["-O1", "-Wall", "-o"])
        .arg(&exe)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", compiler.display()));
    assert!(
        out.status.success(),
        "{} {name}.c failed:\n{}",
        compiler.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

//! The MPIs compared: how to set each up, build with it, launch it, and
//! which settings it runs with on this machine.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::sleep;
use std::time::Duration;

use clap::ValueEnum;
use serde::Serialize;

/// One MPI the harness knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, ValueEnum, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// This project: `target/tessel/bin/{mpicc,mpiexec}` from `tools/install.sh`.
    Tessel,
    /// Debian's MPICH (`mpicc.mpich`, Hydra's `mpiexec.mpich`).
    Mpich,
    /// Debian's Open MPI (`mpicc.openmpi`, `mpiexec.openmpi`).
    #[value(name = "openmpi")]
    #[serde(rename = "openmpi")]
    OpenMpi,
    /// MPICH from PyPI (`pip install mpich` in `target/bench-venv`).
    MpichPypi,
}

impl Kind {
    pub const ALL: [Kind; 4] = [Kind::Tessel, Kind::Mpich, Kind::OpenMpi, Kind::MpichPypi];

    /// The name used on the command line, in file names and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Tessel => "tessel",
            Kind::Mpich => "mpich",
            Kind::OpenMpi => "openmpi",
            Kind::MpichPypi => "mpich-pypi",
        }
    }

    /// Debian packages it needs.
    fn apt_packages(self) -> &'static [&'static str] {
        match self {
            Kind::Mpich => &["mpich", "libmpich-dev"],
            Kind::OpenMpi => &["openmpi-bin", "libopenmpi-dev"],
            Kind::Tessel | Kind::MpichPypi => &[],
        }
    }

    fn launch_style(self) -> Launcher {
        match self {
            Kind::Tessel => Launcher::Tessel,
            Kind::Mpich | Kind::MpichPypi => Launcher::Hydra,
            Kind::OpenMpi => Launcher::OpenMpi,
        }
    }
}

/// What the harness knows of the machine when choosing launch settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Machine {
    /// CPUs this process may run on.
    pub cores: u32,
    /// Running as root (Open MPI refuses without a flag).
    pub root: bool,
}

impl Machine {
    pub fn this() -> Machine {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        // SAFETY: geteuid has no preconditions and cannot fail.
        let root = unsafe { libc::geteuid() } == 0;
        Machine { cores, root }
    }
}

/// The launcher families, each with its own flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    /// Tessel's `mpiexec`: `--bind auto` (a core per process when they
    /// fit, no binding otherwise, as the others are launched).
    Tessel,
    /// MPICH's Hydra: `-bind-to core` when the processes fit the cores;
    /// otherwise no binding, and MPICH's progress engine told to yield
    /// instead of polling (the settings MPICH's own tests use when
    /// oversubscribed; versions that lack a variable ignore it).
    Hydra,
    /// Open MPI's `mpiexec`: `--bind-to core` when the processes fit,
    /// `--oversubscribe --bind-to none` otherwise; `--allow-run-as-root`
    /// as root.
    OpenMpi,
}

/// MPICH variables that make a waiting process yield its core.
const MPICH_YIELD: [&str; 3] = [
    "MPIR_CVAR_POLLS_BEFORE_YIELD",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE",
    "MPIR_CVAR_CH4_PROGRESS_THROTTLE_NO_PROGRESS_COUNT",
];

/// The launcher's arguments before the program for `np` processes: the
/// recommended settings of each MPI for this machine.
pub fn launch_args(launcher: Launcher, np: u32, m: Machine) -> Vec<String> {
    let fits = np <= m.cores;
    let mut a: Vec<&str> = Vec::new();
    let n = np.to_string();
    match launcher {
        Launcher::Tessel => a.extend(["--bind", "auto", "-n", &n]),
        Launcher::Hydra => {
            a.extend(["-n", &n]);
            if fits {
                a.extend(["-bind-to", "core"]);
            } else {
                for var in MPICH_YIELD {
                    a.extend(["-genv", var, "1"]);
                }
            }
        }
        Launcher::OpenMpi => {
            if m.root {
                a.push("--allow-run-as-root");
            }
            a.extend(["-n", &n]);
            if fits {
                a.extend(["--bind-to", "core"]);
            } else {
                a.extend(["--oversubscribe", "--bind-to", "none"]);
            }
        }
    }
    a.into_iter().map(String::from).collect()
}

/// A competitor ready to build and run, or why it is not.
#[derive(Debug, Clone, Serialize)]
pub struct Competitor {
    pub kind: Kind,
    pub name: &'static str,
    /// Version as the MPI reports it (or why it could not be read).
    pub version: String,
    /// Compiler wrapper and the arguments that go before the sources.
    pub cc: Vec<String>,
    /// Arguments that go after the sources (libraries).
    pub cc_after: Vec<String>,
    /// Launcher program.
    pub launcher: String,
    /// Environment added to the launcher's.
    #[serde(skip)]
    pub env: Vec<(String, String)>,
    /// Launch settings as recorded in the report (`N` for the process
    /// count): processes within the cores, and more processes than cores.
    pub settings_fit: String,
    pub settings_oversubscribed: String,
    /// The MPI library its programs load (from `ldd`), once built.
    pub library: Option<String>,
    /// `None` when ready; otherwise why it is skipped.
    pub skipped: Option<String>,
    #[serde(skip)]
    style: Launcher,
}

impl Competitor {
    pub fn ready(&self) -> bool {
        self.skipped.is_none()
    }

    /// The launch command for `np` processes of `program args...`.
    pub fn command(&self, np: u32, m: Machine, program: &Path, args: &[String]) -> Command {
        let mut c = Command::new(&self.launcher);
        // Every binary loads the MPI library it was linked with (through
        // its rpath), whatever the caller's environment says.
        c.args(launch_args(self.style, np, m))
            .arg(program)
            .args(args)
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LD_PRELOAD")
            .envs(self.env.iter().map(|(k, v)| (k, v)));
        c
    }

    /// A ready competitor with made-up tools, for tests of the report.
    #[cfg(test)]
    pub fn stand_in(kind: Kind) -> Competitor {
        Competitor {
            version: format!("{} 1.0", kind.name()),
            cc: vec!["cc".into()],
            launcher: "mpiexec".into(),
            skipped: None,
            ..Competitor::skipped(kind, String::new())
        }
    }

    fn skipped(kind: Kind, why: String) -> Competitor {
        Competitor {
            kind,
            name: kind.name(),
            version: String::new(),
            cc: Vec::new(),
            cc_after: Vec::new(),
            launcher: String::new(),
            env: Vec::new(),
            settings_fit: String::new(),
            settings_oversubscribed: String::new(),
            library: None,
            skipped: Some(why),
            style: kind.launch_style(),
        }
    }
}

/// Paths of the workspace that the set-up uses.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
}

impl Workspace {
    fn venv(&self) -> PathBuf {
        self.root.join("target/bench-venv")
    }
    fn tessel(&self) -> PathBuf {
        self.root.join("target/tessel")
    }
}

/// Install what the chosen competitors need (when `setup`), then find each
/// one. Never fails: a competitor that cannot be set up is returned with
/// [`Competitor::skipped`] saying why. `log` receives progress lines.
pub fn prepare(
    kinds: &[Kind],
    ws: &Workspace,
    m: Machine,
    setup: bool,
    log: &mut dyn FnMut(&str),
) -> Vec<Competitor> {
    let mut failed: Vec<(Kind, String)> = Vec::new();
    if setup {
        let wanted: Vec<Kind> = kinds
            .iter()
            .copied()
            .filter(|k| !k.apt_packages().is_empty())
            .collect();
        let missing: Vec<&str> = wanted
            .iter()
            .flat_map(|k| k.apt_packages().iter().copied())
            .filter(|p| !dpkg_installed(p))
            .collect();
        if !missing.is_empty() {
            log(&format!("set-up: apt-get install {}", missing.join(" ")));
            if let Err(e) = apt_install(&missing, m.root) {
                for k in &wanted {
                    if k.apt_packages().iter().any(|p| missing.contains(p)) {
                        failed.push((*k, e.clone()));
                    }
                }
            }
        }
        if kinds.contains(&Kind::MpichPypi) {
            log("set-up: MPICH from PyPI in target/bench-venv (pip install mpich when missing)");
            if let Err(e) = pip_install_mpich(&ws.venv()) {
                failed.push((Kind::MpichPypi, e));
            }
        }
        if kinds.contains(&Kind::Tessel) {
            log("set-up: tools/install.sh (Tessel)");
            if let Err(e) = run_ok(
                Command::new("bash")
                    .arg("tools/install.sh")
                    .current_dir(&ws.root),
            ) {
                failed.push((Kind::Tessel, format!("tools/install.sh failed: {e}")));
            }
        }
    }
    kinds
        .iter()
        .map(|&k| match failed.iter().find(|(f, _)| *f == k) {
            Some((_, why)) => Competitor::skipped(k, format!("set-up failed: {why}")),
            None => find(k, ws, m).unwrap_or_else(|why| Competitor::skipped(k, why)),
        })
        .collect()
}

/// Locate an installed competitor and read its version.
fn find(kind: Kind, ws: &Workspace, m: Machine) -> Result<Competitor, String> {
    let venv_bin = ws.venv().join("bin");
    let (cc, cc_after, launcher, env, version) = match kind {
        Kind::Tessel => {
            let bin = ws.tessel().join("bin");
            let version = format!("Tessel {}{}", env!("CARGO_PKG_VERSION"), git_rev(&ws.root));
            (
                vec![path_arg(&bin.join("mpicc"))],
                vec![],
                bin.join("mpiexec"),
                vec![],
                version,
            )
        }
        Kind::Mpich => {
            need("mpiexec.mpich")?;
            let v = first_line_with(&mut Command::new("mpichversion"), "MPICH Version:")
                .map(|l| format!("MPICH {}", l.trim_start_matches("MPICH Version:").trim()));
            (
                vec!["mpicc.mpich".into()],
                vec![],
                "mpiexec.mpich".into(),
                vec![],
                v?,
            )
        }
        Kind::OpenMpi => {
            need("mpiexec.openmpi")?;
            let v = first_line_with(Command::new("ompi_info").arg("--version"), "Open MPI");
            (
                vec!["mpicc.openmpi".into()],
                vec![],
                "mpiexec.openmpi".into(),
                vec![],
                v?,
            )
        }
        Kind::MpichPypi => {
            need(&path_arg(&venv_bin.join("mpiexec")))?;
            let v = first_line_with(
                &mut Command::new(venv_bin.join("mpichversion")),
                "MPICH Version:",
            )
            .map(|l| {
                format!(
                    "MPICH {} (PyPI)",
                    l.trim_start_matches("MPICH Version:").trim()
                )
            })?;
            // The wheel ships a relocatable mpicc; should a release stop
            // shipping it, compile with its headers and library directly.
            let mpicc = venv_bin.join("mpicc");
            let (cc, after) = if mpicc.exists() {
                (vec![path_arg(&mpicc)], vec![])
            } else {
                let (inc, lib) = (ws.venv().join("include"), ws.venv().join("lib"));
                (
                    vec!["cc".into(), format!("-I{}", inc.display())],
                    vec![
                        format!("-L{}", lib.display()),
                        format!("-Wl,-rpath,{}", lib.display()),
                        "-lmpi".into(),
                    ],
                )
            };
            // Hydra finds its proxy on PATH.
            let path = format!(
                "{}:{}",
                venv_bin.display(),
                std::env::var("PATH").unwrap_or_default()
            );
            (
                cc,
                after,
                venv_bin.join("mpiexec"),
                vec![("PATH".to_string(), path)],
                v,
            )
        }
    };
    let launcher = launcher.to_string_lossy().into_owned();
    need(&cc[0])?;
    need(&launcher)?;
    let style = kind.launch_style();
    let shown = |np: u32| {
        let n = np.to_string();
        let args: Vec<String> = launch_args(style, np, m)
            .into_iter()
            .map(|a| if a == n { "N".to_string() } else { a })
            .collect();
        let shown = format!("{launcher} {}", args.join(" "));
        shown
    };
    Ok(Competitor {
        kind,
        name: kind.name(),
        version,
        cc,
        cc_after,
        settings_fit: shown(m.cores.max(1)),
        settings_oversubscribed: shown(m.cores + 1),
        launcher,
        env,
        library: None,
        skipped: None,
        style,
    })
}

/// An error naming `tool` when it is not installed.
fn need(tool: &str) -> Result<(), String> {
    match which(tool) {
        Some(_) => Ok(()),
        None => Err(format!("`{tool}` not found (set-up skipped or failed)")),
    }
}

fn path_arg(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// ` (git abc1234)` of the workspace, or nothing outside git.
fn git_rev(root: &Path) -> String {
    Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(root)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| format!(" (git {})", String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_default()
}

/// The first line of a command's output containing `needle`.
fn first_line_with(cmd: &mut Command, needle: &str) -> Result<String, String> {
    // The tool loads its own MPI library, not one the environment names.
    cmd.env_remove("LD_LIBRARY_PATH").env_remove("LD_PRELOAD");
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find(|l| l.contains(needle))
        .map(|l| l.trim().to_string())
        .ok_or_else(|| format!("{cmd:?} printed no `{needle}` line"))
}

/// The path of `tool` (itself when it has a slash and exists).
pub fn which(tool: &str) -> Option<PathBuf> {
    if tool.contains('/') {
        return Path::new(tool).is_file().then(|| PathBuf::from(tool));
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(tool))
        .find(|p| p.is_file())
}

fn dpkg_installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// `apt-get update` and `apt-get install` (through sudo when not root),
/// waiting for and retrying on a busy dpkg lock.
fn apt_install(pkgs: &[&str], root: bool) -> Result<(), String> {
    if !root && which("sudo").is_none() {
        return Err("not root and no sudo to run apt-get".into());
    }
    let apt = |args: &[&str]| {
        let mut c = Command::new(if root { "env" } else { "sudo" });
        if !root {
            c.arg("env");
        }
        c.args([
            "DEBIAN_FRONTEND=noninteractive",
            "apt-get",
            "-o",
            "DPkg::Lock::Timeout=300",
        ])
        .args(args);
        c
    };
    let mut install = vec!["install", "-y", "-qq", "--no-install-recommends"];
    install.extend_from_slice(pkgs);
    let mut last = String::new();
    for attempt in 1..=4 {
        let result = run_ok(&mut apt(&["update", "-qq"])).and_then(|_| run_ok(&mut apt(&install)));
        match result {
            Ok(()) => return Ok(()),
            Err(e) if is_lock_busy(&e) && attempt < 4 => {
                last = e;
                sleep(Duration::from_secs(15));
            }
            Err(e) => return Err(e),
        }
    }
    Err(last)
}

/// Whether apt-get failed because another process holds the dpkg lock.
fn is_lock_busy(message: &str) -> bool {
    message.contains("Could not get lock") || message.contains("Unable to acquire the dpkg")
}

/// `python3 -m venv` and `pip install mpich` unless it is there already.
fn pip_install_mpich(venv: &Path) -> Result<(), String> {
    let py = venv.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-m", "pip", "show", "-q", "mpich"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if py.exists() && has(&py) {
        return Ok(());
    }
    run_ok(Command::new("python3").arg("-m").arg("venv").arg(venv))?;
    run_ok(Command::new(&py).args([
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "mpich",
    ]))
}

/// Run to completion; an error carries the command and the end of its
/// output.
pub fn run_ok(cmd: &mut Command) -> Result<(), String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    Err(format!("{cmd:?} failed ({}): {}", out.status, gist(&text)))
}

/// The error lines of a failed command's output (a compiler's), or its
/// last lines when none says "error".
fn gist(text: &str) -> String {
    let errors: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("error"))
        .take(3)
        .collect();
    if errors.is_empty() {
        tail(text, 6)
    } else {
        errors.join(" | ")
    }
}

/// The last `n` non-empty lines of `text`, joined by " | ".
pub fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(n)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: Machine = Machine {
        cores: 2,
        root: false,
    };
    const TWO_ROOT: Machine = Machine {
        cores: 2,
        root: true,
    };

    #[test]
    fn tessel_asks_for_auto_binding() {
        for (np, m) in [(2, TWO), (64, TWO_ROOT)] {
            let n = np.to_string();
            let want = ["--bind", "auto", "-n", n.as_str()];
            assert_eq!(launch_args(Launcher::Tessel, np, m), want);
        }
    }

    #[test]
    fn hydra_binds_to_cores_only_when_the_processes_fit() {
        assert_eq!(
            launch_args(Launcher::Hydra, 2, TWO),
            ["-n", "2", "-bind-to", "core"]
        );
        assert_eq!(
            launch_args(Launcher::Hydra, 1, TWO),
            ["-n", "1", "-bind-to", "core"]
        );
        let over = launch_args(Launcher::Hydra, 3, TWO);
        assert_eq!(over[..2], ["-n", "3"]);
        assert!(!over.contains(&"-bind-to".to_string()));
        assert!(
            over.windows(3)
                .any(|w| w == ["-genv", "MPIR_CVAR_POLLS_BEFORE_YIELD", "1"])
        );
    }

    #[test]
    fn open_mpi_oversubscribes_without_binding_beyond_the_cores() {
        assert_eq!(
            launch_args(Launcher::OpenMpi, 2, TWO),
            ["-n", "2", "--bind-to", "core"]
        );
        assert_eq!(
            launch_args(Launcher::OpenMpi, 8, TWO),
            ["-n", "8", "--oversubscribe", "--bind-to", "none"]
        );
    }

    #[test]
    fn open_mpi_needs_a_flag_only_as_root() {
        assert_eq!(
            launch_args(Launcher::OpenMpi, 2, TWO_ROOT),
            ["--allow-run-as-root", "-n", "2", "--bind-to", "core"]
        );
        assert!(
            !launch_args(Launcher::OpenMpi, 2, TWO).contains(&"--allow-run-as-root".to_string())
        );
    }

    #[test]
    fn names_round_trip_through_the_command_line() {
        for k in Kind::ALL {
            assert_eq!(Kind::from_str(k.name(), false), Ok(k));
        }
    }

    #[test]
    fn lock_messages_are_recognised() {
        assert!(is_lock_busy(
            "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 7"
        ));
        assert!(!is_lock_busy("E: Unable to locate package openmpi-bin"));
    }

    #[test]
    fn gist_prefers_error_lines() {
        let cc = "x.c: In function 'main':\nx.c:1:25: error: 'syntax' undeclared\n  1 | int main\n";
        assert_eq!(gist(cc), "x.c:1:25: error: 'syntax' undeclared");
        assert_eq!(gist("one\ntwo\n"), "one | two");
    }

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\n\nb\nc\n", 2), "b | c");
        assert_eq!(tail("", 3), "");
    }
}

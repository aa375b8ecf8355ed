//! `internode`: jobs that span nodes, in one command.
//!
//! `cargo run --release -p benches --bin internode -- [OPTIONS]` measures
//!
//! * **stencil overlap**: `benches/c/stencil.c` on [`NP`] processes split
//!   as 2 nodes of [`PPN`], once per `--mode` ([`MODES`]); the report's
//!   figure is total / max(intra, inter). Tessel runs across virtual nodes
//!   of its launcher (`mpiexec --ppn`) with each network plugin that
//!   opens, and across two network namespaces ([`netns`]) under MPICH's
//!   Hydra; Debian's MPICH and Open MPI across the same namespaces. Every
//!   MPI also runs `--mode inter` on one node (no face crosses nodes
//!   there), which shows whether it took the namespaces for nodes.
//! * **plugin overhead**: `benches/c/pingpong.c` on 2 processes on 2
//!   virtual nodes through each plugin, next to the transport's own tool
//!   over loopback ([`helper::Test`]).
//!
//! Set-up, building, the watchdog, the alternating schedule, medians and
//! the CSV files are `compare`'s ([`crate::compare`]); this module adds
//! the runs across nodes, the probes of what can run, the veth byte counts
//! of the namespaced runs and its report ([`report`]).

pub mod cli;
pub mod helper;
pub mod netns;
pub mod report;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser;

use crate::compare::competitors::{Competitor, Kind, Launcher, Machine, launch_args, tail, which};
use crate::compare::report::Environment;
use crate::compare::run::{self, Task};
use crate::compare::{self as harness, stats};
use cli::{Cli, Plan};
use helper::Test;
use netns::{DEV, Nodes};

/// Processes of the stencil, and per node.
pub const NP: u32 = 8;
pub const PPN: u32 = 4;

/// The stencil's modes: faces within a node, across nodes, all.
pub const MODES: [&str; 3] = ["intra", "inter", "total"];

/// Tessel's network plugins, in the order they are tried.
pub const PLUGINS: [&str; 3] = ["ucx", "ofi", "verbs"];

/// Seconds an MPI that hangs in `MPI_Finalize` gets after printing its
/// results before its job is ended ([`helper`]'s `__until-results`).
pub const GRACE_SECS: u64 = 3;

/// Runs of a transport's tool per figure (the median is kept), as
/// `pingpong.c` keeps the median of 5 timed batches.
pub const TOOL_BATCHES: u32 = 5;

/// The programs this command builds with every MPI.
const PROGRAMS: [&str; 2] = ["stencil", "pingpong"];

/// Variables that steer the transports: removed from every run's
/// environment, then set as the run needs.
const NET_VARS: [&str; 7] = [
    "TESSEL_NET",
    "UCX_TLS",
    "UCX_NET_DEVICES",
    "FI_PROVIDER",
    "FI_TCP_IFACE",
    "LD_LIBRARY_PATH",
    "LD_PRELOAD",
];

/// Entry point of the `internode` binary (and of its helper modes).
pub fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = helper::run(&args) {
        return code;
    }
    let plan = Cli::parse().plan();
    match internode(&plan) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("internode: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Whether a plugin opens across virtual nodes.
#[derive(Debug, Clone)]
pub struct PluginStatus {
    pub name: &'static str,
    /// `Ok` when a 2-node job through it ran; otherwise why not.
    pub opens: Result<(), String>,
}

/// Bytes through the veth pair during one successful namespaced run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VethRun {
    pub mpi: String,
    pub transport: String,
    pub mode: String,
    pub rep: u32,
    pub bytes: u64,
}

/// A run the `__until-results` wrapper ended after its results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub mpi: String,
    pub label: String,
    pub rep: u32,
}

/// Something that did not run, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRun {
    pub what: String,
    pub why: String,
}

/// How busy the machine was.
#[derive(Debug, Clone, Default)]
pub struct Load {
    /// `/proc/loadavg` before anything ran, and at the end.
    pub before: String,
    pub after: String,
    /// Share of CPU time stolen by the hypervisor during the runs, in %.
    pub steal_pct: Option<f64>,
}

/// `/proc/stat`'s `cpu` line: (steal, total) jiffies.
fn cpu_times() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|w| w.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is
    // already in user).
    (v.len() >= 8).then(|| (v[7], v[..8].iter().sum()))
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// The environment that holds a plugin's transport to TCP on device `dev`.
pub fn plugin_env(plugin: &str, dev: &str) -> Vec<(String, String)> {
    let v: Vec<(&str, &str)> = match plugin {
        "ucx" => vec![
            ("TESSEL_NET", "ucx"),
            ("UCX_TLS", "tcp"),
            ("UCX_NET_DEVICES", dev),
        ],
        "ofi" => vec![
            ("TESSEL_NET", "ofi"),
            ("FI_PROVIDER", "tcp"),
            ("FI_TCP_IFACE", dev),
        ],
        other => vec![("TESSEL_NET", other)],
    };
    v.into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// `cmd` with the transport variables of the caller's environment gone
/// and `env` set.
fn with_env(cmd: &mut Command, env: &[(String, String)]) {
    for v in NET_VARS {
        cmd.env_remove(v);
    }
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
}

/// `cmd` run through the `__until-results` wrapper of this binary.
fn until_results(cmd: &Command, exe: &Path) -> Command {
    let mut w = Command::new(exe);
    w.args(helper::until_results_args(1, GRACE_SECS))
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => w.env(k, v),
            None => w.env_remove(k),
        };
    }
    w
}

/// `stencil.c`'s arguments for `mode`.
fn stencil_args(plan: &Plan, mode: &str) -> Vec<String> {
    let mut a = vec!["--mode".to_string(), mode.to_string()];
    if let Some(e) = plan.edge {
        a.extend(["--edge".to_string(), e.to_string()]);
    }
    if plan.quick {
        a.push("--quick".into());
    }
    a
}

fn quick_arg(plan: &Plan) -> Vec<String> {
    if plan.quick {
        vec!["--quick".into()]
    } else {
        vec![]
    }
}

/// Where the stencil of one MPI runs: its keys in the samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// What carries the inter-node traffic: Tessel's plugin (`ucx`,
    /// `ofi`), MPICH's netmod (`ucx`), Open MPI's BTL (`tcp`); `shm` for
    /// one node.
    pub transport: &'static str,
    /// `virtual` (Tessel's `--ppn`), `netns` (two namespaces) or `one`.
    pub nodes: &'static str,
}

/// What the schedule needs to know of a task after it ran.
#[derive(Debug, Clone)]
struct Meta {
    mpi: String,
    transport: String,
    mode: String,
    /// A run across the namespaces: count its veth bytes.
    netns: bool,
}

/// Everything the runs borrow.
struct Ctx<'a> {
    plan: &'a Plan,
    machine: Machine,
    exe: &'a Path,
    nodes: Option<&'a Nodes>,
    hydra: Option<&'a str>,
    veth_before: &'a Cell<Option<u64>>,
}

/// The tasks of one repetition, with what to remember of each.
struct Schedule<'a> {
    tasks: Vec<Task<'a>>,
    meta: Vec<Meta>,
}

impl<'a> Schedule<'a> {
    /// Add a run of `command` labelled `label`; `netns` runs read the veth
    /// counters first.
    #[allow(clippy::too_many_arguments)]
    fn push(
        &mut self,
        ctx: &Ctx<'a>,
        mpi: &'a str,
        label: String,
        procs: u32,
        place: Place,
        mode: &str,
        command: Box<dyn Fn() -> Command + 'a>,
    ) {
        let netns = place.nodes == "netns";
        let (nodes, before) = (ctx.nodes, ctx.veth_before);
        self.tasks.push(Task {
            mpi,
            label,
            procs,
            keys: vec![
                ("transport".into(), place.transport.into()),
                ("nodes".into(), place.nodes.into()),
            ],
            command: Box::new(move || {
                if netns {
                    before.set(nodes.and_then(Nodes::veth_bytes));
                }
                command()
            }),
        });
        self.meta.push(Meta {
            mpi: mpi.to_string(),
            transport: place.transport.to_string(),
            mode: mode.to_string(),
            netns,
        });
    }
}

fn internode(plan: &Plan) -> Result<ExitCode, String> {
    let before = Load {
        before: loadavg(),
        ..Load::default()
    };
    let cpu0 = cpu_times();
    let ws = harness::workspace();
    let machine = Machine::this();
    let src = harness::source_dir(&ws);
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| ws.root.join("target/internode-report"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let env = Environment::this(machine);
    let exe = std::env::current_exe().map_err(|e| format!("own executable: {e}"))?;
    let mut not_run = Vec::new();

    let mut mpis = harness::competitors_ready(&plan.mpis, &ws, machine, plan.setup);
    reuse_installed_tessel(&mut mpis, &ws, machine, &mut not_run);
    let mut failures = Vec::new();
    println!("building the programs from {}", src.display());
    let built = harness::build_with_each(&ws, &src, &mut mpis, &PROGRAMS, &mut failures);
    let binary =
        |k: Kind, p: &str| -> Option<PathBuf> { built.get(&k)?.get(p)?.as_ref().ok().cloned() };
    let tessel = mpis
        .iter()
        .find(|c| c.kind == Kind::Tessel && c.ready())
        .cloned();

    // Which plugins open: a 2-node ping-pong through each.
    let timeout = Duration::from_secs(plan.timeout_secs);
    let plugins: Vec<PluginStatus> = match (&tessel, binary(Kind::Tessel, "pingpong")) {
        (Some(t), Some(pp)) => PLUGINS
            .iter()
            .map(|&name| probe_plugin(t, &pp, name, machine, timeout))
            .collect(),
        _ => Vec::new(),
    };
    for p in &plugins {
        match &p.opens {
            Ok(()) => println!("plugin {}: opens", p.name),
            Err(e) => println!("plugin {}: does not open: {e}", p.name),
        }
    }
    let open: Vec<&'static str> = plugins
        .iter()
        .filter(|p| p.opens.is_ok())
        .map(|p| p.name)
        .collect();

    // The namespaces, removed when `nodes` drops (also on an error below).
    netns::remove_stale();
    let nodes = match netns::available()
        .and_then(|()| Nodes::new(&ws.root.join("target/internode-build")))
    {
        Ok(n) => {
            println!("namespaces {} joined by {DEV}", n.hosts());
            Some(n)
        }
        Err(e) => {
            println!("no network namespaces: {e}");
            not_run.push(NotRun {
                what: "every run across network namespaces".into(),
                why: e,
            });
            None
        }
    };
    let hydra = which("mpiexec.mpich").map(|p| p.to_string_lossy().into_owned());
    if hydra.is_none() && nodes.is_some() {
        not_run.push(NotRun {
            what: "Tessel and MPICH across namespaces".into(),
            why: "MPICH's Hydra (`mpiexec.mpich`, Debian package mpich) not found".into(),
        });
    }
    let tools = tool_status(&open, &mut not_run);

    let veth_before = Cell::new(None);
    let mut veth = Vec::new();
    let mut ended = Vec::new();
    let samples = {
        let ctx = Ctx {
            plan,
            machine,
            exe: &exe,
            nodes: nodes.as_ref(),
            hydra: hydra.as_deref(),
            veth_before: &veth_before,
        };
        let bins: BTreeMap<(Kind, &str), PathBuf> = mpis
            .iter()
            .filter(|c| c.ready())
            .flat_map(|c| PROGRAMS.iter().map(move |&p| (c.kind, p)))
            .filter_map(|(k, p)| binary(k, p).map(|b| ((k, p), b)))
            .collect();
        let configs = stencil_configs(&ctx, &mpis, &open, &bins, timeout, &mut not_run);
        let sched = schedule(&ctx, &configs, &mpis, &open, &tools, &bins);
        let (meta, tasks) = (&sched.meta, &sched.tasks);
        let (samples, failed) =
            run::run_schedule(tasks, plan.reps, machine, timeout, &mut |i, rep, err| {
                let m = &meta[i];
                if m.netns
                    && let (Some(b0), Some(b1)) = (
                        veth_before.get(),
                        nodes.as_ref().and_then(Nodes::veth_bytes),
                    )
                {
                    veth.push(VethRun {
                        mpi: m.mpi.clone(),
                        transport: m.transport.clone(),
                        mode: m.mode.clone(),
                        rep,
                        bytes: b1.saturating_sub(b0),
                    });
                }
                if err.contains(helper::ENDED_NOTE) {
                    ended.push(Ended {
                        mpi: m.mpi.clone(),
                        label: tasks[i].label.clone(),
                        rep,
                    });
                }
            });
        failures.extend(failed);
        samples
    };
    // The namespaces go now that nothing runs in them.
    drop(nodes);

    let load = Load {
        after: loadavg(),
        steal_pct: cpu0.zip(cpu_times()).and_then(|((s0, t0), (s1, t1))| {
            (t1 > t0).then(|| 100.0 * (s1.saturating_sub(s0)) as f64 / (t1 - t0) as f64)
        }),
        ..before
    };
    let medians = stats::summarize(&samples);
    let results = report::Results {
        environment: &env,
        plan,
        mpis: &mpis,
        plugins: &plugins,
        not_run: &not_run,
        failures: &failures,
        medians: &medians,
        samples: &samples,
        veth: &veth,
        ended: &ended,
        load: &load,
    };
    report::write(&out, &results)?;
    println!(
        "report: {} ({} samples, {} failed runs or builds)",
        out.join("report.md").display(),
        samples.len(),
        failures.len()
    );
    // Another MPI's failure is in the report; Tessel's fails the command.
    if plan.mpis.contains(&Kind::Tessel) {
        let name = Kind::Tessel.name();
        let ran = samples.iter().any(|s| s.mpi == name);
        let failed = failures.iter().any(|f| f.mpi == name);
        if !ran || failed || open.is_empty() {
            eprintln!("internode: Tessel failed, no plugin opened or nothing ran (see the report)");
            return Ok(ExitCode::FAILURE);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// When `tools/install.sh` failed (a plugin mid-edit, say) but an earlier
/// installation is there, run that one and say so.
fn reuse_installed_tessel(
    mpis: &mut [Competitor],
    ws: &crate::compare::competitors::Workspace,
    machine: Machine,
    not_run: &mut Vec<NotRun>,
) {
    let Some(t) = mpis.iter_mut().find(|c| c.kind == Kind::Tessel) else {
        return;
    };
    let Some(why) = t.skipped.clone() else { return };
    if !why.starts_with("set-up failed") {
        return;
    }
    let found =
        crate::compare::competitors::prepare(&[Kind::Tessel], ws, machine, false, &mut |_| {});
    if let Some(f) = found.into_iter().next().filter(Competitor::ready) {
        println!(
            "tessel: tools/install.sh failed; using the installation already in target/tessel"
        );
        not_run.push(NotRun {
            what: "a fresh Tessel installation".into(),
            why: format!("{why}; the runs use the one already in target/tessel"),
        });
        *t = f;
    }
}

/// Run a 2-node ping-pong through `plugin`.
fn probe_plugin(
    tessel: &Competitor,
    pingpong: &Path,
    name: &'static str,
    machine: Machine,
    timeout: Duration,
) -> PluginStatus {
    let lib = Path::new(&tessel.launcher)
        .parent()
        .and_then(Path::parent)
        .map(|p| p.join(format!("lib/tessel/libtessel_plugin_{name}.so")));
    if let Some(lib) = lib.filter(|l| !l.is_file()) {
        return PluginStatus {
            name,
            opens: Err(format!("not installed ({} missing)", lib.display())),
        };
    }
    let mut cmd = Command::new(&tessel.launcher);
    cmd.args(launch_args(Launcher::Tessel, 2, machine))
        .args(["--ppn", "1"])
        .arg(pingpong)
        .arg("--quick");
    with_env(&mut cmd, &plugin_env(name, "lo"));
    let opens =
        run::run_with_watchdog(&mut cmd, timeout.min(Duration::from_secs(60))).and_then(|o| {
            if o.stdout.contains("result ") {
                Ok(())
            } else {
                Err(format!("no result line: {}", tail(&o.stdout, 3)))
            }
        });
    PluginStatus {
        name,
        opens: opens.map_err(|e| first_reason(&e)),
    }
}

/// The first line of a failed job's message, without the list of
/// directories searched: why a plugin did not open, in a table cell.
fn first_reason(e: &str) -> String {
    let first = e.split(" | ").next().unwrap_or(e);
    let first = first.split("; searched").next().unwrap_or(first);
    match first.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &first[..i]),
        None => first.to_string(),
    }
}

/// The transport tests whose tool is installed, among the open plugins'.
fn tool_status(open: &[&str], not_run: &mut Vec<NotRun>) -> Vec<Test> {
    let mut tests = Vec::new();
    for t in Test::ALL {
        if !open.contains(&t.plugin()) {
            continue;
        }
        if which(t.tool()).is_some() {
            tests.push(t);
        } else if !not_run.iter().any(|n| n.what.contains(t.tool())) {
            let pkg = match t.tool() {
                "ucx_perftest" => "ucx-utils",
                _ => "libfabric-bin",
            };
            not_run.push(NotRun {
                what: format!("the transport's own figures ({})", t.tool()),
                why: format!("`{}` not found (Debian package {pkg})", t.tool()),
            });
        }
    }
    tests
}

/// Makes the launch command of the stencil with these arguments.
type Launch<'a> = Box<dyn Fn(&[String]) -> Command + 'a>;

/// One MPI's stencil set-up: where, and the command for a mode's arguments.
struct Config<'a> {
    mpi: &'a str,
    place: Place,
    launch: Launch<'a>,
}

/// Every stencil set-up that can run, the other MPIs' probed once (a
/// quick total exchange) so that one that cannot launch across the
/// namespaces is reported instead of failing every repetition.
fn stencil_configs<'a>(
    ctx: &Ctx<'a>,
    mpis: &'a [Competitor],
    open: &[&'static str],
    bins: &'a BTreeMap<(Kind, &str), PathBuf>,
    timeout: Duration,
    not_run: &mut Vec<NotRun>,
) -> Vec<Config<'a>> {
    let m = ctx.machine;
    let mut configs: Vec<Config<'a>> = Vec::new();
    let ready = |k: Kind| mpis.iter().find(|c| c.kind == k && c.ready());
    if let (Some(t), Some(bin)) = (ready(Kind::Tessel), bins.get(&(Kind::Tessel, "stencil"))) {
        for &p in open {
            if p == "verbs" {
                continue; // never opens without a device; if it did, it is not TCP
            }
            configs.push(Config {
                mpi: t.name,
                place: Place {
                    transport: p,
                    nodes: "virtual",
                },
                launch: Box::new(move |args: &[String]| {
                    let mut c = Command::new(&t.launcher);
                    c.args(launch_args(Launcher::Tessel, NP, m))
                        .args(["--ppn", &PPN.to_string()])
                        .arg(bin)
                        .args(args);
                    with_env(&mut c, &plugin_env(p, "lo"));
                    c
                }),
            });
        }
        if let (Some(nodes), Some(hydra)) = (ctx.nodes, ctx.hydra) {
            for &p in open {
                if p == "verbs" {
                    continue;
                }
                configs.push(Config {
                    mpi: t.name,
                    place: Place {
                        transport: p,
                        nodes: "netns",
                    },
                    launch: Box::new(move |args: &[String]| {
                        let mut c = hydra_command(nodes, hydra, &["-n".into(), NP.to_string()]);
                        c.arg(bin).args(args);
                        with_env(&mut c, &plugin_env(p, DEV));
                        c
                    }),
                });
            }
        }
    }
    let mut others: Vec<Config<'a>> = Vec::new();
    if let (Some(c), Some(bin), Some(nodes), Some(hydra)) = (
        ready(Kind::Mpich),
        bins.get(&(Kind::Mpich, "stencil")),
        ctx.nodes,
        ctx.hydra,
    ) {
        let exe = ctx.exe;
        others.push(Config {
            mpi: c.name,
            place: Place {
                transport: "ucx",
                nodes: "netns",
            },
            launch: Box::new(move |args: &[String]| {
                let mut cmd = hydra_command(nodes, hydra, &launch_args(Launcher::Hydra, NP, m));
                cmd.arg(bin).args(args);
                // Debian's MPICH is ch4:ucx: held to TCP on the veth, or
                // UCX would move "inter-node" data through shared memory
                // (both namespaces are one host to it).
                let mut env = plugin_env("ucx", DEV);
                env.retain(|(k, _)| k != "TESSEL_NET");
                with_env(&mut cmd, &env);
                cmd.envs(c.env.iter().map(|(k, v)| (k, v)));
                until_results(&cmd, exe)
            }),
        });
    }
    if let (Some(c), Some(bin), Some(nodes)) = (
        ready(Kind::OpenMpi),
        bins.get(&(Kind::OpenMpi, "stencil")),
        ctx.nodes,
    ) {
        others.push(Config {
            mpi: c.name,
            place: Place {
                transport: "tcp",
                nodes: "netns",
            },
            launch: Box::new(move |args: &[String]| {
                let mut cmd = nodes.in_first();
                cmd.arg(&c.launcher)
                    .args(launch_args(Launcher::OpenMpi, NP, m))
                    .arg("--hostfile")
                    .arg(&nodes.ompi_hosts)
                    .args(["--map-by", &format!("ppr:{PPN}:node")])
                    .args(["--mca", "plm_rsh_agent"])
                    .arg(&nodes.ompi_exec)
                    .args(["--mca", "oob_tcp_if_include", DEV])
                    .args(["--mca", "btl_tcp_if_include", DEV])
                    // ob1 with shared memory within a node and TCP across:
                    // its UCX PML would take shared memory across too.
                    .args(["--mca", "pml", "ob1", "--mca", "btl", "self,vader,tcp"]);
                if NP > m.cores {
                    // The processes outnumber the cores, which Open MPI
                    // cannot see from 4 slots per host.
                    cmd.args(["--mca", "mpi_yield_when_idle", "1"]);
                }
                cmd.arg(bin).args(args);
                with_env(&mut cmd, &[]);
                cmd.envs(c.env.iter().map(|(k, v)| (k, v)));
                cmd
            }),
        });
    }
    for cfg in others {
        let mut args = stencil_args(ctx.plan, "total");
        if !ctx.plan.quick {
            args.push("--quick".into());
        }
        let mut cmd = (cfg.launch)(&args);
        let probe = run::run_with_watchdog(&mut cmd, timeout.min(Duration::from_secs(60)));
        match probe {
            Ok(o) if o.stdout.contains("result ") => configs.push(cfg),
            Ok(o) => not_run.push(NotRun {
                what: format!("{} across the namespaces", cfg.mpi),
                why: format!("its probe printed no result: {}", tail(&o.stdout, 3)),
            }),
            Err(e) => {
                println!("{} across the namespaces: probe failed: {e}", cfg.mpi);
                not_run.push(NotRun {
                    what: format!("{} across the namespaces", cfg.mpi),
                    why: format!("a quick stencil run failed: {e}"),
                });
            }
        }
    }
    configs
}

/// Hydra in the first namespace with both as hosts, [`PPN`] per host, the
/// launcher script and the veth device; then `extra` (process count and
/// settings).
fn hydra_command(nodes: &Nodes, hydra: &str, extra: &[String]) -> Command {
    let mut c = nodes.in_first();
    c.arg(hydra)
        .args([
            "-hosts",
            &nodes.hosts(),
            "-launcher",
            "ssh",
            "-launcher-exec",
        ])
        .arg(&nodes.hydra_exec)
        .args(["-iface", DEV, "-ppn", &PPN.to_string()])
        .args(extra);
    c
}

/// One repetition: per mode, every stencil set-up in turn; the one-node
/// locality checks; then per plugin, Tessel's ping-pong and the
/// transport tool's runs.
fn schedule<'a>(
    ctx: &Ctx<'a>,
    configs: &'a [Config<'a>],
    mpis: &'a [Competitor],
    open: &[&'static str],
    tools: &[Test],
    bins: &'a BTreeMap<(Kind, &str), PathBuf>,
) -> Schedule<'a> {
    let plan = ctx.plan;
    let m = ctx.machine;
    let mut s = Schedule {
        tasks: Vec::new(),
        meta: Vec::new(),
    };
    let name = |bin: &Path| {
        bin.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    };
    for mode in MODES {
        for cfg in configs {
            let args = stencil_args(plan, mode);
            let label = format!(
                "stencil --mode {mode} np={NP} ppn={PPN} {} {}",
                cfg.place.transport, cfg.place.nodes
            );
            let launch = &cfg.launch;
            s.push(
                ctx,
                cfg.mpi,
                label,
                NP,
                cfg.place,
                mode,
                Box::new(move || launch(&args)),
            );
        }
    }
    // Locality check: inter on one node exchanges nothing.
    for c in mpis.iter().filter(|c| c.ready()) {
        let Some(bin) = bins.get(&(c.kind, "stencil")) else {
            continue;
        };
        if !configs.iter().any(|cfg| cfg.mpi == c.name) {
            continue;
        }
        let args = stencil_args(plan, "inter");
        let label = format!("stencil --mode inter np={NP} one node");
        let place = Place {
            transport: "shm",
            nodes: "one",
        };
        s.push(
            ctx,
            c.name,
            label,
            NP,
            place,
            "inter",
            Box::new(move || {
                let mut cmd = c.command(NP, m, bin, &args);
                with_env(&mut cmd, &[]);
                cmd.envs(c.env.iter().map(|(k, v)| (k, v)));
                cmd
            }),
        );
    }
    // Plugin overhead.
    let Some(t) = mpis.iter().find(|c| c.kind == Kind::Tessel && c.ready()) else {
        return s;
    };
    let Some(pp) = bins.get(&(Kind::Tessel, "pingpong")) else {
        return s;
    };
    let exe = ctx.exe;
    for &p in open {
        let args = quick_arg(plan);
        let place = Place {
            transport: p,
            nodes: "virtual",
        };
        s.push(
            ctx,
            t.name,
            format!("{} np=2 ppn=1 {p}", name(pp)),
            2,
            place,
            "",
            Box::new(move || {
                let mut c = Command::new(&t.launcher);
                c.args(launch_args(Launcher::Tessel, 2, m))
                    .args(["--ppn", "1"])
                    .arg(pp)
                    .args(&args);
                with_env(&mut c, &plugin_env(p, "lo"));
                c
            }),
        );
        for &test in tools.iter().filter(|t| t.plugin() == p) {
            let sizes: Vec<u64> = match test {
                Test::UcxBw => plan.sizes.bandwidth.clone(),
                _ => plan
                    .sizes
                    .latency
                    .iter()
                    .chain(&plan.sizes.bandwidth)
                    .copied()
                    .collect(),
            };
            for size in sizes {
                let batches = if plan.quick { 1 } else { TOOL_BATCHES };
                let args = test.helper_args(size, test.iters(size, plan.quick), batches);
                let place = Place {
                    transport: p,
                    nodes: "loopback",
                };
                let label = if test.name() == test.tool() {
                    format!("size={size}")
                } else {
                    format!("{} size={size}", test.name())
                };
                s.push(
                    ctx,
                    test.tool(),
                    label,
                    2,
                    place,
                    "",
                    Box::new(move || {
                        let mut c = Command::new(exe);
                        c.args(&args);
                        with_env(&mut c, &[]);
                        c
                    }),
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn plugin_environments_hold_the_transport_to_tcp() {
        let ucx = plugin_env("ucx", "lo");
        assert!(ucx.contains(&("UCX_TLS".into(), "tcp".into())));
        assert!(ucx.contains(&("UCX_NET_DEVICES".into(), "lo".into())));
        let ofi = plugin_env("ofi", DEV);
        assert!(ofi.contains(&("FI_PROVIDER".into(), "tcp".into())));
        assert!(ofi.contains(&("FI_TCP_IFACE".into(), DEV.into())));
        assert_eq!(
            plugin_env("verbs", "lo"),
            [("TESSEL_NET".into(), "verbs".into())]
        );
    }

    #[test]
    fn the_wrapper_keeps_program_arguments_and_environment() {
        let mut c = Command::new("mpiexec");
        c.args(["-n", "8", "prog"])
            .env("UCX_TLS", "tcp")
            .env_remove("TESSEL_NET");
        let w = until_results(&c, Path::new("/bin/internode"));
        assert_eq!(w.get_program(), "/bin/internode");
        let args: Vec<&OsStr> = w.get_args().collect();
        assert_eq!(
            args,
            [
                "__until-results",
                "1",
                "3",
                "--",
                "mpiexec",
                "-n",
                "8",
                "prog"
            ]
        );
        let envs: Vec<_> = w.get_envs().collect();
        assert!(envs.contains(&(OsStr::new("UCX_TLS"), Some(OsStr::new("tcp")))));
        assert!(envs.contains(&(OsStr::new("TESSEL_NET"), None)));
    }

    #[test]
    fn stencil_arguments() {
        let plan = Cli::try_parse_from(["internode", "--quick", "--edge", "16"])
            .unwrap()
            .plan();
        assert_eq!(
            stencil_args(&plan, "inter"),
            ["--mode", "inter", "--edge", "16", "--quick"]
        );
    }

    #[test]
    fn plugin_failures_are_cut_to_their_reason() {
        let e = "exit status: 1: MPI_Init: plugin verbs did not open: no RDMA device; searched \
                 /a:/b. Set TESSEL_NET | rank 1: the same | mpiexec: aborting";
        assert_eq!(
            first_reason(e),
            "exit status: 1: MPI_Init: plugin verbs did not open: no RDMA device"
        );
        assert_eq!(first_reason(&"x".repeat(400)).chars().count(), 301);
    }

    #[test]
    fn cpu_times_are_read() {
        let (steal, total) = cpu_times().expect("/proc/stat");
        assert!(steal <= total);
    }
}

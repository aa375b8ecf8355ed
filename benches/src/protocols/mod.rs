//! `protocols`: Tessel's large-message protocols side by side, in one
//! command.
//!
//! `cargo run --release -p benches --bin protocols -- [OPTIONS]` runs
//! `benches/c/protocols.c` on Tessel under every `TESSEL_RNDV` setting
//! ([`RNDV`]) with private (`malloc`) and shared (`MPI_Alloc_mem`) buffers,
//! with 2 processes and with idle helpers, and on the other MPIs of the
//! `compare` harness; and `benches/c/stencil.c` with normal and (Tessel)
//! library-managed receives. Set-up, building, the watchdog, the
//! alternating schedule, medians and plots are `compare`'s
//! ([`crate::compare`]); this module adds the runs, the `TESSEL_STATS`
//! lines ([`tstats`]) and its report ([`report`]).

pub mod cli;
pub mod report;
pub mod tstats;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::compare::build::Built;
use crate::compare::competitors::{Competitor, Kind, Machine};
use crate::compare::run::{self, Task};
use crate::compare::{self as harness, report::Environment, stats};
use cli::{Cli, Plan};
use tstats::Stat;

/// The settings of `TESSEL_RNDV`, the one Tessel runs with by default
/// first.
pub const RNDV: [&str; 4] = ["adaptive", "get", "coop", "steal"];

/// Where the buffers of `protocols.c` come from (`--alloc`).
pub const ALLOC: [&str; 2] = ["malloc", "mpi"];

/// The programs this command builds with every MPI.
const PROGRAMS: [&str; 2] = ["protocols", "stencil"];

/// Entry point of the `protocols` binary.
pub fn main() -> ExitCode {
    let plan = Cli::parse().plan();
    match protocols(&plan) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("protocols: {e}");
            ExitCode::FAILURE
        }
    }
}

/// A Tessel bandwidth run, whose statistics lines the report keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    pub rndv: &'static str,
    pub alloc: &'static str,
    pub np: u32,
}

/// The statistics of one run.
#[derive(Debug, Clone)]
pub struct RunStats {
    pub setting: Setting,
    pub rep: u32,
    pub stats: Vec<Stat>,
    /// Statistics lines that did not parse.
    pub unread: Vec<String>,
}

fn protocols(plan: &Plan) -> Result<ExitCode, String> {
    let ws = harness::workspace();
    let machine = Machine::this();
    let src = harness::source_dir(&ws);
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| ws.root.join("target/protocols-report"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let env = Environment::this(machine);

    let mut mpis = harness::competitors_ready(&plan.mpis, &ws, machine, plan.setup);
    let mut failures = Vec::new();
    println!("building the programs from {}", src.display());
    let built = harness::build_with_each(&ws, &src, &mut mpis, &PROGRAMS, &mut failures);

    let ready: Vec<&Competitor> = mpis.iter().filter(|c| c.ready()).collect();
    let (tasks, settings) = tasks(plan, machine, &ready, &built);
    let mut stats = Vec::new();
    let timeout = Duration::from_secs(plan.timeout_secs);
    let (samples, failed) =
        run::run_schedule(&tasks, plan.reps, machine, timeout, &mut |i, rep, err| {
            if let Some(setting) = &settings[i] {
                let (s, unread) = tstats::parse(err);
                stats.push(RunStats {
                    setting: setting.clone(),
                    rep,
                    stats: s,
                    unread,
                });
            }
        });
    failures.extend(failed);

    let medians = stats::summarize(&samples);
    let results = report::Results {
        environment: &env,
        plan,
        mpis: &mpis,
        failures: &failures,
        medians: &medians,
        samples: &samples,
        stats: &stats,
    };
    report::write(&out, &results)?;
    println!(
        "report: {} ({} samples, {} failed runs or builds)",
        out.join("report.md").display(),
        samples.len(),
        failures.len()
    );
    // Another MPI's failure is in the report; Tessel's fails the command.
    let tessel = Kind::Tessel.name();
    let tessel_ran = samples.iter().any(|s| s.mpi == tessel);
    let tessel_failed = failures.iter().any(|f| f.mpi == tessel);
    if samples.is_empty() || tessel_failed || (plan.mpis.contains(&Kind::Tessel) && !tessel_ran) {
        eprintln!("protocols: Tessel failed or nothing ran (see the report)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// One repetition's runs, with the Tessel bandwidth setting of each (whose
/// statistics are kept): per process count and allocation, Tessel under
/// each [`RNDV`] then each other MPI; then the stencil per process count,
/// normal on every MPI and managed on Tessel.
fn tasks<'a>(
    plan: &Plan,
    machine: Machine,
    ready: &[&'a Competitor],
    built: &'a std::collections::BTreeMap<Kind, Built>,
) -> (Vec<Task<'a>>, Vec<Option<Setting>>) {
    let binary = |c: &Competitor, program: &str| -> Option<&'a PathBuf> {
        built.get(&c.kind)?.get(program)?.as_ref().ok()
    };
    let mut tasks = Vec::new();
    let mut settings = Vec::new();
    let mut push = |c: &'a Competitor,
                    bin: &'a Path,
                    np: u32,
                    args: Vec<String>,
                    env: Vec<(String, String)>,
                    setting: Option<Setting>| {
        let keys: Vec<(String, String)> = env
            .iter()
            .filter(|(k, _)| k == "TESSEL_RNDV")
            .map(|(_, v)| ("rndv".to_string(), v.clone()))
            .collect();
        let words = keys.iter().map(|(k, v)| format!("{k}={v}"));
        let label = std::iter::once(program_name(bin))
            .chain(args.iter().filter(|a| *a != "--quick").cloned())
            .chain(words)
            .chain([format!("np={np}")])
            .collect::<Vec<_>>()
            .join(" ");
        tasks.push(Task {
            mpi: c.name,
            label,
            procs: np,
            keys,
            command: Box::new(move || {
                let mut cmd = c.command(np, machine, bin, &args);
                cmd.envs(env.iter().map(|(k, v)| (k, v)));
                cmd
            }),
        });
        settings.push(setting);
    };
    for &np in &plan.np {
        for alloc in ALLOC {
            for &c in ready {
                let Some(bin) = binary(c, "protocols") else {
                    continue;
                };
                let args = protocols_args(plan, alloc);
                if c.kind != Kind::Tessel {
                    push(c, bin, np, args, vec![], None);
                    continue;
                }
                for rndv in RNDV {
                    let env = vec![
                        ("TESSEL_RNDV".to_string(), rndv.to_string()),
                        ("TESSEL_STATS".to_string(), "1".to_string()),
                    ];
                    let setting = Setting { rndv, alloc, np };
                    push(c, bin, np, args.clone(), env, Some(setting));
                }
            }
        }
    }
    for &np in &plan.stencil_np {
        for &c in ready {
            let Some(bin) = binary(c, "stencil") else {
                continue;
            };
            push(c, bin, np, stencil_args(plan, false), vec![], None);
            if c.kind == Kind::Tessel {
                push(c, bin, np, stencil_args(plan, true), vec![], None);
            }
        }
    }
    (tasks, settings)
}

fn program_name(bin: &Path) -> String {
    bin.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// `protocols.c`'s arguments.
fn protocols_args(plan: &Plan, alloc: &str) -> Vec<String> {
    let mut a = vec!["--alloc".to_string(), alloc.to_string()];
    if let Some(max) = plan.max {
        a.extend(["--max".to_string(), max.to_string()]);
    }
    if plan.quick {
        a.push("--quick".into());
    }
    a
}

/// `stencil.c`'s arguments.
fn stencil_args(plan: &Plan, managed: bool) -> Vec<String> {
    let mut a = Vec::new();
    if let Some(e) = plan.edge {
        a.extend(["--edge".to_string(), e.to_string()]);
    }
    if managed {
        a.push("--managed".into());
    }
    if plan.quick {
        a.push("--quick".into());
    }
    a
}

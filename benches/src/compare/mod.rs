//! `compare`: Tessel against other MPIs on this machine, in one command.
//!
//! `cargo run --release -p benches --bin compare -- [OPTIONS]` sets up the
//! competitors ([`competitors`]), builds the C programs of `benches/c` with
//! each one's compiler wrapper ([`build`]), runs them alternately under a
//! watchdog ([`run`]), takes medians ([`stats`]) and writes the report
//! directory ([`report`], [`plot`]). The programs' output contract is
//! `result bench=.. metric=.. [key=value ..] value=.. unit=..` on rank 0's
//! stdout.
//!
//! Developer option: `TESSEL_BENCH_SRC=DIR` takes the programs from `DIR`
//! instead of `benches/c` (to try the harness on stand-in programs).

pub mod build;
pub mod cli;
pub mod competitors;
pub mod plot;
pub mod report;
pub mod run;
pub mod stats;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::Parser;

use build::Built;
use cli::{Cli, Plan};
use competitors::{Competitor, Kind, Machine, Workspace};
use report::{Environment, Options, Results};
use run::{Failure, Origin, Progress};
use stats::Sample;

/// The workspace this binary was built from.
fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// Entry point of the `compare` binary.
pub fn main() -> ExitCode {
    let plan = Cli::parse().plan();
    match compare(&plan) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("compare: {e}");
            ExitCode::FAILURE
        }
    }
}

fn compare(plan: &Plan) -> Result<ExitCode, String> {
    let ws = Workspace {
        root: workspace_root(),
    };
    let machine = Machine::this();
    let src = std::env::var_os("TESSEL_BENCH_SRC")
        .map(PathBuf::from)
        .unwrap_or_else(|| ws.root.join("benches/c"));
    let out = plan
        .out
        .clone()
        .unwrap_or_else(|| ws.root.join("target/bench-report"));
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let env = Environment::this(machine);

    let mut order = plan.mpis.clone();
    order.sort();
    let mut mpis = competitors::prepare(&order, &ws, machine, plan.setup, &mut |l| println!("{l}"));
    for c in &mpis {
        match &c.skipped {
            None => println!("{}: {} (launch: {})", c.name, c.version, c.settings_fit),
            Some(why) => println!("{}: skipped: {why}", c.name),
        }
    }

    let mut failures = Vec::new();
    let (reference, built) = build_everything(&ws, &src, &mut mpis, &mut failures);
    let samples = run_all(
        plan,
        machine,
        &mpis,
        &built,
        reference.as_ref(),
        &mut failures,
    );

    let medians = stats::summarize(&samples);
    let plots = plot::write_all(&out, &medians)?;
    let options = Options {
        np: plan.np.clone(),
        startup_np: plan.startup_np.clone(),
        reps: plan.reps,
        quick: plan.quick,
        timeout_secs: plan.timeout_secs,
    };
    let results = Results {
        environment: &env,
        options: &options,
        mpis: &mpis,
        failures: &failures,
        medians: &medians,
        samples: &samples,
    };
    report::write(&out, &results, &plots)?;
    println!(
        "report: {} ({} samples, {} failed runs or builds)",
        out.join("report.md").display(),
        samples.len(),
        failures.len()
    );
    let tessel_ran = samples.iter().any(|s| s.mpi == Kind::Tessel.name());
    Ok(
        if samples.is_empty() || (plan.mpis.contains(&Kind::Tessel) && !tessel_ran) {
            eprintln!(
                "compare: no results{}",
                if tessel_ran { "" } else { " from Tessel" }
            );
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        },
    )
}

/// Build `reference.c` and every MPI program with every ready competitor
/// into `target/bench-build/`, record which MPI library each one's
/// programs load, and record what failed to build.
fn build_everything(
    ws: &Workspace,
    src: &Path,
    mpis: &mut [Competitor],
    failures: &mut Vec<Failure>,
) -> (Option<PathBuf>, BTreeMap<Kind, Built>) {
    let build_dir = ws.root.join("target/bench-build");
    println!("building the programs from {}", src.display());
    let reference = build::build_reference(src, &build_dir.join("reference"))
        .inspect_err(|e| {
            println!("cannot build reference: {e}");
            failures.push(failure("reference", "build reference", 0, e));
        })
        .ok();
    let mut built = BTreeMap::new();
    for c in mpis.iter_mut().filter(|c| c.ready()) {
        let programs = build::build_mpi(c, src, &build_dir.join(c.name));
        for (p, r) in &programs {
            if let Err(e) = r {
                println!("{}: cannot build {p}: {e}", c.name);
                failures.push(failure(c.name, &format!("build {p}"), 0, e));
            }
        }
        let first = programs.values().find_map(|r| r.as_ref().ok());
        c.library = first.and_then(|bin| build::loaded_mpi(bin));
        built.insert(c.kind, programs);
    }
    (reference, built)
}

fn failure(mpi: &str, job: &str, rep: u32, reason: &str) -> Failure {
    Failure {
        mpi: mpi.into(),
        job: job.into(),
        rep,
        reason: reason.into(),
    }
}

/// Every repetition: the reference once, then every job on each MPI in
/// turn (A B C D for each job), so that drifts of the machine spread over
/// all competitors alike.
fn run_all(
    plan: &Plan,
    machine: Machine,
    mpis: &[Competitor],
    built: &BTreeMap<Kind, Built>,
    reference: Option<&PathBuf>,
    failures: &mut Vec<Failure>,
) -> Vec<Sample> {
    let jobs = run::mpi_jobs(&plan.np, &plan.startup_np, plan.quick);
    let ready: Vec<&Competitor> = mpis.iter().filter(|c| c.ready()).collect();
    let per_rep = jobs.len() * ready.len() + usize::from(reference.is_some());
    let mut progress = Progress::new((per_rep as u64) * u64::from(plan.reps));
    let timeout = Duration::from_secs(plan.timeout_secs);
    let quick: Vec<String> = if plan.quick {
        vec!["--quick".into()]
    } else {
        vec![]
    };
    let mut samples = Vec::new();
    for rep in 1..=plan.reps {
        if let Some(bin) = reference {
            progress.start(&format!("rep {rep}/{}: reference", plan.reps));
            let mut cmd = Command::new(bin);
            cmd.args(&quick);
            let who = Origin {
                mpi: "reference",
                rep,
                procs: 1,
                machine,
            };
            let note = collect(
                run::run_job(cmd, timeout, who),
                &mut samples,
                failures,
                "reference",
                "reference",
                rep,
            );
            progress.finish(note.as_deref());
        }
        for job in &jobs {
            for c in &ready {
                let label = job.label();
                progress.start(&format!("rep {rep}/{}: {} {label}", plan.reps, c.name));
                let binary = built
                    .get(&c.kind)
                    .and_then(|b| b.get(job.program))
                    .and_then(|r| r.as_ref().ok());
                let note = match binary {
                    // Its build failure is in the report already.
                    None => None,
                    Some(bin) => {
                        let cmd = c.command(job.procs, machine, bin, &job.args);
                        let who = Origin {
                            mpi: c.name,
                            rep,
                            procs: job.procs,
                            machine,
                        };
                        collect(
                            run::run_job(cmd, timeout, who),
                            &mut samples,
                            failures,
                            c.name,
                            &label,
                            rep,
                        )
                    }
                };
                progress.finish(note.as_deref());
            }
        }
    }
    progress.close();
    samples
}

/// Keep a run's samples or record its failure; returns a line to print
/// for a failure.
fn collect(
    result: Result<Vec<Sample>, String>,
    samples: &mut Vec<Sample>,
    failures: &mut Vec<Failure>,
    mpi: &str,
    job: &str,
    rep: u32,
) -> Option<String> {
    match result {
        Ok(s) => {
            samples.extend(s);
            None
        }
        Err(e) => {
            let line = format!("FAILED {mpi} {job} (rep {rep}): {e}");
            failures.push(failure(mpi, job, rep, &e));
            Some(line)
        }
    }
}

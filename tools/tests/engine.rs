//! The shared-memory engine across processes: the `engine_check` and `ring`
//! examples run through our `mpiexec` (and MPICH's Hydra), with and without
//! cross-memory attach, oversubscribed, and with a peer killed mid-job.
//!
//! Nothing here measures time: the watchdog only turns a hang into a
//! failure, and is generous because the tests of this file run side by
//! side on few cores.

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Run, assert_all_ok, assert_code, dev_shm, example, hydra, launch, mpiexec};

const WATCHDOG: Duration = Duration::from_secs(240);

/// How large messages travel: `process_vm_readv` when the kernel allows
/// it, or the pipelined copy through staging cells.
#[derive(Clone, Copy, Debug)]
enum Cma {
    Auto,
    Off,
}

impl Cma {
    fn env(self) -> &'static str {
        match self {
            Cma::Auto => "auto",
            Cma::Off => "off",
        }
    }
}

/// Run `mpiexec ARGS PROGRAM PROGRAM_ARGS` with `TESSEL_CMA` set.
fn run(name: &str, cma: Cma, args: &[&str], program: &str, program_args: &[&str]) -> Run {
    let mut cmd = mpiexec(args);
    cmd.arg(example(program))
        .args(program_args)
        .env("TESSEL_CMA", cma.env());
    launch(name, cmd).wait_for(WATCHDOG)
}

fn check(case: &str, n: u32, cma: Cma) {
    let name = format!("{case}-{n}-{}", cma.env());
    let np = n.to_string();
    let run = run(&name, cma, &["-n", &np], "engine_check", &[case]);
    assert_all_ok(&run, case, n);
}

#[test]
fn protocols_0_bytes_to_16_mib_checksummed() {
    for cma in [Cma::Auto, Cma::Off] {
        for n in [2, 3, 4] {
            check("protocols", n, cma);
        }
    }
}

/// `engine_check stealing` on `n` processes with `TESSEL_RNDV=mode`.
fn stealing(mode: &str, n: u32, cma: Cma) {
    let name = format!("stealing-{mode}-{n}-{}", cma.env());
    let np = n.to_string();
    let mut cmd = mpiexec(&["-n", &np]);
    cmd.arg(example("engine_check"))
        .arg("stealing")
        .env("TESSEL_CMA", cma.env())
        .env("TESSEL_RNDV", mode)
        .env("TESSEL_STATS", "1");
    let run = launch(&name, cmd).wait_for(WATCHDOG);
    assert_all_ok(&run, "stealing", n);
    // Every rank printed its statistics at finalize.
    for r in 0..n {
        let tag = format!("tessel-stats: rank {r} copied-for-others");
        assert!(run.stderr.contains(&tag), "{name}: no stats for rank {r}");
    }
}

#[test]
fn large_messages_in_every_rendezvous_protocol_with_idle_helpers() {
    for mode in ["get", "coop", "steal"] {
        for n in [2, 5] {
            stealing(mode, n, Cma::Auto);
        }
    }
    // Oversubscribed: 4 and 8 processes on this machine's cores.
    for n in [2, 4, 8] {
        stealing("adaptive", n, Cma::Auto);
    }
    stealing("adaptive", 3, Cma::Off);
}

/// The CPUs this test may run on (its affinity mask), increasing.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is a plain bit array; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: the pointer and size describe `set`, which the kernel writes.
    let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&set), &mut set) };
    assert_eq!(rc, 0, "sched_getaffinity");
    (0..libc::CPU_SETSIZE as usize)
        // SAFETY: every index is below CPU_SETSIZE, inside the set.
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect()
}

/// A job confined to fewer CPUs than it has processes (`taskset`, as a
/// batch system's cpuset would confine it) waits as an oversubscribed
/// one, yielding at once rather than spinning on the core its peer needs,
/// whatever the machine has; on as many CPUs as processes it does not.
/// Processes count the CPUs their affinity masks allow them; on virtual
/// nodes, all of the job's processes count against the CPUs `mpiexec`
/// may use (`TESSEL_JOB_CPUS`).
#[test]
fn a_job_confined_to_fewer_cpus_than_processes_waits_oversubscribed() {
    let cpus = allowed_cpus();
    let one = cpus[0].to_string();
    let mut cases = vec![
        // (CPUs, processes per virtual node, processes, oversubscribed)
        (one.clone(), None, 2, true),
        (one, Some(1), 2, true),
    ];
    if let [a, b, ..] = cpus[..] {
        cases.push((format!("{a},{b}"), None, 2, false));
        cases.push((format!("{a},{b}"), Some(1), 2, false));
    }
    for (set, ppn, n, want) in cases {
        let name = format!("confined-{set}-{ppn:?}-{n}");
        let np = n.to_string();
        let mut cmd = Command::new("taskset");
        cmd.args(["-c", &set]).arg(mpiexec(&[]).get_program());
        if let Some(p) = ppn {
            cmd.args(["--ppn", &p.to_string()])
                .env("TESSEL_NET", "none");
        }
        cmd.args(["-n", &np])
            .arg(example("engine_check"))
            .arg("oversubscribed")
            .env("TESSEL_STATS", "1");
        let run = launch(&name, cmd).wait_for(WATCHDOG);
        assert_code(&run, 0);
        let line = format!("rank 0 oversubscribed={want}");
        assert!(
            run.stdout.contains(&line),
            "{name}: no {line:?}\n{}",
            run.stdout
        );
        // Without virtual nodes, the CPUs counted are the masks' union.
        if ppn.is_none() {
            let cpus = set.split(',').count();
            let stats = format!(
                "tessel-stats: rank 0 cpus={cpus} oversubscribed={}",
                u8::from(want)
            );
            assert!(
                run.stderr.contains(&stats),
                "{name}: no {stats:?}\n{}",
                run.stderr
            );
        }
    }
}

#[test]
fn wildcards_masks_and_non_overtaking_order() {
    for cma in [Cma::Auto, Cma::Off] {
        for n in [2, 3, 4] {
            check("ordering", n, cma);
        }
    }
}

#[test]
fn synchronous_sends_probes_and_cancel() {
    for cma in [Cma::Auto, Cma::Off] {
        for n in [2, 4] {
            check("probes", n, cma);
        }
    }
}

#[test]
fn truncation_and_invalid_peers_are_typed_errors() {
    for cma in [Cma::Auto, Cma::Off] {
        for n in [2, 3] {
            check("errors", n, cma);
        }
    }
}

#[test]
fn pieces_to_pieces_in_every_protocol_checksummed() {
    for cma in [Cma::Auto, Cma::Off] {
        for n in [2, 3] {
            check("pieces", n, cma);
        }
    }
}

/// The ring demo, which also prints which large-message path it used.
fn ring(name: &str, n: u32, cma: Cma) -> Run {
    let np = n.to_string();
    let run = run(name, cma, &["-n", &np], "ring", &["3"]);
    assert_code(&run, 0);
    run
}

#[test]
fn ring_with_and_without_cross_memory_attach() {
    let off = ring("ring-off", 4, Cma::Off);
    assert!(
        off.stdout.contains("ring: 4 processes") && off.stdout.contains("via staging pipeline"),
        "{}",
        off.stdout
    );
    let auto = ring("ring-auto", 4, Cma::Auto);
    assert!(auto.stdout.contains("ring: 4 processes"), "{}", auto.stdout);
}

#[test]
fn eight_processes_on_few_cores() {
    let run = ring("ring-8", 8, Cma::Auto);
    assert!(run.stdout.contains("ring: 8 processes"), "{}", run.stdout);
}

/// Virtual nodes share the machine's cores: one process per virtual node,
/// but one more process than online CPUs in all, is oversubscribed (its
/// waits yield at once); as many processes as CPUs are not.
#[test]
fn virtual_nodes_count_the_whole_machine_for_oversubscription() {
    // SAFETY: sysconf reads a system setting.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32;
    for (n, want) in [(cpus, false), (cpus + 1, true)] {
        let np = n.to_string();
        let mut cmd = mpiexec(&["--ppn", "1", "-n", &np]);
        cmd.arg(example("engine_check"))
            .arg("oversubscribed")
            .env("TESSEL_NET", "none");
        let run = launch(&format!("oversubscribed-{n}"), cmd).wait_for(WATCHDOG);
        assert_code(&run, 0);
        let line = format!("rank 0 oversubscribed={want}");
        assert!(run.stdout.contains(&line), "no {line:?}:\n{}", run.stdout);
    }
}

#[test]
fn killed_peer_ends_the_job_with_a_message() {
    let before = dev_shm();
    let run = run("die", Cma::Auto, &["-n", "3"], "engine_check", &["die"]);
    assert_code(&run, 128 + 9);
    assert!(
        run.stderr.contains("rank 1 (pid ") && run.stderr.contains("killed by signal 9 (SIGKILL)"),
        "{}",
        run.stderr
    );
    let leftover: Vec<_> = dev_shm().difference(&before).cloned().collect();
    assert!(leftover.is_empty(), "left in /dev/shm: {leftover:?}");
}

#[test]
fn ring_under_mpich_hydra() {
    let hydra = hydra();
    let mut cmd = Command::new(hydra);
    cmd.args(["-n", "3"]).arg(example("ring")).arg("3");
    let run = launch("hydra-ring", cmd).wait_for(WATCHDOG);
    assert_code(&run, 0);
    assert!(run.stdout.contains("ring: 3 processes"), "{}", run.stdout);
}

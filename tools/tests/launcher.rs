//! The `mpiexec` binary end to end, with /bin/sh (and bash, for raw PMI
//! lines) as the ranks, plus the `pmi_check` example under our launcher and
//! under MPICH's Hydra.

mod common;

use std::process::Command;

use shm_engine::Place;
use shm_engine::topo::Topology;
use std::thread;
use std::time::{Duration, Instant};

use common::{WATCHDOG, assert_code, example, hydra, launch, mpiexec, run_mpiexec, signal};

#[test]
fn all_ranks_succeeding_exit_zero() {
    let run = run_mpiexec("success", &["-n", "3", "sh", "-c", "exit 0"]);
    assert_code(&run, 0);
    assert_eq!(run.stderr, "");
}

#[test]
fn failing_rank_exit_code_is_propagated() {
    let run = run_mpiexec(
        "exit-code",
        &[
            "-n",
            "3",
            "sh",
            "-c",
            r#"if [ "$PMI_RANK" = 1 ]; then exit 3; fi; sleep 60"#,
        ],
    );
    assert_code(&run, 3);
    assert!(
        run.stderr.contains("mpiexec: rank 1 (pid ")
            && run.stderr.contains("exited with code 3; aborting the job"),
        "{}",
        run.stderr
    );
}

#[test]
fn rank_killed_by_a_signal_aborts_the_job() {
    let run = run_mpiexec(
        "signal",
        &[
            "-n",
            "3",
            "sh",
            "-c",
            r#"if [ "$PMI_RANK" = 2 ]; then kill -KILL $$; fi; sleep 60"#,
        ],
    );
    assert_code(&run, 128 + 9);
    assert!(
        run.stderr.contains("mpiexec: rank 2 (pid ")
            && run
                .stderr
                .contains("was killed by signal 9 (SIGKILL); aborting the job"),
        "{}",
        run.stderr
    );
}

#[test]
fn abort_request_from_a_rank_ends_the_job() {
    let run = run_mpiexec(
        "abort",
        &[
            "-n",
            "3",
            "bash",
            "-c",
            r#"if [ "$PMI_RANK" = 2 ]; then printf 'cmd=abort exitcode=7\n' >&"$PMI_FD"; fi; sleep 60"#,
        ],
    );
    assert_code(&run, 7);
    assert!(
        run.stderr.contains("rank 2 (pid ") && run.stderr.contains("called abort with exit code 7"),
        "{}",
        run.stderr
    );
}

#[test]
fn environment_is_inherited_and_extended_with_x() {
    let mut cmd = mpiexec(&[
        "-n",
        "2",
        "-x",
        "TESSEL_TEST_A=hello",
        "--env",
        "TESSEL_TEST_B=x=y=",
        "-x",
        "TESSEL_TEST_EMPTY=",
        "sh",
        "-c",
        r#"echo "$PMI_RANK:$TESSEL_TEST_A:$TESSEL_TEST_B:[$TESSEL_TEST_EMPTY]:${TESSEL_TEST_EMPTY+set}:$TESSEL_TEST_INHERITED""#,
    ]);
    cmd.env("TESSEL_TEST_INHERITED", "yes");
    let run = launch("env", cmd).wait();
    assert_code(&run, 0);
    assert_eq!(
        run.sorted_lines(),
        ["0:hello:x=y=:[]:set:yes", "1:hello:x=y=:[]:set:yes"]
    );
}

#[test]
fn rank_variables_follow_ppn() {
    let run = run_mpiexec(
        "ppn",
        &[
            "-n",
            "5",
            "--ppn",
            "2",
            "sh",
            "-c",
            r#"echo "rank=$PMI_RANK size=$PMI_SIZE node=$TESSEL_NODE local=$TESSEL_LOCAL_RANK/$TESSEL_LOCAL_SIZE fd=${PMI_FD:+given}""#,
        ],
    );
    assert_code(&run, 0);
    assert_eq!(
        run.sorted_lines(),
        [
            "rank=0 size=5 node=0 local=0/2 fd=given",
            "rank=1 size=5 node=0 local=1/2 fd=given",
            "rank=2 size=5 node=1 local=0/2 fd=given",
            "rank=3 size=5 node=1 local=1/2 fd=given",
            "rank=4 size=5 node=2 local=0/1 fd=given",
        ]
    );
}

#[test]
fn arguments_after_the_program_are_its_own() {
    let run = run_mpiexec(
        "args",
        &["sh", "-c", r#"echo "$# $1 $2""#, "sh", "-n", "--help"],
    );
    assert_code(&run, 0);
    assert_eq!(run.stdout, "2 -n --help\n");
}

#[test]
fn missing_program_exits_127() {
    let run = run_mpiexec(
        "missing",
        &["-n", "2", "/nonexistent/tessel-no-such-program"],
    );
    assert_code(&run, 127);
    assert!(
        run.stderr
            .contains("mpiexec: cannot execute /nonexistent/tessel-no-such-program: ")
            && run.stderr.contains("No such file or directory"),
        "{}",
        run.stderr
    );
}

#[test]
fn timeout_kills_the_job_with_124() {
    let run = run_mpiexec("timeout", &["--timeout", "1", "-n", "2", "sleep", "60"]);
    assert_code(&run, 124);
    assert!(
        run.stderr
            .contains("mpiexec: timeout of 1 s expired; killing the job"),
        "{}",
        run.stderr
    );
}

#[test]
fn sigterm_is_forwarded_to_the_job() {
    let launched = launch(
        "sigterm",
        mpiexec(&["-n", "2", "sh", "-c", "echo ready; exec sleep 60"]),
    );
    // Signal only once both ranks run (so mpiexec has its handlers).
    let deadline = Instant::now() + WATCHDOG;
    while launched.read_outputs().0.lines().count() < 2 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    signal(&launched.child, libc::SIGTERM);
    let run = launched.wait();
    assert_code(&run, 128 + 15);
    assert!(
        run.stderr
            .contains("received signal 15 (SIGTERM); forwarding it to the job"),
        "{}",
        run.stderr
    );
}

/// The CPU list and `TESSEL_PLACE` of each rank, by rank, from the
/// `affinity` example run under `mpiexec --bind POLICY -n N`.
fn bound_places(policy: &str, n: usize) -> Vec<(Vec<usize>, String)> {
    bound_places_with(policy, n, &[])
}

/// As [`bound_places`], with more `mpiexec` options.
fn bound_places_with(policy: &str, n: usize, more: &[&str]) -> Vec<(Vec<usize>, String)> {
    let affinity = example("affinity");
    let np = n.to_string();
    let mut args = vec!["--bind", policy, "-n", &np];
    args.extend(more);
    args.push(affinity.to_str().expect("UTF-8 path"));
    let run = run_mpiexec(&format!("bind-{policy}"), &args);
    assert_code(&run, 0);
    let lines = run.sorted_lines();
    assert_eq!(lines.len(), n, "{}", run.stdout);
    lines
        .iter()
        .map(|l| {
            let (_, rest) = l.split_once(": ").expect("rank R: CPUS place=P");
            let (cpus, place) = rest.split_once(" place=").expect("CPUS place=P");
            let cpus = cpus
                .split(',')
                .map(|c| c.parse().expect("a CPU number"))
                .collect();
            (cpus, place.to_owned())
        })
        .collect()
}

/// The CPU list of each rank under `mpiexec --bind POLICY -n N`.
fn bound_cpus(policy: &str, n: usize) -> Vec<Vec<usize>> {
    bound_places(policy, n)
        .into_iter()
        .map(|(c, _)| c)
        .collect()
}

/// The CPUs this test process (and so mpiexec) may use, from the kernel's
/// `Cpus_allowed_list` (like `0-3,6`).
fn own_cpus() -> Vec<usize> {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .expect("Cpus_allowed_list");
    let mut cpus = Vec::new();
    for part in list.trim().split(',') {
        let (lo, hi) = part.split_once('-').unwrap_or((part, part));
        cpus.extend(lo.parse::<usize>().unwrap()..=hi.parse::<usize>().unwrap());
    }
    cpus
}

/// The places of the topology (cores or NUMA nodes) restricted to the CPUs
/// mpiexec may use.
fn usable(places: Vec<Vec<usize>>) -> Vec<Vec<usize>> {
    let mine = own_cpus();
    places
        .into_iter()
        .map(|p| {
            p.into_iter()
                .filter(|c| mine.contains(c))
                .collect::<Vec<_>>()
        })
        .filter(|p| !p.is_empty())
        .collect()
}

#[test]
fn bind_core_pins_each_process_to_the_pus_of_one_core() {
    let topo = Topology::discover().expect("hwloc discovers this machine");
    let cores = usable(topo.cores.into_iter().map(|c| c.pus).collect());
    let got = bound_cpus("core", 2);
    for cpus in &got {
        assert!(cores.contains(cpus), "{cpus:?} is not a core of {cores:?}");
    }
    if cores.len() >= 2 {
        assert_ne!(got[0], got[1], "two ranks on one core out of {cores:?}");
    }
}

/// `--bind auto` binds each process to a core of its own when they fit,
/// and leaves them to the kernel when they do not.
#[test]
fn bind_auto_is_core_when_the_processes_fit_and_none_otherwise() {
    let topo = Topology::discover().expect("hwloc discovers this machine");
    let cores = usable(topo.cores.into_iter().map(|c| c.pus).collect());
    let fit = bound_cpus("auto", cores.len());
    assert_eq!(fit, cores, "one rank per core, in order");
    let mine = own_cpus();
    let over = bound_cpus("auto", cores.len() + 1);
    assert!(
        over.iter().all(|c| *c == mine),
        "{over:?} (may use {mine:?})"
    );
}

/// Virtual nodes share this machine: their processes spread over its
/// cores instead of each node's first process taking the first core.
#[test]
fn bind_core_spreads_virtual_nodes_over_the_cores() {
    let topo = Topology::discover().expect("hwloc discovers this machine");
    let cores = usable(topo.cores.into_iter().map(|c| c.pus).collect());
    let got: Vec<Vec<usize>> = bound_places_with("core", 2, &["--ppn", "1"])
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    if cores.len() >= 2 {
        assert_ne!(got[0], got[1], "two virtual nodes on one core of {cores:?}");
    }
}

#[test]
fn bind_numa_pins_each_process_to_the_pus_of_one_node() {
    let topo = Topology::discover().expect("hwloc discovers this machine");
    let nodes = usable(topo.numa_nodes.into_iter().map(|n| n.pus).collect());
    for cpus in bound_cpus("numa", 2) {
        assert!(nodes.contains(&cpus), "{cpus:?} is not a node of {nodes:?}");
    }
}

/// A bound process learns its place from the launcher, the same one it
/// would compute itself from its CPUs; an unbound one is told nothing.
#[test]
fn bound_processes_are_told_their_place() {
    let topo = Topology::discover().expect("hwloc discovers this machine");
    for policy in ["core", "numa"] {
        for (cpus, place) in bound_places(policy, 3) {
            let parsed = Place::from_env(&place).unwrap_or_else(|| panic!("bad place {place:?}"));
            assert_eq!(parsed, Place::of_mask(&topo, &cpus), "{policy}: {cpus:?}");
            assert_ne!(
                parsed.numa,
                shm_engine::locality::UNKNOWN,
                "{policy}: {place}"
            );
            if policy == "core" {
                assert_eq!(parsed.core, cpus[0] as u32, "{cpus:?}");
            }
        }
    }
    for (_, place) in bound_places("none", 2) {
        assert_eq!(place, "unset");
    }
}

#[test]
fn bind_none_leaves_the_affinity_alone() {
    let mine = own_cpus();
    assert_eq!(bound_cpus("none", 2), [mine.clone(), mine]);
}

/// Raw PMI-1 lines through bash: the server answers bad input with
/// errors and keeps serving.
#[test]
fn server_answers_raw_protocol_lines() {
    let script = r#"
        ask() { printf '%s\n' "$1" >&"$PMI_FD"; IFS= read -r reply <&"$PMI_FD"; echo "$reply"; }
        ask 'cmd=init pmi_version=1 pmi_subversion=1'
        ask 'cmd=get_my_kvsname' >/dev/null
        kvs=${reply#*kvsname=}; kvs=${kvs%% *}
        ask 'this is not pmi'
        ask 'cmd=frobnicate'
        ask 'cmd=get_universe_size'
        ask 'cmd=get_appnum'
        ask "cmd=put kvsname=$kvs key=k value=6869"
        ask "cmd=get kvsname=$kvs key=k"
        ask "cmd=get kvsname=$kvs key=absent"
        ask "cmd=get kvsname=$kvs key=PMI_process_mapping"
        ask 'cmd=barrier_in'
        ask 'cmd=finalize'
    "#;
    let run = run_mpiexec("raw", &["-n", "1", "--ppn", "1", "bash", "-c", script]);
    assert_code(&run, 0);
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        [
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0",
            "cmd=error rc=-1 msg=malformed_line",
            "cmd=error rc=-1 msg=unknown_command_frobnicate",
            // -n 1 on one node: room for 32 spawned processes by default.
            "cmd=universe_size size=33 rc=0",
            "cmd=appnum appnum=0 rc=0",
            "cmd=put_result rc=0 msg=success",
            "cmd=get_result rc=0 msg=success value=6869",
            "cmd=get_result rc=-1 msg=key_absent_not_found",
            "cmd=get_result rc=0 msg=success value=(vector,(0,1,1))",
            "cmd=barrier_out rc=0",
            "cmd=finalize_ack rc=0",
        ]
    );
    assert!(run.stderr.contains("frobnicate"), "{}", run.stderr);
}

#[test]
fn pmi_check_under_our_mpiexec() {
    let example = example("pmi_check");
    let example = example.to_str().expect("UTF-8 path");
    let run = run_mpiexec("pmi-check", &["-n", "4", "--ppn", "2", example]);
    assert_code(&run, 0);
    assert_eq!(
        run.sorted_lines(),
        [
            "pmi_check: rank 0 of 4 on node 0 ok",
            "pmi_check: rank 1 of 4 on node 0 ok",
            "pmi_check: rank 2 of 4 on node 1 ok",
            "pmi_check: rank 3 of 4 on node 1 ok",
        ]
    );
}

#[test]
fn pmi_check_under_mpich_hydra() {
    let hydra = hydra();
    let example = example("pmi_check");
    let mut cmd = Command::new(hydra);
    cmd.args(["-n", "3"]).arg(example);
    let run = launch("hydra", cmd).wait();
    assert_code(&run, 0);
    let lines = run.sorted_lines();
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    for (rank, line) in lines.iter().enumerate() {
        assert!(
            line.starts_with(&format!("pmi_check: rank {rank} of 3 on node "))
                && line.ends_with(" ok"),
            "{line:?}"
        );
    }
}

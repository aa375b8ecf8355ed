//! Jobs that span nodes: the engine's conformance cases on two virtual
//! nodes through every network plugin that opens here, a peer on another
//! node killed, plugins that must be refused (a wrong ABI version, a
//! missing entry) or skipped (no device), and jobs without any plugin.
//!
//! Plugins come from the installation `tools/install.sh` makes
//! (`target/tessel/lib/tessel`). Nothing here measures time.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{Run, assert_all_ok, example, launch, mpiexec, tessel_prefix};

const WATCHDOG: Duration = Duration::from_secs(240);

/// Where the installed plugins are.
fn plugin_dir() -> PathBuf {
    tessel_prefix().join("lib/tessel")
}

/// Names of the installed plugins that open on this machine, by asking
/// the engine's loader as `tessel-info` does.
fn usable_plugins() -> Vec<String> {
    let cfg = shm_engine::Config::from_lookup(|k| {
        (k == "TESSEL_PLUGIN_PATH").then(|| plugin_dir().display().to_string())
    })
    .unwrap();
    let (found, _) = shm_engine::transport::survey(&cfg);
    found
        .into_iter()
        .filter(|s| s.status.is_ok())
        .filter_map(|s| s.plugin.map(|p| p.0))
        .collect()
}

/// `engine_check CASE` on `n` processes, `ppn` per virtual node, with the
/// plugin `net` and extra environment.
fn check(net: &str, case: &str, n: u32, ppn: u32, env: &[(&str, &str)]) -> Run {
    let (np, pp) = (n.to_string(), ppn.to_string());
    let mut cmd = mpiexec(&["-n", &np, "--ppn", &pp]);
    cmd.arg(example("engine_check"))
        .arg(case)
        .env("TESSEL_PLUGIN_PATH", plugin_dir())
        .env("TESSEL_NET", net)
        .envs(env.iter().copied());
    launch(&format!("net-{net}-{case}-{n}-{ppn}"), cmd).wait_for(WATCHDOG)
}

/// The transports this machine offers each plugin (sockets on loopback).
fn transport_env(net: &str) -> Vec<(&'static str, &'static str)> {
    match net {
        "ucx" => vec![("UCX_TLS", "tcp"), ("UCX_NET_DEVICES", "lo")],
        "ofi" => vec![("FI_PROVIDER", "tcp"), ("TESSEL_OFI_DOMAIN", "lo")],
        _ => Vec::new(),
    }
}

#[test]
fn ucx_and_ofi_plugins_are_installed_and_open() {
    let usable = usable_plugins();
    for name in ["ucx", "ofi"] {
        assert!(
            usable.iter().any(|n| n == name),
            "the {name} plugin does not open here (usable: {usable:?}); run tools/install.sh"
        );
    }
}

/// The engine's own suite, across two virtual nodes, through every plugin
/// that opens: every protocol size with checksums, ordering across
/// transports, wildcard receives taking messages from both nodes, probes,
/// synchronous sends, cancel, lists of pieces, truncation.
#[test]
fn conformance_through_every_plugin() {
    let plugins = usable_plugins();
    assert!(!plugins.is_empty(), "no plugin opens here");
    for net in &plugins {
        for case in [
            "nodes",
            "protocols",
            "ordering",
            "probes",
            "pieces",
            "errors",
        ] {
            let run = check(net, case, 4, 2, &transport_env(net));
            assert_all_ok(&run, case, 4);
        }
    }
}

/// UCX with its own choice of transports (shared memory and CMA here,
/// TCP held to the loopback device).
#[test]
fn ucx_with_its_default_transports() {
    if !usable_plugins().iter().any(|n| n == "ucx") {
        panic!("the ucx plugin does not open here");
    }
    for case in ["nodes", "protocols"] {
        let run = check("ucx", case, 4, 2, &[("UCX_NET_DEVICES", "lo")]);
        assert_all_ok(&run, case, 4);
    }
}

/// Three nodes of one process each, uneven nodes (3 + 2), and two nodes
/// of four on this machine's two cores (waiting processes must sleep in
/// `poll` on the plugin's descriptor or yield).
#[test]
fn uneven_single_process_and_oversubscribed_nodes() {
    let net = &usable_plugins()[0];
    let env = transport_env(net);
    assert_all_ok(&check(net, "nodes", 3, 1, &env), "nodes", 3);
    assert_all_ok(&check(net, "protocols", 5, 3, &env), "protocols", 5);
    assert_all_ok(&check(net, "protocols", 8, 4, &env), "protocols", 8);
}

/// A process that waits in a job spanning nodes sleeps where both its
/// local peers and the plugin can wake it: with no spinning or yielding
/// and a sleep longer than the watchdog, a single lost wake-up (a local
/// message that does not end a sleep in `poll`) stalls the job until the
/// watchdog fails the test. The local peers' eventfds are taken with
/// `pidfd_getfd`, which needs ptrace permission (root here, as in CI).
#[test]
fn sleepers_are_woken_by_local_peers_and_by_the_plugin() {
    for net in usable_plugins() {
        let mut env = transport_env(&net);
        env.extend([
            ("TESSEL_SPIN", "0"),
            ("TESSEL_YIELD", "0"),
            ("TESSEL_SLEEP_US", "600000000"),
        ]);
        assert_all_ok(&check(&net, "protocols", 4, 2, &env), "protocols", 4);
        assert_all_ok(&check(&net, "nodes", 8, 4, &env), "nodes", 8);
    }
}

/// A rank killed while peers on the other node wait for it ends the job
/// with a message naming it.
#[test]
fn a_peer_killed_on_another_node_ends_the_job() {
    for net in usable_plugins() {
        let run = check(&net, "die", 4, 2, &transport_env(&net));
        assert_ne!(run.status.code(), Some(0), "{}", run.stderr);
        assert!(
            run.stderr.contains("rank 1"),
            "{net}: the message does not name rank 1:\n{}",
            run.stderr
        );
    }
}

/// `TESSEL_NET=none` keeps today's single-node behaviour: a job that spans
/// nodes starts, and sends to other nodes are refused with a typed error.
#[test]
fn without_a_transport_other_nodes_are_unreachable() {
    let run = check("none", "nodes", 4, 2, &[]);
    assert_all_ok(&run, "nodes", 4);
}

/// A copy of `engine_check` where no plugin can be found by default (its
/// directory and the one above hold none).
fn lone_engine_check(tag: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("lone-{tag}-{}", std::process::id()))
        .join("bin");
    std::fs::create_dir_all(&dir).unwrap();
    let exe = dir.join("engine_check");
    std::fs::copy(example("engine_check"), &exe).unwrap();
    exe
}

#[test]
fn with_no_plugin_a_multi_node_job_fails_at_start_and_single_node_jobs_run() {
    let exe = lone_engine_check("none");
    let mut cmd = mpiexec(&["-n", "4", "--ppn", "2"]);
    cmd.arg(&exe).arg("nodes").env_remove("TESSEL_PLUGIN_PATH");
    let run = launch("net-no-plugin", cmd).wait_for(WATCHDOG);
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    for word in [
        "TESSEL_NET",
        "TESSEL_PLUGIN_PATH",
        "no network plugin was found",
    ] {
        assert!(run.stderr.contains(word), "no {word:?} in:\n{}", run.stderr);
    }
    let mut cmd = mpiexec(&["-n", "3"]);
    cmd.arg(&exe)
        .arg("protocols")
        .env_remove("TESSEL_PLUGIN_PATH");
    let run = launch("net-no-plugin-one-node", cmd).wait_for(WATCHDOG);
    assert_all_ok(&run, "protocols", 3);
}

#[test]
fn naming_a_plugin_that_is_not_there_fails_with_the_search_path() {
    let run = check("nosuch", "nodes", 2, 1, &[]);
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stderr.contains("no plugin named nosuch was found") && run.stderr.contains("searched"),
        "{}",
        run.stderr
    );
}

/// Build the C test plugin `faulty.c` with `define` into its own directory.
fn faulty_plugin(define: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("faulty-{define}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/plugins/faulty.c");
    let include = Path::new(env!("CARGO_MANIFEST_DIR")).join("../plugin-api/include");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wall", "-Werror"])
        .arg(format!("-D{define}"))
        .arg("-I")
        .arg(include)
        .arg(src)
        .arg("-o")
        .arg(dir.join("libtessel_plugin_faulty.so"))
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed on faulty.c -D{define}");
    dir
}

/// Run `engine_check nodes` on two nodes with `TESSEL_PLUGIN_PATH` = the
/// faulty plugin's directory, then the installed plugins.
fn with_faulty(define: &str, net: &str) -> Run {
    let dir = faulty_plugin(define);
    let path = std::env::join_paths([dir, plugin_dir()]).unwrap();
    let mut cmd = mpiexec(&["-n", "2", "--ppn", "1"]);
    cmd.arg(example("engine_check"))
        .arg("nodes")
        .env("TESSEL_PLUGIN_PATH", path)
        .env("TESSEL_NET", net)
        .envs(transport_env("ucx"))
        .envs(transport_env("ofi"));
    launch(&format!("faulty-{define}-{net}"), cmd).wait_for(WATCHDOG)
}

#[test]
fn a_plugin_of_another_abi_version_is_refused() {
    let run = with_faulty("WRONG_ABI", "faulty");
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("built for plugin ABI 2.0, this engine speaks 1.0"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_plugin_missing_a_required_entry_is_refused() {
    let run = with_faulty("MISSING_ENTRY", "faulty");
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stderr.contains("missing required entry `send`"),
        "{}",
        run.stderr
    );
}

/// A plugin that finds no device (as verbs does here) is passed over by
/// `auto`, which moves on to the next; named, it fails with its reason.
#[test]
fn auto_moves_past_a_plugin_without_a_device() {
    let run = with_faulty("NO_DEVICE", "auto");
    assert_all_ok(&run, "nodes", 2);
    let run = with_faulty("NO_DEVICE", "faulty");
    assert_ne!(run.status.code(), Some(0), "{}", run.stdout);
    assert!(
        run.stderr.contains("no faulty device on this machine"),
        "{}",
        run.stderr
    );
}

/// `tessel-info` lists every plugin: name, version, ABI, limits, or why
/// it cannot run here.
#[test]
fn tessel_info_lists_plugins_with_limits_or_reasons() {
    let dir = faulty_plugin("NO_DEVICE");
    let path = std::env::join_paths([dir, plugin_dir()]).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_tessel-info"))
        .env("TESSEL_PLUGIN_PATH", path)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("faulty: version test, ABI 1.0")
            && text.contains("cannot run here: no faulty device on this machine"),
        "{text}"
    );
    for name in usable_plugins() {
        assert!(
            text.contains(&format!("  {name}")),
            "{name} missing:\n{text}"
        );
    }
    assert!(text.contains("latency ~"), "{text}");
}

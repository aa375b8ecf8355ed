//! A job whose nodes are separate network namespaces, launched by MPICH's
//! Hydra the way a multi-host job is: a host list naming the namespaces and
//! an ssh-like launcher command that enters one (`ip netns exec`). Ranks of
//! a namespace share memory; the others reach each other only over the
//! veth pair between the namespaces (UCX's and libfabric's `tcp`).
//!
//! The namespaces, the veth pair and its addresses are made by this test
//! and removed when it ends; it needs root and `ip` (iproute2), which
//! `tools/setup.sh` installs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{assert_all_ok, assert_code, example, hydra, launch, tessel_prefix};

const WATCHDOG: Duration = Duration::from_secs(240);

/// The veth device's name inside both namespaces.
const DEV: &str = "tsl0";

/// Two namespaces joined by a veth pair, removed on drop.
struct Nodes {
    names: [String; 2],
    launcher: PathBuf,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run ip (iproute2; tools/setup.sh installs it): {e}"));
    assert!(
        out.status.success(),
        "ip {}: {} (this test needs root)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Nodes {
    fn new(tag: &str) -> Self {
        let id = std::process::id();
        let names = [format!("tsl{id}{tag}a"), format!("tsl{id}{tag}b")];
        // An address range of the pair's own, inside its namespaces only.
        let net = 16 + (id % 200);
        for n in &names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
            ip(&["netns", "add", n]);
        }
        let nodes = Self {
            names,
            launcher: Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("nsexec-{id}-{tag}")),
        };
        let [a, b] = &nodes.names;
        ip(&[
            "link", "add", DEV, "netns", a, "type", "veth", "peer", "name", DEV, "netns", b,
        ]);
        for (k, n) in nodes.names.iter().enumerate() {
            let addr = format!("10.{net}.0.{}/24", k + 1);
            ip(&["-n", n, "addr", "add", &addr, "dev", DEV]);
            ip(&["-n", n, "link", "set", "lo", "up"]);
            ip(&["-n", n, "link", "set", DEV, "up"]);
        }
        // A new veth pair takes a moment to come up: wait for both ends,
        // or the first connections of the job would be refused.
        for n in &nodes.names {
            let up = (0..500).any(|_| {
                let out = Command::new("ip")
                    .args(["-n", n, "-o", "link", "show", DEV])
                    .output()
                    .expect("ip runs");
                let text = String::from_utf8_lossy(&out.stdout).into_owned();
                text.contains("state UP") || {
                    std::thread::sleep(Duration::from_millis(10));
                    false
                }
            });
            assert!(up, "{DEV} in {n} did not come up");
        }
        // What Hydra runs instead of ssh: `nsexec [-x ...] HOST COMMAND`.
        std::fs::write(
            &nodes.launcher,
            "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n\
             host=$1; shift\nexec ip netns exec \"$host\" sh -c \"$*\"\n",
        )
        .unwrap();
        let _ = Command::new("chmod")
            .arg("+x")
            .arg(&nodes.launcher)
            .status();
        nodes
    }

    /// Hydra, started in the first namespace, spreading `n` processes two
    /// per namespace, with the transports held to the veth device.
    fn hydra(&self, n: u32, program: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.names[0]])
            .arg(hydra())
            .args(["-hosts", &self.names.join(","), "-launcher", "ssh"])
            .arg("-launcher-exec")
            .arg(&self.launcher)
            .args(["-iface", DEV, "-ppn", "2", "-n", &n.to_string()])
            .arg(program)
            .args(args)
            .env("UCX_TLS", "tcp")
            .env("UCX_NET_DEVICES", DEV)
            .env("FI_PROVIDER", "tcp")
            .env("FI_TCP_IFACE", DEV)
            .env("TESSEL_OFI_DOMAIN", DEV)
            .env("TESSEL_PLUGIN_PATH", tessel_prefix().join("lib/tessel"));
        cmd
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        for n in &self.names {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
        let _ = std::fs::remove_file(&self.launcher);
    }
}

#[test]
fn engine_checks_across_namespaces_under_hydra() {
    let nodes = Nodes::new("e");
    for net in ["ucx", "ofi"] {
        for case in ["nodes", "protocols", "ordering"] {
            let mut cmd = nodes.hydra(4, &example("engine_check"), &[case]);
            cmd.env("TESSEL_NET", net);
            let run = launch(&format!("netns-{net}-{case}"), cmd).wait_for(WATCHDOG);
            assert_all_ok(&run, case, 4);
        }
    }
}

#[test]
fn an_mpi_program_across_namespaces_under_hydra() {
    let nodes = Nodes::new("m");
    let prefix = tessel_prefix();
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("netns-coll");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../mpi-shim/tests/c/coll.c");
    let status = Command::new(prefix.join("bin/mpicc"))
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(src)
        .status()
        .unwrap();
    assert!(status.success(), "mpicc coll.c");
    let run = launch("netns-coll", nodes.hydra(4, &exe, &[])).wait_for(WATCHDOG);
    assert_code(&run, 0);
    for r in 0..4 {
        assert!(
            run.stdout.contains(&format!("coll: rank {r} ok")),
            "rank {r}:\n{}\n{}",
            run.stdout,
            run.stderr
        );
    }
}

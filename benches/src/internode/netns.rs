//! Two "nodes" on one machine: network namespaces joined by a veth pair,
//! which MPICH's Hydra (and Open MPI's `mpirun`) treat as two hosts through
//! an ssh-like launcher script that enters a namespace (`ip netns exec`).
//!
//! The same set-up as `tools/tests/netns.rs` (which this crate cannot
//! share, being a test of another crate): the veth device is called
//! [`DEV`] inside both namespaces, its addresses exist only inside them,
//! and everything is removed when [`Nodes`] is dropped. It needs root and
//! `ip` (iproute2).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The veth device's name inside both namespaces.
pub const DEV: &str = "tsl0";

/// Names of this command's namespaces start with this, then the pid.
const PREFIX: &str = "tslnode";

/// Hydra's launcher: `SCRIPT [-x ...] HOST COMMAND` runs COMMAND in the
/// namespace HOST (ssh's options, like `-x`, are skipped).
const HYDRA_EXEC: &str = "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\n\
                          host=$1; shift\nexec ip netns exec \"$host\" sh -c \"$*\"\n";

/// Two namespaces joined by a veth pair, removed on drop.
#[derive(Debug)]
pub struct Nodes {
    pub names: [String; 2],
    /// Hydra's `-launcher-exec` script.
    pub hydra_exec: PathBuf,
    /// Open MPI's `plm_rsh_agent` script.
    pub ompi_exec: PathBuf,
    /// Open MPI's host file: each namespace with 4 slots.
    pub ompi_hosts: PathBuf,
    /// Per-namespace directories of Open MPI's runs (removed on drop).
    dirs: Vec<PathBuf>,
}

/// Run `ip ARGS`; an error says what failed.
fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run ip (iproute2): {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

/// Whether this process may create namespaces (root) and `ip` is there.
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: network namespaces need root".into());
    }
    if crate::compare::competitors::which("ip").is_none() {
        return Err("`ip` (iproute2) not found".into());
    }
    Ok(())
}

/// Remove the namespaces of earlier runs of this command whose process is
/// gone (a run killed before it could clean up).
pub fn remove_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if let Some(pid) = owner(name)
            && !Path::new(&format!("/proc/{pid}")).exists()
        {
            let _ = ip(&["netns", "del", name]);
            let _ = std::fs::remove_dir_all(shm_dir(name));
        }
    }
}

/// The pid in a namespace name of this command (`tslnode123a` → 123).
fn owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let digits = rest.strip_suffix(['a', 'b'])?;
    digits.parse().ok()
}

/// Where Open MPI's shared-memory segments of namespace `host` go.
fn shm_dir(host: &str) -> PathBuf {
    Path::new("/dev/shm").join(host)
}

impl Nodes {
    /// Create the namespaces, the veth pair and its addresses, wait for
    /// both ends to be up, and write the launcher scripts into `dir`.
    pub fn new(dir: &Path) -> Result<Nodes, String> {
        let id = std::process::id();
        let names = [format!("{PREFIX}{id}a"), format!("{PREFIX}{id}b")];
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let mut nodes = Nodes {
            names,
            hydra_exec: dir.join("hydra-netns-exec"),
            ompi_exec: dir.join("openmpi-netns-exec"),
            ompi_hosts: dir.join("openmpi-hosts"),
            dirs: Vec::new(),
        };
        // From here on, dropping `nodes` removes whatever was made.
        for n in &nodes.names {
            let _ = ip(&["netns", "del", n]);
            ip(&["netns", "add", n])?;
        }
        let [a, b] = &nodes.names;
        ip(&[
            "link", "add", DEV, "netns", a, "type", "veth", "peer", "name", DEV, "netns", b,
        ])?;
        // An address range of the pair's own; it exists only inside them.
        let net = 16 + id % 200;
        for (k, n) in nodes.names.iter().enumerate() {
            let addr = format!("10.{net}.0.{}/24", k + 1);
            ip(&["-n", n, "addr", "add", &addr, "dev", DEV])?;
            ip(&["-n", n, "link", "set", "lo", "up"])?;
            ip(&["-n", n, "link", "set", DEV, "up"])?;
        }
        // A new veth pair takes a moment to come up: wait for both ends,
        // or the first connections of a job would be refused.
        for n in &nodes.names {
            let start = Instant::now();
            while !link_up(n) {
                if start.elapsed() > Duration::from_secs(10) {
                    return Err(format!("{DEV} in namespace {n} did not come up in 10 s"));
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        nodes.write_scripts(dir)?;
        Ok(nodes)
    }

    fn write_scripts(&mut self, dir: &Path) -> Result<(), String> {
        // Open MPI's shared-memory transport (vader) names its segments by
        // host name, job and local rank, and its session directory by host
        // name: both namespaces have the machine's host name, so ranks of
        // the two nodes would share (and corrupt) each other's segments.
        // Its agent gives each namespace directories of its own.
        let mut ompi = String::from(
            "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nhost=$1; shift\n",
        );
        ompi.push_str(&format!(
            "exec ip netns exec \"$host\" env OMPI_MCA_btl_vader_backing_directory=\"/dev/shm/$host\" \
             TMPDIR=\"{}/tmp-$host\" sh -c \"$*\"\n",
            dir.display()
        ));
        for n in &self.names {
            for d in [shm_dir(n), dir.join(format!("tmp-{n}"))] {
                std::fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
                self.dirs.push(d);
            }
        }
        let hosts: String = self
            .names
            .iter()
            .map(|n| format!("{n} slots=4\n"))
            .collect();
        for (path, text) in [
            (&self.hydra_exec, HYDRA_EXEC),
            (&self.ompi_exec, ompi.as_str()),
            (&self.ompi_hosts, hosts.as_str()),
        ] {
            std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
        }
        for script in [&self.hydra_exec, &self.ompi_exec] {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| format!("{}: {e}", script.display()))?;
        }
        Ok(())
    }

    /// `A,B` for a launcher's host list.
    pub fn hosts(&self) -> String {
        self.names.join(",")
    }

    /// `ip netns exec A`: what starts a launcher in the first namespace.
    pub fn in_first(&self) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.names[0]]);
        c
    }

    /// Bytes through the veth pair so far (received plus sent by the first
    /// namespace's end, which is everything that crossed between the two).
    pub fn veth_bytes(&self) -> Option<u64> {
        let out = Command::new("ip")
            .args(["-n", &self.names[0], "-s", "-j", "link", "show", DEV])
            .output()
            .ok()?;
        veth_bytes_of(&String::from_utf8_lossy(&out.stdout))
    }
}

/// Received plus sent bytes from `ip -s -j link show`'s JSON.
fn veth_bytes_of(json: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    let stats = v.get(0)?.get("stats64")?;
    let get = |dir: &str| stats.get(dir)?.get("bytes")?.as_u64();
    Some(get("rx")? + get("tx")?)
}

fn link_up(ns: &str) -> bool {
    Command::new("ip")
        .args(["-n", ns, "-o", "link", "show", DEV])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("state UP"))
}

impl Drop for Nodes {
    fn drop(&mut self) {
        // Deleting a namespace deletes its end of the veth pair, and with
        // it the other end.
        for n in &self.names {
            let _ = ip(&["netns", "del", n]);
        }
        for d in &self.dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        for f in [&self.hydra_exec, &self.ompi_exec, &self.ompi_hosts] {
            let _ = std::fs::remove_file(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_of_a_namespace_name() {
        assert_eq!(owner("tslnode4242a"), Some(4242));
        assert_eq!(owner("tslnode7b"), Some(7));
        assert_eq!(owner("tslnode7c"), None);
        assert_eq!(owner("tsl4242ea"), None);
        assert_eq!(owner("tslnodea"), None);
    }

    #[test]
    fn veth_bytes_from_json() {
        let json = r#"[{"ifindex":2,"ifname":"tsl0","stats64":{"rx":{"bytes":1000,"packets":3},"tx":{"bytes":234,"packets":2}}}]"#;
        assert_eq!(veth_bytes_of(json), Some(1234));
        assert_eq!(veth_bytes_of("[]"), None);
        assert_eq!(veth_bytes_of("not json"), None);
    }

    #[test]
    fn the_hydra_script_is_the_documented_one() {
        assert_eq!(
            HYDRA_EXEC,
            "#!/bin/sh\nwhile [ \"${1#-}\" != \"$1\" ]; do shift; done\nhost=$1; shift\n\
             exec ip netns exec \"$host\" sh -c \"$*\"\n"
        );
    }
}

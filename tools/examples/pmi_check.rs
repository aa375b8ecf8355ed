//! End-to-end check of the bootstrap under a launcher.
//!
//! Run as `mpiexec -n 4 --ppn 2 pmi_check` (Tessel's launcher) or
//! `mpiexec.mpich -n 3 pmi_check` (MPICH's Hydra). Every rank publishes
//! binary bytes under `key-<rank>` (and, under Tessel's launcher, its
//! `TESSEL_NODE` under `node-<rank>`), fences, reads every other rank's
//! values back and compares them, and checks `node_of` for every rank. On
//! success it prints `pmi_check: rank R of N on node K ok`, finalizes and
//! exits 0; on any mismatch it says what differs and exits 1.

use std::process::ExitCode;

use shm_engine::bootstrap::{self, Bootstrap};

/// The bytes rank `rank` publishes: NULs, spaces, `=`, newlines and high
/// bytes, which a text protocol would mangle if they were not encoded.
fn payload(rank: u32) -> Vec<u8> {
    let mut bytes = vec![0, b' ', b'=', b'\n', 0xff, 0];
    bytes.extend_from_slice(format!("rank {rank} says hello").as_bytes());
    bytes.extend((0..=255u8).step_by(7));
    bytes.extend_from_slice(&rank.to_le_bytes());
    bytes
}

fn check(boot: &mut dyn Bootstrap) -> Result<(), String> {
    let rank = boot.rank();
    let size = boot.size();
    if let Ok(env_rank) = std::env::var("PMI_RANK")
        && env_rank != rank.to_string()
    {
        return Err(format!(
            "bootstrap says rank {rank}, PMI_RANK is {env_rank}"
        ));
    }
    let tessel_node = match std::env::var("TESSEL_NODE") {
        Ok(node) => Some(
            node.parse::<u32>()
                .map_err(|_| format!("TESSEL_NODE={node:?} is not a number"))?,
        ),
        Err(_) => None,
    };

    boot.put(&format!("key-{rank}"), &payload(rank))
        .map_err(|e| format!("put key-{rank}: {e}"))?;
    if let Some(node) = tessel_node {
        boot.put(&format!("node-{rank}"), &node.to_le_bytes())
            .map_err(|e| format!("put node-{rank}: {e}"))?;
    }
    boot.fence().map_err(|e| format!("fence: {e}"))?;

    for peer in (0..size).filter(|&p| p != rank) {
        let got = boot
            .get(&format!("key-{peer}"))
            .map_err(|e| format!("get key-{peer}: {e}"))?;
        if got != payload(peer) {
            return Err(format!(
                "key-{peer} holds {got:02x?}, expected {:02x?}",
                payload(peer)
            ));
        }
    }
    for peer in 0..size {
        let node = boot.node_of(peer);
        if tessel_node.is_none() {
            continue;
        }
        let published = boot
            .get(&format!("node-{peer}"))
            .map_err(|e| format!("get node-{peer}: {e}"))?;
        let expected = <[u8; 4]>::try_from(published.as_slice())
            .map(u32::from_le_bytes)
            .map_err(|_| format!("node-{peer} holds {published:02x?}, not 4 bytes"))?;
        if node != expected {
            return Err(format!(
                "node_of({peer}) is {node}, but rank {peer} runs with TESSEL_NODE={expected}"
            ));
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut boot = match bootstrap::from_env() {
        Ok(boot) => boot,
        Err(e) => {
            eprintln!("pmi_check: cannot start the bootstrap: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (rank, size) = (boot.rank(), boot.size());
    if let Err(msg) = check(boot.as_mut()) {
        eprintln!("pmi_check: rank {rank} of {size}: {msg}");
        return ExitCode::FAILURE;
    }
    let node = boot.node_of(rank);
    println!("pmi_check: rank {rank} of {size} on node {node} ok");
    if let Err(e) = boot.finalize() {
        eprintln!("pmi_check: rank {rank} of {size}: finalize: {e}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}

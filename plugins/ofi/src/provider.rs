//! Which libfabric provider the plugin runs on, and what it costs.
//!
//! `fi_getinfo` is asked for reliable datagram endpoints (`FI_EP_RDM`) with
//! messages and RMA reads (`FI_MSG | FI_RMA | FI_READ | FI_REMOTE_READ`),
//! an `FI_AV_TABLE` address vector, `FI_THREAD_DOMAIN`, the `FI_CONTEXT` /
//! `FI_CONTEXT2` modes (every operation context is a 64-byte area of the
//! plugin's) and the memory-registration modes the plugin handles
//! (`FI_MR_LOCAL`, `FI_MR_VIRT_ADDR`, `FI_MR_ALLOCATED`, `FI_MR_PROV_KEY`,
//! `FI_MR_ENDPOINT`; not `FI_MR_RAW`, `FI_MR_MMU_NOTIFY`, `FI_MR_HMEM`).
//!
//! The answers come in libfabric's order of preference (hardware providers
//! first, then `tcp;ofi_rxm`, `net`, `udp;ofi_rxd`, `sockets` on the
//! machines seen); the plugin opens the first that works. `FI_PROVIDER`
//! (read by libfabric itself) restricts the list; without it the `shm`
//! provider is skipped: it reaches only processes of the same node, which
//! the engine's own shared-memory path already serves, and it cannot
//! reach another node. `TESSEL_OFI_DOMAIN` (`lo`, `eth0`, `cxi0`) picks
//! a domain, as `UCX_NET_DEVICES` does for UCX.

use std::ffi::CString;

use crate::fi::{self, Endpoint, Hints, InfoList};
use crate::sys;

/// The environment variable that restricts the domain.
pub const DOMAIN_VAR: &str = "TESSEL_OFI_DOMAIN";

/// The opened endpoint and what the plugin learnt about its provider.
#[derive(Debug)]
pub struct Chosen {
    /// The endpoint.
    pub ep: Endpoint,
    /// The provider's name (`tcp;ofi_rxm`).
    pub provider: String,
    /// The domain's name (`lo`).
    pub domain: String,
    /// The largest single transfer.
    pub max_msg_size: u64,
    /// Transmit and receive queue depths.
    pub queue_sizes: (usize, usize),
    /// Reported link speed in bit/s (0: unknown).
    pub link_speed: u64,
    /// Whether the provider moves data without the application's calls.
    pub auto_progress: bool,
}

fn hints() -> Result<Hints, String> {
    let domain = match std::env::var(DOMAIN_VAR) {
        Ok(d) if !d.is_empty() => {
            Some(CString::new(d).map_err(|_| format!("{DOMAIN_VAR} holds a NUL byte"))?)
        }
        _ => None,
    };
    Ok(Hints {
        caps: u64::from(sys::FI_MSG | sys::FI_RMA | sys::FI_READ | sys::FI_REMOTE_READ),
        mode: sys::FI_CONTEXT | sys::FI_CONTEXT2,
        mr_mode: sys::FI_MR_LOCAL
            | sys::FI_MR_VIRT_ADDR
            | sys::FI_MR_ALLOCATED
            | sys::FI_MR_PROV_KEY
            | sys::FI_MR_ENDPOINT,
        domain,
    })
}

/// What the user asked for, for messages.
fn selection() -> String {
    let mut s = Vec::new();
    if let Ok(p) = std::env::var("FI_PROVIDER") {
        s.push(format!("FI_PROVIDER={p}"));
    }
    if let Ok(d) = std::env::var(DOMAIN_VAR) {
        s.push(format!("{DOMAIN_VAR}={d}"));
    }
    if s.is_empty() {
        "any provider".into()
    } else {
        s.join(", ")
    }
}

/// Open an endpoint on the first provider that works, for a job of
/// `peers` processes. The error names what was asked and what was tried.
pub fn open(peers: usize) -> Result<Chosen, String> {
    let hints = hints()?;
    let what = "reliable datagram endpoints (FI_EP_RDM) with messages and RMA reads";
    let list = match InfoList::get(&hints) {
        Ok(Some(l)) => l,
        Ok(None) => {
            return Err(format!(
                "no libfabric provider offers {what} for {} (libfabric {}{})",
                selection(),
                fi::runtime_version(),
                present()
            ));
        }
        Err(e) => return Err(format!("{e} (asking for {what}, {})", selection())),
    };
    let user_chose = std::env::var_os("FI_PROVIDER").is_some();
    let domain = hints
        .domain
        .as_ref()
        .map(|d| d.to_string_lossy().into_owned());
    let mut tried: Vec<String> = Vec::new();
    let mut skipped: Vec<String> = Vec::new();
    for info in list.iter() {
        let provider = info.provider();
        if !user_chose && provider.split(';').next() == Some("shm") {
            skipped.push("shm (same node only; FI_PROVIDER=shm selects it)".into());
            continue;
        }
        // `ofi_rxm` (libfabric 1.17) answers for every domain of its core
        // provider whatever the hint's domain name says: filter here.
        if domain.as_ref().is_some_and(|d| *d != info.domain()) {
            let s = format!("{provider} on {}", info.domain());
            if !skipped.contains(&s) {
                skipped.push(s);
            }
            continue;
        }
        match Endpoint::open(info, peers, 1024) {
            Ok(ep) => {
                return Ok(Chosen {
                    ep,
                    domain: info.domain(),
                    max_msg_size: info.max_msg_size(),
                    queue_sizes: info.queue_sizes(),
                    link_speed: info.link_speed(),
                    auto_progress: info.auto_progress(),
                    provider,
                });
            }
            Err(e) => {
                let t = format!("{provider} on {}: {e}", info.domain());
                if !tried.contains(&t) {
                    tried.push(t);
                }
            }
        }
    }
    if tried.is_empty() {
        return Err(format!(
            "no libfabric provider offers {what} for {} (skipped: {})",
            selection(),
            skipped.join(", ")
        ));
    }
    Err(format!(
        "no libfabric provider opened for {}: {}",
        selection(),
        tried.join("; ")
    ))
}

/// "; providers present: a, b" from an unrestricted fi_getinfo, for the
/// message when nothing matched.
fn present() -> String {
    let hints = Hints {
        caps: 0,
        mode: !0,
        mr_mode: !sys::FI_MR_HMEM,
        domain: None,
    };
    let Ok(Some(list)) = InfoList::get(&hints) else {
        return String::new();
    };
    let mut names: Vec<String> = Vec::new();
    for i in list.iter() {
        let p = i.provider();
        if !names.contains(&p) {
            names.push(p);
        }
    }
    if names.is_empty() {
        return String::new();
    }
    format!("; RDM providers present: {}", names.join(", "))
}

/// Providers whose data moves through the kernel's sockets: RMA reads are
/// emulated by the peer's provider, in the peer's progress calls.
fn sockets_based(provider: &str) -> bool {
    provider
        .split(';')
        .next()
        .is_some_and(|core| matches!(core, "tcp" | "net" | "sockets" | "udp"))
}

/// Whether fetches are one-sided reads served without the sender's CPU
/// (`ATTR_RMA_READ`): true on hardware providers, false on sockets-based
/// ones, where the sender's provider serves the read.
pub fn rma_in_hardware(c: &Chosen) -> bool {
    !sockets_based(&c.provider)
}

/// Latency (ns) and bandwidth (MB/s) estimates. They are not measured at
/// open (that would cost every job start); they come from:
/// - loopback (`lo`) with a sockets-based provider: `fi_pingpong -p tcp -e
///   rdm` on the development machine (2 vCPUs): 6.4 us for small
///   messages, 5 to 6 GB/s at 1 to 4 MiB;
/// - a sockets-based provider on a NIC: 25 us (kernel TCP between hosts)
///   and the link speed libfabric reports, else 10 Gb/s (1200 MB/s);
/// - any other (hardware) provider: 2 us and the reported link speed,
///   else 100 Gb/s (12000 MB/s).
pub fn estimates(c: &Chosen) -> (u64, u64) {
    let reported = (c.link_speed > 0).then_some(c.link_speed / 8 / 1_000_000);
    if sockets_based(&c.provider) {
        if c.domain == "lo" {
            (6_500, 5_000)
        } else {
            (25_000, reported.unwrap_or(1_200))
        }
    } else {
        (2_000, reported.unwrap_or(12_000))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sockets_providers_are_recognised() {
        assert!(sockets_based("tcp;ofi_rxm"));
        assert!(sockets_based("udp;ofi_rxd"));
        assert!(sockets_based("sockets"));
        assert!(!sockets_based("cxi"));
        assert!(!sockets_based("verbs;ofi_rxm"));
    }

    #[test]
    fn info_entries_have_names() {
        // Whatever this machine offers, each entry names its provider.
        let h = hints().unwrap();
        if let Ok(Some(list)) = InfoList::get(&h) {
            for i in list.iter() {
                assert!(!i.provider().is_empty());
            }
        }
    }
}

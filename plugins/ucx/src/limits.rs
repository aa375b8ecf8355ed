//! What the plugin reports in [`plugin_api::Attr`], and where each number
//! comes from.
//!
//! - `max_header`: UCX's largest active message header for this worker
//!   (`ucp_worker_query`, `max_am_header`, about 8 KiB on tcp and shared
//!   memory) less the plugin's 8-byte prefix, capped at [`HEADER_CAP`]
//!   (the engine's header is at most 64 bytes; the cap bounds what a send
//!   keeps until it completes).
//! - `eager_max`: the plugin forces the protocol per message
//!   (`UCP_AM_SEND_FLAG_EAGER` up to it, `UCP_AM_SEND_FLAG_RNDV` above), so
//!   this number is a promise, not a guess about UCX's choice. It is
//!   `UCX_RNDV_THRESH` when that is set to a size (`16384`, `16k`); else
//!   [`EAGER_TCP`] (64 KiB) when TCP is the best network transport UCX
//!   opened, and [`EAGER_DEFAULT`] (8 KiB: one segment of UCX's tcp and
//!   shared memory transports, `TCP_SEG_SIZE`/`MM_SEG_SIZE`) otherwise.
//!   Over TCP a rendezvous costs a round trip through both kernels before
//!   any data moves, which a 64 KiB copy costs less than (Open MPI's TCP
//!   transport sends eagerly up to 64 KiB too); measured with the
//!   `internode` stencil's 32 KiB faces: the inter-node exchange took
//!   0.59x the time with 64 KiB than with 8 KiB. InfiniBand keeps 8 KiB:
//!   its rendezvous is a zero-copy RDMA read.
//! - `inline_max`: [`INLINE_MAX`] (1 KiB), a conservative size that fits
//!   one UCT fragment with a 64-byte header on every UCX transport (8 KiB
//!   segments on tcp, shared memory and rc; an IB MTU of at least 2 KiB on
//!   ud), never above `eager_max`.
//! - `max_message`: 0, no limit (UCX's rendezvous has none).
//! - `latency_ns`, `bandwidth_mbs`: order-of-magnitude figures for the
//!   class of the best transport UCX opened (InfiniBand/RoCE, TCP, or
//!   shared memory only), not measurements: see [`estimate`].
//! - `device`: the transports and devices of the UCP context, as
//!   `ucp_context_print_info` lists them (`tcp(lo,eth0) sysv posix cma`).

/// Largest engine header the plugin accepts, whatever UCX allows.
pub(crate) const HEADER_CAP: usize = 1024;
/// Eager limit unless `UCX_RNDV_THRESH` names a size or TCP is the best
/// network transport.
pub(crate) const EAGER_DEFAULT: usize = 8192;
/// Eager limit when TCP is the best network transport (see the module
/// docs).
pub(crate) const EAGER_TCP: usize = 64 << 10;
/// Inline limit (see the module docs).
pub(crate) const INLINE_MAX: usize = 1024;

/// Parse a UCX memory unit (`8192`, `8k`, `8K`, `1m`, `2g`, `16kb`);
/// `None` for `auto`, `inf` and anything else.
pub(crate) fn parse_size(text: &str) -> Option<usize> {
    let t = text.trim().to_ascii_lowercase();
    let t = t.strip_suffix('b').unwrap_or(&t);
    let (digits, shift) = match t.chars().last()? {
        'k' => (&t[..t.len() - 1], 10),
        'm' => (&t[..t.len() - 1], 20),
        'g' => (&t[..t.len() - 1], 30),
        _ => (t, 0),
    };
    let n: usize = digits.parse().ok()?;
    n.checked_mul(1usize << shift)
}

/// The eager limit for a given `UCX_RNDV_THRESH` value and the context's
/// resources.
pub(crate) fn eager_max(rndv_thresh: Option<&str>, resources: &[Resource]) -> usize {
    let tcp_best = resources.iter().any(|r| r.transport == "tcp")
        && !resources.iter().any(|r| is_ib(&r.transport));
    rndv_thresh
        .and_then(parse_size)
        .unwrap_or(if tcp_best { EAGER_TCP } else { EAGER_DEFAULT })
}

/// One transport resource of the UCP context: `tcp/lo`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resource {
    pub(crate) transport: String,
    pub(crate) device: String,
}

/// The resources in the text of `ucp_context_print_info`, whose lines
/// read `#      resource 1  :  md 1  dev 1  flags -- tcp/lo`.
pub(crate) fn parse_resources(info: &str) -> Vec<Resource> {
    info.lines()
        .filter(|l| l.contains("resource") && l.contains("--"))
        .filter_map(|l| l.rsplit("--").next())
        .filter_map(|r| {
            let (tl, dev) = r.trim().split_once('/')?;
            Some(Resource {
                transport: tl.to_string(),
                device: dev.to_string(),
            })
        })
        .collect()
}

/// Transports that only reach processes of the same host.
fn is_local(transport: &str) -> bool {
    matches!(
        transport,
        "self" | "sysv" | "posix" | "xpmem" | "cma" | "knem"
    )
}

/// InfiniBand and RoCE transports (`rc_verbs`, `rc_mlx5`, `dc_mlx5`,
/// `ud_verbs`...).
fn is_ib(transport: &str) -> bool {
    ["rc", "dc", "ud"]
        .iter()
        .any(|p| transport == *p || transport.starts_with(&format!("{p}_")))
}

/// The device text: each transport once, in UCX's order, network ones
/// first, with its devices unless they are the memory pseudo-devices.
pub(crate) fn device_text(resources: &[Resource]) -> String {
    let mut order: Vec<(&str, Vec<&str>)> = Vec::new();
    for r in resources {
        let dev = (!r.device.starts_with("memory")).then_some(r.device.as_str());
        match order.iter_mut().find(|(t, _)| *t == r.transport) {
            Some((_, devs)) => devs.extend(dev),
            None => order.push((&r.transport, dev.into_iter().collect())),
        }
    }
    order.sort_by_key(|(t, _)| is_local(t));
    let parts: Vec<String> = order
        .iter()
        .map(|(t, devs)| {
            if devs.is_empty() {
                t.to_string()
            } else {
                format!("{t}({})", devs.join(","))
            }
        })
        .collect();
    if parts.is_empty() {
        "UCX default transports".to_string()
    } else {
        parts.join(" ")
    }
}

/// Latency (ns) and bandwidth (MB/s) of the best class of transport in
/// `resources`. The figures are round numbers of the kind UCX's
/// `ucx_perftest` shows for each class (EDR InfiniBand: ~1.5 us and
/// ~11 GB/s; 10 GbE TCP: ~20 us and ~1.1 GB/s; shared memory: ~0.5 us and
/// several GB/s), not measurements of this machine.
pub(crate) fn estimate(resources: &[Resource]) -> (u64, u64) {
    if resources.iter().any(|r| is_ib(&r.transport)) {
        (1_500, 11_000)
    } else if resources.iter().any(|r| !is_local(&r.transport)) {
        (20_000, 1_100)
    } else {
        (500, 5_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str = "#\n# UCP context\n#\n#     component 0  :  self\n\
        #            md 0  :  component 0  self \n\
        #      resource 0  :  md 0  dev 0  flags -- self/memory0\n\
        #      resource 1  :  md 1  dev 1  flags -- tcp/lo\n\
        #      resource 2  :  md 1  dev 2  flags -- tcp/eth0\n\
        #      resource 3  :  md 2  dev 3  flags -- sysv/memory\n\
        #      resource 5  :  md 4  dev 3  flags -- cma/memory\n#\n";

    #[test]
    fn resources_are_read_from_the_info_text() {
        let r = parse_resources(INFO);
        assert_eq!(r.len(), 5);
        assert_eq!(
            r[1],
            Resource {
                transport: "tcp".into(),
                device: "lo".into()
            }
        );
        assert_eq!(device_text(&r), "tcp(lo,eth0) self sysv cma");
        assert_eq!(estimate(&r), (20_000, 1_100));
        assert_eq!(estimate(&r[3..]), (500, 5_000));
        assert_eq!(device_text(&[]), "UCX default transports");
    }

    #[test]
    fn ib_transports_rank_first() {
        let r = vec![
            Resource {
                transport: "rc_mlx5".into(),
                device: "mlx5_0:1".into(),
            },
            Resource {
                transport: "tcp".into(),
                device: "ib0".into(),
            },
        ];
        assert_eq!(estimate(&r), (1_500, 11_000));
        assert!(!is_ib("rdmacm"));
    }

    #[test]
    fn sizes_parse_like_ucx_memunits() {
        assert_eq!(parse_size("8192"), Some(8192));
        assert_eq!(parse_size("16k"), Some(16384));
        assert_eq!(parse_size("16KB"), Some(16384));
        assert_eq!(parse_size("1m"), Some(1 << 20));
        assert_eq!(parse_size("auto"), None);
        assert_eq!(parse_size("inf"), None);
        assert_eq!(parse_size(""), None);
        assert_eq!(eager_max(None, &[]), EAGER_DEFAULT);
        assert_eq!(eager_max(Some("auto"), &[]), EAGER_DEFAULT);
        assert_eq!(eager_max(Some("4k"), &[]), 4096);
    }

    #[test]
    fn tcp_sends_eagerly_up_to_64_kib_unless_told_otherwise() {
        let tcp = parse_resources(INFO);
        assert_eq!(eager_max(None, &tcp), EAGER_TCP);
        assert_eq!(eager_max(Some("16k"), &tcp), 16384);
        // Shared memory only, or InfiniBand next to TCP: UCX's segment.
        assert_eq!(eager_max(None, &tcp[3..]), EAGER_DEFAULT);
        let ib = Resource {
            transport: "rc_mlx5".into(),
            device: "mlx5_0:1".into(),
        };
        assert_eq!(eager_max(None, &[ib, tcp[1].clone()]), EAGER_DEFAULT);
    }
}

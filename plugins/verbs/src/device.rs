//! Which device, port and GID a context uses, and what the port's link
//! says about latency and bandwidth.

use std::env;

use crate::sys;
use crate::verbs::{Device, DeviceList, errno_text, port_state_text};

/// Environment variable naming the device (`mlx5_0`) or device and port
/// (`mlx5_0:2`) to use.
pub(crate) const DEVICE_VAR: &str = "TESSEL_VERBS_DEVICE";
/// Environment variable forcing the GID index (RoCE).
pub(crate) const GID_INDEX_VAR: &str = "TESSEL_VERBS_GID_INDEX";

/// The chosen device and port.
#[derive(Debug)]
pub(crate) struct Selected {
    pub(crate) device: Device,
    pub(crate) name: String,
    pub(crate) port: u8,
    pub(crate) device_attr: sys::ibv_device_attr,
    pub(crate) port_attr: sys::ibv_port_attr,
}

/// What [`DEVICE_VAR`] asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Wanted {
    pub(crate) name: String,
    pub(crate) port: Option<u8>,
}

/// Parse `name` or `name:port`.
pub(crate) fn parse_wanted(text: &str) -> Result<Wanted, String> {
    let text = text.trim();
    let (name, port) = match text.rsplit_once(':') {
        Some((name, port)) => {
            let port = port
                .parse::<u8>()
                .ok()
                .filter(|&p| p > 0)
                .ok_or_else(|| format!("{DEVICE_VAR}={text}: the port must be 1..255"))?;
            (name, Some(port))
        }
        None => (text, None),
    };
    if name.is_empty() {
        return Err(format!("{DEVICE_VAR}={text}: no device name"));
    }
    Ok(Wanted {
        name: name.to_string(),
        port,
    })
}

/// Pick the device: the one [`DEVICE_VAR`] names, or the first with an
/// active port. `Err` is the reason there is nothing to run on (the
/// caller reports it as `ERR_NO_DEVICE`).
pub(crate) fn select() -> Result<Selected, String> {
    let wanted = match env::var(DEVICE_VAR) {
        Ok(v) if !v.trim().is_empty() => Some(parse_wanted(&v)?),
        _ => None,
    };
    let list = DeviceList::get()
        .map_err(|e| format!("no RDMA device: ibv_get_device_list: {}", errno_text(e)))?;
    if list.len() == 0 {
        return Err("no RDMA device: ibv_get_device_list found none \
                    (no RDMA driver loaded, or no permission on /dev/infiniband)"
            .into());
    }
    let names: Vec<String> = (0..list.len()).map(|i| list.name(i)).collect();
    let mut notes = Vec::new();
    for (i, name) in names.iter().enumerate() {
        if wanted.as_ref().is_some_and(|w| &w.name != name) {
            continue;
        }
        if !list.is_ib_transport(i) {
            notes.push(format!(
                "{name}: not InfiniBand or RoCE (iWARP needs rdma_cm)"
            ));
            continue;
        }
        let device = match list.open(i) {
            Ok(d) => d,
            Err(e) => {
                notes.push(format!("{name}: ibv_open_device: {}", errno_text(e)));
                continue;
            }
        };
        let device_attr = match device.query() {
            Ok(a) => a,
            Err(e) => {
                notes.push(format!("{name}: ibv_query_device: {}", errno_text(e)));
                continue;
            }
        };
        let ports: Vec<u8> = match wanted.as_ref().and_then(|w| w.port) {
            Some(p) => vec![p],
            None => (1..=device_attr.phys_port_cnt).collect(),
        };
        for port in ports {
            match device.query_port(port) {
                Ok(pa) if pa.state == sys::IBV_PORT_ACTIVE => {
                    return Ok(Selected {
                        device,
                        name: name.clone(),
                        port,
                        device_attr,
                        port_attr: pa,
                    });
                }
                Ok(pa) => notes.push(format!("{name} port {port}: {}", port_state_text(pa.state))),
                Err(e) => notes.push(format!("{name} port {port}: {}", errno_text(e))),
            }
        }
        // `device` closes here: nothing of it is used.
    }
    if let Some(w) = wanted
        && !names.contains(&w.name)
    {
        return Err(format!(
            "no RDMA device named {:?} ({DEVICE_VAR}); found: {}",
            w.name,
            names.join(", ")
        ));
    }
    Err(format!(
        "no RDMA device with an active port ({})",
        notes.join("; ")
    ))
}

/// The GID to put in the address (and its index, the source GID of our
/// packets): index [`GID_INDEX_VAR`] if set; on InfiniBand index 0; on
/// Ethernet (RoCE) the first RoCE v2 entry holding an IPv4-mapped
/// address, else the first RoCE v2 entry, else the first non-zero one.
pub(crate) fn pick_gid(sel: &Selected) -> Result<(u8, [u8; 16]), String> {
    let dev = &sel.device;
    let port = sel.port;
    if let Ok(v) = env::var(GID_INDEX_VAR) {
        let index: u8 = v
            .trim()
            .parse()
            .map_err(|_| format!("{GID_INDEX_VAR}={v}: not an index 0..255"))?;
        let gid = dev
            .gid(port, index)
            .map_err(|e| format!("{} port {port} GID {index}: {}", sel.name, errno_text(e)))?;
        return Ok((index, gid));
    }
    if sel.port_attr.link_layer != sys::IBV_LINK_LAYER_ETHERNET as u8 {
        let gid = dev
            .gid(port, 0)
            .map_err(|e| format!("{} port {port} GID 0: {}", sel.name, errno_text(e)))?;
        return Ok((0, gid));
    }
    let entries = u8::try_from(sel.port_attr.gid_tbl_len.clamp(0, 255)).unwrap_or(u8::MAX);
    let mut table = Vec::new();
    for index in 0..entries {
        let Ok(gid) = dev.gid(port, index) else {
            continue;
        };
        if gid == [0; 16] {
            continue;
        }
        table.push(GidEntry {
            index,
            gid,
            roce_v2: dev.gid_type(port, index) == Some(sys::IBV_GID_TYPE_ROCE_V2),
        });
    }
    choose_roce_gid(&table).ok_or_else(|| {
        format!(
            "{} port {port} (Ethernet): no usable GID (is an IP address configured on its netdev?)",
            sel.name
        )
    })
}

/// A non-zero GID table entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GidEntry {
    pub(crate) index: u8,
    pub(crate) gid: [u8; 16],
    pub(crate) roce_v2: bool,
}

/// The RoCE preference of [`pick_gid`]: v2 with an IPv4-mapped address
/// (`::ffff:a.b.c.d`, routable), then any v2, then any.
pub(crate) fn choose_roce_gid(table: &[GidEntry]) -> Option<(u8, [u8; 16])> {
    let v4_mapped = |g: &[u8; 16]| g[..10] == [0; 10] && g[10..12] == [0xff, 0xff];
    table
        .iter()
        .find(|e| e.roce_v2 && v4_mapped(&e.gid))
        .or_else(|| table.iter().find(|e| e.roce_v2))
        .or_else(|| table.first())
        .map(|e| (e.index, e.gid))
}

/// Lanes of an `active_width` code.
pub(crate) fn lanes(width: u8) -> u64 {
    match width {
        2 => 4,
        4 => 8,
        8 => 12,
        16 => 2,
        _ => 1,
    }
}

/// Data rate of one lane, in Mb/s, for an `active_speed` code: the
/// signalling rate less the line encoding (8b/10b up to QDR, 64b/66b
/// from FDR10). RoCE devices report the Ethernet speed with the same
/// codes (100 GbE as 4x EDR). Unknown codes count as QDR.
pub(crate) fn lane_mbps(speed: u8) -> u64 {
    match speed {
        1 => 2_000,     // SDR 2.5 Gb/s
        2 => 4_000,     // DDR 5 Gb/s
        4 => 8_000,     // QDR 10 Gb/s
        8 => 10_000,    // FDR10 10.3125 Gb/s
        16 => 13_636,   // FDR 14.0625 Gb/s
        32 => 25_000,   // EDR 25.78125 Gb/s
        64 => 50_000,   // HDR
        128 => 100_000, // NDR (XDR is only in the newer `active_speed_ex`)
        _ => 8_000,
    }
}

/// Large-message bandwidth estimate in MB/s: the link's data rate less
/// 10% for packet headers and acknowledgements.
pub(crate) fn bandwidth_mbs(speed: u8, width: u8) -> u64 {
    lanes(width) * lane_mbps(speed) / 8 * 9 / 10
}

/// One-way small-message latency estimate in ns: typical figures for an
/// RC send through one switch (InfiniBand about 1.3 us, RoCE about
/// 2 us), not a measurement.
pub(crate) fn latency_ns(link_layer: u8) -> u64 {
    if link_layer == sys::IBV_LINK_LAYER_ETHERNET as u8 {
        2_000
    } else {
        1_300
    }
}

/// Bytes of an `enum ibv_mtu`.
pub(crate) fn mtu_bytes(mtu: u32) -> u32 {
    match mtu {
        1..=5 => 128 << mtu,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_device_variable_takes_a_name_and_an_optional_port() {
        assert_eq!(
            parse_wanted("mlx5_0"),
            Ok(Wanted {
                name: "mlx5_0".into(),
                port: None
            })
        );
        assert_eq!(
            parse_wanted(" mlx5_1:2 "),
            Ok(Wanted {
                name: "mlx5_1".into(),
                port: Some(2)
            })
        );
        assert!(parse_wanted("mlx5_0:0").is_err());
        assert!(parse_wanted("mlx5_0:x").is_err());
        assert!(parse_wanted(":1").is_err());
    }

    #[test]
    fn estimates_follow_the_link() {
        // 4x EDR (100 Gb/s): 12.5 GB/s of data, 11.25 after overheads.
        assert_eq!(bandwidth_mbs(32, 2), 11_250);
        // 4x HDR: twice that.
        assert_eq!(bandwidth_mbs(64, 2), 22_500);
        // 1x SDR.
        assert_eq!(bandwidth_mbs(1, 1), 225);
        assert!(latency_ns(sys::IBV_LINK_LAYER_ETHERNET as u8) > latency_ns(1));
        assert_eq!(mtu_bytes(sys::IBV_MTU_4096), 4096);
        assert_eq!(mtu_bytes(sys::IBV_MTU_256), 256);
    }

    #[test]
    fn roce_prefers_v2_with_an_ipv4_address() {
        let link_local = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let mut v4 = [0u8; 16];
        v4[10] = 0xff;
        v4[11] = 0xff;
        v4[12..].copy_from_slice(&[10, 0, 0, 7]);
        let e = |index, gid, roce_v2| GidEntry {
            index,
            gid,
            roce_v2,
        };
        let table = [
            e(0, link_local, false),
            e(1, link_local, true),
            e(2, v4, false),
            e(3, v4, true),
        ];
        assert_eq!(choose_roce_gid(&table), Some((3, v4)));
        assert_eq!(choose_roce_gid(&table[..3]), Some((1, link_local)));
        assert_eq!(choose_roce_gid(&table[..1]), Some((0, link_local)));
        assert_eq!(choose_roce_gid(&[]), None);
    }
}

//! What goes over the wire and through the bootstrap: the prefix of every
//! message, the segment list of a rendezvous RTS, and the address records
//! a process publishes with `callbacks.put`.
//!
//! Everything is little-endian with explicit offsets (no `#[repr(C)]`
//! struct is sent), so the two ends need not share a compiler or a
//! struct layout. Decoders check lengths and magic numbers and return
//! `None` on anything malformed; the transport treats that as a broken
//! peer, never as something to follow.

/// Bytes of the prefix in front of every message.
pub(crate) const PREFIX_LEN: usize = 32;
/// The prefix's version byte: a peer speaking another one is refused.
const WIRE_VERSION: u8 = 1;

/// What a message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Header and payload, all in this message.
    Eager = 1,
    /// Ready to send: header, total length, and the sender's registered
    /// segments for the receiver to RDMA READ. `op` names the send.
    Rts = 2,
    /// The receiver is done with the segments of send `op` (read, or
    /// discarded): the sender deregisters them and completes the send.
    Fin = 3,
}

impl Kind {
    fn of(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::Eager),
            2 => Some(Self::Rts),
            3 => Some(Self::Fin),
            _ => None,
        }
    }
}

/// The fixed prefix of a message.
///
/// Layout: `[0]` kind, `[1]` version, `[2..4]` header length, `[4..8]`
/// credits (the sender's cumulative count of receive buffers it re-posted
/// for this peer), `[8..16]` payload length (eager: bytes in this message;
/// RTS: the whole payload), `[16..24]` op (RTS, FIN), `[24..28]` segment
/// count (RTS), `[28..32]` reserved, zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prefix {
    pub(crate) kind: Kind,
    pub(crate) header_len: u16,
    pub(crate) credits: u32,
    pub(crate) len: u64,
    pub(crate) op: u64,
    pub(crate) nseg: u32,
}

impl Prefix {
    /// A prefix of `kind` with everything else zero.
    pub(crate) fn new(kind: Kind) -> Self {
        Self {
            kind,
            header_len: 0,
            credits: 0,
            len: 0,
            op: 0,
            nseg: 0,
        }
    }

    pub(crate) fn encode(&self) -> [u8; PREFIX_LEN] {
        let mut b = [0u8; PREFIX_LEN];
        b[0] = self.kind as u8;
        b[1] = WIRE_VERSION;
        b[2..4].copy_from_slice(&self.header_len.to_le_bytes());
        b[4..8].copy_from_slice(&self.credits.to_le_bytes());
        b[8..16].copy_from_slice(&self.len.to_le_bytes());
        b[16..24].copy_from_slice(&self.op.to_le_bytes());
        b[24..28].copy_from_slice(&self.nseg.to_le_bytes());
        b
    }

    /// The prefix at the start of `msg`, or `None` when `msg` is too short
    /// or not ours.
    pub(crate) fn decode(msg: &[u8]) -> Option<Self> {
        let b: &[u8; PREFIX_LEN] = msg.get(..PREFIX_LEN)?.try_into().ok()?;
        if b[1] != WIRE_VERSION {
            return None;
        }
        Some(Self {
            kind: Kind::of(b[0])?,
            header_len: u16::from_le_bytes([b[2], b[3]]),
            credits: u32_at(b, 4),
            len: u64_at(b, 8),
            op: u64_at(b, 16),
            nseg: u32_at(b, 24),
        })
    }
}

/// One registered piece of a rendezvous payload at the sender.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Segment {
    pub(crate) addr: u64,
    pub(crate) len: u32,
    pub(crate) rkey: u32,
}

/// Bytes of one encoded [`Segment`].
pub(crate) const SEGMENT_LEN: usize = 16;

pub(crate) fn encode_segments(segs: &[Segment]) -> Vec<u8> {
    let mut out = Vec::with_capacity(segs.len() * SEGMENT_LEN);
    for s in segs {
        out.extend_from_slice(&s.addr.to_le_bytes());
        out.extend_from_slice(&s.len.to_le_bytes());
        out.extend_from_slice(&s.rkey.to_le_bytes());
    }
    out
}

/// `n` segments from the start of `b`.
pub(crate) fn decode_segments(b: &[u8], n: usize) -> Option<Vec<Segment>> {
    let b = b.get(..n.checked_mul(SEGMENT_LEN)?)?;
    Some(
        b.chunks_exact(SEGMENT_LEN)
            .map(|c| Segment {
                addr: u64_at(c, 0),
                len: u32_at(c, 8),
                rkey: u32_at(c, 12),
            })
            .collect(),
    )
}

/// The bootstrap key of rank `rank`'s address record.
pub(crate) fn address_key(rank: u32) -> String {
    format!("tessel.verbs.{rank}")
}

/// The bootstrap key of the chunk of rank `rank`'s QP numbers that holds
/// the one for `peer`.
pub(crate) fn qpn_key(rank: u32, peer: u32) -> String {
    format!("tessel.verbs.{rank}.q{}", peer / QPN_PER_KEY)
}

/// QP numbers per bootstrap value: PMI-1 process managers take values of
/// 1024 characters, which the engine hex-encodes (511 raw bytes).
pub(crate) const QPN_PER_KEY: u32 = 100;

const ADDRESS_MAGIC: &[u8; 4] = b"TVB1";
const QPN_MAGIC: &[u8; 4] = b"TVQ1";
/// Bytes of an encoded [`Address`].
pub(crate) const ADDRESS_LEN: usize = 56;

/// What a process publishes about itself (one per process).
///
/// Layout: `[0..4]` magic, `[4..6]` LID, `[6]` port, `[7]` active MTU
/// (`enum ibv_mtu`), `[8]` link layer, `[9]` responder resources
/// (`max_qp_rd_atom`), `[10..12]` receive depth per peer, `[12..28]` GID,
/// `[28..32]` initial PSN, `[32..36]` rkey of the credit array,
/// `[36..40]` job size, `[40..48]` address of the credit array,
/// `[48..56]` reserved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Address {
    pub(crate) lid: u16,
    pub(crate) port: u8,
    pub(crate) mtu: u8,
    pub(crate) link_layer: u8,
    pub(crate) rd_atomic: u8,
    pub(crate) recv_depth: u16,
    pub(crate) gid: [u8; 16],
    pub(crate) psn: u32,
    pub(crate) credit_rkey: u32,
    pub(crate) size: u32,
    pub(crate) credit_addr: u64,
}

impl Address {
    pub(crate) fn encode(&self) -> [u8; ADDRESS_LEN] {
        let mut b = [0u8; ADDRESS_LEN];
        b[..4].copy_from_slice(ADDRESS_MAGIC);
        b[4..6].copy_from_slice(&self.lid.to_le_bytes());
        b[6] = self.port;
        b[7] = self.mtu;
        b[8] = self.link_layer;
        b[9] = self.rd_atomic;
        b[10..12].copy_from_slice(&self.recv_depth.to_le_bytes());
        b[12..28].copy_from_slice(&self.gid);
        b[28..32].copy_from_slice(&self.psn.to_le_bytes());
        b[32..36].copy_from_slice(&self.credit_rkey.to_le_bytes());
        b[36..40].copy_from_slice(&self.size.to_le_bytes());
        b[40..48].copy_from_slice(&self.credit_addr.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Option<Self> {
        if b.len() != ADDRESS_LEN || &b[..4] != ADDRESS_MAGIC {
            return None;
        }
        Some(Self {
            lid: u16::from_le_bytes([b[4], b[5]]),
            port: b[6],
            mtu: b[7],
            link_layer: b[8],
            rd_atomic: b[9],
            recv_depth: u16::from_le_bytes([b[10], b[11]]),
            gid: b[12..28].try_into().ok()?,
            psn: u32_at(b, 28),
            credit_rkey: u32_at(b, 32),
            size: u32_at(b, 36),
            credit_addr: u64_at(b, 40),
        })
    }
}

/// One bootstrap value of QP numbers: `[0..4]` magic, `[4..8]` the peer
/// of the first entry, `[8..12]` count, then the QP numbers.
pub(crate) fn encode_qpns(first: u32, qpns: &[u32]) -> Vec<u8> {
    let mut b = Vec::with_capacity(12 + 4 * qpns.len());
    b.extend_from_slice(QPN_MAGIC);
    b.extend_from_slice(&first.to_le_bytes());
    b.extend_from_slice(&(qpns.len() as u32).to_le_bytes());
    for q in qpns {
        b.extend_from_slice(&q.to_le_bytes());
    }
    b
}

/// The QP number for `peer` in a value made by [`encode_qpns`].
pub(crate) fn qpn_for(b: &[u8], peer: u32) -> Option<u32> {
    if b.len() < 12 || &b[..4] != QPN_MAGIC {
        return None;
    }
    let (first, count) = (u32_at(b, 4), u32_at(b, 8));
    if b.len() != 12 + 4 * count as usize {
        return None;
    }
    let i = peer.checked_sub(first).filter(|&i| i < count)?;
    Some(u32_at(b, 12 + 4 * i as usize))
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_round_trips_and_foreign_bytes_are_refused() {
        let p = Prefix {
            kind: Kind::Rts,
            header_len: 40,
            credits: u32::MAX - 2,
            len: 8 << 30,
            op: 0x0000_0007_0000_0003,
            nseg: 2,
        };
        let b = p.encode();
        assert_eq!(Prefix::decode(&b), Some(p));
        assert_eq!(Prefix::decode(&b[..PREFIX_LEN - 1]), None);
        let mut kind = b;
        kind[0] = 9;
        assert_eq!(Prefix::decode(&kind), None);
        let mut version = b;
        version[1] = 0;
        assert_eq!(Prefix::decode(&version), None);
        // Trailing bytes (header, payload) are not the prefix's business.
        let mut long = b.to_vec();
        long.extend_from_slice(&[1, 2, 3]);
        assert_eq!(Prefix::decode(&long), Some(p));
    }

    #[test]
    fn segments_round_trip_and_a_short_list_is_refused() {
        let segs = [
            Segment {
                addr: 0x7f00_1234_5678,
                len: 1 << 20,
                rkey: 0xabcd,
            },
            Segment {
                addr: 1,
                len: 3,
                rkey: u32::MAX,
            },
        ];
        let b = encode_segments(&segs);
        assert_eq!(b.len(), 2 * SEGMENT_LEN);
        assert_eq!(decode_segments(&b, 2).as_deref(), Some(&segs[..]));
        assert_eq!(decode_segments(&b, 1).as_deref(), Some(&segs[..1]));
        assert_eq!(decode_segments(&b, 3), None);
        assert_eq!(decode_segments(&b, usize::MAX), None);
    }

    #[test]
    fn address_round_trips_and_fits_a_pmi_value() {
        let a = Address {
            lid: 0x1234,
            port: 1,
            mtu: 5,
            link_layer: 2,
            rd_atomic: 16,
            recv_depth: 16,
            gid: [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8],
            psn: 0x00ab_cdef,
            credit_rkey: 77,
            size: 4096,
            credit_addr: 0x7fff_0000_1000,
        };
        let b = a.encode();
        assert_eq!(Address::decode(&b), Some(a));
        assert_eq!(Address::decode(&b[..ADDRESS_LEN - 1]), None);
        let mut magic = b;
        magic[0] = b'X';
        assert_eq!(Address::decode(&magic), None);
        const { assert!(2 * ADDRESS_LEN < 1024) };
    }

    #[test]
    fn qpn_chunks_name_each_peer_once_and_fit_a_pmi_value() {
        let qpns: Vec<u32> = (0..250).map(|i| 0x100 + i).collect();
        let mut seen = 0;
        for first in (0..250).step_by(QPN_PER_KEY as usize) {
            let end = (first + QPN_PER_KEY as usize).min(250);
            let v = encode_qpns(first as u32, &qpns[first..end]);
            assert!(2 * v.len() < 1024, "hex-encoded value fits vallen_max");
            for peer in 0..250u32 {
                let want = (first..end).contains(&(peer as usize));
                assert_eq!(qpn_for(&v, peer).is_some(), want);
                if want {
                    assert_eq!(qpn_for(&v, peer), Some(0x100 + peer));
                    assert_eq!(qpn_key(9, peer), format!("tessel.verbs.9.q{}", first / 100));
                    seen += 1;
                }
            }
        }
        assert_eq!(seen, 250);
        let v = encode_qpns(0, &[1, 2]);
        assert_eq!(qpn_for(&v[..v.len() - 1], 0), None);
        assert_eq!(qpn_for(b"TVQ1", 0), None);
    }
}

//! The plugin's messages on the wire, and the address card it publishes.
//!
//! Every message is one `fi_send` into a receive buffer the peer posted
//! (at most [`crate::context::SLOT_SIZE`] bytes). All integers are
//! little-endian. A 16-byte prefix comes first:
//!
//! ```text
//! 0      1        2             4            8             16
//! | kind | version | header_len | src rank   | payload len |
//! ```
//!
//! then, by kind:
//! - `EAGER` (1): the engine's header (`header_len` bytes), then the
//!   payload (`payload len` bytes);
//! - `RTS` (2): the header, then the sender's operation id (u64), the
//!   number of segments n (u32), 4 reserved bytes, and n segments of
//!   (remote address u64, key u64, length u64) whose lengths add up to the
//!   payload length: the receiver `fi_read`s them;
//! - `FIN` (3): no header; the length field holds the outcome (0 read,
//!   1 discarded, 2 the read failed), then the sender's operation id
//!   (u64): the receiver is done with the payload, the sender may
//!   deregister it.

/// Bytes before the engine's header.
pub const PREFIX_LEN: usize = 16;
/// Wire version in every prefix; a message of another version is dropped.
pub const VERSION: u8 = 1;
/// Bytes of one RTS segment.
pub const SEG_LEN: usize = 24;
/// Bytes an RTS adds after the header, before its segments.
pub const RTS_FIXED: usize = 16;
/// Bytes of a FIN.
pub const FIN_LEN: usize = PREFIX_LEN + 8;

const EAGER: u8 = 1;
const RTS: u8 = 2;
const FIN: u8 = 3;

/// A registered piece of a rendezvous payload, as the reader addresses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seg {
    /// Remote address (virtual, or 0-based under `FI_MR_VIRT_ADDR` off).
    pub addr: u64,
    /// Remote key of the registration.
    pub key: u64,
    /// Length in bytes.
    pub len: u64,
}

/// A message read from a receive buffer.
#[derive(Debug, PartialEq, Eq)]
pub enum Message<'a> {
    /// Header and payload inline.
    Eager {
        /// Sender's rank.
        src: u32,
        /// The engine's header.
        header: &'a [u8],
        /// The payload.
        data: &'a [u8],
    },
    /// A payload waiting at the sender.
    Rts {
        /// Sender's rank.
        src: u32,
        /// The engine's header.
        header: &'a [u8],
        /// Payload length.
        len: u64,
        /// The sender's operation, named again in the FIN.
        op: u64,
        /// Where to read the payload.
        segs: Vec<Seg>,
    },
    /// The receiver is done with a payload.
    Fin {
        /// Sender of the FIN (the receiver of the payload).
        src: u32,
        /// The operation of the RTS.
        op: u64,
        /// What the receiver did: `FIN_READ`, `FIN_DISCARDED`, `FIN_FAILED`.
        outcome: u64,
    },
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

/// Write the prefix into `out[..PREFIX_LEN]`.
fn put_prefix(out: &mut [u8], kind: u8, header_len: usize, src: u32, len: u64) {
    out[0] = kind;
    out[1] = VERSION;
    out[2..4].copy_from_slice(&(header_len as u16).to_le_bytes());
    out[4..8].copy_from_slice(&src.to_le_bytes());
    out[8..16].copy_from_slice(&len.to_le_bytes());
}

/// Write an EAGER prefix and header; the caller copies the `len`-byte
/// payload to the returned offset. `out` must hold prefix, header and
/// payload.
pub fn put_eager(out: &mut [u8], src: u32, header: &[u8], len: usize) -> usize {
    put_prefix(out, EAGER, header.len(), src, len as u64);
    let end = PREFIX_LEN + header.len();
    out[PREFIX_LEN..end].copy_from_slice(header);
    end
}

/// Bytes of an RTS with `header_len` bytes of header and `n` segments.
pub const fn rts_len(header_len: usize, n: usize) -> usize {
    PREFIX_LEN + header_len + RTS_FIXED + n * SEG_LEN
}

/// Write an RTS; returns its length.
pub fn put_rts(out: &mut [u8], src: u32, header: &[u8], len: u64, op: u64, segs: &[Seg]) -> usize {
    put_prefix(out, RTS, header.len(), src, len);
    let mut at = PREFIX_LEN;
    out[at..at + header.len()].copy_from_slice(header);
    at += header.len();
    out[at..at + 8].copy_from_slice(&op.to_le_bytes());
    out[at + 8..at + 12].copy_from_slice(&(segs.len() as u32).to_le_bytes());
    out[at + 12..at + 16].fill(0);
    at += RTS_FIXED;
    for s in segs {
        out[at..at + 8].copy_from_slice(&s.addr.to_le_bytes());
        out[at + 8..at + 16].copy_from_slice(&s.key.to_le_bytes());
        out[at + 16..at + 24].copy_from_slice(&s.len.to_le_bytes());
        at += SEG_LEN;
    }
    at
}

/// FIN outcome: the payload was read.
pub const FIN_READ: u64 = 0;
/// FIN outcome: the engine discarded the payload.
pub const FIN_DISCARDED: u64 = 1;
/// FIN outcome: reading the payload failed.
pub const FIN_FAILED: u64 = 2;

/// Write a FIN; returns its length.
pub fn put_fin(out: &mut [u8], src: u32, op: u64, outcome: u64) -> usize {
    put_prefix(out, FIN, 0, src, outcome);
    out[PREFIX_LEN..FIN_LEN].copy_from_slice(&op.to_le_bytes());
    FIN_LEN
}

/// Read a message of `buf` (exactly what arrived). Refuses anything
/// malformed: short, another version, a header over `max_header`, lengths
/// that do not add up.
pub fn parse(buf: &[u8], max_header: usize) -> Result<Message<'_>, &'static str> {
    if buf.len() < PREFIX_LEN {
        return Err("shorter than the prefix");
    }
    if buf[1] != VERSION {
        return Err("another wire version");
    }
    let header_len = usize::from(u16_at(buf, 2));
    let src = u32_at(buf, 4);
    let len = u64_at(buf, 8);
    if header_len > max_header {
        return Err("header over the limit");
    }
    let body = &buf[PREFIX_LEN..];
    match buf[0] {
        EAGER => {
            let total = (header_len as u64).checked_add(len);
            if total != Some(body.len() as u64) {
                return Err("eager lengths do not add up");
            }
            let (header, data) = body.split_at(header_len);
            Ok(Message::Eager { src, header, data })
        }
        RTS => {
            if body.len() < header_len + RTS_FIXED {
                return Err("short RTS");
            }
            let (header, rest) = body.split_at(header_len);
            let op = u64_at(rest, 0);
            let n = u32_at(rest, 8) as usize;
            let segs_bytes = &rest[RTS_FIXED..];
            if n.checked_mul(SEG_LEN) != Some(segs_bytes.len()) {
                return Err("RTS segment count does not match its length");
            }
            let segs: Vec<Seg> = segs_bytes
                .chunks_exact(SEG_LEN)
                .map(|c| Seg {
                    addr: u64_at(c, 0),
                    key: u64_at(c, 8),
                    len: u64_at(c, 16),
                })
                .collect();
            let sum = segs.iter().try_fold(0u64, |acc, s| acc.checked_add(s.len));
            if sum != Some(len) {
                return Err("RTS segments do not add up to its length");
            }
            Ok(Message::Rts {
                src,
                header,
                len,
                op,
                segs,
            })
        }
        FIN => {
            if header_len != 0 || body.len() != 8 {
                return Err("malformed FIN");
            }
            Ok(Message::Fin {
                src,
                op: u64_at(body, 0),
                outcome: len,
            })
        }
        _ => Err("unknown kind"),
    }
}

/// Magic of the address card.
const CARD_MAGIC: &[u8; 4] = b"OFI1";

/// The value published under `tessel.ofi.<rank>`: magic, the provider's
/// name (u16 length, bytes), then the endpoint's address. The provider's
/// name lets a peer that chose another provider refuse the address instead
/// of inserting bytes of a foreign format.
pub fn put_card(provider: &str, addr: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(6 + provider.len() + addr.len());
    v.extend_from_slice(CARD_MAGIC);
    v.extend_from_slice(&(provider.len() as u16).to_le_bytes());
    v.extend_from_slice(provider.as_bytes());
    v.extend_from_slice(addr);
    v
}

/// Read an address card: (provider, address).
pub fn parse_card(card: &[u8]) -> Option<(&str, &[u8])> {
    if card.len() < 6 || &card[..4] != CARD_MAGIC {
        return None;
    }
    let n = usize::from(u16_at(card, 4));
    let prov = card.get(6..6 + n)?;
    Some((std::str::from_utf8(prov).ok()?, &card[6 + n..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eager_round_trips() {
        let mut buf = [0u8; 64];
        let at = put_eager(&mut buf, 3, b"head", 5);
        buf[at..at + 5].copy_from_slice(b"hello");
        let m = parse(&buf[..at + 5], 64).unwrap();
        assert_eq!(
            m,
            Message::Eager {
                src: 3,
                header: b"head",
                data: b"hello"
            }
        );
    }

    #[test]
    fn rts_round_trips() {
        let segs = [
            Seg {
                addr: 0x1000,
                key: 7,
                len: 10,
            },
            Seg {
                addr: 0,
                key: 9,
                len: 22,
            },
        ];
        let mut buf = vec![0u8; rts_len(3, 2)];
        let n = put_rts(&mut buf, 1, b"hdr", 32, 0xabc, &segs);
        assert_eq!(n, buf.len());
        match parse(&buf, 64).unwrap() {
            Message::Rts {
                src,
                header,
                len,
                op,
                segs: s,
            } => {
                assert_eq!((src, header, len, op), (1, &b"hdr"[..], 32, 0xabc));
                assert_eq!(s, segs);
            }
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn fin_round_trips() {
        let mut buf = [0u8; FIN_LEN];
        put_fin(&mut buf, 0, 42, FIN_DISCARDED);
        assert_eq!(
            parse(&buf, 64).unwrap(),
            Message::Fin {
                src: 0,
                op: 42,
                outcome: FIN_DISCARDED
            }
        );
    }

    #[test]
    fn malformed_messages_are_refused() {
        assert!(parse(&[1, 1, 0], 64).is_err());
        let mut buf = [0u8; 40];
        let at = put_eager(&mut buf, 0, &[0; 8], 4);
        assert!(parse(&buf[..at + 3], 64).is_err(), "short payload");
        assert!(parse(&buf[..at + 4], 4).is_err(), "header over the limit");
        buf[1] = 9;
        assert!(parse(&buf[..at + 4], 64).is_err(), "other version");
        let mut rts = vec![0u8; rts_len(0, 1)];
        put_rts(
            &mut rts,
            0,
            &[],
            5,
            1,
            &[Seg {
                addr: 0,
                key: 0,
                len: 4,
            }],
        );
        assert!(parse(&rts, 64).is_err(), "segments do not add up");
        assert!(parse(&rts[..rts.len() - 1], 64).is_err(), "cut segment");
        let mut fin = [0u8; FIN_LEN];
        put_fin(&mut fin, 0, 1, FIN_READ);
        fin[0] = 77;
        assert!(parse(&fin, 64).is_err(), "unknown kind");
    }

    #[test]
    fn card_round_trips() {
        let c = put_card("tcp;ofi_rxm", &[1, 2, 3]);
        assert_eq!(parse_card(&c), Some(("tcp;ofi_rxm", &[1u8, 2, 3][..])));
        assert_eq!(parse_card(b"OFI1\xff\x00ab"), None);
        assert_eq!(parse_card(b"nope"), None);
    }
}

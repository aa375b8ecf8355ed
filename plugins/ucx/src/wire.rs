//! The plugin's own prefix of every active message header.
//!
//! UCX hands an active message to the receive handler without saying who
//! sent it (only a reply endpoint, and only when the sender asks for one),
//! so the sender's rank travels in a fixed 8-byte prefix in front of the
//! engine's header:
//!
//! ```text
//! byte 0..2  magic "TU"
//! byte 2     wire version (1)
//! byte 3     reserved, zero
//! byte 4..8  sender's rank, u32 little-endian
//! byte 8..   the engine's header, as given to `send`
//! ```
//!
//! A message whose prefix is short, has another magic or version, or names
//! a rank outside the job is dropped (it cannot come from this job's
//! plugin).

/// Bytes of the prefix.
pub(crate) const PREFIX_LEN: usize = 8;
const MAGIC: [u8; 2] = *b"TU";
const VERSION: u8 = 1;

/// The prefix for a message sent by `rank`.
pub(crate) fn prefix(rank: u32) -> [u8; PREFIX_LEN] {
    let r = rank.to_le_bytes();
    [MAGIC[0], MAGIC[1], VERSION, 0, r[0], r[1], r[2], r[3]]
}

/// Split an arrived header into the sender's rank and the engine's header;
/// `None` when the prefix is not ours or names no rank of a job of `size`.
pub(crate) fn split(header: &[u8], size: u32) -> Option<(u32, &[u8])> {
    if header.len() < PREFIX_LEN || header[..2] != MAGIC || header[2] != VERSION {
        return None;
    }
    let rank = u32::from_le_bytes(header[4..8].try_into().ok()?);
    (rank < size).then(|| (rank, &header[PREFIX_LEN..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_round_trips() {
        let mut h = prefix(7).to_vec();
        h.extend_from_slice(b"engine");
        assert_eq!(split(&h, 8), Some((7, &b"engine"[..])));
        assert_eq!(split(&prefix(0), 1), Some((0, &[][..])));
    }

    #[test]
    fn foreign_headers_are_refused() {
        assert_eq!(split(b"TU", 8), None);
        assert_eq!(split(&prefix(8), 8), None);
        let mut h = prefix(1);
        h[2] = 2;
        assert_eq!(split(&h, 8), None);
        h = prefix(1);
        h[0] = b'X';
        assert_eq!(split(&h, 8), None);
    }
}

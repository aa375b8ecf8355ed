//! The control messages of the node segment's rings, typed. Each kind's
//! fields are named once, here: [`Control::encode`] writes them into a
//! [`Cell`] and [`Control::decode`] reads a peer's cell back, checking what
//! a corrupt cell could get wrong. Nothing else fills or reads cell words
//! ([`crate::layout::CellKind`] documents the same layout for readers of
//! the segment).

use crate::heap::HeapRef;
use crate::layout::{Cell, CellKind, INLINE_CAPACITY};

/// A rendezvous offer, as its RTS cell names it.
#[derive(Clone, Copy, Debug)]
pub(in crate::endpoint) struct Rts {
    /// Local index of the sender (the ring it came on).
    pub(in crate::endpoint) from: u32,
    pub(in crate::endpoint) tag: u64,
    pub(in crate::endpoint) size: usize,
    pub(in crate::endpoint) sreq: u64,
    /// The sender's buffer (`pieces == 0`) or its list of pieces.
    pub(in crate::endpoint) addr: u64,
    pub(in crate::endpoint) pieces: u64,
    pub(in crate::endpoint) pid: u32,
    /// Where the contiguous buffer lies in the sender's shared heap.
    pub(in crate::endpoint) heap: Option<HeapRef>,
}

/// A landing buffer a receiver lends its sender for one later large
/// message.
#[derive(Clone, Copy, Debug)]
pub(in crate::endpoint) struct Grant {
    pub(super) id: u64,
    pub(super) cap: usize,
    pub(super) at: HeapRef,
}

/// One control message. `ack` names the sender's request of a
/// synchronous send, which the receiver acknowledges at the match.
#[derive(Clone, Copy, Debug)]
pub(in crate::endpoint) enum Control<'a> {
    /// A whole message inside the cell.
    Inline {
        tag: u64,
        data: &'a [u8],
        ack: Option<u64>,
    },
    /// A whole message of `len` bytes in the pair's staging slot `slot`.
    Eager {
        tag: u64,
        slot: u64,
        len: usize,
        ack: Option<u64>,
    },
    /// Request to send.
    Rts(Rts),
    /// The receiver is done with sender request `sreq`.
    Fin { sreq: u64 },
    /// The synchronous send `sreq` matched.
    Ack { sreq: u64 },
    /// Cooperative rendezvous: take chunks of send `sreq` from the
    /// receiver's steal queue (its transfer slot `slot`).
    Cts { sreq: u64, slot: u64 },
    /// Stream send `sreq` through staging to receive `rreq`.
    CtsPipeline { sreq: u64, rreq: u64 },
    /// Bytes `off..off+len` of receive `rreq`, in staging slot `slot`.
    Chunk {
        rreq: u64,
        off: usize,
        slot: u64,
        len: usize,
    },
    /// A landing buffer lent to the sender.
    Grant(Grant),
    /// A whole message of `size` bytes written into the buffer of grant
    /// `grant`.
    Put { grant: u64, tag: u64, size: usize },
}

/// A cell that no correct peer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(in crate::endpoint) struct Corrupt {
    pub(super) kind: u32,
}

/// The sender's request of a synchronous inline or eager message, as word
/// `c` carries it (0: not synchronous).
fn ack_word(ack: Option<u64>) -> u64 {
    ack.map_or(0, |sreq| sreq + 1)
}

fn ack_of(c: u64) -> Option<u64> {
    (c != 0).then(|| c - 1)
}

/// Name a shared-heap buffer in payload words 1-4 (its owner's pid goes
/// in `c`).
fn set_heap_ref(cell: &mut Cell, r: &HeapRef) {
    cell.c = u64::from(r.pid);
    cell.set_word(1, 1);
    cell.set_word(2, u64::from(r.fd));
    cell.set_word(3, r.arena_len);
    cell.set_word(4, r.offset);
}

/// The shared-heap buffer a cell names (see [`set_heap_ref`]), if any.
fn heap_ref(cell: &Cell) -> Option<HeapRef> {
    (cell.word(1) == 1).then(|| HeapRef {
        pid: cell.c as u32,
        fd: cell.word(2) as u32,
        arena_len: cell.word(3),
        offset: cell.word(4),
    })
}

/// An inline cell for `len` bytes, whose payload the caller gathers into
/// `cell.payload[..len]` (`len <= INLINE_CAPACITY`).
pub(super) fn inline(tag: u64, len: usize, ack: Option<u64>) -> Cell {
    debug_assert!(len <= INLINE_CAPACITY);
    let mut cell = Cell::new(CellKind::Inline);
    cell.tag = tag;
    cell.size = len as u64;
    cell.len = len as u32;
    cell.c = ack_word(ack);
    cell
}

impl Control<'_> {
    /// The cell for this message. An inline message's payload is the
    /// caller's to gather (see [`inline`]).
    pub(super) fn encode(&self) -> Cell {
        match *self {
            Self::Inline { tag, data, ack } => {
                let mut cell = inline(tag, data.len(), ack);
                crate::copy::slice(&mut cell.payload[..data.len()], data);
                cell
            }
            Self::Eager {
                tag,
                slot,
                len,
                ack,
            } => {
                let mut cell = Cell::new(CellKind::Eager);
                cell.tag = tag;
                cell.size = len as u64;
                cell.len = len as u32;
                cell.a = slot;
                cell.c = ack_word(ack);
                cell
            }
            Self::Rts(r) => {
                let mut cell = Cell::new(CellKind::Rts);
                cell.tag = r.tag;
                cell.size = r.size as u64;
                cell.a = r.sreq;
                cell.b = r.addr;
                cell.set_rts_pieces(r.pieces);
                if let Some(h) = &r.heap {
                    set_heap_ref(&mut cell, h);
                }
                cell.c = u64::from(r.pid);
                cell
            }
            Self::Fin { sreq } => words(CellKind::Fin, sreq, 0, 0),
            Self::Ack { sreq } => words(CellKind::Ack, sreq, 0, 0),
            Self::Cts { sreq, slot } => words(CellKind::Cts, sreq, slot, 0),
            Self::CtsPipeline { sreq, rreq } => words(CellKind::CtsPipeline, sreq, rreq, 0),
            Self::Chunk {
                rreq,
                off,
                slot,
                len,
            } => {
                let mut cell = words(CellKind::Chunk, rreq, off as u64, slot);
                cell.len = len as u32;
                cell
            }
            Self::Grant(g) => {
                let mut cell = words(CellKind::Grant, g.id, g.cap as u64, 0);
                set_heap_ref(&mut cell, &g.at);
                cell
            }
            Self::Put { grant, tag, size } => {
                let mut cell = words(CellKind::Put, grant, 0, 0);
                cell.tag = tag;
                cell.size = size as u64;
                cell
            }
        }
    }
}

fn words(kind: CellKind, a: u64, b: u64, c: u64) -> Cell {
    let mut cell = Cell::new(kind);
    cell.a = a;
    cell.b = b;
    cell.c = c;
    cell
}

impl<'a> Control<'a> {
    /// Read a cell that came from local peer `from`.
    pub(super) fn decode(from: u32, cell: &'a Cell) -> Result<Self, Corrupt> {
        let corrupt = Corrupt { kind: cell.kind };
        Ok(match CellKind::from_u32(cell.kind).ok_or(corrupt)? {
            CellKind::Inline => Self::Inline {
                tag: cell.tag,
                data: cell.payload.get(..cell.len as usize).ok_or(corrupt)?,
                ack: ack_of(cell.c),
            },
            CellKind::Eager => Self::Eager {
                tag: cell.tag,
                slot: cell.a,
                len: cell.len as usize,
                ack: ack_of(cell.c),
            },
            CellKind::Rts => Self::Rts(Rts {
                from,
                tag: cell.tag,
                size: cell.size as usize,
                sreq: cell.a,
                addr: cell.b,
                pieces: cell.rts_pieces(),
                pid: cell.c as u32,
                heap: heap_ref(cell),
            }),
            CellKind::Fin => Self::Fin { sreq: cell.a },
            CellKind::Ack => Self::Ack { sreq: cell.a },
            CellKind::Cts => Self::Cts {
                sreq: cell.a,
                slot: cell.b,
            },
            CellKind::CtsPipeline => Self::CtsPipeline {
                sreq: cell.a,
                rreq: cell.b,
            },
            CellKind::Chunk => Self::Chunk {
                rreq: cell.a,
                off: cell.b as usize,
                slot: cell.c,
                len: cell.len as usize,
            },
            CellKind::Grant => Self::Grant(Grant {
                id: cell.a,
                cap: cell.b as usize,
                at: heap_ref(cell).ok_or(corrupt)?,
            }),
            CellKind::Put => Self::Put {
                grant: cell.a,
                tag: cell.tag,
                size: cell.size as usize,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(c: Control<'_>) -> String {
        let cell = c.encode();
        format!("{:?}", Control::decode(3, &cell).expect("decodes"))
    }

    #[test]
    fn every_kind_decodes_to_what_was_encoded() {
        let at = HeapRef {
            pid: 77,
            fd: 9,
            arena_len: 1 << 20,
            offset: 4096,
        };
        let rts = Rts {
            from: 3,
            tag: 5,
            size: 1 << 20,
            sreq: 41,
            addr: 0xdead_beef,
            pieces: 3,
            pid: 77,
            heap: Some(at),
        };
        let all = [
            Control::Inline {
                tag: 1,
                data: b"abc",
                ack: Some(0),
            },
            Control::Eager {
                tag: 2,
                slot: 9,
                len: 100,
                ack: None,
            },
            Control::Rts(rts),
            Control::Rts(Rts { heap: None, ..rts }),
            Control::Fin { sreq: 7 },
            Control::Ack { sreq: 8 },
            Control::Cts { sreq: 9, slot: 2 },
            Control::CtsPipeline { sreq: 10, rreq: 11 },
            Control::Chunk {
                rreq: 12,
                off: 4096,
                slot: 5,
                len: 512,
            },
            Control::Grant(Grant {
                id: 13,
                cap: 1 << 16,
                at,
            }),
            Control::Put {
                grant: 14,
                tag: 15,
                size: 1000,
            },
        ];
        for c in all {
            assert_eq!(round_trip(c), format!("{c:?}"));
        }
    }

    #[test]
    fn corrupt_cells_are_refused() {
        let mut cell = Cell::new(CellKind::Inline);
        cell.kind = 99;
        assert_eq!(Control::decode(0, &cell).unwrap_err(), Corrupt { kind: 99 });
        let mut cell = Cell::new(CellKind::Inline);
        cell.len = INLINE_CAPACITY as u32 + 1;
        assert!(Control::decode(0, &cell).is_err());
        // A grant must say where its buffer is.
        let cell = Cell::new(CellKind::Grant);
        assert!(Control::decode(0, &cell).is_err());
    }
}

//! The rendezvous read plan: which RDMA READs move a payload from the
//! sender's registered segments into the engine's buffer pieces.
//!
//! Both sides are lists of `(address, length, key)` pieces of the same
//! total; the plan walks them together and emits one READ per stretch
//! where neither side's piece ends, cut further at the port's
//! `max_msg_sz`. Each READ has one local scatter entry, so the device's
//! `max_sge` never matters. Invariant: the chunks cover both lists
//! exactly once, in order.

/// A registered piece: remote (`key` is an rkey) or local (an lkey).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Piece {
    pub(crate) addr: u64,
    pub(crate) len: u64,
    pub(crate) key: u32,
}

/// One RDMA READ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Chunk {
    pub(crate) remote_addr: u64,
    pub(crate) rkey: u32,
    pub(crate) local_addr: u64,
    pub(crate) lkey: u32,
    pub(crate) len: u32,
}

/// The two sides do not hold the same number of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mismatch {
    pub(crate) remote: u64,
    pub(crate) local: u64,
}

/// The READs that copy `remote` into `local`, none longer than
/// `max_chunk` (at least 1, at most `u32::MAX`).
pub(crate) fn plan(
    remote: &[Piece],
    local: &[Piece],
    max_chunk: u64,
) -> Result<Vec<Chunk>, Mismatch> {
    let total = |p: &[Piece]| p.iter().map(|x| x.len).sum::<u64>();
    let (rt, lt) = (total(remote), total(local));
    if rt != lt {
        return Err(Mismatch {
            remote: rt,
            local: lt,
        });
    }
    let max_chunk = max_chunk.clamp(1, u64::from(u32::MAX));
    let mut out = Vec::new();
    let (mut ri, mut li) = (0, 0);
    let (mut roff, mut loff) = (0u64, 0u64);
    loop {
        // Skip finished (or empty) pieces on both sides.
        while ri < remote.len() && roff == remote[ri].len {
            ri += 1;
            roff = 0;
        }
        while li < local.len() && loff == local[li].len {
            li += 1;
            loff = 0;
        }
        if ri == remote.len() || li == local.len() {
            break;
        }
        let (r, l) = (remote[ri], local[li]);
        let n = (r.len - roff).min(l.len - loff).min(max_chunk);
        out.push(Chunk {
            remote_addr: r.addr + roff,
            rkey: r.key,
            local_addr: l.addr + loff,
            lkey: l.key,
            len: n as u32,
        });
        roff += n;
        loff += n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(addr: u64, len: u64, key: u32) -> Piece {
        Piece { addr, len, key }
    }

    #[test]
    fn one_piece_each_is_one_read() {
        let c = plan(&[p(1000, 64, 7)], &[p(5000, 64, 9)], 1 << 30).unwrap();
        assert_eq!(
            c,
            [Chunk {
                remote_addr: 1000,
                rkey: 7,
                local_addr: 5000,
                lkey: 9,
                len: 64
            }]
        );
    }

    #[test]
    fn pieces_are_cut_where_either_side_ends() {
        // remote: 10 + 20; local: 5 + 25 (+ an empty piece).
        let r = [p(100, 10, 1), p(200, 20, 2)];
        let l = [p(1000, 5, 3), p(2000, 0, 4), p(3000, 25, 5)];
        let c = plan(&r, &l, u64::MAX).unwrap();
        let got: Vec<_> = c
            .iter()
            .map(|c| (c.remote_addr, c.rkey, c.local_addr, c.lkey, c.len))
            .collect();
        assert_eq!(
            got,
            [
                (100, 1, 1000, 3, 5),
                (105, 1, 3000, 5, 5),
                (200, 2, 3005, 5, 20)
            ]
        );
    }

    #[test]
    fn long_stretches_are_cut_at_the_message_limit() {
        let c = plan(&[p(0, 10, 1)], &[p(50, 10, 2)], 4).unwrap();
        let lens: Vec<u32> = c.iter().map(|c| c.len).collect();
        assert_eq!(lens, [4, 4, 2]);
        assert_eq!(c[2].remote_addr, 8);
        assert_eq!(c[2].local_addr, 58);
    }

    #[test]
    fn the_plan_covers_every_byte_once() {
        let r: Vec<Piece> = [3u64, 0, 17, 1, 40]
            .iter()
            .scan(0, |a, &n| {
                let x = p(*a, n, 1);
                *a += n + 1000;
                Some(x)
            })
            .collect();
        let l: Vec<Piece> = [11u64, 11, 11, 28]
            .iter()
            .scan(1 << 40, |a, &n| {
                let x = p(*a, n, 2);
                *a += n + 7;
                Some(x)
            })
            .collect();
        let c = plan(&r, &l, 6).unwrap();
        let total: u64 = c.iter().map(|c| u64::from(c.len)).sum();
        assert_eq!(total, 61);
        assert!(c.iter().all(|c| c.len > 0 && c.len <= 6));
        // Every remote byte lands once, in order.
        let bytes = |pieces: &[Piece]| -> Vec<u64> {
            pieces.iter().flat_map(|p| p.addr..p.addr + p.len).collect()
        };
        let from: Vec<u64> = c
            .iter()
            .flat_map(|c| c.remote_addr..c.remote_addr + u64::from(c.len))
            .collect();
        let to: Vec<u64> = c
            .iter()
            .flat_map(|c| c.local_addr..c.local_addr + u64::from(c.len))
            .collect();
        assert_eq!(from, bytes(&r));
        assert_eq!(to, bytes(&l));
    }

    #[test]
    fn different_totals_are_refused() {
        assert_eq!(
            plan(&[p(0, 10, 1)], &[p(0, 9, 1)], 100),
            Err(Mismatch {
                remote: 10,
                local: 9
            })
        );
        assert_eq!(plan(&[], &[], 100), Ok(vec![]));
    }
}

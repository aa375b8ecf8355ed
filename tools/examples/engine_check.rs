//! Multi-process conformance checks of the engine, run through `mpiexec` by
//! `tools/tests/engine.rs`. Each case prints `engine_check CASE: ok` on
//! every rank and exits 0, or names the failure and exits 1.
//!
//! Cases: `protocols` (every protocol, 0 B .. 16 MiB, checksummed, exact
//! and wildcard sources), `ordering` (non-overtaking across protocols,
//! wildcards, tag masks), `errors` (truncation, invalid peers),
//! `nodes` (with `--ppn`: every rank sends to every rank and wildcard
//! receives take them from every node, then receives posted without a
//! buffer take messages from the ring neighbour; without a network plugin, sends to
//! other nodes are refused with a typed error),
//! `probes` (synchronous sends complete only after the match; probes and
//! matched probes from any source; cancel of a posted receive),
//! `pieces` (every protocol size sent from a list of pieces into a list
//! split differently, checksummed, gaps untouched, also truncated),
//! `stealing` (ranks 0 and 1 exchange large messages round after round
//! while the other ranks idle and may help copy, then every rank sends to
//! every other; checksummed; each receive counted under the protocol
//! `TESSEL_RNDV` forces), `die` (rank 1 is killed while the others wait
//! for it).

use std::process::ExitCode;

use shm_engine::stats::Protocol;
use shm_engine::{Endpoint, Error, Piece, RndvMode, SharedVec, Source, TagMatch, bootstrap};

type Res = Result<(), Box<dyn std::error::Error>>;

const SIZES: [usize; 12] = [
    0,
    1,
    71,
    72,
    73,
    1000,
    16384,
    16385,
    65536,
    (1 << 20) + 3,
    4 << 20,
    16 << 20,
];

/// Bytes that depend on (sender, size): a receiver can verify every byte.
fn fill(buf: &mut [u8], sender: u32, size: usize) {
    let mut x = (u64::from(sender) << 40 | size as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for b in buf.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *b = x as u8;
    }
}

fn expected(sender: u32, size: usize) -> Vec<u8> {
    let mut v = vec![0; size];
    fill(&mut v, sender, size);
    v
}

/// Post a receive and wait for it.
fn take(
    ep: &mut Endpoint,
    src: Source,
    tag: TagMatch,
    cap: usize,
) -> Result<shm_engine::Completion, Error> {
    let r = ep.irecv(src, tag, cap)?;
    ep.wait(r)
}

fn ensure(cond: bool, what: impl FnOnce() -> String) -> Res {
    if cond { Ok(()) } else { Err(what().into()) }
}

/// Each rank sends every size to its right neighbour; half the receives
/// name the source, half use a wildcard.
fn protocols(ep: &mut Endpoint) -> Res {
    let (me, n) = (ep.rank(), ep.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    for (i, &size) in SIZES.iter().enumerate() {
        let src = if i % 2 == 0 {
            Source::Rank(prev)
        } else {
            Source::Any
        };
        let r = ep.irecv(src, TagMatch::exact(size as u64), size)?;
        let s = ep.isend(next, size as u64, expected(me, size))?;
        let got = ep.wait(r)?;
        ep.wait(s)?;
        ensure(got.status.source == prev && got.status.len == size, || {
            format!("size {size}: status {:?}", got.status)
        })?;
        ensure(
            got.data.as_deref() == Some(&expected(prev, size)[..]),
            || format!("size {size}: payload from {prev} corrupt"),
        )?;
    }
    // Blocking calls with borrowed buffers, and a message to oneself.
    let mut buf = vec![0u8; 100_000];
    let r = ep.irecv(Source::Rank(me), TagMatch::exact(1), 100_000)?;
    ep.send(me, 1, &expected(me, 100_000))?;
    ensure(ep.wait(r)?.data.unwrap() == expected(me, 100_000), || {
        "self-send".into()
    })?;
    if n > 1 {
        let peer = me ^ 1;
        if peer < n {
            if me % 2 == 0 {
                ep.send(peer, 2, &expected(me, 70_000))?;
                let st = ep.recv(Source::Rank(peer), TagMatch::exact(2), &mut buf)?;
                ensure(
                    st.len == 70_000 && buf[..70_000] == expected(peer, 70_000),
                    || "blocking exchange".into(),
                )?;
            } else {
                let st = ep.recv(Source::Rank(peer), TagMatch::exact(2), &mut buf)?;
                ensure(
                    st.len == 70_000 && buf[..70_000] == expected(peer, 70_000),
                    || "blocking exchange".into(),
                )?;
                ep.send(peer, 2, &expected(me, 70_000))?;
            }
        }
    }
    Ok(())
}

/// Rank 0 receives from everyone with wildcards; messages of one sender
/// with matching tags arrive in send order whatever their protocol.
fn ordering(ep: &mut Endpoint) -> Res {
    let (me, n) = (ep.rank(), ep.size());
    const PER: u64 = 30;
    let size_of = |seq: u64| [8usize, 500, 9000, 40_000, 200_000][(seq % 5) as usize];
    let ctx: u64 = 0xabc << 32;
    if me != 0 {
        let mut reqs = Vec::new();
        for seq in 0..PER {
            let mut msg = vec![0u8; size_of(seq)];
            msg[..8].copy_from_slice(&seq.to_le_bytes());
            let tag = ctx | (seq % 3);
            // Inline and eager messages go at once where they can, as the
            // MPI layer sends them; the rest (rendezvous, or no ring room
            // or staging slot free) take a request. The order holds
            // across both.
            let piece = [Piece::new(msg.as_mut_ptr(), msg.len())];
            // SAFETY: `msg` is readable during the call.
            if unsafe { ep.try_send_iov_now(0, tag, &piece)? } {
                continue;
            }
            reqs.push(ep.isend(0, tag, msg)?);
        }
        // A tag outside the context: must not match rank 0's masked receives.
        reqs.push(ep.isend(0, 0xdef << 32, vec![9; 16])?);
        for r in reqs {
            ep.wait(r)?;
        }
    } else {
        let mut next = vec![0u64; n as usize];
        let in_ctx = TagMatch::masked(ctx, 0xffff_ffff << 32);
        for _ in 0..PER * u64::from(n - 1) {
            let got = take(ep, Source::Any, in_ctx, 1 << 20)?;
            let data = got.data.unwrap();
            let src = got.status.source as usize;
            let seq = u64::from_le_bytes(data[..8].try_into()?);
            ensure(seq == next[src], || {
                format!("from {src}: got seq {seq}, expected {}", next[src])
            })?;
            ensure(
                got.status.tag == ctx | (seq % 3) && data.len() == size_of(seq),
                || format!("from {src}: wrong tag or size for seq {seq}"),
            )?;
            next[src] += 1;
        }
        for src in 1..n {
            let got = take(ep, Source::Rank(src), TagMatch::any(), 64)?;
            ensure(got.status.tag == 0xdef << 32, || {
                "outside-context message".into()
            })?;
        }
    }
    // Selective receive: a later tag is taken before an earlier one.
    if n > 1 && me < 2 {
        let peer = 1 - me;
        if me == 0 {
            // Both sends must be in flight: the peer takes tag 11 first, and
            // a blocking rendezvous send of tag 10 would wait for it forever.
            let reqs =
                [10u64, 11].map(|tag| ep.isend(peer, tag, expected(me, 50_000 + tag as usize)));
            for r in reqs {
                ep.wait(r?)?;
            }
        } else {
            let second = take(ep, Source::Rank(peer), TagMatch::exact(11), 1 << 20)?;
            let first = take(ep, Source::Rank(peer), TagMatch::exact(10), 1 << 20)?;
            ensure(
                second.data.unwrap() == expected(peer, 50_011)
                    && first.data.unwrap() == expected(peer, 50_010),
                || "selective receive".into(),
            )?;
        }
    }
    Ok(())
}

/// Every rank but 0 sends rank 0 a synchronous message of each protocol.
/// Rank 0 probes until all have arrived, then lets the senders check that
/// none of their sends completed (nothing matched yet), then takes the
/// messages with matched probes from any source and receives them.
fn probes(ep: &mut Endpoint) -> Res {
    const SIZES: [usize; 4] = [0, 72, 16384, (1 << 20) + 3];
    const PROBED: u64 = 1000;
    const CHECKED: u64 = 1001;
    let (me, n) = (ep.rank(), ep.size());
    if me != 0 {
        let mut sends = Vec::new();
        for (k, &size) in SIZES.iter().enumerate() {
            sends.push(ep.issend(0, k as u64, expected(me, size))?);
        }
        ep.recv(Source::Rank(0), TagMatch::exact(PROBED), &mut [0u8; 0])?;
        for (s, size) in sends.iter().zip(SIZES) {
            ensure(!ep.test(s), || {
                format!("{size}-byte synchronous send completed before its match")
            })?;
        }
        ep.send(0, CHECKED, &[])?;
        for s in sends {
            ep.wait(s)?;
        }
        return Ok(());
    }
    for src in 1..n {
        for (k, &size) in SIZES.iter().enumerate() {
            let st = ep.probe(Source::Rank(src), TagMatch::exact(k as u64));
            ensure(st.source == src && st.len == size, || {
                format!("probe from {src}: {st:?}, expected {size} bytes")
            })?;
        }
        ep.send(src, PROBED, &[])?;
    }
    for src in 1..n {
        ep.recv(Source::Rank(src), TagMatch::exact(CHECKED), &mut [0u8; 0])?;
    }
    for _ in 0..(n - 1) as usize * SIZES.len() {
        let (st, msg) = ep.mprobe(Source::Any, TagMatch::any());
        let size = SIZES[st.tag as usize];
        ensure(st.len == size, || format!("mprobe: {st:?}"))?;
        let mut buf = vec![0u8; st.len];
        ep.mrecv(msg, &mut buf)?;
        ensure(buf == expected(st.source, size), || {
            format!("{size} bytes from {} corrupted", st.source)
        })?;
    }
    ensure(ep.iprobe(Source::Any, TagMatch::any()).is_none(), || {
        "a message too many".into()
    })?;
    let r = ep.irecv(Source::Any, TagMatch::any(), 8)?;
    ensure(ep.cancel(&r), || "cancel of a posted receive failed".into())?;
    ensure(ep.wait(r)?.status.cancelled, || "not cancelled".into())?;
    Ok(())
}

fn errors(ep: &mut Endpoint) -> Res {
    let (me, n) = (ep.rank(), ep.size());
    let bad = ep.isend(n, 0, vec![1]);
    ensure(
        matches!(bad, Err(Error::InvalidPeer { peer, size }) if peer == n && size == n),
        || format!("send to {n}: {bad:?}"),
    )?;
    let bad = ep.irecv(Source::Rank(n + 5), TagMatch::any(), 8);
    ensure(matches!(bad, Err(Error::InvalidPeer { .. })), || {
        format!("recv from {}: {bad:?}", n + 5)
    })?;
    if n < 2 || me > 1 {
        return Ok(());
    }
    for size in [100usize, 5000, 3 << 20] {
        if me == 1 {
            ep.send(0, 7, &expected(1, size))?;
        } else {
            let mut small = vec![0u8; 10];
            let got = ep.recv(Source::Any, TagMatch::exact(7), &mut small);
            ensure(
                got == Err(Error::Truncated {
                    source: 1,
                    tag: 7,
                    incoming: size,
                    capacity: 10,
                }),
                || format!("truncated {size}: {got:?}"),
            )?;
            ensure(small == expected(1, size)[..10], || {
                "truncated prefix".into()
            })?;
        }
    }
    // The engine keeps working after a truncation.
    if me == 1 {
        ep.send(0, 8, b"still alive")?;
    } else {
        let got = take(ep, Source::Rank(1), TagMatch::exact(8), 64)?;
        ensure(got.data.as_deref() == Some(&b"still alive"[..]), || {
            "after truncation".into()
        })?;
    }
    Ok(())
}

/// With `--ppn`: every rank sends to every rank. With a network plugin
/// every send arrives, and one wildcard receive per peer takes messages
/// from this node and from others alike; without one (`TESSEL_NET=none`)
/// sends to other nodes are refused with a typed error.
fn nodes(ep: &mut Endpoint) -> Res {
    let (me, n) = (ep.rank(), ep.size());
    ensure(ep.local_size() < n, || {
        "expected several nodes: run with --ppn".into()
    })?;
    let net = ep.network().is_some();
    let mut sends = Vec::new();
    let mut senders = 0;
    for r in 0..n {
        let same = ep.bootstrap().node_of(r) == ep.node();
        match (
            same || net,
            ep.isend(r, 3, vec![me as u8; 100 + me as usize]),
        ) {
            (true, Ok(req)) => {
                sends.push(req);
                senders += 1;
            }
            (false, Err(Error::Unreachable { peer })) if peer == r => {}
            (reachable, res) => {
                return Err(format!("send to {r} (reachable: {reachable}): {res:?}").into());
            }
        }
    }
    // Every process that can reach us sent one message (the same count
    // as we sent, by symmetry of the node split).
    let mut from = Vec::new();
    for _ in 0..senders {
        let got = take(ep, Source::Any, TagMatch::exact(3), 1000)?;
        let s = got.status.source;
        ensure(got.data.unwrap() == vec![s as u8; 100 + s as usize], || {
            format!("payload from {s}")
        })?;
        from.push(s);
    }
    for s in sends {
        ep.wait(s)?;
    }
    from.sort_unstable();
    let want: Vec<u32> = (0..n)
        .filter(|&r| net || ep.bootstrap().node_of(r) == ep.node())
        .collect();
    ensure(from == want, || {
        format!("messages from {from:?}, want {want:?}")
    })?;
    if net {
        // Receives posted without a buffer, from the neighbour on the ring
        // (on another node where the split puts it): the engine gives each
        // a buffer of the message's size at the match.
        let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
        for (k, size) in [100, 70_000, (1 << 20) + 5].into_iter().enumerate() {
            let tag = 10 + k as u64;
            let r = ep.irecv_managed(Source::Rank(prev), TagMatch::exact(tag), size)?;
            let s = ep.isend(next, tag, expected(me, size))?;
            let got = ep.wait(r)?;
            ep.wait(s)?;
            let buf = got
                .buffer
                .ok_or("a managed receive came back without a buffer")?;
            ensure(buf.as_slice() == &expected(prev, size)[..], || {
                format!("managed receive of {size} bytes from {prev}: payload corrupt")
            })?;
        }
    }
    Ok(())
}

/// Ranges of a buffer holding `want` bytes in all: lengths from `lens`
/// (cycled, the last cut short), each followed by `gap` unused bytes.
fn cut(lens: &[usize], gap: usize, want: usize) -> Vec<(usize, usize)> {
    let (mut at, mut left, mut out) = (0, want, Vec::new());
    for &n in lens.iter().cycle() {
        if left == 0 {
            break;
        }
        let n = n.min(left);
        out.push((at, n));
        (at, left) = (at + n + gap, left - n);
    }
    out
}

/// The pieces of `buf` at `ranges`.
fn pieces_of(buf: &mut [u8], ranges: &[(usize, usize)]) -> Vec<Piece> {
    ranges
        .iter()
        .map(|&(at, n)| Piece::new(buf[at..at + n].as_mut_ptr(), n))
        .collect()
}

/// A buffer long enough for `ranges`, filled with `byte`.
fn spread(ranges: &[(usize, usize)], byte: u8) -> Vec<u8> {
    vec![byte; ranges.last().map_or(0, |&(at, n)| at + n + 8)]
}

const GAP: u8 = 0xee;

/// Each rank sends every size to its right neighbour from pieces split
/// one way into pieces split another way; odd sizes are sent before the
/// receive is posted, so they may arrive unexpected. Then one
/// rendezvous into too few pieces: truncated, only what fits written.
fn pieces(ep: &mut Endpoint) -> Res {
    let (me, n) = (ep.rank(), ep.size());
    let (next, prev) = ((me + 1) % n, (me + n - 1) % n);
    // Sender's piece lengths and gap (short gaps are read across by a
    // CMA receiver, long ones are not), receiver's piece lengths.
    let splits: [(&[usize], usize, &[usize]); 3] = [
        (&[1, 4096, 0, 333], 3, &[1024]),
        (&[65536, 7], 5000, &[7, 0, 70_000, 13]),
        (&[20], 3, &[1 << 20]),
    ];
    for (i, &size) in SIZES.iter().enumerate() {
        let (slens, gap, rlens) = splits[i % splits.len()];
        let (sr, rr) = (cut(slens, gap, size), cut(rlens, 5, size));
        let mut src = spread(&sr, GAP);
        let data = expected(me, size);
        let mut at = 0;
        for &(o, k) in &sr {
            src[o..o + k].copy_from_slice(&data[at..at + k]);
            at += k;
        }
        let mut dst = spread(&rr, GAP);
        let (sp, rp) = (pieces_of(&mut src, &sr), pieces_of(&mut dst, &rr));
        let tag = TagMatch::exact(size as u64);
        // SAFETY: `src` and `dst` outlive both requests: we wait for them
        // below, before either buffer is touched or dropped.
        let (r, s) = unsafe {
            if size % 2 == 1 {
                let s = ep.isend_iov_raw(next, size as u64, &sp)?;
                (ep.irecv_iov_raw(Source::Rank(prev), tag, &rp)?, s)
            } else {
                let r = ep.irecv_iov_raw(Source::Any, tag, &rp)?;
                (r, ep.issend_iov_raw(next, size as u64, &sp)?)
            }
        };
        let got = ep.wait(r)?;
        ep.wait(s)?;
        ensure(got.status.source == prev && got.status.len == size, || {
            format!("size {size}: status {:?}", got.status)
        })?;
        let mut joined = Vec::with_capacity(size);
        for &(o, k) in &rr {
            joined.extend_from_slice(&dst[o..o + k]);
        }
        ensure(joined == expected(prev, size), || {
            format!("size {size}: payload from {prev} corrupt")
        })?;
        let mut gaps = dst.clone();
        rr.iter().for_each(|&(o, k)| gaps[o..o + k].fill(GAP));
        ensure(gaps.iter().all(|&b| b == GAP), || {
            format!("size {size}: bytes written outside the pieces")
        })?;
    }
    // Truncation: 1 MiB into 1000 pieces of 1000 bytes.
    let size = 1 << 20;
    let mut dst = vec![GAP; 2_000_000];
    let rr: Vec<_> = (0..1000).map(|k| (k * 2000, 1000)).collect();
    let rp = pieces_of(&mut dst, &rr);
    // SAFETY: `dst` outlives the receive: we wait for it here.
    let r = unsafe { ep.irecv_iov_raw(Source::Rank(prev), TagMatch::exact(3), &rp)? };
    let s = ep.isend(next, 3, expected(me, size))?;
    let got = ep.wait(r);
    ep.wait(s)?;
    match got {
        Err(Error::Truncated {
            incoming, capacity, ..
        }) if incoming == size && capacity == 1_000_000 => {}
        other => return Err(format!("truncated receive: {other:?}").into()),
    }
    let want = expected(prev, size);
    for (k, &(o, len)) in rr.iter().enumerate() {
        ensure(dst[o..o + len] == want[k * 1000..(k + 1) * 1000], || {
            format!("truncated receive: piece {k} corrupt")
        })?;
        ensure(dst[o + len..o + 2 * len].iter().all(|&b| b == GAP), || {
            format!("truncated receive: gap after piece {k} written")
        })?;
    }
    Ok(())
}

/// Send `size` bytes made by `seed` to `peer` while receiving as much from
/// it, and check what arrived (`cap` < size: a truncated receive).
fn exchange(ep: &mut Endpoint, peer: u32, tag: u64, size: usize, cap: usize, seed: u32) -> Res {
    let me = ep.rank();
    let r = ep.irecv(Source::Rank(peer), TagMatch::exact(tag), cap)?;
    let s = ep.isend(peer, tag, expected(me + seed, size))?;
    let got = ep.wait(r);
    ep.wait(s)?;
    let want = expected(peer + seed, size);
    match got {
        Ok(c) => ensure(cap >= size && c.data.as_deref() == Some(&want[..]), || {
            format!("{size} bytes from {peer} (seed {seed}): payload corrupt")
        }),
        Err(Error::Truncated { incoming, .. }) if cap < size && incoming == size => Ok(()),
        Err(e) => Err(format!("{size} bytes from {peer}: {e}").into()),
    }
}

/// As [`exchange`], from a shared-heap buffer into a buffer the engine
/// allocates ([`Endpoint::irecv_managed`]).
fn shared_exchange(ep: &mut Endpoint, peer: u32, tag: u64, size: usize, seed: u32) -> Res {
    let me = ep.rank();
    let out = SharedVec::from_slice(&expected(me + seed, size))?;
    let r = ep.irecv_managed(Source::Rank(peer), TagMatch::exact(tag), size)?;
    // SAFETY: `out` lives until the send completes: we wait for it below.
    let s = unsafe { ep.isend_raw(peer, tag, out.as_ptr(), size)? };
    let got = ep.wait(r)?;
    ep.wait(s)?;
    let buf = got
        .buffer
        .ok_or("a managed receive came back without a buffer")?;
    ensure(buf.as_slice() == &expected(peer + seed, size)[..], || {
        format!("{size} shared bytes from {peer} (seed {seed}): payload corrupt")
    })
}

fn stealing(ep: &mut Endpoint) -> Res {
    const BIG: [usize; 3] = [65536, (1 << 20) + 3, 4 << 20];
    const ROUNDS: u32 = 5;
    let (me, n) = (ep.rank(), ep.size());
    let mut large = 0u64;
    if me < 2 && n >= 2 {
        let peer = 1 - me;
        for round in 0..ROUNDS {
            for (i, &size) in BIG.iter().enumerate() {
                exchange(ep, peer, 100 + i as u64, size, size, 16 * round)?;
                large += 1;
            }
        }
        // A truncated receive still moves (and counts) its first bytes.
        exchange(ep, peer, 200, 300_000, 200_000, 99)?;
        large += 1;
        // Shared-heap source, engine-allocated (shared-heap) destination:
        // any process of the node may copy these, the idle ranks too.
        for round in 0..ROUNDS {
            for (i, &size) in BIG.iter().enumerate() {
                shared_exchange(ep, peer, 400 + i as u64, size, 32 + round)?;
                large += 1;
            }
        }
        if me == 0 {
            for helper in 2..n {
                ep.send(helper, 7, b"stop")?;
            }
        }
    } else if me >= 2 {
        // Idle until rank 0 is done: this wait is where stealing happens.
        ep.recv(Source::Rank(0), TagMatch::exact(7), &mut [0u8; 4])?;
    }
    // Everyone to everyone: many transfers in flight on every queue.
    let size = (1 << 20) + 5;
    let mut recvs = Vec::new();
    for _ in 1..n {
        recvs.push(ep.irecv(Source::Any, TagMatch::exact(300), size)?);
    }
    let mut sends = Vec::new();
    for d in 1..n {
        sends.push(ep.isend((me + d) % n, 300, expected(me, size))?);
    }
    for r in recvs {
        let got = ep.wait(r)?;
        let from = got.status.source;
        ensure(
            got.data.as_deref() == Some(&expected(from, size)[..]),
            || format!("all-to-all: payload from {from} corrupt"),
        )?;
        large += 1;
    }
    for s in sends {
        ep.wait(s)?;
    }
    let count = |p| ep.transfers(p);
    let chunked = [Protocol::Probe, Protocol::Coop, Protocol::Steal];
    // A managed receive lends its peer landing buffers: some of the shared
    // exchanges are put straight into them, whatever TESSEL_RNDV says.
    let put = count(Protocol::Put);
    let all: u64 = chunked.iter().map(|&p| count(p)).sum::<u64>() + count(Protocol::Get) + put;
    let forced = match ep.config().rndv {
        RndvMode::Adaptive => None,
        RndvMode::Get => Some(Protocol::Get),
        RndvMode::Coop => Some(Protocol::Coop),
        RndvMode::Steal => Some(Protocol::Steal),
    };
    if ep.uses_cma() {
        ensure(all == large, || {
            format!("{all} large receives counted, {large} made")
        })?;
        if let Some(p) = forced {
            ensure(count(p) + put == large, || {
                format!("{} of {large} receives used {p}, {put} put", count(p))
            })?;
        } else if me < 2 && n >= 2 {
            // The first transfer of each size class from the peer probes.
            ensure(count(Protocol::Probe) >= BIG.len() as u64, || {
                format!("only {} probes", count(Protocol::Probe))
            })?;
        }
    } else {
        ensure(count(Protocol::Pipeline) == large && put == 0, || {
            "without CMA every large message is pipelined".into()
        })?;
    }
    Ok(())
}

fn die(ep: &mut Endpoint) -> Res {
    if ep.rank() == 1 {
        // SAFETY: kill(2) of our own pid has no memory-safety preconditions.
        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
    }
    // Everyone else waits for a message rank 1 will never send.
    ep.recv(Source::Rank(1), TagMatch::exact(99), &mut [0u8; 8])?;
    Err("received from a dead process".into())
}

/// Print whether the engine counts this job as oversubscribed (more of
/// its processes where this one runs than CPUs they may use).
fn oversubscribed(ep: &mut Endpoint) -> Res {
    println!(
        "engine_check: rank {} oversubscribed={}",
        ep.rank(),
        ep.oversubscribed()
    );
    Ok(())
}

fn main() -> ExitCode {
    let case = std::env::args().nth(1).unwrap_or_default();
    let run = || -> Res {
        let mut ep = Endpoint::new(bootstrap::from_env()?)?;
        match case.as_str() {
            "protocols" => protocols(&mut ep)?,
            "ordering" => ordering(&mut ep)?,
            "errors" => errors(&mut ep)?,
            "nodes" => nodes(&mut ep)?,
            "probes" => probes(&mut ep)?,
            "pieces" => pieces(&mut ep)?,
            "stealing" => stealing(&mut ep)?,
            "die" => die(&mut ep)?,
            "oversubscribed" => oversubscribed(&mut ep)?,
            other => return Err(format!("unknown case {other:?}").into()),
        }
        let rank = ep.rank();
        ep.finalize()?;
        println!("engine_check {case}: rank {rank} ok");
        Ok(())
    };
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("engine_check {case}: {e}");
            ExitCode::FAILURE
        }
    }
}

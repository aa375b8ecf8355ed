//! One-process endpoints talk to themselves: through their own ring
//! (`TESSEL_SELF=ring`), which exercises every protocol and every path of
//! matching, probing and cancelling, and directly (the default), which
//! must keep the same semantics.

use super::*;
use crate::bootstrap::Singleton;
use crate::config::CmaMode;
use crate::iov::Cursor;
use crate::stats::Protocol;

/// A one-process endpoint whose messages to itself take the ring (every
/// protocol), or are copied at once (`direct`).
fn endpoint(direct: bool) -> Endpoint {
    let cfg = Config {
        self_direct: direct,
        ..Config::default()
    };
    Endpoint::with_config(Box::new(Singleton::default()), cfg).expect("one-process endpoint")
}

/// Run `test` on an endpoint of each kind (see [`endpoint`]).
fn each(test: impl Fn(Endpoint)) {
    for direct in [false, true] {
        test(endpoint(direct));
    }
}

/// Sizes of the inline, eager and rendezvous protocols.
fn sizes(ep: &Endpoint) -> [usize; 4] {
    let c = ep.config();
    [0, c.inline_max, c.eager_max, c.eager_max * 4 + 3]
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31) ^ seed).collect()
}

#[test]
fn probe_reports_full_size_and_leaves_the_message() {
    each(|mut ep| {
        for (k, n) in sizes(&ep).into_iter().enumerate() {
            let tag = 100 + k as u64;
            let data = bytes(n, k as u8);
            let s = ep.isend(0, tag, data.clone()).unwrap();
            let st = ep.probe(Source::Any, TagMatch::exact(tag));
            assert_eq!((st.source, st.tag, st.len), (0, tag, n));
            // Probing again sees the same message.
            assert_eq!(ep.iprobe(Source::Rank(0), TagMatch::any()), Some(st));
            let r = ep
                .irecv(Source::Rank(0), TagMatch::exact(tag), st.len)
                .unwrap();
            assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
            ep.wait(s).unwrap();
            assert_eq!(ep.iprobe(Source::Any, TagMatch::any()), None);
        }
    });
}

#[test]
fn matched_probe_takes_the_message_from_receives() {
    each(|mut ep| {
        for (k, n) in sizes(&ep).into_iter().enumerate() {
            let data = bytes(n, 7 + k as u8);
            let s = ep.isend(0, 5, data.clone()).unwrap();
            let (st, msg) = ep.mprobe(Source::Any, TagMatch::exact(5));
            assert_eq!(st.len, n);
            // A receive posted now does not get the probed message.
            let other = ep.irecv(Source::Any, TagMatch::exact(5), n).unwrap();
            assert!(!ep.test(&other));
            let got = ep.imrecv(msg, n);
            assert_eq!(ep.wait(got).unwrap().data.unwrap(), data);
            ep.wait(s).unwrap();
            assert!(ep.cancel(&other));
            assert!(ep.wait(other).unwrap().status.cancelled);
        }
        assert!(ep.improbe(Source::Any, TagMatch::any()).is_none());
    });
}

#[test]
fn cancel_only_withdraws_an_unmatched_receive() {
    each(|mut ep| {
        let r = ep.irecv(Source::Any, TagMatch::exact(1), 8).unwrap();
        assert!(ep.cancel(&r));
        assert!(ep.test(&r));
        let done = ep.wait(r).unwrap();
        assert!(done.status.cancelled);
        assert_eq!(done.status.len, 0);
        // The message goes to the next receive, not the cancelled one.
        ep.send(0, 1, b"abc").unwrap();
        ep.probe(Source::Any, TagMatch::exact(1));
        let r2 = ep.irecv(Source::Any, TagMatch::exact(1), 8).unwrap();
        assert!(!ep.cancel(&r2), "matched at once");
        let done = ep.wait(r2).unwrap();
        assert!(!done.status.cancelled);
        assert_eq!(done.data.unwrap(), b"abc");
        // A send cannot be cancelled; it completes normally.
        let big = ep.config().eager_max * 2;
        let s = ep.isend(0, 2, bytes(big, 1)).unwrap();
        assert!(!ep.cancel(&s));
        let r3 = ep.irecv(Source::Any, TagMatch::exact(2), big).unwrap();
        assert_eq!(ep.wait(r3).unwrap().data.unwrap(), bytes(big, 1));
        assert!(!ep.wait(s).unwrap().status.cancelled);
    });
}

#[test]
fn synchronous_send_completes_only_after_the_match() {
    each(|mut ep| {
        for n in sizes(&ep) {
            let data = bytes(n, 3);
            let s = ep.issend(0, 9, data.clone()).unwrap();
            // Delivered, but unmatched: the send stays incomplete.
            ep.probe(Source::Rank(0), TagMatch::exact(9));
            for _ in 0..4 {
                assert!(!ep.test(&s), "{n}-byte ssend completed before a match");
            }
            let r = ep.irecv(Source::Rank(0), TagMatch::exact(9), n).unwrap();
            assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
            let done = ep.wait(s).unwrap();
            assert_eq!(done.status.len, n);
        }
        // A matched probe is a match too.
        let s = ep.issend(0, 4, vec![1, 2, 3]).unwrap();
        let (_, msg) = ep.mprobe(Source::Any, TagMatch::any());
        ep.wait(s).unwrap();
        let mut buf = [0u8; 3];
        assert_eq!(ep.mrecv(msg, &mut buf).unwrap().len, 3);
        assert_eq!(buf, [1, 2, 3]);
    });
}

/// Pieces of `buf` holding `want` bytes in all, of the lengths in
/// `lens` (cycled, the last one cut short), each followed by a gap of
/// `gap` untouched bytes.
fn pieces(buf: &mut [u8], lens: &[usize], gap: usize, want: usize) -> Vec<Piece> {
    let (mut at, mut left, mut out) = (0, want, Vec::new());
    for &n in lens.iter().cycle() {
        if left == 0 && !out.is_empty() {
            break;
        }
        let n = n.min(left);
        out.push(Piece::new(buf[at..at + n].as_mut_ptr(), n));
        (at, left) = (at + n + gap, left - n);
    }
    out
}

/// The bytes of `pieces`, in order.
fn packed(pieces: &[Piece]) -> Vec<u8> {
    let mut v = vec![0; total(pieces)];
    // SAFETY: the pieces lie in a live test buffer.
    unsafe { Cursor::start(pieces).gather(pieces, v.as_mut_ptr(), v.len()) };
    v
}

#[test]
fn pieces_to_pieces_in_every_protocol() {
    each(pieces_to_pieces);
    let cfg = Config {
        cma: CmaMode::Off,
        self_direct: false,
        ..Config::default()
    };
    let ep = Endpoint::with_config(Box::new(Singleton::default()), cfg).unwrap();
    assert!(!ep.uses_cma());
    pieces_to_pieces(ep);
}

/// Messages of every protocol from pieces into pieces split another
/// way, synchronous or not, whole or truncated.
fn pieces_to_pieces(mut ep: Endpoint) {
    let big = ep.config().staging_slot_size as usize * 3 + 5;
    for (k, n) in sizes(&ep).into_iter().chain([big]).enumerate() {
        let mut src = bytes(2 * n + 64, k as u8);
        let sp = pieces(&mut src, &[0, 5, 1000, 3], 1, n);
        let data = packed(&sp);
        assert_eq!(data.len(), n);
        for (lens, truncate) in [(&[7usize, 0, 64][..], false), (&[300], true)] {
            let mut dst = vec![0u8; 2 * n + 600];
            let cap = if truncate { n.saturating_sub(1) } else { n };
            let dp = pieces(&mut dst, lens, 2, cap);
            let want = data.len().min(total(&dp));
            // SAFETY: both buffers outlive the requests: we wait here.
            let (s, r) = unsafe {
                let sync = k % 2 == 1;
                let s = if sync {
                    ep.issend_iov_raw(0, 3, &sp).unwrap()
                } else {
                    ep.isend_iov_raw(0, 3, &sp).unwrap()
                };
                (
                    s,
                    ep.irecv_iov_raw(Source::Any, TagMatch::exact(3), &dp)
                        .unwrap(),
                )
            };
            let got = ep.wait(r);
            assert_eq!(ep.wait(s).unwrap().status.len, data.len());
            match got {
                Ok(c) => assert_eq!(c.status.len, data.len()),
                Err(Error::Truncated {
                    incoming, capacity, ..
                }) => {
                    assert!(truncate && n > 0);
                    assert_eq!((incoming, capacity), (data.len(), total(&dp)));
                }
                Err(e) => panic!("{n} bytes: {e}"),
            }
            assert_eq!(packed(&dp)[..want], data[..want], "{n} bytes, {lens:?}");
        }
    }
}

#[test]
fn unexpected_and_probed_messages_scatter_into_pieces() {
    each(|mut ep| {
        for n in sizes(&ep) {
            let data = bytes(n, 9);
            let s = ep.isend(0, 4, data.clone()).unwrap();
            ep.probe(Source::Any, TagMatch::exact(4));
            let mut dst = vec![0u8; 2 * n + 8];
            let dp = pieces(&mut dst, &[1, 17], 1, n);
            let (_, msg) = ep.mprobe(Source::Any, TagMatch::exact(4));
            // SAFETY: `dst` outlives the request: we wait here.
            let r = unsafe { ep.imrecv_iov_raw(msg, &dp) };
            ep.wait(r).unwrap();
            ep.wait(s).unwrap();
            assert_eq!(packed(&dp)[..n], data[..]);
        }
    });
}

#[test]
fn managed_receives_get_a_buffer_of_the_message_size() {
    each(|mut ep| {
        for n in sizes(&ep) {
            let data = bytes(n, 11);
            // Posted first, and posted after the message arrived.
            let r = ep
                .irecv_managed(Source::Any, TagMatch::exact(6), usize::MAX)
                .unwrap();
            ep.send(0, 6, &data).unwrap();
            let s = ep.isend(0, 6, data.clone()).unwrap();
            ep.probe(Source::Any, TagMatch::exact(6));
            let r2 = ep
                .irecv_managed(Source::Rank(0), TagMatch::exact(6), usize::MAX)
                .unwrap();
            ep.wait(s).unwrap();
            for r in [r, r2] {
                let done = ep.wait(r).unwrap();
                assert_eq!(done.status.len, n);
                assert!(done.data.is_none());
                let buf = done.buffer.expect("a managed receive hands out its buffer");
                assert_eq!(buf.as_slice(), &data[..], "{n} bytes");
            }
        }
        // Capacity still bounds what is accepted.
        let big = ep.config().eager_max * 3;
        let s = ep.isend(0, 8, bytes(big, 2)).unwrap();
        let r = ep
            .irecv_managed(Source::Any, TagMatch::exact(8), big - 1)
            .unwrap();
        assert!(matches!(ep.wait(r), Err(Error::Truncated { .. })));
        ep.wait(s).unwrap();
    });
}

#[test]
fn granted_buffers_take_large_messages_at_once() {
    let mut ep = endpoint(false);
    let n = ep.config().eager_max * 4 + 5;
    let data = bytes(n, 21);
    // The managed receive lends its source a landing buffer: the send
    // completes at once, and the receive takes that very buffer.
    let r = ep
        .irecv_managed(Source::Rank(0), TagMatch::exact(1), n)
        .unwrap();
    ep.progress();
    let s = ep.isend(0, 1, data.clone()).unwrap();
    assert!(ep.is_complete(&s), "a put completes when it is written");
    let got = ep.wait(r).unwrap().buffer.unwrap();
    assert!(got.in_shared_heap());
    assert_eq!(got.as_slice(), &data[..]);
    ep.wait(s).unwrap();
    assert_eq!(ep.transfers(Protocol::Put), 1);
    // A grant not used by the next message stays for a later one; a
    // message landing before any receive waits, unexpected; an
    // ordinary receive copies it out.
    let r = ep
        .irecv_managed(Source::Rank(0), TagMatch::exact(2), n)
        .unwrap();
    ep.send(0, 2, b"small").unwrap();
    assert_eq!(ep.wait(r).unwrap().buffer.unwrap().as_slice(), b"small");
    ep.send(0, 3, &data).unwrap();
    assert_eq!(ep.transfers(Protocol::Put), 1, "not received yet");
    let st = ep.probe(Source::Any, TagMatch::exact(3));
    assert_eq!(st.len, n);
    let r = ep.irecv(Source::Any, TagMatch::exact(3), n).unwrap();
    assert_eq!(ep.wait(r).unwrap().data.unwrap(), data);
    assert_eq!(ep.transfers(Protocol::Put), 2);
}

#[test]
fn wait_any_returns_a_completed_request() {
    each(|mut ep| {
        let a = ep.irecv(Source::Any, TagMatch::exact(1), 4).unwrap();
        let b = ep.irecv(Source::Any, TagMatch::exact(2), 4).unwrap();
        ep.send(0, 2, b"two").unwrap();
        assert_eq!(ep.wait_any(&[&a, &b]), Some(1));
        assert!(!ep.is_complete(&a));
        assert_eq!(ep.wait(b).unwrap().data.unwrap(), b"two");
        assert!(ep.cancel(&a));
        assert_eq!(ep.wait_any(&[&a]), Some(0));
        ep.wait(a).unwrap();
        assert_eq!(ep.wait_any(&[]), None);
    });
}

#[test]
fn messages_to_oneself_are_copied_at_once_and_in_order() {
    let mut ep = endpoint(true);
    let n = ep.config().eager_max * 4 + 3;
    // Sent before any receive, of every size: complete at once, and
    // received in the order sent.
    let sizes = [n, 0, 5, n / 2, 100];
    let sends: Vec<_> = sizes
        .iter()
        .enumerate()
        .map(|(k, &len)| ep.isend(0, 1, bytes(len, k as u8)).unwrap())
        .collect();
    assert!(sends.iter().all(|s| ep.is_complete(s)), "buffered at once");
    for (k, &len) in sizes.iter().enumerate() {
        let r = ep.irecv(Source::Rank(0), TagMatch::exact(1), n).unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), bytes(len, k as u8));
    }
    for s in sends {
        ep.wait(s).unwrap();
    }
    // Posted first: taken straight from the send buffer.
    let r = ep.irecv(Source::Any, TagMatch::exact(2), n).unwrap();
    let s = ep.isend(0, 2, bytes(n, 9)).unwrap();
    assert!(ep.is_complete(&r) && ep.is_complete(&s));
    assert_eq!(ep.wait(r).unwrap().data.unwrap(), bytes(n, 9));
    ep.wait(s).unwrap();
    assert_eq!(ep.transfers(Protocol::ToSelf), 3, "the three large ones");
    assert_eq!(
        ep.transfers(Protocol::Get) + ep.transfers(Protocol::Probe),
        0
    );
}

#[test]
fn a_send_moves_the_backlog_on_before_it_queues() {
    // Through its own ring of four cells: six messages leave two in the
    // backlog.
    let cfg = Config {
        self_direct: false,
        ring_cells: 4,
        ..Config::default()
    };
    let mut ep = Endpoint::with_config(Box::new(Singleton::default()), cfg).unwrap();
    let eager = ep.config().inline_max + 1;
    let size = |k: usize| if k.is_multiple_of(2) { 8 } else { eager };
    let mut sends: Vec<_> = (0..6)
        .map(|k| ep.isend(0, 1, bytes(size(k), k as u8)).unwrap())
        .collect();
    assert_eq!(ep.shm.backlog_len(0), 2);
    // Progress flushes backlogs before it empties the rings: the ring is
    // empty now, the backlog not.
    ep.progress();
    assert_eq!(ep.shm.backlog_len(0), 2);
    // The next send moves the backlog into the ring and then takes the
    // ring itself, rather than queueing behind it until a progress call.
    sends.push(ep.isend(0, 1, bytes(size(6), 6)).unwrap());
    assert_eq!(ep.shm.backlog_len(0), 0);
    for k in 0..7 {
        let r = ep
            .irecv(Source::Rank(0), TagMatch::exact(1), eager)
            .unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), bytes(size(k), k as u8));
    }
    for s in sends {
        ep.wait(s).unwrap();
    }
}

#[test]
fn sending_at_once_leaves_what_it_cannot_send_to_a_request() {
    let mut ep = endpoint(true);
    let data = [7u8; 8];
    let piece = [Piece::new(data.as_ptr().cast_mut(), data.len())];
    // SAFETY: `data` is readable during the calls.
    unsafe {
        // To itself: not at once (the self path takes it), and nothing sent.
        assert!(!ep.try_send_iov_now(0, 1, &piece).unwrap());
        assert!(matches!(
            ep.try_send_iov_now(5, 1, &piece),
            Err(Error::InvalidPeer { .. })
        ));
    }
    assert_eq!(ep.iprobe(Source::Any, TagMatch::any()), None);
}

/// [`Endpoint::try_recv_iov_now`] into the first `n` bytes of `buf`.
fn try_now(
    ep: &mut Endpoint,
    source: Source,
    tag: TagMatch,
    buf: &mut [u8],
    n: usize,
) -> Option<Status> {
    let piece = [Piece::new(buf.as_mut_ptr(), n.min(buf.len()))];
    // SAFETY: the piece is part of `buf`, writable and borrowed for the call.
    unsafe { ep.try_recv_iov_now(source, tag, &piece) }
}

#[test]
fn an_arrived_whole_message_is_received_at_once() {
    each(|mut ep| {
        let [_, inline, eager, large] = sizes(&ep);
        let small = bytes(inline, 1);
        let sync = ep.issend(0, 7, bytes(eager, 2)).unwrap();
        let s = ep.isend(0, 7, small.clone()).unwrap();
        let big = ep.isend(0, 8, bytes(large, 3)).unwrap();
        ep.progress();
        let mut buf = vec![0u8; eager];
        let seven = TagMatch::exact(7);
        // Too small a buffer: the message stays, for a receive to truncate.
        assert_eq!(
            try_now(&mut ep, Source::Any, seven, &mut buf, eager - 1),
            None
        );
        // The oldest match first: the synchronous one, whose sender learns
        // it matched.
        let st = try_now(&mut ep, Source::Any, seven, &mut buf, eager);
        assert_eq!(st, Some(Status::new(0, 7, eager)));
        assert_eq!(buf, bytes(eager, 2));
        ep.wait(sync).unwrap();
        let st = try_now(&mut ep, Source::Rank(0), TagMatch::any(), &mut buf, eager);
        assert_eq!(st, Some(Status::new(0, 7, inline)));
        assert_eq!(buf[..inline], small[..]);
        // Larger than the buffer, and through the ring not even a whole
        // message (a rendezvous offer): a receive takes it.
        assert_eq!(
            try_now(&mut ep, Source::Any, TagMatch::any(), &mut buf, eager),
            None
        );
        let r = ep.irecv(Source::Any, TagMatch::exact(8), large).unwrap();
        assert_eq!(ep.wait(r).unwrap().data.unwrap(), bytes(large, 3));
        ep.wait(s).unwrap();
        ep.wait(big).unwrap();
    });
}

/// A one-process job whose node segment has room for three processes a
/// later spawn would start (the tests of `shm` play them).
#[derive(Debug, Default)]
pub(super) struct WithRoom(Singleton);

impl crate::bootstrap::Bootstrap for WithRoom {
    fn rank(&self) -> u32 {
        self.0.rank()
    }
    fn size(&self) -> u32 {
        self.0.size()
    }
    fn node_of(&self, rank: u32) -> u32 {
        self.0.node_of(rank)
    }
    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), crate::bootstrap::BootstrapError> {
        self.0.put(key, value)
    }
    fn get(&mut self, key: &str) -> Result<Vec<u8>, crate::bootstrap::BootstrapError> {
        self.0.get(key)
    }
    fn fence(&mut self) -> Result<(), crate::bootstrap::BootstrapError> {
        self.0.fence()
    }
    fn abort(&mut self, code: i32, message: &str) {
        self.0.abort(code, message);
    }
    fn finalize(&mut self) -> Result<(), crate::bootstrap::BootstrapError> {
        self.0.finalize()
    }
    fn universe(&self) -> crate::bootstrap::Universe {
        crate::bootstrap::Universe {
            size: 4,
            ..self.0.universe()
        }
    }
}

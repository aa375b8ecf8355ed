//! What the conformance check does not exercise: the wake-up descriptor,
//! a peer that goes away, and malformed arguments. Over the default
//! provider on the loopback domain; one test (libfabric reads its
//! environment once per process), its parts in sequence.

use std::ffi::c_int;
use std::time::{Duration, Instant};

use plugin_api::conformance::{self, Event, Side};
use plugin_api::*;

fn ops() -> &'static Ops {
    // SAFETY: the plugin's static descriptor and table.
    unsafe { &*(*tessel_plugin_ofi::tessel_plugin_descriptor()).ops }
}

/// Ranks 0 and 1 of a two-process job.
fn pair() -> (Side, Side) {
    Side::pair(tessel_plugin_ofi::tessel_plugin_descriptor).unwrap()
}

fn close(s: Side) {
    s.close();
}

fn progress(s: &Side) -> Vec<Event> {
    s.progress().unwrap()
}

fn send(s: &Side, peer: u32, payload: &mut [u8], cookie: u64) -> c_int {
    let h = [7u8; 16];
    let iov = Iov {
        base: payload.as_mut_ptr().cast(),
        len: payload.len(),
    };
    // SAFETY: the payload lives until the test ends.
    unsafe { s.send(peer, &h, &[iov], cookie) }
}

/// Send, retrying "no resources" with progress on every side.
fn send_retry(sides: &[&Side], from: usize, peer: u32, payload: &mut [u8], cookie: u64) -> c_int {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let rc = send(sides[from], peer, payload, cookie);
        if rc != ERR_AGAIN || Instant::now() > deadline {
            return rc;
        }
        for s in sides {
            let evs = progress(s);
            s.keep(evs);
        }
    }
}

/// Progress every side until `want` matches an event of side `who`.
fn wait_for(sides: &[&Side], who: usize, want: impl Fn(&Event) -> bool) -> Event {
    conformance::wait(sides, who, Duration::from_secs(30), |e| {
        want(&e).then_some(e)
    })
    .unwrap()
}

fn wake_fd_wakes_a_sleeper() {
    let (a, b) = pair();
    assert_ne!(
        a.attr().flags & ATTR_WAKE_FD,
        0,
        "tcp;ofi_rxm has FI_WAIT_FD"
    );
    // Connect first (rxm sets up connections in progress calls).
    let mut p = vec![1u8; 100];
    assert_eq!(send_retry(&[&a, &b], 1, 0, &mut p, 1), OK);
    wait_for(&[&a, &b], 0, |e| matches!(e, Event::Arrived { .. }));
    // SAFETY: open context.
    let fd = unsafe { (ops().wake_fd.unwrap())(a.ctx()) };
    assert!(fd >= 0, "wake_fd: {}", status_name(fd));
    let deadline = Instant::now() + Duration::from_secs(10);
    // Arm until the plugin agrees nothing is pending.
    loop {
        // SAFETY: open context.
        match unsafe { (ops().arm.unwrap())(a.ctx()) } {
            OK => break,
            ERR_AGAIN => {
                progress(&a);
            }
            rc => panic!("arm: {}", status_name(rc)),
        }
        assert!(Instant::now() < deadline, "arm never agreed");
    }
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // Nothing was sent: the descriptor stays quiet.
    // SAFETY: one valid pollfd.
    let quiet = unsafe { libc::poll(&mut pfd, 1, 50) };
    assert_eq!(quiet, 0, "woke without work");
    let mut q = vec![2u8; 100];
    assert_eq!(send_retry(&[&b], 0, 0, &mut q, 2), OK);
    let mut woke = false;
    while Instant::now() < deadline && !woke {
        // The sender's provider needs its progress calls to push the data.
        progress(&b);
        // SAFETY: one valid pollfd.
        woke = unsafe { libc::poll(&mut pfd, 1, 10) } == 1;
    }
    assert!(woke, "the wake-up descriptor never became readable");
    wait_for(&[&a, &b], 0, |e| {
        matches!(e, Event::Arrived { len: 100, .. })
    });
    close(a);
    close(b);
}

fn a_closed_peer_fails_its_operations() {
    let (a, b) = pair();
    let mut p = vec![3u8; 50];
    assert_eq!(send_retry(&[&a, &b], 0, 1, &mut p, 1), OK);
    wait_for(&[&a, &b], 1, |e| matches!(e, Event::Arrived { .. }));
    // A rendezvous send stays in progress until the peer reads it...
    let mut big = vec![4u8; 100_000];
    assert_eq!(send_retry(&[&a, &b], 0, 1, &mut big, 77), IN_PROGRESS);
    wait_for(&[&a, &b], 1, |e| {
        matches!(e, Event::Arrived { len: 100_000, .. })
    });
    // ...which it never does: it goes away. The provider may see the
    // broken connection (an error completion) or only refused reconnects
    // ("no resources" until the 5 s stall limit).
    close(b);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut failed = None;
    let mut send_done = None;
    let mut small = vec![5u8; 10];
    while (failed.is_none() || send_done.is_none()) && Instant::now() < deadline {
        // Keep talking to the dead peer until the provider notices.
        let rc = send(&a, 1, &mut small, 2);
        assert!(
            [OK, ERR_AGAIN, ERR_PEER_FAILED, ERR_UNREACHABLE].contains(&rc),
            "send to a closed peer: {}",
            status_name(rc)
        );
        for e in progress(&a) {
            match e {
                Event::Failed {
                    peer,
                    status,
                    message,
                } => {
                    assert_eq!(peer, 1);
                    assert!(status == ERR_PEER_FAILED || status == ERR_UNREACHABLE);
                    assert!(failed.is_none(), "a peer is reported failed once");
                    println!("peer failure: {message}");
                    failed = Some(status);
                }
                Event::Completed { cookie: 77, status } => send_done = Some(status),
                e => panic!("unexpected {e:?}"),
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let status = failed.expect("the closed peer was never reported failed");
    assert_eq!(
        send_done,
        Some(status),
        "the rendezvous send ends with the failure"
    );
    assert_eq!(
        send(&a, 1, &mut small, 3),
        status,
        "later sends are refused"
    );
    close(a);
}

fn bad_arguments_are_refused() {
    let (a, b) = pair();
    let o = ops();
    let h = [0u8; 8];
    // SAFETY: each call passes a bad argument on purpose; the plugin must
    // refuse it without touching what it points to.
    unsafe {
        assert_eq!((o.progress.unwrap())(std::ptr::null_mut(), 1), ERR_INVALID);
        assert_eq!(
            (o.send.unwrap())(
                std::ptr::null_mut(),
                1,
                h.as_ptr(),
                8,
                std::ptr::null(),
                0,
                0
            ),
            ERR_INVALID
        );
        assert_eq!(
            (o.send.unwrap())(a.ctx(), 1, h.as_ptr(), 8, std::ptr::null(), 3, 0),
            ERR_INVALID,
            "null iov with a count"
        );
        let bad = Iov {
            base: std::ptr::null_mut(),
            len: 10,
        };
        assert_eq!(
            (o.send.unwrap())(a.ctx(), 1, h.as_ptr(), 8, &bad, 1, 0),
            ERR_INVALID,
            "a piece without a base"
        );
        (o.discard.unwrap())(a.ctx(), 12345);
        (o.discard.unwrap())(std::ptr::null_mut(), 1);
        (o.close.unwrap())(std::ptr::null_mut());
    }
    // A token of one context is refused by another, and a fetch must cover
    // the whole payload.
    let mut big = vec![6u8; 50_000];
    assert_eq!(send_retry(&[&a, &b], 0, 1, &mut big, 9), IN_PROGRESS);
    let Event::Arrived { token, peer: 0, .. } = wait_for(&[&a, &b], 1, |e| {
        matches!(e, Event::Arrived { len: 50_000, .. })
    }) else {
        unreachable!()
    };
    let mut buf = vec![0u8; 50_000];
    let whole = Iov {
        base: buf.as_mut_ptr().cast(),
        len: buf.len(),
    };
    let short = Iov {
        base: buf.as_mut_ptr().cast(),
        len: 10,
    };
    // SAFETY: open contexts; `buf` outlives the fetch.
    unsafe {
        assert_eq!(
            (ops().fetch.unwrap())(a.ctx(), token, &whole, 1, 1),
            ERR_INVALID
        );
        assert_eq!(
            (ops().fetch.unwrap())(b.ctx(), token, &short, 1, 1),
            ERR_INVALID
        );
        assert_eq!(
            (ops().fetch.unwrap())(b.ctx(), token, &whole, 1, 5),
            IN_PROGRESS
        );
        assert_eq!(
            (ops().fetch.unwrap())(b.ctx(), token, &whole, 1, 6),
            ERR_INVALID,
            "a token is used once"
        );
    }
    wait_for(&[&a, &b], 1, |e| {
        matches!(
            e,
            Event::Completed {
                cookie: 5,
                status: OK
            }
        )
    });
    wait_for(&[&a, &b], 0, |e| {
        matches!(
            e,
            Event::Completed {
                cookie: 9,
                status: OK
            }
        )
    });
    assert!(buf.iter().all(|&x| x == 6));
    close(a);
    close(b);
}

fn fetch_all(sides: &[&Side], who: usize, token: u64, buf: &mut [u8], cookie: u64) {
    let iov = Iov {
        base: buf.as_mut_ptr().cast(),
        len: buf.len(),
    };
    // SAFETY: open context; `buf` outlives the fetch (waited for below).
    let rc = unsafe { (ops().fetch.unwrap())(sides[who].ctx(), token, &iov, 1, cookie) };
    match rc {
        OK => {}
        IN_PROGRESS => {
            wait_for(
                sides,
                who,
                |e| matches!(e, Event::Completed { cookie: c, status: OK } if *c == cookie),
            );
        }
        rc => panic!("fetch: {}", status_name(rc)),
    }
}

fn many_pieces_and_self_sends_arrive_whole() {
    let (a, b) = pair();
    // 100 pieces of 300 bytes: more than the plugin registers one by one,
    // so it packs them, and the send is done at once.
    let mut data: Vec<u8> = (0..30_000u32).map(|i| (i % 251) as u8).collect();
    let iov: Vec<Iov> = data
        .chunks_mut(300)
        .map(|c| Iov {
            base: c.as_mut_ptr().cast(),
            len: c.len(),
        })
        .collect();
    let h = [1u8; 8];
    let deadline = Instant::now() + Duration::from_secs(30);
    let rc = loop {
        // SAFETY: open context; header, pieces and payload valid.
        let rc = unsafe {
            (ops().send.unwrap())(a.ctx(), 1, h.as_ptr(), 8, iov.as_ptr(), iov.len(), 11)
        };
        if rc != ERR_AGAIN || Instant::now() > deadline {
            break rc;
        }
        progress(&a);
        progress(&b);
    };
    assert_eq!(rc, OK, "a packed rendezvous send completes at once");
    let Event::Arrived { token, .. } = wait_for(&[&a, &b], 1, |e| {
        matches!(e, Event::Arrived { len: 30_000, .. })
    }) else {
        unreachable!()
    };
    let mut got = vec![0u8; 30_000];
    fetch_all(&[&a, &b], 1, token, &mut got, 12);
    assert_eq!(got, data);

    // To oneself, eager and rendezvous.
    let mut small = vec![9u8; 1000];
    assert_eq!(send_retry(&[&a], 0, 0, &mut small, 13), OK);
    wait_for(&[&a], 0, |e| {
        matches!(
            e,
            Event::Arrived {
                peer: 0,
                len: 1000,
                ..
            }
        )
    });
    let mut big: Vec<u8> = (0..200_000u32).map(|i| (i % 241) as u8).collect();
    assert_eq!(send_retry(&[&a], 0, 0, &mut big, 14), IN_PROGRESS);
    let Event::Arrived { token, .. } = wait_for(&[&a], 0, |e| {
        matches!(e, Event::Arrived { len: 200_000, .. })
    }) else {
        unreachable!()
    };
    let mut got = vec![0u8; 200_000];
    fetch_all(&[&a], 0, token, &mut got, 15);
    assert_eq!(got, big);
    wait_for(&[&a], 0, |e| {
        matches!(
            e,
            Event::Completed {
                cookie: 14,
                status: OK
            }
        )
    });
    close(a);
    close(b);
}

fn running_out_of_send_buffers_is_no_resources() {
    let (a, b) = pair();
    let mut p = vec![1u8; 4000];
    assert_eq!(send_retry(&[&a, &b], 0, 1, &mut p, 1), OK);
    wait_for(&[&a, &b], 1, |e| matches!(e, Event::Arrived { .. }));
    // Without progress, the send buffers run out: "no resources", then
    // everything arrives once progress runs.
    let mut sent = 1;
    let mut again = false;
    for _ in 0..10_000 {
        match send(&a, 1, &mut p, 2) {
            OK => sent += 1,
            ERR_AGAIN => {
                again = true;
                break;
            }
            rc => panic!("send: {}", status_name(rc)),
        }
    }
    assert!(again, "10000 sends without progress never ran out");
    let mut arrived = 1;
    let deadline = Instant::now() + Duration::from_secs(30);
    while arrived < sent && Instant::now() < deadline {
        progress(&a);
        arrived += progress(&b)
            .iter()
            .filter(|e| matches!(e, Event::Arrived { len: 4000, .. }))
            .count();
    }
    assert_eq!(arrived, sent);
    close(a);
    close(b);
}

#[test]
fn behaviour_over_the_default_provider() {
    // SAFETY: the only test of this binary sets the variables before any
    // thread of it reads the environment or calls libfabric.
    unsafe {
        std::env::set_var("TESSEL_OFI_DOMAIN", "lo");
        // A peer whose connection is refused shows in tcp;ofi_rxm only as
        // "no resources" forever: the stall guard reports it.
        std::env::set_var("TESSEL_OFI_STALL_TIMEOUT", "5");
    }
    bad_arguments_are_refused();
    many_pieces_and_self_sends_arrive_whole();
    running_out_of_send_buffers_is_no_resources();
    wake_fd_wakes_a_sleeper();
    a_closed_peer_fails_its_operations();
}

//! Paths of the UCX plugin the conformance check does not reach: a send to
//! the process itself, the wake-up descriptor, a peer that goes away,
//! closing with tokens and sends outstanding, and refused arguments. Over
//! tcp on the loopback device (a binary of its own: the one test sets
//! `UCX_*` before any context opens), where a closed peer is seen at once
//! (its sockets close).

use std::ffi::c_int;
use std::time::{Duration, Instant};

use plugin_api::conformance::{self, Event, Side, Store};
use plugin_api::*;

fn open(rank: u32, size: u32, store: &Store) -> Side {
    Side::open(
        tessel_plugin_ucx::tessel_plugin_descriptor,
        rank,
        size,
        store,
    )
    .unwrap_or_else(|(rc, m)| panic!("open rank {rank}: {} ({m})", status_name(rc)))
}

fn progress(s: &Side) -> Vec<Event> {
    s.progress().unwrap()
}

fn send(s: &Side, peer: u32, header: &[u8], payload: &[u8], cookie: u64) -> c_int {
    let iov = Iov {
        base: payload.as_ptr().cast_mut().cast(),
        len: payload.len(),
    };
    let n = usize::from(!payload.is_empty());
    // SAFETY: the payload outlives the send in every caller (they wait for
    // its completion or close first).
    unsafe { s.send(peer, header, &[iov][..n], cookie) }
}

fn fetch(s: &Side, token: u64, buf: &mut [u8], cookie: u64) -> c_int {
    let iov = Iov {
        base: buf.as_mut_ptr().cast(),
        len: buf.len(),
    };
    // SAFETY: the buffer outlives the fetch (callers wait).
    unsafe { s.fetch(token, &[iov], cookie) }
}

/// Progress every side until `want` picks something out of an event of
/// side `of`, or 30 s pass.
fn wait<T>(sides: &[&Side], of: usize, want: impl FnMut(Event) -> Option<T>) -> T {
    conformance::wait(sides, of, Duration::from_secs(30), want).unwrap()
}

fn self_send() {
    let kv = Store::default();
    let me = open(0, 1, &kv);
    for (rc, what) in [
        (send(&me, 0, b"small", b"abc", 1), "small"),
        (send(&me, 0, b"x", &[], 2), "empty"),
    ] {
        assert!(rc == OK || rc == IN_PROGRESS, "{what}: {}", status_name(rc));
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        for ev in progress(&me) {
            if let Event::Arrived {
                peer,
                header,
                data: Some(data),
                ..
            } = ev
            {
                assert_eq!(peer, 0);
                seen.push((header, data));
            }
        }
    }
    assert!(seen.contains(&(b"small".to_vec(), b"abc".to_vec())));

    // A rendezvous to oneself: token, then fetch.
    let big = vec![7u8; me.attr().eager_max as usize + 100];
    let rc = send(&me, 0, b"big", &big, 3);
    assert!(rc == OK || rc == IN_PROGRESS, "{}", status_name(rc));
    let (token, len) = wait(&[&me], 0, |ev| match ev {
        Event::Arrived {
            data: None,
            token,
            len,
            ..
        } => Some((token, len)),
        _ => None,
    });
    assert_eq!(len, big.len());
    let mut short = vec![0u8; len - 1];
    assert_eq!(
        fetch(&me, token, &mut short, 4),
        ERR_INVALID,
        "wrong length"
    );
    let mut buf = vec![0u8; len];
    let rc = fetch(&me, token, &mut buf, 5);
    if rc == IN_PROGRESS {
        wait(&[&me], 0, |ev| {
            matches!(
                ev,
                Event::Completed {
                    cookie: 5,
                    status: OK
                }
            )
            .then_some(())
        });
    } else {
        assert_eq!(rc, OK);
    }
    assert_eq!(buf, big);
    println!(
        "fetched {len} B from this process (fetch answered {})",
        status_name(rc)
    );
    assert_eq!(fetch(&me, token, &mut buf, 6), ERR_INVALID, "used twice");
    me.close();
}

fn refused_arguments() {
    let kv = Store::default();
    let s = open(0, 2, &kv);
    assert_eq!(send(&s, 2, b"h", &[], 1), ERR_UNREACHABLE);
    // Rank 1 never published an address.
    assert_eq!(send(&s, 1, b"h", &[], 1), ERR_UNREACHABLE);
    let long = vec![0u8; s.attr().max_header as usize + 1];
    assert_eq!(send(&s, 0, &long, &[], 1), ERR_INVALID);
    // SAFETY: a null list with a count is refused before any read; a bad
    // token is refused; a null context is refused.
    unsafe {
        let send = s.ops().send.unwrap();
        assert_eq!(
            send(s.ctx(), 0, b"h".as_ptr(), 1, std::ptr::null(), 2, 1),
            ERR_INVALID
        );
        s.ops().discard.unwrap()(s.ctx(), 12345);
        assert_eq!(
            s.ops().progress.unwrap()(std::ptr::null_mut(), 1),
            ERR_INVALID
        );
        assert_eq!(s.ops().arm.unwrap()(std::ptr::null_mut()), ERR_INVALID);
    }
    s.close();
}

fn wake_up() {
    let kv = Store::default();
    let a = open(0, 2, &kv);
    let b = open(1, 2, &kv);
    assert!(b.attr().flags & ATTR_WAKE_FD != 0);
    // Connect first (wire-up needs both sides to progress).
    assert!(send(&a, 1, b"hello", &[], 1) >= OK);
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Event::Arrived { data: Some(_), .. }).then_some(())
    });
    // SAFETY: open context.
    let fd = unsafe { b.ops().wake_fd.unwrap()(b.ctx()) };
    assert!(fd >= 0);
    // Arm until nothing is pending.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // SAFETY: open context.
        match unsafe { b.ops().arm.unwrap()(b.ctx()) } {
            OK => break,
            ERR_AGAIN => {
                progress(&a);
                progress(&b);
            }
            rc => panic!("arm: {}", status_name(rc)),
        }
        assert!(Instant::now() < deadline, "arm never succeeded");
    }
    assert!(send(&a, 1, b"wake", b"up", 2) >= OK);
    // The sender pushes the message out; the receiver sleeps in poll.
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        progress(&a);
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut pfd, 1, 100) };
        if n == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the wake-up descriptor never woke"
        );
    }
    let got = wait(&[&a, &b], 1, |ev| match ev {
        Event::Arrived {
            header,
            data: Some(data),
            ..
        } => Some((header, data)),
        _ => None,
    });
    assert_eq!(got, (b"wake".to_vec(), b"up".to_vec()));
    println!("woken through descriptor {fd}");
    a.close();
    b.close();
}

fn peer_goes_away() {
    let kv = Store::default();
    let a = open(0, 2, &kv);
    let b = open(1, 2, &kv);
    assert!(send(&a, 1, b"first", &[], 1) >= OK);
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Event::Arrived { data: Some(_), .. }).then_some(())
    });
    b.close();
    let (status, message) = wait(&[&a], 0, |ev| match ev {
        Event::Failed {
            peer: 1,
            status,
            message,
        } => Some((status, message)),
        Event::Failed { peer, .. } => panic!("failure of peer {peer}"),
        _ => None,
    });
    println!("peer failure reported: {message}");
    assert_eq!(status, ERR_PEER_FAILED, "{message}");
    assert!(message.contains("rank 1"), "{message}");
    assert_eq!(send(&a, 1, b"again", &[], 3), ERR_PEER_FAILED);
    a.close();
}

fn close_with_work_outstanding(sender_first: bool) {
    let kv = Store::default();
    let a = open(0, 2, &kv);
    let b = open(1, 2, &kv);
    let big = vec![1u8; 1 << 20];
    let rc = send(&a, 1, b"big", &big, 1);
    assert!(rc == OK || rc == IN_PROGRESS);
    // B holds a token it never fetches; A's send is still in flight.
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Event::Arrived { data: None, .. }).then_some(())
    });
    let start = Instant::now();
    if sender_first {
        a.close();
        b.close();
    } else {
        b.close();
        a.close();
    }
    println!(
        "closed with work outstanding ({} first) in {:?}",
        if sender_first { "sender" } else { "receiver" },
        start.elapsed()
    );
    assert!(start.elapsed() < Duration::from_secs(10), "close hung");
    drop(big);
}

/// Rendezvous sends stay in flight until fetched: past the plugin's limit
/// a send answers "no resources" instead of queueing without bound.
fn back_pressure() {
    let kv = Store::default();
    let a = open(0, 2, &kv);
    let b = open(1, 2, &kv);
    let big = vec![2u8; a.attr().eager_max as usize + 1];
    let mut again = None;
    for i in 0..10_000u64 {
        match send(&a, 1, b"big", &big, i) {
            IN_PROGRESS | OK => {}
            ERR_AGAIN => {
                again = Some(i);
                break;
            }
            rc => panic!("send {i}: {}", status_name(rc)),
        }
    }
    let n = again.expect("no back-pressure after 10000 sends in flight");
    println!("ERR_AGAIN after {n} rendezvous sends in flight");
    a.close();
    b.close();
}

#[test]
fn behaviour_over_tcp_on_loopback() {
    // SAFETY: the only test of this binary: no other thread touches the
    // environment.
    unsafe {
        std::env::set_var("UCX_TLS", "tcp");
        std::env::set_var("UCX_NET_DEVICES", "lo");
    }
    self_send();
    refused_arguments();
    wake_up();
    peer_goes_away();
    close_with_work_outstanding(false);
    close_with_work_outstanding(true);
    back_pressure();
}

//! Paths of the UCX plugin the conformance check does not reach: a send to
//! the process itself, the wake-up descriptor, a peer that goes away,
//! closing with tokens and sends outstanding, and refused arguments. Over
//! tcp on the loopback device (a binary of its own: the one test sets
//! `UCX_*` before any context opens), where a closed peer is seen at once
//! (its sockets close).

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plugin_api::*;

type Kv = Arc<Mutex<HashMap<String, Vec<u8>>>>;

#[derive(Debug, PartialEq)]
enum Ev {
    Data {
        peer: u32,
        header: Vec<u8>,
        data: Vec<u8>,
    },
    Token {
        peer: u32,
        header: Vec<u8>,
        len: usize,
        token: u64,
    },
    Completed {
        cookie: u64,
        status: c_int,
    },
    Failed {
        peer: u32,
        status: c_int,
        message: String,
    },
}

struct Host {
    kv: Kv,
    events: Mutex<Vec<Ev>>,
}

fn host<'a>(engine: *mut c_void) -> &'a Host {
    // SAFETY: the plugin passes back the pointer we gave it, which lives
    // in the `Side` until close.
    unsafe { &*engine.cast::<Host>() }
}

unsafe extern "C" fn put(e: *mut c_void, key: *const c_char, v: *const u8, n: usize) -> c_int {
    // SAFETY: a C string and `n` readable bytes (ABI).
    let (k, v) = unsafe { (CStr::from_ptr(key), std::slice::from_raw_parts(v, n)) };
    let k = k.to_string_lossy().into_owned();
    host(e).kv.lock().unwrap().insert(k, v.to_vec());
    OK
}

unsafe extern "C" fn get(
    e: *mut c_void,
    key: *const c_char,
    buf: *mut u8,
    cap: usize,
    len: *mut usize,
) -> c_int {
    // SAFETY: a C string (ABI).
    let k = unsafe { CStr::from_ptr(key) }
        .to_string_lossy()
        .into_owned();
    let kv = host(e).kv.lock().unwrap();
    let Some(v) = kv.get(&k) else {
        return ERR_UNREACHABLE;
    };
    // SAFETY: `len` is writable (ABI).
    unsafe { *len = v.len() };
    if v.len() > cap {
        return ERR_INVALID;
    }
    // SAFETY: `buf` has `cap >= v.len()` writable bytes (ABI).
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr(), buf, v.len()) };
    OK
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn arrived(
    e: *mut c_void,
    peer: u32,
    h: *const u8,
    hl: usize,
    d: *const u8,
    len: usize,
    token: u64,
    flags: u32,
) {
    let copy = |p: *const u8, n: usize| {
        if n == 0 {
            Vec::new()
        } else {
            // SAFETY: valid during the call (ABI).
            unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
        }
    };
    let header = copy(h, hl);
    let ev = if flags & ARRIVED_DATA != 0 {
        Ev::Data {
            peer,
            header,
            data: copy(d, len),
        }
    } else {
        Ev::Token {
            peer,
            header,
            len,
            token,
        }
    };
    host(e).events.lock().unwrap().push(ev);
}

unsafe extern "C" fn completed(e: *mut c_void, cookie: u64, status: c_int) {
    host(e)
        .events
        .lock()
        .unwrap()
        .push(Ev::Completed { cookie, status });
}

unsafe extern "C" fn failed(e: *mut c_void, peer: u32, status: c_int, m: *const c_char) {
    // SAFETY: a C string (ABI).
    let message = unsafe { CStr::from_ptr(m) }.to_string_lossy().into_owned();
    host(e).events.lock().unwrap().push(Ev::Failed {
        peer,
        status,
        message,
    });
}

struct Side {
    ctx: *mut Context,
    ops: &'static Ops,
    attr: Attr,
    host: Box<Host>,
    _cb: Box<Callbacks>,
}

impl Side {
    fn open(rank: u32, size: u32, kv: &Kv) -> Side {
        // SAFETY: the plugin's descriptor: static, with a static table.
        let ops = unsafe { &*(*tessel_plugin_ucx::tessel_plugin_descriptor()).ops };
        let host = Box::new(Host {
            kv: kv.clone(),
            events: Mutex::new(Vec::new()),
        });
        let cb = Box::new(Callbacks {
            struct_size: std::mem::size_of::<Callbacks>() as u32,
            reserved: 0,
            engine: (&*host as *const Host).cast_mut().cast(),
            put,
            get,
            arrived,
            completed,
            failed,
        });
        let args = OpenArgs {
            struct_size: std::mem::size_of::<OpenArgs>() as u32,
            rank,
            size,
            reserved: 0,
            callbacks: &*cb,
        };
        let mut ctx = std::ptr::null_mut();
        let mut attr = Attr::default();
        let mut err = [0 as c_char; 256];
        // SAFETY: valid arguments; `cb` and `host` outlive the context.
        let rc =
            unsafe { ops.open.unwrap()(&args, &mut ctx, &mut attr, err.as_mut_ptr(), err.len()) };
        // SAFETY: NUL-terminated by the plugin.
        let msg = unsafe { CStr::from_ptr(err.as_ptr()) };
        assert_eq!(rc, OK, "open rank {rank}: {msg:?}");
        Side {
            ctx,
            ops,
            attr,
            host,
            _cb: cb,
        }
    }

    fn send(&self, peer: u32, header: &[u8], payload: &[u8], cookie: u64) -> c_int {
        let iov = Iov {
            base: payload.as_ptr().cast_mut().cast(),
            len: payload.len(),
        };
        let n = usize::from(!payload.is_empty());
        // SAFETY: open context; the payload outlives the send in every
        // caller (they wait for its completion or close first).
        unsafe {
            self.ops.send.unwrap()(
                self.ctx,
                peer,
                header.as_ptr(),
                header.len(),
                &iov,
                n,
                cookie,
            )
        }
    }

    fn fetch(&self, token: u64, buf: &mut [u8], cookie: u64) -> c_int {
        let iov = Iov {
            base: buf.as_mut_ptr().cast(),
            len: buf.len(),
        };
        // SAFETY: open context; the buffer outlives the fetch (callers wait).
        unsafe { self.ops.fetch.unwrap()(self.ctx, token, &iov, 1, cookie) }
    }

    fn progress(&self) -> Vec<Ev> {
        // SAFETY: open context.
        let rc = unsafe { self.ops.progress.unwrap()(self.ctx, 64) };
        assert!(rc >= 0, "progress: {}", status_name(rc));
        std::mem::take(&mut *self.host.events.lock().unwrap())
    }

    fn close(self) {
        // SAFETY: open context, not used afterwards.
        unsafe { self.ops.close.unwrap()(self.ctx) };
    }
}

/// Progress every side until `want` picks something out of an event of
/// side `of`, or 30 s pass.
fn wait<T>(sides: &[&Side], of: usize, mut want: impl FnMut(Ev) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        for (i, s) in sides.iter().enumerate() {
            for ev in s.progress() {
                if i == of
                    && let Some(t) = want(ev)
                {
                    return t;
                }
            }
        }
        assert!(Instant::now() < deadline, "no such event in 30 s");
        std::thread::yield_now();
    }
}

fn self_send() {
    let kv = Kv::default();
    let me = Side::open(0, 1, &kv);
    for (rc, what) in [
        (me.send(0, b"small", b"abc", 1), "small"),
        (me.send(0, b"x", &[], 2), "empty"),
    ] {
        assert!(rc == OK || rc == IN_PROGRESS, "{what}: {}", status_name(rc));
    }
    let mut seen = Vec::new();
    while seen.len() < 2 {
        for ev in me.progress() {
            if let Ev::Data { peer, header, data } = ev {
                assert_eq!(peer, 0);
                seen.push((header, data));
            }
        }
    }
    assert!(seen.contains(&(b"small".to_vec(), b"abc".to_vec())));

    // A rendezvous to oneself: token, then fetch.
    let big = vec![7u8; me.attr.eager_max as usize + 100];
    let rc = me.send(0, b"big", &big, 3);
    assert!(rc == OK || rc == IN_PROGRESS, "{}", status_name(rc));
    let (token, len) = wait(&[&me], 0, |ev| match ev {
        Ev::Token { token, len, .. } => Some((token, len)),
        _ => None,
    });
    assert_eq!(len, big.len());
    let mut short = vec![0u8; len - 1];
    assert_eq!(me.fetch(token, &mut short, 4), ERR_INVALID, "wrong length");
    let mut buf = vec![0u8; len];
    let rc = me.fetch(token, &mut buf, 5);
    if rc == IN_PROGRESS {
        wait(&[&me], 0, |ev| {
            matches!(
                ev,
                Ev::Completed {
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
    assert_eq!(me.fetch(token, &mut buf, 6), ERR_INVALID, "used twice");
    me.close();
}

fn refused_arguments() {
    let kv = Kv::default();
    let s = Side::open(0, 2, &kv);
    assert_eq!(s.send(2, b"h", &[], 1), ERR_UNREACHABLE);
    // Rank 1 never published an address.
    assert_eq!(s.send(1, b"h", &[], 1), ERR_UNREACHABLE);
    let long = vec![0u8; s.attr.max_header as usize + 1];
    assert_eq!(s.send(0, &long, &[], 1), ERR_INVALID);
    // SAFETY: a null list with a count is refused before any read; a bad
    // token is refused; a null context is refused.
    unsafe {
        let send = s.ops.send.unwrap();
        assert_eq!(
            send(s.ctx, 0, b"h".as_ptr(), 1, std::ptr::null(), 2, 1),
            ERR_INVALID
        );
        s.ops.discard.unwrap()(s.ctx, 12345);
        assert_eq!(
            s.ops.progress.unwrap()(std::ptr::null_mut(), 1),
            ERR_INVALID
        );
        assert_eq!(s.ops.arm.unwrap()(std::ptr::null_mut()), ERR_INVALID);
    }
    s.close();
}

fn wake_up() {
    let kv = Kv::default();
    let a = Side::open(0, 2, &kv);
    let b = Side::open(1, 2, &kv);
    assert!(b.attr.flags & ATTR_WAKE_FD != 0);
    // Connect first (wire-up needs both sides to progress).
    assert!(a.send(1, b"hello", &[], 1) >= OK);
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Ev::Data { .. }).then_some(())
    });
    // SAFETY: open context.
    let fd = unsafe { b.ops.wake_fd.unwrap()(b.ctx) };
    assert!(fd >= 0);
    // Arm until nothing is pending.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        // SAFETY: open context.
        match unsafe { b.ops.arm.unwrap()(b.ctx) } {
            OK => break,
            ERR_AGAIN => {
                a.progress();
                b.progress();
            }
            rc => panic!("arm: {}", status_name(rc)),
        }
        assert!(Instant::now() < deadline, "arm never succeeded");
    }
    assert!(a.send(1, b"wake", b"up", 2) >= OK);
    // The sender pushes the message out; the receiver sleeps in poll.
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        a.progress();
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
        Ev::Data { header, data, .. } => Some((header, data)),
        _ => None,
    });
    assert_eq!(got, (b"wake".to_vec(), b"up".to_vec()));
    println!("woken through descriptor {fd}");
    a.close();
    b.close();
}

fn peer_goes_away() {
    let kv = Kv::default();
    let a = Side::open(0, 2, &kv);
    let b = Side::open(1, 2, &kv);
    assert!(a.send(1, b"first", &[], 1) >= OK);
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Ev::Data { .. }).then_some(())
    });
    b.close();
    let (status, message) = wait(&[&a], 0, |ev| match ev {
        Ev::Failed {
            peer: 1,
            status,
            message,
        } => Some((status, message)),
        Ev::Failed { peer, .. } => panic!("failure of peer {peer}"),
        _ => None,
    });
    println!("peer failure reported: {message}");
    assert_eq!(status, ERR_PEER_FAILED, "{message}");
    assert!(message.contains("rank 1"), "{message}");
    assert_eq!(a.send(1, b"again", &[], 3), ERR_PEER_FAILED);
    a.close();
}

fn close_with_work_outstanding(sender_first: bool) {
    let kv = Kv::default();
    let a = Side::open(0, 2, &kv);
    let b = Side::open(1, 2, &kv);
    let big = vec![1u8; 1 << 20];
    let rc = a.send(1, b"big", &big, 1);
    assert!(rc == OK || rc == IN_PROGRESS);
    // B holds a token it never fetches; A's send is still in flight.
    wait(&[&a, &b], 1, |ev| {
        matches!(ev, Ev::Token { .. }).then_some(())
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
    let kv = Kv::default();
    let a = Side::open(0, 2, &kv);
    let b = Side::open(1, 2, &kv);
    let big = vec![2u8; a.attr.eager_max as usize + 1];
    let mut again = None;
    for i in 0..10_000u64 {
        match a.send(1, b"big", &big, i) {
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

use super::*;
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{self, JoinHandle};

/// What the fake process manager knows and how it behaves.
struct FakeJob {
    kvs: Mutex<HashMap<String, String>>,
    barrier: Barrier,
    maxes: (usize, usize, usize),
    /// Raw lines received from clients, for inspection.
    log: Mutex<Vec<String>>,
}

impl FakeJob {
    fn new(size: usize, mapping: Option<&str>) -> Arc<Self> {
        Self::with_maxes(size, mapping, (256, 64, 1024))
    }

    fn with_maxes(size: usize, mapping: Option<&str>, maxes: (usize, usize, usize)) -> Arc<Self> {
        let mut kvs = HashMap::new();
        if let Some(m) = mapping {
            kvs.insert(PROCESS_MAPPING_KEY.to_owned(), m.to_owned());
        }
        Arc::new(Self {
            kvs: Mutex::new(kvs),
            barrier: Barrier::new(size),
            maxes,
            log: Mutex::new(Vec::new()),
        })
    }
}

/// Serve one client connection the way a PMI-1 process manager does,
/// until the client hangs up. Returns the server side's thread.
fn serve(job: Arc<FakeJob>, stream: UnixStream) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut writer = stream.try_clone().expect("clone server stream");
        let reader = BufReader::new(stream);
        for line in reader.lines() {
            let Ok(line) = line else { break };
            job.log.lock().unwrap().push(line.clone());
            let fields: HashMap<&str, &str> = line
                .split_ascii_whitespace()
                .filter_map(|t| t.split_once('='))
                .collect();
            let reply = match fields.get("cmd").copied() {
                Some("init") => {
                    "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".to_owned()
                }
                Some("get_maxes") => format!(
                    "cmd=maxes kvsname_max={} keylen_max={} vallen_max={}",
                    job.maxes.0, job.maxes.1, job.maxes.2
                ),
                Some("get_my_kvsname") => "cmd=my_kvsname kvsname=fake_kvs rc=0".to_owned(),
                Some("put") => {
                    job.kvs
                        .lock()
                        .unwrap()
                        .insert(fields["key"].to_owned(), fields["value"].to_owned());
                    "cmd=put_result rc=0 msg=success".to_owned()
                }
                Some("get") => match job.kvs.lock().unwrap().get(fields["key"]) {
                    Some(v) => format!("cmd=get_result rc=0 msg=success value={v}"),
                    None => "cmd=get_result rc=-1 msg=key_not_found value=unknown".to_owned(),
                },
                Some("barrier_in") => {
                    job.barrier.wait();
                    "cmd=barrier_out".to_owned()
                }
                Some("finalize") => "cmd=finalize_ack".to_owned(),
                Some("abort") => continue,
                Some("surprise") => "cmd=something_else rc=0".to_owned(),
                _ => "cmd=error rc=-1 msg=unknown".to_owned(),
            };
            if writer.write_all(format!("{reply}\n").as_bytes()).is_err() {
                break;
            }
        }
    })
}

/// A client of rank `rank` in a job of `size`, connected to `job`.
fn client(job: &Arc<FakeJob>, rank: u32, size: u32) -> (PmiClient, JoinHandle<()>) {
    let (ours, theirs) = UnixStream::pair().expect("socketpair");
    let server = serve(Arc::clone(job), theirs);
    let client = PmiClient::connect(ours, rank, size).expect("handshake");
    (client, server)
}

#[test]
fn handshake_reads_maxes_kvsname_and_mapping() {
    let job = FakeJob::new(1, Some("(vector,(0,2,2))"));
    let (c, server) = client(&job, 3, 4);
    assert_eq!(c.rank(), 3);
    assert_eq!(c.size(), 4);
    assert_eq!(c.kvsname, "fake_kvs");
    assert_eq!(
        c.maxes,
        Maxes {
            kvsname: 256,
            key: 64,
            value: 1024
        }
    );
    assert_eq!(
        (0..4).map(|r| c.node_of(r)).collect::<Vec<_>>(),
        [0, 0, 1, 1]
    );
    drop(c);
    server.join().unwrap();
    let log = job.log.lock().unwrap();
    assert_eq!(
        log[..],
        [
            "cmd=init pmi_version=1 pmi_subversion=1",
            "cmd=get_maxes",
            "cmd=get_my_kvsname",
            "cmd=get kvsname=fake_kvs key=PMI_process_mapping",
        ]
    );
}

#[test]
fn missing_process_mapping_puts_every_rank_on_node_zero() {
    let job = FakeJob::new(1, None);
    let (c, _server) = client(&job, 0, 3);
    assert_eq!(c.nodes, [0, 0, 0]);
}

#[test]
fn put_get_round_trip_of_binary_values() {
    let job = FakeJob::new(1, None);
    let (mut c, _server) = client(&job, 0, 1);
    let values: [&[u8]; 4] = [
        b"plain",
        b"with spaces\0and NUL\nand newline key=value",
        &[0, 0xff, 0x80, b' ', b'=', 0x7f],
        b"",
    ];
    for (i, v) in values.iter().enumerate() {
        c.put(&format!("k{i}"), v).unwrap();
    }
    c.fence().unwrap();
    for (i, v) in values.iter().enumerate() {
        assert_eq!(c.get(&format!("k{i}")).unwrap(), *v);
    }
    // On the wire the value is hex, so nothing in it can break the line.
    let log = job.log.lock().unwrap();
    assert!(log.contains(&"cmd=put kvsname=fake_kvs key=k2 value=00ff80203d7f".to_owned()));
}

#[test]
fn get_of_an_unpublished_key_is_missing_key() {
    let job = FakeJob::new(1, None);
    let (mut c, _server) = client(&job, 0, 1);
    match c.get("nobody-put-this") {
        Err(BootstrapError::MissingKey(k)) => assert_eq!(k, "nobody-put-this"),
        other => panic!("expected MissingKey, got {other:?}"),
    }
    // The connection is still usable afterwards.
    c.put("k", b"v").unwrap();
    assert_eq!(c.get("k").unwrap(), b"v");
}

#[test]
fn fence_makes_puts_of_all_ranks_visible() {
    let job = FakeJob::new(3, None);
    let ranks: Vec<_> = (0..3u32)
        .map(|rank| {
            let job = Arc::clone(&job);
            thread::spawn(move || {
                let (mut c, _server) = client(&job, rank, 3);
                c.put(&format!("addr-{rank}"), &[rank as u8, 0, b' ', 42])
                    .unwrap();
                c.fence().unwrap();
                for peer in 0..3u32 {
                    let got = c.get(&format!("addr-{peer}")).unwrap();
                    assert_eq!(got, [peer as u8, 0, b' ', 42]);
                }
                c.finalize().unwrap();
            })
        })
        .collect();
    for r in ranks {
        r.join().unwrap();
    }
}

#[test]
fn finalize_is_acknowledged_and_ends_the_session() {
    let job = FakeJob::new(1, None);
    let (mut c, _server) = client(&job, 0, 1);
    c.finalize().unwrap();
    c.finalize().unwrap();
    assert!(matches!(c.fence(), Err(BootstrapError::Protocol(_))));
    let log = job.log.lock().unwrap();
    assert_eq!(log.iter().filter(|l| *l == "cmd=finalize").count(), 1);
}

#[test]
fn abort_request_carries_the_exit_code() {
    let job = FakeJob::new(1, None);
    let (mut c, server) = client(&job, 0, 1);
    c.send_abort(7).unwrap();
    drop(c);
    server.join().unwrap();
    assert_eq!(
        job.log.lock().unwrap().last().unwrap(),
        "cmd=abort exitcode=7"
    );
}

#[test]
fn unexpected_answer_names_both_commands() {
    let job = FakeJob::new(1, None);
    let (mut c, _server) = client(&job, 0, 1);
    let err = c.request("cmd=surprise", "surprise_result").unwrap_err();
    let BootstrapError::Protocol(msg) = err else {
        panic!("expected a protocol error, got {err:?}");
    };
    assert!(msg.contains("cmd=surprise_result"), "{msg}");
    assert!(msg.contains("cmd=something_else"), "{msg}");
}

#[test]
fn too_long_keys_and_values_are_refused_before_sending() {
    let job = FakeJob::with_maxes(1, None, (256, 8, 16));
    let (mut c, _server) = client(&job, 0, 1);
    // keylen_max=8: seven bytes fit, eight do not.
    c.put("1234567", b"").unwrap();
    let err = c.put("12345678", b"").unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Protocol(m) if m.contains("keylen_max=8")),
        "{err:?}"
    );
    // vallen_max=16: 7 raw bytes are 14 hex digits and fit, 8 do not.
    c.put("k", &[0xaa; 7]).unwrap();
    let err = c.put("k", &[0xaa; 8]).unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Protocol(m) if m.contains("vallen_max=16")),
        "{err:?}"
    );
    assert!(matches!(
        c.put("a b", b""),
        Err(BootstrapError::Protocol(_))
    ));
    assert!(matches!(c.get("a=b"), Err(BootstrapError::Protocol(_))));
    let log = job.log.lock().unwrap();
    assert!(
        !log.iter()
            .any(|l| l.contains("12345678") || l.contains("a b"))
    );
}

#[test]
fn failed_init_is_a_protocol_error() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        let mut line = String::new();
        let mut reader = BufReader::new(theirs.try_clone().unwrap());
        reader.read_line(&mut line).unwrap();
        (&theirs)
            .write_all(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=nope\n")
            .unwrap();
    });
    let err = PmiClient::connect(ours, 0, 1).unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Protocol(m) if m.contains("rc=-1") && m.contains("nope")),
        "{err:?}"
    );
    server.join().unwrap();
}

#[test]
fn closed_connection_is_an_io_error() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(theirs);
    let err = PmiClient::connect(ours, 0, 1).unwrap_err();
    assert!(matches!(err, BootstrapError::Io(_)), "{err:?}");
}

#[test]
fn malformed_answer_is_a_protocol_error() {
    for answer in [
        "cmd=response_to_init garbage\n",
        "rc=0\n",
        "cmd=response_to_init rc=x\n",
    ] {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let server = thread::spawn(move || {
            let mut line = String::new();
            BufReader::new(theirs.try_clone().unwrap())
                .read_line(&mut line)
                .unwrap();
            (&theirs).write_all(answer.as_bytes()).unwrap();
        });
        let err = PmiClient::connect(ours, 0, 1).unwrap_err();
        assert!(
            matches!(err, BootstrapError::Protocol(_)),
            "{answer:?}: {err:?}"
        );
        server.join().unwrap();
    }
}

#[test]
fn process_mapping_forms() {
    let parse = parse_process_mapping;
    assert_eq!(parse("(vector,(0,2,2))", 4).unwrap(), [0, 0, 1, 1]);
    assert_eq!(parse("(vector,(0,1,3),(1,1,1))", 4).unwrap(), [0, 0, 0, 1]);
    assert_eq!(parse("(vector,(0,1,3),(1,1,1))", 2).unwrap(), [0, 0]);
    assert_eq!(parse("(vector,(2,2,1),(0,1,2))", 4).unwrap(), [2, 3, 0, 0]);
    assert_eq!(parse(" (vector, (0,3,1)) ", 3).unwrap(), [0, 1, 2]);
    // Fewer ranks described than the job has: the pattern repeats, as
    // Hydra's one-slot-per-host description of a bigger job expects.
    assert_eq!(parse("(vector,(0,1,1))", 3).unwrap(), [0, 0, 0]);
    assert_eq!(parse("(vector,(0,2,1))", 5).unwrap(), [0, 1, 0, 1, 0]);
    // No information: everyone on node 0.
    assert_eq!(parse("", 2).unwrap(), [0, 0]);
    assert_eq!(parse("(vector)", 2).unwrap(), [0, 0]);
    // Malformed values are rejected, not guessed at.
    for bad in [
        "(vector,(0,2))",
        "(vector,(0,2,2,2))",
        "(list,(0,1,1))",
        "(vector,(0,1,x))",
        "(vector,(0,1,1)",
        "(vector(0,1,1))",
        "(vector,(0,0,3))",
        "(vector,(4294967295,2,1))",
    ] {
        assert!(parse(bad, 2).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn universe_variable_holds_the_job() {
    let u = parse_universe("2 34 77", 3).unwrap();
    assert_eq!((u.base, u.size, u.id), (2, 34, 77));
    for bad in ["2 34", "32 34 1", "a 34 1", "0 34 1 9", "0 5000000000 1"] {
        assert!(parse_universe(bad, 3).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn hex_round_trip_and_rejection() {
    let all: Vec<u8> = (0..=255).collect();
    assert_eq!(hex_decode(&hex_encode(&all)).unwrap(), all);
    assert_eq!(hex_encode(b"\0 A"), "002041");
    assert_eq!(hex_decode("0aFf").unwrap(), [0x0a, 0xff]);
    assert!(hex_decode("abc").is_none());
    assert!(hex_decode("zz").is_none());
}

#[test]
fn environment_without_pmi_fd_is_a_singleton() {
    let env = PmiEnv::from_lookup(|_| None).unwrap();
    assert_eq!(env, None);
}

#[test]
fn environment_with_only_pmi_port_is_refused() {
    let err = PmiEnv::from_lookup(|name| (name == "PMI_PORT").then(|| "host:1234".to_owned()))
        .unwrap_err();
    assert!(
        matches!(&err, BootstrapError::Protocol(m) if m.contains("PMI_PORT") && m.contains("not supported")),
        "{err:?}"
    );
}

#[test]
fn environment_values_are_validated() {
    let lookup = |vars: &'static [(&'static str, &'static str)]| {
        move |name: &str| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    };
    let ok = PmiEnv::from_lookup(lookup(&[
        ("PMI_FD", "7"),
        ("PMI_RANK", "1"),
        ("PMI_SIZE", "2"),
    ]))
    .unwrap();
    assert_eq!(
        ok,
        Some(PmiEnv {
            fd: 7,
            rank: 1,
            size: 2
        })
    );
    for vars in [
        &[("PMI_FD", "x"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")][..],
        &[("PMI_FD", "7"), ("PMI_SIZE", "1")],
        &[("PMI_FD", "7"), ("PMI_RANK", "0")],
        &[("PMI_FD", "7"), ("PMI_RANK", "2"), ("PMI_SIZE", "2")],
        &[("PMI_FD", "-1"), ("PMI_RANK", "0"), ("PMI_SIZE", "1")],
    ] {
        assert!(
            matches!(
                PmiEnv::from_lookup(lookup(vars)),
                Err(BootstrapError::Protocol(_))
            ),
            "{vars:?} was accepted"
        );
    }
}

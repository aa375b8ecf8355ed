use super::*;

fn server(np: u32) -> PmiServer {
    PmiServer::new("tessel_test", &Mapping::block(np, Some(2)))
}

fn ask(s: &mut PmiServer, rank: u32, line: &str) -> Outcome {
    s.handle_line(rank, line.as_bytes())
}

fn only_reply(out: Outcome) -> String {
    assert_eq!(out.replies.len(), 1, "{out:?}");
    out.replies.into_iter().next().unwrap().1
}

#[test]
fn handshake_answers() {
    let mut s = server(3);
    assert_eq!(
        only_reply(ask(&mut s, 1, "cmd=init pmi_version=1 pmi_subversion=1")),
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0"
    );
    assert!(
        only_reply(ask(&mut s, 1, "cmd=init pmi_version=2 pmi_subversion=0")).contains("rc=-1")
    );
    assert_eq!(
        only_reply(ask(&mut s, 1, "cmd=get_maxes")),
        "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024 rc=0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 0, "cmd=get_my_kvsname")),
        "cmd=my_kvsname kvsname=tessel_test rc=0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 0, "cmd=get_appnum")),
        "cmd=appnum appnum=0 rc=0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 2, "cmd=get_universe_size")),
        "cmd=universe_size size=3 rc=0"
    );
    assert_eq!(
        only_reply(ask(
            &mut s,
            2,
            "cmd=get kvsname=tessel_test key=PMI_process_mapping"
        )),
        "cmd=get_result rc=0 msg=success value=(vector,(0,1,2),(1,1,1))"
    );
}

#[test]
fn put_then_get_and_missing_keys() {
    let mut s = server(2);
    assert_eq!(
        only_reply(ask(
            &mut s,
            0,
            "cmd=put kvsname=tessel_test key=a value=00ff"
        )),
        "cmd=put_result rc=0 msg=success"
    );
    assert_eq!(
        only_reply(ask(&mut s, 1, "cmd=get kvsname=tessel_test key=a")),
        "cmd=get_result rc=0 msg=success value=00ff"
    );
    // Empty values are values.
    ask(&mut s, 0, "cmd=put kvsname=tessel_test key=e value=");
    assert_eq!(
        only_reply(ask(&mut s, 1, "cmd=get kvsname=tessel_test key=e")),
        "cmd=get_result rc=0 msg=success value="
    );
    let missing = only_reply(ask(&mut s, 1, "cmd=get kvsname=tessel_test key=b"));
    assert!(missing.starts_with("cmd=get_result rc=-1 "), "{missing}");
}

#[test]
fn put_and_get_are_validated() {
    let mut s = server(1);
    let long_key = "k".repeat(KEYLEN_MAX);
    let long_value = "v".repeat(VALLEN_MAX);
    for (line, msg) in [
        (
            "cmd=put kvsname=other key=a value=1".to_owned(),
            "unknown_kvsname",
        ),
        ("cmd=put key=a value=1".to_owned(), "missing_kvsname"),
        (
            "cmd=put kvsname=tessel_test value=1".to_owned(),
            "missing_key",
        ),
        (
            "cmd=put kvsname=tessel_test key=a".to_owned(),
            "missing_value",
        ),
        (
            format!("cmd=put kvsname=tessel_test key={long_key} value=1"),
            "key_too_long",
        ),
        (
            format!("cmd=put kvsname=tessel_test key=a value={long_value}"),
            "value_too_long",
        ),
        (
            "cmd=put kvsname=tessel_test key=PMI_process_mapping value=x".to_owned(),
            "key_reserved",
        ),
        ("cmd=get kvsname=other key=a".to_owned(), "unknown_kvsname"),
    ] {
        let reply = only_reply(ask(&mut s, 0, &line));
        assert!(
            reply.contains("rc=-1") && reply.contains(msg),
            "{line}: {reply}"
        );
    }
    // The longest accepted key and value.
    let key = "k".repeat(KEYLEN_MAX - 1);
    let value = "v".repeat(VALLEN_MAX - 1);
    let reply = only_reply(ask(
        &mut s,
        0,
        &format!("cmd=put kvsname=tessel_test key={key} value={value}"),
    ));
    assert_eq!(reply, "cmd=put_result rc=0 msg=success");
}

#[test]
fn process_sets_are_published_for_the_client_to_read() {
    let mut s = server(2);
    s.publish_psets(&[("app://a".to_owned(), vec![1, 0])])
        .unwrap();
    let get = |s: &mut PmiServer, key: &str| {
        only_reply(ask(s, 0, &format!("cmd=get kvsname=tessel_test key={key}")))
    };
    assert_eq!(
        get(&mut s, "tessel.psets"),
        "cmd=get_result rc=0 msg=success value=31"
    );
    let expected = shm_engine::bootstrap::pset::wire_value("app://a 1,0");
    assert_eq!(
        get(&mut s, "tessel.pset.0"),
        format!("cmd=get_result rc=0 msg=success value={expected}")
    );
    let huge: Vec<u32> = (0..1000).step_by(2).collect();
    assert!(s.publish_psets(&[("app://h".to_owned(), huge)]).is_err());
}

#[test]
fn barrier_releases_everyone_once_all_live_ranks_are_in() {
    let mut s = server(3);
    assert!(ask(&mut s, 0, "cmd=barrier_in").replies.is_empty());
    assert!(ask(&mut s, 2, "cmd=barrier_in").replies.is_empty());
    let mut released = ask(&mut s, 1, "cmd=barrier_in").replies;
    released.sort();
    assert_eq!(
        released,
        [0, 1, 2].map(|r| (r, "cmd=barrier_out rc=0".to_owned()))
    );
    // A second barrier works the same way.
    assert!(ask(&mut s, 1, "cmd=barrier_in").replies.is_empty());
    assert!(
        ask(&mut s, 1, "cmd=barrier_in").replies[0]
            .1
            .contains("rc=-1")
    );
}

#[test]
fn finalized_ranks_do_not_hold_up_barriers() {
    let mut s = server(3);
    assert!(ask(&mut s, 0, "cmd=barrier_in").replies.is_empty());
    // Rank 2 finalizes and leaves.
    ask(&mut s, 2, "cmd=finalize");
    assert!(s.rank_gone(2).is_empty());
    assert_eq!(s.blocking_departure(), None);
    // Rank 1 finalizes: now rank 0 is the only rank expected, and it
    // is in.
    let out = ask(&mut s, 1, "cmd=finalize");
    assert_eq!(
        out.replies,
        [
            (1, "cmd=finalize_ack rc=0".to_owned()),
            (0, "cmd=barrier_out rc=0".to_owned())
        ]
    );
    assert_eq!(s.stage(1), Stage::Finalized);
}

#[test]
fn a_rank_that_left_without_finalizing_blocks_barriers_for_good() {
    // Gone before anyone waits: reported once a rank enters a barrier.
    let mut s = server(3);
    ask(&mut s, 1, "cmd=init pmi_version=1 pmi_subversion=1");
    assert_eq!(s.stage(1), Stage::Initialized);
    assert!(s.rank_gone(2).is_empty());
    assert_eq!(s.blocking_departure(), None);
    assert!(ask(&mut s, 0, "cmd=barrier_in").replies.is_empty());
    assert_eq!(s.blocking_departure(), Some(2));
    // Gone from inside the barrier: the others are not released.
    let mut s = server(2);
    ask(&mut s, 0, "cmd=barrier_in");
    assert!(s.rank_gone(0).is_empty());
    assert!(ask(&mut s, 1, "cmd=barrier_in").replies.is_empty());
    assert_eq!(s.blocking_departure(), Some(0));
}

#[test]
fn the_key_value_store_is_bounded() {
    let mut s = server(2);
    let put = |s: &mut PmiServer, rank: u32, key: &str, value: &str| {
        s.handle_line(
            rank,
            format!("cmd=put kvsname=tessel_test key={key} value={value}").as_bytes(),
        )
    };
    for i in 0..KEYS_PER_RANK {
        let out = put(&mut s, 0, &format!("k{i}"), "v");
        assert_eq!(out.replies[0].1, "cmd=put_result rc=0 msg=success");
    }
    // One key too many: refused, with one warning for the log.
    let out = put(&mut s, 0, "one_more", "v");
    assert_eq!(
        out.replies[0].1,
        "cmd=put_result rc=-1 msg=key_value_store_full"
    );
    assert!(out.warning.unwrap().contains("rank 0"));
    assert!(put(&mut s, 0, "two_more", "v").warning.is_none());
    // Its own keys may still be rewritten, and other ranks still put.
    assert!(put(&mut s, 0, "k0", "w").replies[0].1.contains("rc=0"));
    assert!(put(&mut s, 1, "k_of_1", "v").replies[0].1.contains("rc=0"));
    // The job-wide byte bound: values of 1000 bytes from many "ranks"
    // of a big job.
    let mut s = PmiServer::new("tessel_test", &Mapping::block(100, None));
    let value = "v".repeat(VALLEN_MAX - 1);
    let mut accepted = 0usize;
    'fill: for rank in 0..100 {
        for i in 0..KEYS_PER_RANK {
            let out = put(&mut s, rank, &format!("r{rank}k{i}"), &value);
            if out.replies[0].1.contains("rc=-1") {
                assert!(out.warning.unwrap().contains("MiB"));
                break 'fill;
            }
            accepted += 1;
        }
    }
    assert!(accepted * VALLEN_MAX > KVS_BYTES - (1 << 20), "{accepted}");
    assert!(accepted * (VALLEN_MAX - 1) <= KVS_BYTES);
}

#[test]
fn spawn_blocks_make_a_request_and_new_jobs_get_the_next_ids() {
    let mut s = server(2);
    s.set_universe(6);
    let block = |sofar: u32| {
        format!(
            "mcmd=spawn\nnprocs=2\nexecname=/bin/prog\ntotspawns=2\nspawnssofar={sofar}\n\
             argcnt=2\narg1=a b\narg2=c\npreput_num=1\npreput_key_0=k\npreput_val_0=00ff\n\
             info_num=1\ninfo_key_0=wdir\ninfo_val_0=/tmp\nendcmd"
        )
    };
    let (one, two) = (block(1), block(2));
    let mut outs: Vec<Outcome> = one
        .lines()
        .chain(two.lines())
        .map(|l| s.handle_line(1, l.as_bytes()))
        .collect();
    let last = outs.pop().unwrap();
    assert!(outs.iter().all(|o| *o == Outcome::default()), "{outs:?}");
    let req = last.spawn.expect("a complete request");
    assert_eq!(req.by, 1);
    assert_eq!(req.apps.len(), 2);
    assert_eq!(req.apps[1].args, ["a b", "c"]);
    assert_eq!(req.apps[0].procs, 2);
    assert_eq!(req.apps[0].info, [("wdir".to_owned(), "/tmp".to_owned())]);
    assert_eq!(req.preput, [("k".to_owned(), "00ff".to_owned())]);
    assert_eq!(s.add_job(&[2, 2], &req.preput, |_| false), Ok(2));
    assert!(
        s.add_job(&[1], &[], |_| false)
            .unwrap_err()
            .starts_with("universe_full")
    );
    assert_eq!(s.job_of(5), (1, 3));
    assert_eq!(
        only_reply(ask(&mut s, 4, "cmd=get_appnum")),
        "cmd=appnum appnum=1 rc=0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 3, "cmd=get_my_kvsname")),
        "cmd=my_kvsname kvsname=tessel_test_1 rc=0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 3, "cmd=get kvsname=tessel_test_1 key=k")),
        "cmd=get_result rc=0 msg=success value=00ff"
    );
    // Each job's space and barrier are its own.
    assert!(only_reply(ask(&mut s, 0, "cmd=get kvsname=tessel_test_1 key=k")).contains("rc=-1"));
    for id in 2..5 {
        assert!(ask(&mut s, id, "cmd=barrier_in").replies.is_empty());
    }
    let out = ask(&mut s, 5, "cmd=barrier_in");
    let mut ids: Vec<u32> = out.replies.iter().map(|r| r.0).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 3, 4, 5]);
    // A block without its counts is refused.
    s.handle_line(0, b"mcmd=spawn");
    let out = s.handle_line(0, b"endcmd");
    assert!(only_reply(out).starts_with("cmd=spawn_result rc=-1"));
}

#[test]
fn ids_of_ended_jobs_are_given_again() {
    let mut s = server(1);
    s.set_universe(4);
    assert_eq!(s.add_job(&[1], &[], |_| false), Ok(1));
    assert_eq!(s.add_job(&[2], &[], |_| false), Ok(2));
    // Id 1's job ended; 2 and 3 still run: one id is free, not two.
    assert_eq!(s.add_job(&[1], &[], |id| id == 1), Ok(1));
    assert!(
        s.add_job(&[2], &[], |id| id == 2).is_err(),
        "half a job is not free"
    );
    assert_eq!(s.add_job(&[2], &[], |id| id >= 2), Ok(2));
    assert_eq!(s.job_of(3), (4, 1));
    // The first job's ids are never given again.
    assert!(s.add_job(&[1], &[], |_| true).is_ok_and(|b| b >= 1));
}

#[test]
fn created_process_sets_get_unique_names_and_are_listed_in_order() {
    let mut s = server(3);
    assert_eq!(
        only_reply(ask(&mut s, 0, "cmd=pset_create op=union members=0-2")),
        "cmd=pset_create_result rc=0 msg=success name=mpix://union/0"
    );
    assert_eq!(
        only_reply(ask(&mut s, 1, "cmd=pset_create op=difference members=")),
        "cmd=pset_create_result rc=0 msg=success name=mpix://difference/1"
    );
    for bad in [
        "op=xor members=0",
        "op=union members=7",
        "op=union members=1,1",
        "op=union",
    ] {
        let line = format!("cmd=pset_create {bad}");
        assert!(only_reply(ask(&mut s, 0, &line)).contains("rc=-1"), "{bad}");
    }
    let hex = |t: &str| shm_engine::bootstrap::pset::wire_value(t);
    assert_eq!(
        only_reply(ask(&mut s, 2, "cmd=pset_fetch from=0")),
        format!(
            "cmd=pset_fetch_result rc=0 msg=success sets={}",
            hex("mpix://union/0 0-2\nmpix://difference/1 \n")
        )
    );
    assert_eq!(
        only_reply(ask(&mut s, 2, "cmd=pset_fetch from=1")),
        format!(
            "cmd=pset_fetch_result rc=0 msg=success sets={}",
            hex("mpix://difference/1 \n")
        )
    );
}

#[test]
fn names_are_published_once_for_every_job() {
    let mut s = server(2);
    s.set_universe(3);
    s.add_job(&[1], &[], |_| false).unwrap();
    let publish = "cmd=publish_name service=737663 port=7031";
    assert_eq!(
        only_reply(ask(&mut s, 0, publish)),
        "cmd=publish_result rc=0 msg=success"
    );
    assert!(only_reply(ask(&mut s, 1, publish)).contains("rc=-1"));
    assert_eq!(
        only_reply(ask(&mut s, 2, "cmd=lookup_name service=737663")),
        "cmd=lookup_result rc=0 msg=success port=7031"
    );
    assert!(only_reply(ask(&mut s, 2, "cmd=unpublish_name service=737663")).contains("rc=0"));
    assert!(only_reply(ask(&mut s, 1, "cmd=lookup_name service=737663")).contains("rc=-1"));
    assert!(only_reply(ask(&mut s, 1, "cmd=unpublish_name service=737663")).contains("rc=-1"));
}

#[test]
fn abort_carries_the_exit_code() {
    let mut s = server(2);
    let out = ask(&mut s, 1, "cmd=abort exitcode=7");
    assert_eq!(out.abort, Some(7));
    assert!(out.replies.is_empty());
    assert_eq!(ask(&mut s, 1, "cmd=abort").abort, Some(1));
}

#[test]
fn unknown_and_malformed_lines_get_errors_not_panics() {
    let mut s = server(1);
    for line in [
        &b"cmd=frobnicate x=1"[..],
        b"garbage",
        b"",
        b"key=value",
        b"cmd=put kvsname",
        b"\xff\xfe cmd=init",
    ] {
        let out = s.handle_line(0, line);
        assert_eq!(out.replies.len(), 1, "{line:?}");
        assert!(
            out.replies[0].1.starts_with("cmd=error rc=-1 msg="),
            "{out:?}"
        );
        assert!(!out.replies[0].1["cmd=error rc=-1 msg=".len()..].contains(' '));
        assert!(out.warning.is_some(), "{line:?}");
    }
    let out = ask(&mut s, 0, "cmd=frobnicate");
    assert!(out.warning.unwrap().contains("frobnicate"));
    // A line with a carriage return is still understood.
    assert_eq!(
        only_reply(ask(&mut s, 0, "cmd=get_appnum\r")),
        "cmd=appnum appnum=0 rc=0"
    );
}

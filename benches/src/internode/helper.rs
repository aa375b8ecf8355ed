//! The hidden helper modes of the `internode` binary, which the schedule
//! runs as jobs of their own (under `compare`'s watchdog, printing
//! `result` lines like the C programs):
//!
//! * `internode __transport TEST SIZE ITERS BATCHES`: a transport's own
//!   benchmark tool, server and client over loopback, BATCHES times; the
//!   median of their figures as one `result` line ([`Test`]:
//!   `ucx_perftest` for UCX, `fi_pingpong` for libfabric).
//! * `internode __until-results N GRACE -- COMMAND...`: runs COMMAND,
//!   passing its stdout through; once COMMAND has printed N `result`
//!   lines and is still running GRACE seconds later, ends it (SIGTERM,
//!   then SIGKILL) and exits with 0, saying so on stderr. For an MPI that
//!   hangs in `MPI_Finalize` after its measurement is complete.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::compare::competitors::tail;

/// First argument of the transport helper.
pub const TRANSPORT: &str = "__transport";
/// First argument of the wrapper that ends a job after its results.
pub const UNTIL_RESULTS: &str = "__until-results";
/// What the wrapper prints on stderr when it ended a job.
pub const ENDED_NOTE: &str = "internode: ended after its results";

/// The transport tools' tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Test {
    /// `ucx_perftest -t ucp_am_lat`: UCP active-message ping-pong (the
    /// plugin sends UCP active messages), half the round trip.
    UcxLat,
    /// `ucx_perftest -t ucp_am_bw`: a stream of UCP active messages.
    UcxBw,
    /// `fi_pingpong -p tcp -e rdm`: ping-pong of untagged messages on
    /// reliable-datagram endpoints (what the plugin opens), half the
    /// round trip; without the connection's set-up, which its timed loop
    /// includes (two runs, N and 2N round trips, differenced; another
    /// pair, at most 3 in all, when the difference is not positive).
    FiPingpong,
}

impl Test {
    pub const ALL: [Test; 3] = [Test::UcxLat, Test::UcxBw, Test::FiPingpong];

    /// The tool's program.
    pub fn tool(self) -> &'static str {
        match self {
            Test::UcxLat | Test::UcxBw => "ucx_perftest",
            Test::FiPingpong => "fi_pingpong",
        }
    }

    /// The name in `result` lines and on the helper's command line.
    pub fn name(self) -> &'static str {
        match self {
            Test::UcxLat => "ucp_am_lat",
            Test::UcxBw => "ucp_am_bw",
            Test::FiPingpong => "fi_pingpong",
        }
    }

    /// The Tessel plugin the tool measures the transport of.
    pub fn plugin(self) -> &'static str {
        match self {
            Test::UcxLat | Test::UcxBw => "ucx",
            Test::FiPingpong => "ofi",
        }
    }

    /// The `metric` of its `result` line, named as `pingpong.c` names the
    /// same quantity.
    pub fn metric(self) -> &'static str {
        match self {
            Test::UcxBw => "bw_uni",
            Test::UcxLat | Test::FiPingpong => "latency",
        }
    }

    fn from_name(s: &str) -> Option<Test> {
        Test::ALL.into_iter().find(|t| t.name() == s)
    }

    /// Iterations for one run of about half a second here.
    pub fn iters(self, size: u64, quick: bool) -> u64 {
        if quick {
            // fi_pingpong's figure is a difference of two runs (see
            // `transport`): too few iterations leave only noise.
            return if self == Test::FiPingpong { 1000 } else { 100 };
        }
        let size = size.max(1);
        match self {
            // Small messages: tens of microseconds per round trip at most.
            Test::UcxLat | Test::FiPingpong if size <= 64 << 10 => 10_000,
            // Large ones: about 256 MiB each way (ping-pong) or 512 MiB.
            Test::UcxLat | Test::FiPingpong => ((256 << 20) / size).clamp(16, 10_000),
            Test::UcxBw => ((512 << 20) / size).clamp(32, 100_000),
        }
    }

    /// The helper's arguments for one run: the median of `batches` runs
    /// of the tool (of pairs of runs for `fi_pingpong`).
    pub fn helper_args(self, size: u64, iters: u64, batches: u32) -> Vec<String> {
        vec![
            TRANSPORT.into(),
            self.name().into(),
            size.to_string(),
            iters.to_string(),
            batches.to_string(),
        ]
    }

    /// The server's and the client's command on loopback port `port`,
    /// with the environment that holds the transport to TCP on `lo`.
    fn commands(self, size: u64, iters: u64, port: u16) -> (Command, Command) {
        let (s, n, p) = (size.to_string(), iters.to_string(), port.to_string());
        let mut server = Command::new(self.tool());
        let mut client = Command::new(self.tool());
        match self {
            Test::UcxLat | Test::UcxBw => {
                let warm = (iters / 10).max(10).to_string();
                server.args(["-p", &p]);
                client.args(["127.0.0.1", "-p", &p, "-t", self.name(), "-s", &s]);
                client.args(["-n", &n, "-w", &warm, "-v"]);
                for c in [&mut server, &mut client] {
                    c.env("UCX_TLS", "tcp").env("UCX_NET_DEVICES", "lo");
                }
            }
            Test::FiPingpong => {
                let common = ["-p", "tcp", "-e", "rdm", "-I", &n, "-S", &s];
                server.args(common).args(["-B", &p]);
                client.args(common).args(["-P", &p, "127.0.0.1"]);
                for c in [&mut server, &mut client] {
                    c.env("FI_PROVIDER", "tcp").env("FI_TCP_IFACE", "lo");
                }
            }
        }
        (server, client)
    }

    /// The figure of one run's client output: µs for latency, MB/s for
    /// bandwidth (`fi_pingpong`'s needs two runs: [`fi_difference`]).
    pub fn figure(self, client_out: &str) -> Result<f64, String> {
        let value = match self {
            Test::UcxLat => parse_perftest(client_out)?.overall_lat_us,
            // ucx_perftest's MB are MiB.
            Test::UcxBw => parse_perftest(client_out)?.overall_bw_mib * 1.048_576,
            Test::FiPingpong => return Err("fi_pingpong's figure needs two runs".into()),
        };
        if value.is_finite() && value > 0.0 {
            Ok(value)
        } else {
            Err(format!("{}: no positive figure ({value})", self.tool()))
        }
    }

    /// The `result` line of `value` at `size`.
    pub fn result_line(self, size: u64, value: f64) -> String {
        let unit = if self.metric() == "latency" {
            "us"
        } else {
            "MB/s"
        };
        format!(
            "result bench=pingpong metric={} size={size} test={} value={value:.6} unit={unit}",
            self.metric(),
            self.name()
        )
    }
}

/// The final figures of `ucx_perftest`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Perftest {
    /// Mean time per iteration over the whole run, in µs: for the
    /// ping-pong tests, half a round trip.
    pub overall_lat_us: f64,
    /// Bandwidth over the whole run, in MiB/s.
    pub overall_bw_mib: f64,
}

/// `ucx_perftest`'s final line: with `-v`, a CSV header naming
/// `overall_lat` and `overall_bw` and a line of numbers; otherwise (older
/// versions, or the table of `-f`) the last line of at least 8 numbers:
/// iterations, percentile, average and overall latency, average and
/// overall bandwidth, average and overall message rate.
pub fn parse_perftest(out: &str) -> Result<Perftest, String> {
    let numbers = |fields: &[&str]| -> Option<Vec<f64>> {
        fields
            .iter()
            .map(|f| f.trim().parse::<f64>().ok())
            .collect()
    };
    let lines: Vec<&str> = out.lines().collect();
    if let Some(h) = lines
        .iter()
        .rposition(|l| l.contains("overall_lat") && l.contains(','))
    {
        let header: Vec<&str> = lines[h].split(',').map(str::trim).collect();
        let col = |name: &str| header.iter().position(|c| *c == name);
        if let (Some(lat), Some(bw)) = (col("overall_lat"), col("overall_bw")) {
            let last = lines[h + 1..].iter().rev().find_map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                (f.len() == header.len()).then(|| numbers(&f)).flatten()
            });
            if let Some(v) = last {
                return Ok(Perftest {
                    overall_lat_us: v[lat],
                    overall_bw_mib: v[bw],
                });
            }
        }
    }
    let last = lines.iter().rev().find_map(|l| {
        let f: Vec<&str> = l
            .split(|c: char| c.is_whitespace() || c == '|')
            .filter(|w| !w.is_empty())
            .skip_while(|w| w.parse::<f64>().is_err())
            .collect();
        (f.len() >= 8).then(|| numbers(&f[..8])).flatten()
    });
    match last {
        Some(v) => Ok(Perftest {
            overall_lat_us: v[3],
            overall_bw_mib: v[5],
        }),
        None => Err(format!(
            "ucx_perftest printed no final figures: {}",
            tail(out, 4)
        )),
    }
}

/// `fi_pingpong`'s `usec/xfer` (half the round trip, in µs) for `size`:
/// from the line after the header `bytes #sent #ack total time MB/sec
/// usec/xfer Mxfers/sec` whose first field is the size (`8`, `64k`, `16m`).
pub fn parse_fi_pingpong(out: &str, size: u64) -> Result<f64, String> {
    let mut col = None;
    for line in out.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.first() == Some(&"bytes") {
            col = f
                .iter()
                .position(|w| *w == "usec/xfer")
                .map(|c| (c, f.len()));
            continue;
        }
        let Some((c, n)) = col else { continue };
        if f.len() == n && parse_size(f[0]) == Some(size) {
            return f[c]
                .parse::<f64>()
                .map_err(|_| format!("fi_pingpong: `{}` is not a time in: {line}", f[c]));
        }
    }
    Err(format!(
        "fi_pingpong printed no line for {size} bytes: {}",
        tail(out, 4)
    ))
}

/// `8`, `64k`, `16m`, `1g` (binary multiples, as fabtests print them).
fn parse_size(s: &str) -> Option<u64> {
    let (digits, unit) = match s.char_indices().last()? {
        (i, 'k') => (&s[..i], 1 << 10),
        (i, 'm') => (&s[..i], 1 << 20),
        (i, 'g') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    // Sizes such as 1.5k name no size this command asks for.
    digits.parse::<u64>().ok().map(|d| d * unit)
}

/// Runs a helper mode when `args` (the program's, without its name) start
/// with one; `None` otherwise.
pub fn run(args: &[String]) -> Option<ExitCode> {
    let (first, rest) = args.split_first()?;
    let outcome = match first.as_str() {
        TRANSPORT => transport(rest),
        UNTIL_RESULTS => until_results(rest),
        _ => return None,
    };
    Some(outcome.unwrap_or_else(|e| {
        eprintln!("internode {first}: {e}");
        ExitCode::FAILURE
    }))
}

fn transport(args: &[String]) -> Result<ExitCode, String> {
    let [test, size, iters, batches] = args else {
        return Err("usage: __transport TEST SIZE ITERS BATCHES".into());
    };
    let test = Test::from_name(test).ok_or_else(|| format!("no test `{test}`"))?;
    let size: u64 = size.parse().map_err(|_| format!("bad size `{size}`"))?;
    let iters: u64 = iters.parse().map_err(|_| format!("bad count `{iters}`"))?;
    let batches: u32 = batches
        .parse()
        .ok()
        .filter(|b| *b > 0)
        .ok_or_else(|| format!("bad count `{batches}`"))?;
    let mut values = Vec::new();
    for _ in 0..batches {
        values.push(one_figure(test, size, iters)?);
    }
    eprintln!("{} {size} B: batches {values:?}", test.name());
    let value = crate::compare::stats::median(&values).expect("at least one batch");
    println!("{}", test.result_line(size, value));
    Ok(ExitCode::SUCCESS)
}

/// One batch: the figure of one run (of one pair of runs for
/// `fi_pingpong`).
fn one_figure(test: Test, size: u64, iters: u64) -> Result<f64, String> {
    match test {
        Test::UcxLat | Test::UcxBw => test.figure(&server_and_client(test, size, iters)?),
        Test::FiPingpong => {
            // fi_pingpong has no warm-up: its timed loop includes the first
            // transfer, which opens the connection. Runs of N and 2N
            // round trips each pay that once; their difference does not.
            // A disturbed pair can leave no positive difference: up to 3
            // pairs.
            let mut last = Err(String::new());
            for _ in 0..3 {
                let one = parse_fi_pingpong(&server_and_client(test, size, iters)?, size)?;
                let two = parse_fi_pingpong(&server_and_client(test, size, 2 * iters)?, size)?;
                eprintln!(
                    "fi_pingpong {size} B: {one} us/xfer over {iters} iterations, {two} over {}",
                    2 * iters
                );
                last = fi_difference(one, two);
                if last.is_ok() {
                    break;
                }
            }
            last
        }
    }
}

/// `fi_pingpong`'s time per transfer from its `usec/xfer` over N (`one`)
/// and 2N (`two`) iterations: that of the N iterations the second run did
/// more, 2·two − one.
pub fn fi_difference(one: f64, two: f64) -> Result<f64, String> {
    let value = 2.0 * two - one;
    if value.is_finite() && value > 0.0 {
        Ok(value)
    } else {
        Err(format!(
            "fi_pingpong: {one} us/xfer over N iterations and {two} over 2N leave no positive \
             time per transfer (too noisy)"
        ))
    }
}

/// A loopback TCP port nobody listens on now.
fn free_port() -> Result<u16, String> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| format!("bind: {e}"))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| format!("local_addr: {e}"))
}

/// Whether some socket listens on TCP `port` (from `/proc/net/tcp{,6}`:
/// local address `HEXIP:HEXPORT`, state `0A`).
fn listening(port: u16) -> bool {
    let want = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|f| {
        std::fs::read_to_string(f).is_ok_and(|t| {
            t.lines().skip(1).any(|l| {
                let w: Vec<&str> = l.split_whitespace().collect();
                w.len() > 3 && w[1].ends_with(&want) && w[3] == "0A"
            })
        })
    })
}

fn collect(r: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut s = String::new();
        let _ = BufReader::new(r).read_to_string(&mut s);
        s
    })
}

/// Start the tool's server, wait until it listens, run the client and
/// return the client's stdout.
fn server_and_client(test: Test, size: u64, iters: u64) -> Result<String, String> {
    let port = free_port()?;
    let (mut server, mut client) = test.commands(size, iters, port);
    let mut srv = server
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", test.tool()))?;
    let srv_out = collect(srv.stdout.take().expect("piped"));
    let srv_err = collect(srv.stderr.take().expect("piped"));
    let server_text =
        |srv: &mut Child, out: thread::JoinHandle<String>, err: thread::JoinHandle<String>| {
            let _ = srv.kill();
            let _ = srv.wait();
            format!(
                "{}\n{}",
                out.join().unwrap_or_default(),
                err.join().unwrap_or_default()
            )
        };
    let start = Instant::now();
    while !listening(port) {
        if matches!(srv.try_wait(), Ok(Some(_))) || start.elapsed() > Duration::from_secs(20) {
            let text = server_text(&mut srv, srv_out, srv_err);
            return Err(format!(
                "the {} server did not listen on port {port}: {}",
                test.tool(),
                tail(&text, 4)
            ));
        }
        thread::sleep(Duration::from_millis(5));
    }
    let out = client
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", test.tool()));
    // The server ends with its client; give it a moment, then end it.
    let start = Instant::now();
    while matches!(srv.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(10));
    }
    let server_said = server_text(&mut srv, srv_out, srv_err);
    let out = out?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        let text = format!(
            "{stdout}\n{}\n{server_said}",
            String::from_utf8_lossy(&out.stderr)
        );
        return Err(format!(
            "{} client failed ({}): {}",
            test.tool(),
            out.status,
            tail(&text, 6)
        ));
    }
    Ok(stdout)
}

/// The wrapper's arguments for `lines` result lines and `grace` seconds.
pub fn until_results_args(lines: usize, grace: u64) -> Vec<String> {
    vec![
        UNTIL_RESULTS.into(),
        lines.to_string(),
        grace.to_string(),
        "--".into(),
    ]
}

fn until_results(args: &[String]) -> Result<ExitCode, String> {
    let usage = || "usage: __until-results N GRACE -- COMMAND...".to_string();
    let [lines, grace, dashes, cmd @ ..] = args else {
        return Err(usage());
    };
    if dashes != "--" || cmd.is_empty() {
        return Err(usage());
    }
    let lines: usize = lines.parse().map_err(|_| usage())?;
    let grace = Duration::from_secs(grace.parse().map_err(|_| usage())?);
    let mut child = Command::new(&cmd[0])
        .args(&cmd[1..])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cmd[0]))?;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().expect("piped");
    let reader = thread::spawn(move || {
        let mut seen = 0;
        let mut out = std::io::stdout();
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
            if line.starts_with("result ") {
                seen += 1;
                if seen == lines {
                    let _ = tx.send(());
                }
            }
        }
    });
    let mut results_at = None;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| format!("wait: {e}"))? {
            let _ = reader.join();
            use std::os::unix::process::ExitStatusExt;
            let code = status
                .code()
                .or_else(|| status.signal().map(|s| 128 + s))
                .unwrap_or(1);
            return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
        }
        if results_at.is_none() && rx.try_recv().is_ok() {
            results_at = Some(Instant::now());
        }
        if results_at.is_some_and(|t| t.elapsed() >= grace) {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    eprintln!(
        "{ENDED_NOTE}: still running {} s after printing them (SIGTERM to {})",
        grace.as_secs(),
        cmd[0]
    );
    let pid = child.id() as libc::pid_t;
    // SAFETY: kill(2) only sends a signal; pid is our child, not yet
    // waited for, so it cannot have been reused.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let start = Instant::now();
    while matches!(child.try_wait(), Ok(None)) && start.elapsed() < Duration::from_secs(3) {
        thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    // What is left of the job (ranks holding our stdout open) goes with
    // the process group when the watchdog sees this process exit.
    let _ = std::io::stdout().flush();
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PERFTEST_CSV: &str = "\
+--------------------------------------------------+
| API:          protocol layer                     |
+--------------------------------------------------+
iterations,50.0_percentile_lat,avg_lat,overall_lat,avg_bw,overall_bw,avg_mr,overall_mr
10000,4.896,37.546,37.511,0.20,0.21,26634,26634
";

    #[test]
    fn perftest_csv() {
        let p = parse_perftest(PERFTEST_CSV).unwrap();
        assert_eq!((p.overall_lat_us, p.overall_bw_mib), (37.511, 0.21));
    }

    #[test]
    fn perftest_table_and_final_lines() {
        let table = "\
|     Test     | # iterations | 50.0%ile | average | overall |  average |  overall |  average  |  overall  |
+--------------+--------------+----------+---------+---------+----------+----------+-----------+-----------+
                       10000      4.784    59.134    85.933        0.13       0.09       16911       11637
";
        let p = parse_perftest(table).unwrap();
        assert_eq!((p.overall_lat_us, p.overall_bw_mib), (85.933, 0.09));
        let fin = "Final:               200     0.410  2603.390  2603.390      384.11     384.11         384         384\n";
        let p = parse_perftest(fin).unwrap();
        assert_eq!((p.overall_lat_us, p.overall_bw_mib), (2603.39, 384.11));
        assert!(parse_perftest("Waiting for connection...\n").is_err());
        assert!(parse_perftest("").is_err());
    }

    #[test]
    fn fi_pingpong_lines() {
        let out = "\
bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec
16m     50      =50      1.5g        0.78s   2164.34    7751.65       0.00
";
        assert_eq!(parse_fi_pingpong(out, 16 << 20), Ok(7751.65));
        assert!(parse_fi_pingpong(out, 8).is_err());
        let small = "bytes   #sent   #ack     total       time     MB/sec    usec/xfer   Mxfers/sec\n\
                     8       1k      =1k      15k         0.03s      0.48      16.80       0.06\n";
        assert_eq!(parse_fi_pingpong(small, 8), Ok(16.8));
        assert!(parse_fi_pingpong("fi_getinfo(): -61\n", 8).is_err());
    }

    #[test]
    fn fi_pingpong_without_its_connection_set_up() {
        // 1000 round trips at 30 us/xfer, 2000 at 20: the extra 1000 took 10.
        assert_eq!(fi_difference(30.0, 20.0), Ok(10.0));
        assert!(fi_difference(30.0, 15.0).is_err());
    }

    #[test]
    fn sizes_as_fabtests_print_them() {
        assert_eq!(parse_size("8"), Some(8));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("16m"), Some(16 << 20));
        assert_eq!(parse_size("1.5k"), None);
        assert_eq!(parse_size("bytes"), None);
    }

    #[test]
    fn result_lines_name_the_metric_of_pingpong_c() {
        let v = Test::UcxLat.figure(PERFTEST_CSV).unwrap();
        assert_eq!(
            Test::UcxLat.result_line(64, v),
            "result bench=pingpong metric=latency size=64 test=ucp_am_lat value=37.511000 unit=us"
        );
        let v = Test::UcxBw.figure(PERFTEST_CSV).unwrap();
        let l = Test::UcxBw.result_line(1 << 20, v);
        assert!(
            l.contains("metric=bw_uni") && l.contains("unit=MB/s"),
            "{l}"
        );
        let parsed = crate::compare::stats::parse_line(&l).unwrap().unwrap();
        assert!((parsed.value - 0.21 * 1.048_576).abs() < 1e-6);
        let l = Test::FiPingpong.result_line(8, 10.0);
        let parsed = crate::compare::stats::parse_line(&l).unwrap().unwrap();
        assert_eq!(
            (parsed.metric.as_str(), parsed.unit.as_str()),
            ("latency", "us")
        );
        assert!(Test::FiPingpong.figure("").is_err());
    }

    #[test]
    fn helper_arguments_round_trip() {
        for t in Test::ALL {
            let a = t.helper_args(64, 100, 5);
            assert_eq!(a[0], TRANSPORT);
            assert_eq!(Test::from_name(&a[1]), Some(t));
        }
        assert!(Test::UcxBw.iters(16 << 20, false) >= 32);
        assert_eq!(Test::UcxLat.iters(1, true), 100);
        assert_eq!(Test::FiPingpong.iters(1, true), 1000);
    }

    fn until(args: &[&str]) -> ExitCode {
        let mut v = until_results_args(1, 1);
        v.extend(args.iter().map(|s| s.to_string()));
        until_results(&v[1..]).unwrap()
    }

    #[test]
    fn the_wrapper_passes_the_exit_code_through() {
        assert_eq!(
            until(&["sh", "-c", "echo result x; exit 0"]),
            ExitCode::SUCCESS
        );
        assert_eq!(until(&["sh", "-c", "exit 3"]), ExitCode::from(3));
    }

    #[test]
    fn the_wrapper_ends_a_job_that_hangs_after_its_results() {
        // Left alone, the job would exit with 5 ten seconds later.
        let job = "echo 'result bench=b'; i=0; while [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; exit 5";
        assert_eq!(until(&["sh", "-c", job]), ExitCode::SUCCESS);
    }

    #[test]
    fn the_wrapper_waits_for_a_job_without_results() {
        // No result line: never ended early, whatever it takes.
        let code = until(&["sh", "-c", "sleep 2; exit 4"]);
        assert_eq!(code, ExitCode::from(4));
    }

    #[test]
    fn listening_sees_a_listener() {
        let l = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(listening(port));
        drop(l);
    }
}

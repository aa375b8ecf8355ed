//! PMI-1 client speaking the "simple" wire protocol.
//!
//! The process manager (Tessel's `mpiexec`, or MPICH's Hydra) hands every
//! process one end of a connected unix stream socket, announced in the
//! environment as `PMI_FD`, together with `PMI_RANK` and `PMI_SIZE`. Requests
//! and answers are single lines of space-separated `key=value` pairs, each
//! answer naming its kind in `cmd=`:
//!
//! | request                               | answer                                      |
//! | ------------------------------------- | ------------------------------------------- |
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init ... rc=0`         |
//! | `cmd=get_maxes`                       | `cmd=maxes kvsname_max=.. keylen_max=.. vallen_max=..` |
//! | `cmd=get_my_kvsname`                  | `cmd=my_kvsname kvsname=..`                 |
//! | `cmd=put kvsname=K key=KEY value=V`   | `cmd=put_result rc=0`                       |
//! | `cmd=get kvsname=K key=KEY`           | `cmd=get_result rc=0 value=V`               |
//! | `cmd=barrier_in`                      | `cmd=barrier_out`                           |
//! | `cmd=finalize`                        | `cmd=finalize_ack`                          |
//! | `cmd=abort exitcode=C`                | (none: the job is torn down)                |
//! | `mcmd=spawn` .. `endcmd` (per command) | `cmd=spawn_result rc=0 base=B`             |
//! | `cmd=publish_name service=S port=P`   | `cmd=publish_result rc=0`                   |
//! | `cmd=unpublish_name service=S`        | `cmd=unpublish_result rc=0`                 |
//! | `cmd=lookup_name service=S`           | `cmd=lookup_result rc=0 port=P`             |
//!
//! Spawn blocks follow MPICH's simple PMI (one `key=value` per line);
//! `base=`, the new job's first id in the universe, is Tessel's `mpiexec`'s
//! addition, and so is [`UNIVERSE_VAR`]. Service and port names travel
//! hex-encoded.
//!
//! Values cannot hold spaces or newlines on the wire, so [`PmiClient`]
//! hex-encodes what it puts and decodes what it gets: any byte string
//! round-trips. Key and encoded value must stay strictly shorter than the
//! `keylen_max` / `vallen_max` the process manager announces (those are C
//! buffer sizes that include the terminating NUL); Hydra accepts longer ones
//! with `rc=0` and silently truncates them, so the client refuses them itself.

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::{FromRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::OnceLock;

use super::{Bootstrap, BootstrapError, DynresChange, SpawnApp, Universe};

/// The variable in which Tessel's `mpiexec` tells a process its job's
/// place in the universe: `BASE SIZE` (see [`Universe`]). Other process
/// managers do not set it: the universe is then the job.
pub const UNIVERSE_VAR: &str = "TESSEL_UNIVERSE";
// The value is `BASE SIZE ID`, ID naming the launcher.

/// Key under which PMI-1 process managers publish the rank-to-node map.
const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// Longest answer line accepted from the process manager, newline included.
const MAX_RESPONSE_LINE: u64 = 64 * 1024;

/// Set once a [`PmiClient`] has taken ownership of the `PMI_FD` descriptor,
/// so that a second [`PmiClient::from_env`] cannot wrap (and later close)
/// the same descriptor again.
static PMI_FD_CLAIMED: OnceLock<()> = OnceLock::new();

/// Limits announced by the process manager in its `cmd=maxes` answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Maxes {
    kvsname: usize,
    key: usize,
    value: usize,
}

/// A PMI-1 client connected to the process manager that started this
/// process; implements [`Bootstrap`].
///
/// Each operation is one request line and (except for abort) one answer
/// line on the `PMI_FD` socket, so the client is strictly synchronous.
#[derive(Debug)]
pub struct PmiClient {
    conn: BufReader<UnixStream>,
    rank: u32,
    size: u32,
    kvsname: String,
    maxes: Maxes,
    /// Node of every rank, `size` entries.
    nodes: Vec<u32>,
    universe: Universe,
    /// The process manager is Tessel's `mpiexec` (it set [`UNIVERSE_VAR`]):
    /// it answers the process-set and resource-change commands.
    tessel: bool,
    finalized: bool,
}

impl PmiClient {
    /// Connect to the process manager named by the environment.
    ///
    /// Reads `PMI_FD` (an inherited, connected unix stream socket),
    /// `PMI_RANK` and `PMI_SIZE`, takes ownership of the socket (it is
    /// marked close-on-exec so programs this process starts do not inherit
    /// it) and performs the PMI-1 handshake: `init`, `get_maxes`,
    /// `get_my_kvsname` and a read of `PMI_process_mapping`.
    ///
    /// Returns `Ok(None)` when `PMI_FD` is not set (the process was started
    /// without a launcher). A process manager that only offers `PMI_PORT`
    /// (a TCP address) is refused with [`BootstrapError::Protocol`]. Calling
    /// this a second time in a process that already took the socket is a
    /// [`BootstrapError::Protocol`] error too.
    pub fn from_env() -> Result<Option<Self>, BootstrapError> {
        let Some(env) = PmiEnv::from_lookup(|name| std::env::var(name).ok())? else {
            return Ok(None);
        };
        let universe = match std::env::var(UNIVERSE_VAR) {
            Ok(v) => Some(parse_universe(&v, env.size)?),
            Err(_) => None,
        };
        let stream = claim_pmi_fd(env.fd)?;
        let mut client = Self::connect(stream, env.rank, env.size)?;
        client.tessel = universe.is_some();
        // Another process manager: the universe is the job, named by its
        // key-value space.
        client.universe = universe.unwrap_or(Universe {
            base: 0,
            size: env.size,
            id: client.kvsname.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            }),
        });
        Ok(Some(client))
    }

    /// Perform the PMI-1 handshake over an already connected `stream`, for
    /// the process of rank `rank` in a job of `size` processes.
    fn connect(stream: UnixStream, rank: u32, size: u32) -> Result<Self, BootstrapError> {
        if size == 0 || rank >= size {
            return Err(BootstrapError::Protocol(format!(
                "rank {rank} is outside a job of {size} processes"
            )));
        }
        let mut client = Self {
            conn: BufReader::new(stream),
            rank,
            size,
            kvsname: String::new(),
            maxes: Maxes {
                kvsname: 0,
                key: 0,
                value: 0,
            },
            nodes: Vec::new(),
            universe: Universe {
                base: 0,
                size,
                id: 0,
            },
            tessel: false,
            finalized: false,
        };

        let init = client.request(
            "cmd=init pmi_version=1 pmi_subversion=1",
            "response_to_init",
        )?;
        init.expect_ok("init")?;

        let maxes = client.request("cmd=get_maxes", "maxes")?;
        maxes.expect_ok("get_maxes")?;
        client.maxes = Maxes {
            kvsname: maxes.usize_field("kvsname_max")?,
            key: maxes.usize_field("keylen_max")?,
            value: maxes.usize_field("vallen_max")?,
        };

        let name = client.request("cmd=get_my_kvsname", "my_kvsname")?;
        name.expect_ok("get_my_kvsname")?;
        let kvsname = name.field("kvsname")?.to_owned();
        if kvsname.is_empty() || kvsname.len() >= client.maxes.kvsname {
            return Err(BootstrapError::Protocol(format!(
                "the process manager's kvsname {kvsname:?} is empty or not shorter than its \
                 own kvsname_max of {}",
                client.maxes.kvsname
            )));
        }
        client.kvsname = kvsname;

        client.nodes = match client.get_raw(PROCESS_MAPPING_KEY)? {
            Some(mapping) => parse_process_mapping(&mapping, size).map_err(|e| {
                BootstrapError::Protocol(format!("bad {PROCESS_MAPPING_KEY} {mapping:?}: {e}"))
            })?,
            None => vec![0; size as usize],
        };
        Ok(client)
    }

    /// Send one request line (without its newline).
    fn send(&mut self, line: &str) -> Result<(), BootstrapError> {
        let mut buf = Vec::with_capacity(line.len() + 1);
        buf.extend_from_slice(line.as_bytes());
        buf.push(b'\n');
        self.conn.get_mut().write_all(&buf)?;
        Ok(())
    }

    /// Read one answer line and parse it.
    fn receive(&mut self) -> Result<Response, BootstrapError> {
        let mut line = String::new();
        let n = (&mut self.conn)
            .take(MAX_RESPONSE_LINE)
            .read_line(&mut line)?;
        if n == 0 {
            return Err(BootstrapError::Io(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the process manager closed the PMI connection",
            )));
        }
        let Some(line) = line.strip_suffix('\n') else {
            return Err(BootstrapError::Protocol(format!(
                "the process manager's answer is not a complete line (connection closed or \
                 longer than {MAX_RESPONSE_LINE} bytes): {:?}",
                truncate_for_message(&line)
            )));
        };
        Response::parse(line)
    }

    /// Send `line` and read the answer, which must be of kind `expected`.
    fn request(&mut self, line: &str, expected: &str) -> Result<Response, BootstrapError> {
        if self.finalized {
            return Err(BootstrapError::Protocol(format!(
                "PMI request {:?} after finalize",
                first_word(line)
            )));
        }
        self.send(line)?;
        let response = self.receive()?;
        if response.cmd != expected {
            return Err(BootstrapError::Protocol(format!(
                "expected cmd={expected} in answer to {:?}, but the process manager answered \
                 cmd={} ({:?})",
                first_word(line),
                response.cmd,
                truncate_for_message(&response.line)
            )));
        }
        Ok(response)
    }

    /// Check that `key` can travel on the wire and fits the announced limit.
    fn check_key(&self, key: &str) -> Result<(), BootstrapError> {
        if key.is_empty() || key.bytes().any(|b| b.is_ascii_whitespace() || b == b'=') {
            return Err(BootstrapError::Protocol(format!(
                "PMI key {key:?} is empty or contains whitespace or '='"
            )));
        }
        if key.len() >= self.maxes.key {
            return Err(BootstrapError::Protocol(format!(
                "PMI key {key:?} is {} bytes long; the process manager accepts keys of at most \
                 {} bytes (keylen_max={})",
                key.len(),
                self.maxes.key.saturating_sub(1),
                self.maxes.key
            )));
        }
        Ok(())
    }

    /// Read the raw (undecoded) value of `key`; `None` when the process
    /// manager answers with a non-zero `rc`. The key is not checked against
    /// `keylen_max`: that is for keys this client publishes, not for the
    /// process manager's own (`PMI_process_mapping`).
    fn get_raw(&mut self, key: &str) -> Result<Option<String>, BootstrapError> {
        let line = format!("cmd=get kvsname={} key={key}", self.kvsname);
        let response = self.request(&line, "get_result")?;
        if response.rc()? != 0 {
            return Ok(None);
        }
        Ok(Some(response.field("value")?.to_owned()))
    }

    /// Refuse an extension of Tessel's `mpiexec` when another process
    /// manager started us: it `what`.
    fn tessel_only(&self, what: &str) -> Result<(), BootstrapError> {
        if self.tessel {
            Ok(())
        } else {
            Err(BootstrapError::Refused(format!(
                "the process manager {what}"
            )))
        }
    }

    /// Send a request whose answer `expected` only says whether it worked.
    fn simple(
        &mut self,
        line: &str,
        expected: &str,
        what: &str,
    ) -> Result<Response, BootstrapError> {
        let response = self.request(line, expected)?;
        if response.rc()? != 0 {
            let msg = response.fields.get("msg").map_or("", String::as_str);
            return Err(BootstrapError::Refused(format!(
                "the process manager refused {what}: {}",
                msg.replace('_', " ")
            )));
        }
        Ok(response)
    }

    /// Send the abort request; the caller then exits.
    fn send_abort(&mut self, code: i32) -> Result<(), BootstrapError> {
        self.send(&format!("cmd=abort exitcode={code}"))
    }
}

impl Bootstrap for PmiClient {
    fn rank(&self) -> u32 {
        self.rank
    }

    fn one_machine(&self) -> bool {
        self.tessel
    }

    fn size(&self) -> u32 {
        self.size
    }

    /// # Panics
    ///
    /// Panics if `rank` is not below [`size`](Bootstrap::size).
    fn node_of(&self, rank: u32) -> u32 {
        assert!(
            rank < self.size,
            "node_of({rank}) in a job of {} processes",
            self.size
        );
        self.nodes[rank as usize]
    }

    fn put(&mut self, key: &str, value: &[u8]) -> Result<(), BootstrapError> {
        self.check_key(key)?;
        let encoded = hex_encode(value);
        if encoded.len() >= self.maxes.value {
            return Err(BootstrapError::Protocol(format!(
                "value for PMI key {key:?} is {} bytes ({} hex-encoded); the process manager \
                 accepts at most {} encoded bytes (vallen_max={}), i.e. {} raw bytes",
                value.len(),
                encoded.len(),
                self.maxes.value.saturating_sub(1),
                self.maxes.value,
                self.maxes.value.saturating_sub(1) / 2
            )));
        }
        let line = format!("cmd=put kvsname={} key={key} value={encoded}", self.kvsname);
        let response = self.request(&line, "put_result")?;
        response.expect_ok("put")
    }

    fn get(&mut self, key: &str) -> Result<Vec<u8>, BootstrapError> {
        self.check_key(key)?;
        match self.get_raw(key)? {
            Some(encoded) => hex_decode(&encoded).ok_or_else(|| {
                BootstrapError::Protocol(format!(
                    "value of PMI key {key:?} is not the hex encoding this client writes: {:?}",
                    truncate_for_message(&encoded)
                ))
            }),
            None => Err(BootstrapError::MissingKey(key.to_owned())),
        }
    }

    fn fence(&mut self) -> Result<(), BootstrapError> {
        let response = self.request("cmd=barrier_in", "barrier_out")?;
        response.expect_ok("barrier_in")
    }

    fn abort(&mut self, code: i32, message: &str) {
        // One write, so that the lines of ranks aborting together do not
        // interleave (`eprintln!` writes each piece of its format).
        super::say(&format!(
            "rank {} of {}: abort({code}): {message}\n",
            self.rank, self.size
        ));
        // The exit code the job ends with: never one that reads as success
        // (Hydra exits with what it is told).
        let status = super::abort_status(code);
        if let Err(e) = self.send_abort(status) {
            eprintln!(
                "rank {}: could not send abort to the process manager: {e}",
                self.rank
            );
        }
        std::process::exit(status);
    }

    fn universe(&self) -> Universe {
        self.universe
    }

    /// PMI-1's `mcmd=spawn` blocks, one per command (`key=value` lines up
    /// to `endcmd`), answered by one `cmd=spawn_result` after the last;
    /// Tessel's `mpiexec` adds the new job's first id as `base=`.
    fn spawn(
        &mut self,
        apps: &[SpawnApp],
        preput: &[(String, Vec<u8>)],
    ) -> Result<u32, BootstrapError> {
        if self.universe.size <= self.size {
            // Hydra starts processes too, but they could not join this
            // job's node segment: refuse before any starts.
            return Err(BootstrapError::Refused(format!(
                "the launcher gave this job no room for more processes (MPI_UNIVERSE_SIZE is \
                 the job's size, {}): start the job with Tessel's mpiexec, on one node, with \
                 --universe-size above -n",
                self.size
            )));
        }
        let clean = |what: &str, v: &str| {
            if v.contains('\n') {
                Err(BootstrapError::Refused(format!(
                    "{what} {v:?} holds a newline"
                )))
            } else {
                Ok(())
            }
        };
        let mut out = String::new();
        for (i, app) in apps.iter().enumerate() {
            clean("command", &app.command)?;
            out += &format!(
                "mcmd=spawn\nnprocs={}\nexecname={}\ntotspawns={}\nspawnssofar={}\nargcnt={}\n",
                app.procs,
                app.command,
                apps.len(),
                i + 1,
                app.args.len()
            );
            for (j, a) in app.args.iter().enumerate() {
                clean("argument", a)?;
                out += &format!("arg{}={a}\n", j + 1);
            }
            out += &format!("preput_num={}\n", preput.len());
            for (j, (k, v)) in preput.iter().enumerate() {
                self.check_key(k)?;
                out += &format!("preput_key_{j}={k}\npreput_val_{j}={}\n", hex_encode(v));
            }
            out += &format!("info_num={}\n", app.info.len());
            for (j, (k, v)) in app.info.iter().enumerate() {
                clean("info key", k)?;
                clean("info value", v)?;
                out += &format!("info_key_{j}={k}\ninfo_val_{j}={v}\n");
            }
            out += "endcmd";
            if i + 1 < apps.len() {
                out.push('\n');
            }
        }
        let response = self.simple(&out, "spawn_result", "to start processes")?;
        response
            .field("base")?
            .parse()
            .map_err(|_| BootstrapError::Protocol("spawn_result without a valid base=".into()))
    }

    fn appnum(&mut self) -> u32 {
        self.request("cmd=get_appnum", "appnum")
            .ok()
            .and_then(|r| r.field("appnum").ok()?.parse().ok())
            .unwrap_or(0)
    }

    fn create_pset(&mut self, op: &str, members: &[u32]) -> Result<String, BootstrapError> {
        self.tessel_only("keeps no process sets that change (Tessel's mpiexec does)")?;
        let line = format!(
            "cmd=pset_create op={op} members={}",
            super::pset::format_ranks(members)
        );
        let response = self.simple(&line, "pset_create_result", "to create a process set")?;
        Ok(response.field("name")?.to_owned())
    }

    fn created_psets(&mut self, known: usize) -> Result<Vec<(String, Vec<u32>)>, BootstrapError> {
        if !self.tessel {
            return Ok(Vec::new()); // another launcher: no such sets
        }
        let line = format!("cmd=pset_fetch from={known}");
        let response = self.simple(&line, "pset_fetch_result", "to list process sets")?;
        let text = hex_decode(response.field("sets")?)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| BootstrapError::Protocol("pset_fetch_result with bad sets=".into()))?;
        text.lines()
            .map(|l| {
                let (name, ranks) = l.split_once(' ').unwrap_or((l, ""));
                if ranks.is_empty() {
                    return Ok((name.to_owned(), Vec::new()));
                }
                super::pset::parse_ranks(ranks)
                    .map(|r| (name.to_owned(), r))
                    .map_err(BootstrapError::Protocol)
            })
            .collect()
    }

    fn dynres_get(&mut self) -> Result<Option<DynresChange>, BootstrapError> {
        self.tessel_only("proposes no resource changes (Tessel's mpiexec --dynres does)")?;
        let r = self.simple("cmd=rc_get", "rc_get_result", "a resource change")?;
        let number = |k: &str| -> Result<u32, BootstrapError> {
            r.field(k)?
                .parse()
                .map_err(|_| BootstrapError::Protocol(format!("rc_get_result with a bad {k}=")))
        };
        Ok(match r.field("type")? {
            "none" => None,
            kind => Some(DynresChange {
                add: kind == "add",
                delta: r.field("delta")?.to_owned(),
                tag: number("tag")?,
                procs: number("procs")?,
            }),
        })
    }

    fn dynres_accept(
        &mut self,
        tag: u32,
        info: &[(String, String)],
        segment: &(String, Vec<u8>),
    ) -> Result<(), BootstrapError> {
        let lines: String = info.iter().map(|(k, v)| format!("{k}={v}\n")).collect();
        let line = format!(
            "cmd=rc_accept tag={tag} info={} seg_key={} seg_value={}",
            hex_encode(lines.as_bytes()),
            segment.0,
            hex_encode(&segment.1)
        );
        self.simple(&line, "rc_accept_result", "to accept the resource change")
            .map(|_| ())
    }

    fn publish_name(&mut self, service: &str, port: &str) -> Result<(), BootstrapError> {
        let line = format!(
            "cmd=publish_name service={} port={}",
            hex_encode(service.as_bytes()),
            hex_encode(port.as_bytes())
        );
        self.simple(&line, "publish_result", "to publish a name")
            .map(|_| ())
    }

    fn unpublish_name(&mut self, service: &str) -> Result<(), BootstrapError> {
        let line = format!(
            "cmd=unpublish_name service={}",
            hex_encode(service.as_bytes())
        );
        self.simple(&line, "unpublish_result", "to unpublish a name")
            .map(|_| ())
    }

    fn lookup_name(&mut self, service: &str) -> Result<Option<String>, BootstrapError> {
        let line = format!("cmd=lookup_name service={}", hex_encode(service.as_bytes()));
        let response = self.request(&line, "lookup_result")?;
        if response.rc()? != 0 {
            return Ok(None);
        }
        let port = hex_decode(response.field("port")?)
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| BootstrapError::Protocol("lookup_result with a bad port=".into()))?;
        Ok(Some(port))
    }

    fn launcher_gone(&self) -> bool {
        use std::os::fd::AsRawFd;
        !self.finalized && crate::sys::peer_hung_up(self.conn.get_ref().as_raw_fd())
    }

    fn finalize(&mut self) -> Result<(), BootstrapError> {
        if self.finalized {
            return Ok(());
        }
        let response = self.request("cmd=finalize", "finalize_ack")?;
        self.finalized = true;
        response.expect_ok("finalize")
    }
}

/// The job facts a launcher puts in the environment.
#[derive(Debug, PartialEq, Eq)]
struct PmiEnv {
    fd: RawFd,
    rank: u32,
    size: u32,
}

impl PmiEnv {
    /// Read the PMI variables through `lookup`; `Ok(None)` when `PMI_FD`
    /// is unset.
    fn from_lookup(
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Self>, BootstrapError> {
        let Some(fd) = lookup("PMI_FD") else {
            if lookup("PMI_PORT").is_some() {
                return Err(BootstrapError::Protocol(
                    "PMI_PORT is set but PMI_FD is not: connecting to the process manager over \
                     PMI_PORT is not supported; start the job with a launcher that passes an \
                     inherited socket in PMI_FD (Tessel's mpiexec, or Hydra's mpiexec without \
                     -pmi-port)"
                        .to_owned(),
                ));
            }
            return Ok(None);
        };
        let number = |name: &str, value: Option<String>| -> Result<u32, BootstrapError> {
            let value = value.ok_or_else(|| {
                BootstrapError::Protocol(format!("PMI_FD is set but {name} is not"))
            })?;
            value.trim().parse::<u32>().map_err(|_| {
                BootstrapError::Protocol(format!("{name}={value:?} is not a non-negative integer"))
            })
        };
        let fd_number = number("PMI_FD", Some(fd))?;
        let fd = RawFd::try_from(fd_number).map_err(|_| {
            BootstrapError::Protocol(format!("PMI_FD={fd_number} is not a file descriptor"))
        })?;
        let rank = number("PMI_RANK", lookup("PMI_RANK"))?;
        let size = number("PMI_SIZE", lookup("PMI_SIZE"))?;
        if size == 0 || rank >= size {
            return Err(BootstrapError::Protocol(format!(
                "PMI_RANK={rank} is outside a job of PMI_SIZE={size} processes"
            )));
        }
        Ok(Some(Self { fd, rank, size }))
    }
}

/// Read [`UNIVERSE_VAR`] (`BASE SIZE ID`) of a job of `job` processes.
fn parse_universe(v: &str, job: u32) -> Result<Universe, BootstrapError> {
    let mut it = v.split_whitespace().map(str::parse::<u64>);
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(Ok(base)), Some(Ok(size)), Some(Ok(id)), None)
            if base + u64::from(job) <= size && size <= u64::from(u32::MAX) =>
        {
            Ok(Universe {
                base: base as u32,
                size: size as u32,
                id,
            })
        }
        _ => Err(BootstrapError::Protocol(format!(
            "{UNIVERSE_VAR}={v:?} is not `BASE SIZE ID` holding a job of {job} processes"
        ))),
    }
}

/// Take ownership of the inherited PMI socket `fd`.
fn claim_pmi_fd(fd: RawFd) -> Result<UnixStream, BootstrapError> {
    // Marking the descriptor close-on-exec also checks that it is open:
    // fcntl fails with EBADF otherwise, before anything takes ownership.
    // SAFETY: F_GETFD/F_SETFD only read and set the descriptor flags of
    // `fd`; they touch no memory and are defined for any integer.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(BootstrapError::Protocol(format!(
            "PMI_FD={fd} is not an open file descriptor: {}",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(BootstrapError::Io(io::Error::last_os_error()));
    }
    if PMI_FD_CLAIMED.set(()).is_err() {
        return Err(BootstrapError::Protocol(
            "the PMI_FD socket is already owned by another PmiClient in this process".to_owned(),
        ));
    }
    // SAFETY: `fd` is open (checked above) and, by the launcher's contract,
    // was handed to this process for the exclusive use of its PMI client;
    // PMI_FD_CLAIMED guarantees that this is the only place in the process
    // that ever wraps it, so the returned stream is its sole owner and
    // closes it exactly once.
    let stream = unsafe { UnixStream::from_raw_fd(fd) };
    // Fails with ENOTSOCK (and closes the descriptor we now own) when the
    // launcher passed something that is not a socket.
    stream.peer_addr().map_err(|e| {
        BootstrapError::Protocol(format!("PMI_FD={fd} is not a connected unix socket: {e}"))
    })?;
    Ok(stream)
}

/// One parsed answer line.
#[derive(Debug)]
struct Response {
    cmd: String,
    fields: HashMap<String, String>,
    line: String,
}

impl Response {
    /// Split `line` into `key=value` pairs (values may contain `=`).
    fn parse(line: &str) -> Result<Self, BootstrapError> {
        let mut fields = HashMap::new();
        for token in line.split_ascii_whitespace() {
            let Some((key, value)) = token.split_once('=') else {
                return Err(BootstrapError::Protocol(format!(
                    "malformed answer from the process manager (token {token:?} is not \
                     key=value): {:?}",
                    truncate_for_message(line)
                )));
            };
            fields.insert(key.to_owned(), value.to_owned());
        }
        let Some(cmd) = fields.remove("cmd") else {
            return Err(BootstrapError::Protocol(format!(
                "answer from the process manager has no cmd=: {:?}",
                truncate_for_message(line)
            )));
        };
        Ok(Self {
            cmd,
            fields,
            line: line.to_owned(),
        })
    }

    fn field(&self, key: &str) -> Result<&str, BootstrapError> {
        self.fields.get(key).map(String::as_str).ok_or_else(|| {
            BootstrapError::Protocol(format!(
                "cmd={} answer lacks {key}=: {:?}",
                self.cmd,
                truncate_for_message(&self.line)
            ))
        })
    }

    fn usize_field(&self, key: &str) -> Result<usize, BootstrapError> {
        let value = self.field(key)?;
        value.parse().map_err(|_| {
            BootstrapError::Protocol(format!(
                "cmd={} answer has a non-numeric {key}={value:?}",
                self.cmd
            ))
        })
    }

    /// The answer's return code; answers without `rc=` (Hydra's `maxes`,
    /// `barrier_out`) count as success.
    fn rc(&self) -> Result<i64, BootstrapError> {
        match self.fields.get("rc") {
            None => Ok(0),
            Some(rc) => rc.parse().map_err(|_| {
                BootstrapError::Protocol(format!(
                    "cmd={} answer has a non-numeric rc={rc:?}",
                    self.cmd
                ))
            }),
        }
    }

    /// Fail with the process manager's message unless `rc` is 0.
    fn expect_ok(&self, what: &str) -> Result<(), BootstrapError> {
        let rc = self.rc()?;
        if rc == 0 {
            return Ok(());
        }
        let msg = self.fields.get("msg").map_or("", String::as_str);
        Err(BootstrapError::Protocol(format!(
            "PMI {what} failed with rc={rc} {msg}"
        )))
    }
}

/// Parse a `PMI_process_mapping` value into the node of every rank.
///
/// The value is `(vector,B1,B2,...)` where each block `(first, count, ppn)`
/// says that nodes `first..first+count` each run `ppn` consecutive ranks.
/// Ranks are dealt to the blocks in order; when the blocks describe fewer
/// ranks than the job has, the whole pattern repeats (Hydra describes a
/// two-process job on one single-slot host as `(vector,(0,1,1))`). An empty
/// value or `(vector)` carries no information: every rank is on node 0.
fn parse_process_mapping(value: &str, size: u32) -> Result<Vec<u32>, String> {
    let compact: String = value.chars().filter(|c| !c.is_whitespace()).collect();
    let size = size as usize;
    if compact.is_empty() {
        return Ok(vec![0; size]);
    }
    let body = compact
        .strip_prefix("(vector")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or("expected (vector,(node,count,ppn),...)")?;
    if body.is_empty() {
        return Ok(vec![0; size]);
    }
    let inner = body
        .strip_prefix(",(")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or("expected ,(node,count,ppn) blocks after (vector")?;
    let mut blocks = Vec::new();
    for block in inner.split("),(") {
        let numbers = block
            .split(',')
            .map(|n| {
                n.parse::<u32>()
                    .map_err(|_| format!("{n:?} is not a number"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let [first, count, ppn] = numbers[..] else {
            return Err(format!("block ({block}) does not have three numbers"));
        };
        if first.checked_add(count).is_none() {
            return Err(format!("block ({block}) overflows the node numbers"));
        }
        blocks.push((first, count, ppn));
    }
    if blocks.iter().all(|&(_, count, ppn)| count == 0 || ppn == 0) {
        return Err("the blocks place no process on any node".to_owned());
    }
    let mut nodes = Vec::with_capacity(size);
    'fill: while nodes.len() < size {
        for &(first, count, ppn) in &blocks {
            for node in first..first + count {
                for _ in 0..ppn {
                    if nodes.len() == size {
                        break 'fill;
                    }
                    nodes.push(node);
                }
            }
        }
    }
    Ok(nodes)
}

/// Lower-case hex encoding of `bytes`.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

/// Decode hex (either case); `None` if `text` is not an even number of hex
/// digits.
fn hex_decode(text: &str) -> Option<Vec<u8>> {
    fn digit(c: u8) -> Option<u8> {
        match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            b'A'..=b'F' => Some(c - b'A' + 10),
            _ => None,
        }
    }
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return None;
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Some(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

/// The `cmd=...` word of a request line, for error messages.
fn first_word(line: &str) -> &str {
    line.split_ascii_whitespace().next().unwrap_or(line)
}

/// At most 200 bytes of `text` (on a char boundary), for error messages.
fn truncate_for_message(text: &str) -> &str {
    let mut end = text.len().min(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests;

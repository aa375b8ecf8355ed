//! Partitioned point-to-point communication (MPI-4.0 chapter 4).
//!
//! A partitioned send or receive is a persistent request whose buffer is
//! made of `partitions` equal parts. A round of the send starts the
//! message once the application has marked every partition ready
//! (`MPI_Pready*`); a round of the receive posts it at `MPI_Start`, and
//! `MPI_Parrived` says whether it arrived (the whole message moves at
//! once, so every partition arrives together). The message carries the
//! communicator's context and the tag with bit 31 set ([`PARTITIONED`]),
//! which no user tag has (`MPI_TAG_UB` is `2^31 - 1`) and no `MPI_ANY_TAG`
//! receive accepts: partitioned messages match partitioned receives only,
//! in the order the rounds start.

use std::fmt;

use super::Class;
use super::request::StartFn;
use super::{MpiError, MpiResult, Req, Runtime};

/// The bit of the engine tag that marks a partitioned message.
pub const PARTITIONED: u64 = 1 << 31;

/// One round of a partitioned operation: the active part of its
/// persistent request.
pub struct Round {
    /// Parts of the buffer.
    pub partitions: usize,
    /// Which partitions the application marked ready: a send's; empty for
    /// a receive.
    pub ready: Vec<bool>,
    /// The engine operation once it started.
    pub op: Option<Box<Req>>,
    /// What starts a send's message, until every partition is ready.
    pub send: Option<StartFn>,
}

impl fmt::Debug for Round {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Round")
            .field("partitions", &self.partitions)
            .field("ready", &self.ready)
            .field("op", &self.op)
            .finish_non_exhaustive()
    }
}

impl Round {
    /// A send's round: nothing ready, `send` to run once all are.
    pub fn send(partitions: usize, send: StartFn) -> Self {
        Self {
            partitions,
            ready: vec![false; partitions],
            op: None,
            send: Some(send),
        }
    }

    /// A receive's round, posted.
    pub fn recv(partitions: usize, op: Req) -> Self {
        Self {
            partitions,
            ready: Vec::new(),
            op: Some(Box::new(op)),
            send: None,
        }
    }

    fn is_send(&self) -> bool {
        !self.ready.is_empty()
    }

    fn check(&self, partition: usize) -> MpiResult<()> {
        if partition < self.partitions {
            Ok(())
        } else {
            Err(MpiError::new(
                Class::Arg,
                format!(
                    "partition {partition} of a request of {} partitions",
                    self.partitions
                ),
            ))
        }
    }
}

/// Whether `p` is a partitioned send in a round whose message has not
/// started (some partition is not ready): nothing to wait for yet.
pub fn unstarted(p: &super::request::Persistent) -> bool {
    matches!(p.active.as_deref(), Some(Req::Part(round)) if round.op.is_none())
}

fn not_partitioned(what: &str) -> MpiError {
    MpiError::new(
        Class::Request,
        format!("not an active partitioned {what} request"),
    )
}

impl Runtime {
    /// `MPI_Pready*`: mark `partitions` of the send of request `i` ready;
    /// once all are, start its message.
    pub fn pready(&mut self, i: usize, partitions: &[usize]) -> MpiResult<()> {
        let mut r = self.take_req(i)?;
        let res = self.pready_in(&mut r, partitions);
        self.restore_req(i, r);
        res
    }

    fn pready_in(&mut self, r: &mut Req, partitions: &[usize]) -> MpiResult<()> {
        let Req::Persistent(p) = r else {
            return Err(not_partitioned("send"));
        };
        let Some(Req::Part(round)) = p.active.as_deref_mut() else {
            return Err(not_partitioned("send"));
        };
        if !round.is_send() {
            return Err(not_partitioned("send"));
        }
        for &k in partitions {
            round.check(k)?;
        }
        for &k in partitions {
            if std::mem::replace(&mut round.ready[k], true) {
                return Err(MpiError::new(
                    Class::Arg,
                    format!("partition {k} is already ready in this round"),
                ));
            }
        }
        if round.ready.iter().all(|&b| b)
            && let Some(mut send) = round.send.take()
        {
            round.op = Some(Box::new(send(self)?));
        }
        Ok(())
    }

    /// `MPI_Parrived`: whether `partition` of the receive of request `i`
    /// arrived (an inactive request's have: nothing is pending).
    pub fn parrived(&mut self, i: usize, partition: usize) -> MpiResult<bool> {
        self.ep.progress();
        let r = self.take_req(i)?;
        let res = match &r {
            Req::Persistent(p) => match p.active.as_deref() {
                None => Ok(true),
                Some(Req::Part(round)) if !round.is_send() => round
                    .check(partition)
                    .map(|()| round.op.as_deref().is_some_and(|o| self.is_ready(o))),
                Some(_) => Err(not_partitioned("receive")),
            },
            _ => Err(not_partitioned("receive")),
        };
        self.restore_req(i, r);
        res
    }
}

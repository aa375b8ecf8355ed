//! Completing requests, one or an array of them (MPI-4.1 §3.7.3–§3.7.6):
//! what the wait, test and request-status calls share, given request
//! slots (`None` for a null request). The entry layer reads the handles,
//! writes the statuses and indices, and nulls the handles of requests
//! that do not live on.

use super::progress::Poll;
use super::{MpiResult, Runtime, Status};

/// What a request has to say, looked at without being freed or made
/// inactive.
#[derive(Debug)]
pub enum Peek {
    /// A null or inactive request, which the "any" and "some" calls
    /// ignore.
    Inactive,
    /// An active request not complete yet.
    Pending,
    /// A complete request: its status, or the error it failed with.
    Done(MpiResult<Status>),
}

/// What an "any" call found among its requests.
#[derive(Debug, PartialEq, Eq)]
pub enum Any<T> {
    /// No request is active: the call returns at once, with index
    /// `MPI_UNDEFINED` and the empty status.
    NoneActive,
    /// Active requests, none complete yet.
    Pending,
    /// The first complete one.
    Done(T),
}

impl<T> Any<T> {
    /// The answer of a wait: `None` when no request is active.
    pub fn ready(self) -> Poll<Option<T>> {
        match self {
            Any::NoneActive => Poll::Ready(None),
            Any::Pending => Poll::Idle,
            Any::Done(x) => Poll::Ready(Some(x)),
        }
    }

    /// The answer of a test: `None` while active requests are pending,
    /// `Some(None)` when none is active.
    pub fn done(self) -> Option<Option<T>> {
        match self {
            Any::NoneActive => Some(None),
            Any::Pending => None,
            Any::Done(x) => Some(Some(x)),
        }
    }
}

/// The requests of an array call, as the entry layer reads them, without
/// copying the application's array: how many, and the slot of each
/// (`None` for a null request; an error for a handle that names none).
pub trait Requests {
    fn count(&self) -> usize;
    fn slot(&self, k: usize) -> MpiResult<Option<usize>>;
}

/// A request's position in the caller's array and its outcome.
pub type Outcome = (usize, MpiResult<Status>);

/// The status to report for a request's outcome, and whether it failed
/// (its error code in the status, for `MPI_ERR_IN_STATUS`).
pub fn outcome(r: MpiResult<Status>) -> (Status, bool) {
    match r {
        Ok(st) => (st, false),
        Err(e) => (Status::error(e.code), true),
    }
}

impl Runtime {
    /// `r` if it names an active request (not null, not an inactive
    /// persistent request).
    pub fn active(&self, r: Option<usize>) -> MpiResult<Option<usize>> {
        match r {
            Some(i) if self.is_active(i)? => Ok(Some(i)),
            _ => Ok(None),
        }
    }

    /// Complete request `r`, waiting if need be: its status (the empty one
    /// for a null request), and whether the request lives on (a persistent
    /// one, or a generalized one not yet complete); otherwise it is freed
    /// and its handle becomes `MPI_REQUEST_NULL`.
    pub fn complete(&mut self, r: Option<usize>) -> (MpiResult<Status>, bool) {
        let Some(i) = r else {
            return (Ok(Status::empty()), true);
        };
        let persistent = self.is_persistent(i);
        let res = self.wait_req(i);
        let lives_on = persistent || (res.is_err() && self.req_exists(i));
        (res, lives_on)
    }

    /// Whether every active request among `reqs` is complete (one look).
    pub fn all_done(&mut self, reqs: &impl Requests) -> MpiResult<bool> {
        self.ep.progress();
        let mut all = true;
        for k in 0..reqs.count() {
            if let Some(i) = self.active(reqs.slot(k)?)? {
                all &= self.req_done(i)?;
            }
        }
        Ok(all)
    }

    /// The position of the first complete active request among `reqs`
    /// (one look).
    pub fn any_done(&mut self, reqs: &impl Requests) -> MpiResult<Any<usize>> {
        let mut any_active = false;
        for k in 0..reqs.count() {
            if let Some(i) = self.active(reqs.slot(k)?)? {
                any_active = true;
                if self.req_done(i)? {
                    return Ok(Any::Done(k));
                }
            }
        }
        Ok(if any_active {
            Any::Pending
        } else {
            Any::NoneActive
        })
    }

    /// The positions of the complete active requests among `reqs` (one
    /// look); `Done` holds at least one.
    pub fn some_done(&mut self, reqs: &impl Requests) -> MpiResult<Any<Vec<usize>>> {
        let mut any_active = false;
        let mut done = Vec::new();
        for k in 0..reqs.count() {
            if let Some(i) = self.active(reqs.slot(k)?)? {
                any_active = true;
                if self.req_done(i)? {
                    done.push(k);
                }
            }
        }
        Ok(match (any_active, done.is_empty()) {
            (false, _) => Any::NoneActive,
            (true, true) => Any::Pending,
            (true, false) => Any::Done(done),
        })
    }

    /// Look at request `r` without freeing it or making it inactive.
    pub fn peek(&mut self, r: Option<usize>) -> MpiResult<Peek> {
        let Some(i) = self.active(r)? else {
            return Ok(Peek::Inactive);
        };
        Ok(match self.req_status(i) {
            Ok(Some(st)) => Peek::Done(Ok(st)),
            Ok(None) => Peek::Pending,
            Err(e) => Peek::Done(Err(e)),
        })
    }

    /// `MPI_Request_get_status_all`: every outcome (the empty status for
    /// null and inactive requests) once every active request is
    /// complete; `None` before.
    pub fn status_all(
        &mut self,
        reqs: &impl Requests,
    ) -> MpiResult<Option<Vec<MpiResult<Status>>>> {
        let mut outcomes = Vec::with_capacity(reqs.count());
        for k in 0..reqs.count() {
            outcomes.push(match self.peek(reqs.slot(k)?)? {
                Peek::Inactive => Ok(Status::empty()),
                Peek::Done(res) => res,
                Peek::Pending => return Ok(None),
            });
        }
        Ok(Some(outcomes))
    }

    /// `MPI_Request_get_status_any`: the first complete active request
    /// and its outcome.
    pub fn status_any(&mut self, reqs: &impl Requests) -> MpiResult<Any<Outcome>> {
        let mut any_active = false;
        for k in 0..reqs.count() {
            match self.peek(reqs.slot(k)?)? {
                Peek::Inactive => {}
                Peek::Pending => any_active = true,
                Peek::Done(res) => return Ok(Any::Done((k, res))),
            }
        }
        Ok(if any_active {
            Any::Pending
        } else {
            Any::NoneActive
        })
    }

    /// `MPI_Request_get_status_some`: the complete active requests and
    /// their outcomes (`Done` may be empty: active ones, none complete).
    pub fn status_some(&mut self, reqs: &impl Requests) -> MpiResult<Any<Vec<Outcome>>> {
        let mut any_active = false;
        let mut done = Vec::new();
        for k in 0..reqs.count() {
            match self.peek(reqs.slot(k)?)? {
                Peek::Inactive => {}
                Peek::Pending => any_active = true,
                Peek::Done(res) => {
                    any_active = true;
                    done.push((k, res));
                }
            }
        }
        Ok(if any_active {
            Any::Done(done)
        } else {
            Any::NoneActive
        })
    }
}

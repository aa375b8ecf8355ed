//! The router: which path reaches a process of the job.

use crate::error::Error;

/// Where a process is, seen from this one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Route {
    /// On this node, at this local index: the node segment.
    Local(u32),
    /// On another node: the network plugin.
    Remote,
}

/// Process id -> local index on this node, or another node.
///
/// Ids outside this process's job (a universe larger than the job) are
/// reachable only once admitted: a process that is not there, or not yet,
/// is an invalid peer, not a message lost in a ring nobody reads.
#[derive(Debug)]
pub(super) struct Router {
    /// rank -> local index, for ranks on this node.
    local_of: Vec<Option<u32>>,
    /// Which ids may be addressed: the job's, and those admitted.
    admitted: Vec<bool>,
    /// The job's size, for error messages.
    job: u32,
    /// Whether a network plugin carries traffic to other nodes.
    remote: bool,
}

impl Router {
    /// The router of `size` processes placed by `node_of`, seen from node
    /// `node`, and the ranks of that node (ascending: a rank's local index
    /// is its position).
    pub(super) fn new(
        size: u32,
        node: u32,
        node_of: impl Fn(u32) -> u32,
        world: std::ops::Range<u32>,
    ) -> (Self, Vec<u32>) {
        let mut local_of = vec![None; size as usize];
        let mut locals = Vec::new();
        for r in 0..size {
            if node_of(r) == node {
                local_of[r as usize] = Some(locals.len() as u32);
                locals.push(r);
            }
        }
        let router = Self {
            local_of,
            admitted: (0..size).map(|r| world.contains(&r)).collect(),
            job: world.len() as u32,
            remote: false,
        };
        (router, locals)
    }

    /// Route to other nodes (a plugin opened).
    pub(super) fn enable_remote(&mut self) {
        self.remote = true;
    }

    /// The local index of process `rank`, if it is on this node.
    pub(super) fn local(&self, rank: u32) -> Option<u32> {
        self.local_of.get(rank as usize).copied().flatten()
    }

    /// Let the processes `ids` (of the universe) be addressed.
    pub(super) fn admit(&mut self, ids: impl IntoIterator<Item = u32>) {
        for id in ids {
            if let Some(a) = self.admitted.get_mut(id as usize) {
                *a = true;
            }
        }
    }

    /// Which path reaches process `peer`.
    pub(super) fn route(&self, peer: u32) -> Result<Route, Error> {
        if !self.admitted.get(peer as usize).copied().unwrap_or(false) {
            return Err(Error::InvalidPeer {
                peer,
                size: self.job,
            });
        }
        match self.local_of.get(peer as usize) {
            None => Err(Error::InvalidPeer {
                peer,
                size: self.job,
            }),
            Some(Some(j)) => Ok(Route::Local(*j)),
            Some(None) if self.remote => Ok(Route::Remote),
            Some(None) => Err(Error::Unreachable { peer }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_outside_the_job_are_reached_once_admitted() {
        // A universe of 4 ids on one node; the job is ids 0 and 1.
        let (mut r, locals) = Router::new(4, 0, |_| 0, 0..2);
        assert_eq!(locals, [0, 1, 2, 3]);
        assert_eq!(r.route(1), Ok(Route::Local(1)));
        assert_eq!(r.route(2), Err(Error::InvalidPeer { peer: 2, size: 2 }));
        r.admit([2, 9]);
        assert_eq!(r.route(2), Ok(Route::Local(2)));
        assert_eq!(r.route(3), Err(Error::InvalidPeer { peer: 3, size: 2 }));
        assert_eq!(r.route(9), Err(Error::InvalidPeer { peer: 9, size: 2 }));
    }
}

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
#[derive(Debug)]
pub(super) struct Router {
    /// rank -> local index, for ranks on this node.
    local_of: Vec<Option<u32>>,
    /// Whether a network plugin carries traffic to other nodes.
    remote: bool,
}

impl Router {
    /// The router of `size` processes placed by `node_of`, seen from node
    /// `node`, and the ranks of that node (ascending: a rank's local index
    /// is its position).
    pub(super) fn new(size: u32, node: u32, node_of: impl Fn(u32) -> u32) -> (Self, Vec<u32>) {
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

    /// Which path reaches process `peer`.
    pub(super) fn route(&self, peer: u32) -> Result<Route, Error> {
        match self.local_of.get(peer as usize) {
            None => Err(Error::InvalidPeer {
                peer,
                size: self.local_of.len() as u32,
            }),
            Some(Some(j)) => Ok(Route::Local(*j)),
            Some(None) if self.remote => Ok(Route::Remote),
            Some(None) => Err(Error::Unreachable { peer }),
        }
    }
}

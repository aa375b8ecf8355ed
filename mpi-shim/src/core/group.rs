//! Groups: ordered sets of processes, named by their engine process id.

/// An MPI group: member `i` has rank `i`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Engine process id of each member, in rank order.
    pub members: Vec<u32>,
}

impl Group {
    pub fn new(members: Vec<u32>) -> Self {
        Self { members }
    }

    pub fn size(&self) -> i32 {
        self.members.len() as i32
    }

    /// The rank of process `pid` in the group.
    pub fn rank_of(&self, pid: u32) -> Option<i32> {
        self.members
            .iter()
            .position(|&p| p == pid)
            .map(|r| r as i32)
    }
}

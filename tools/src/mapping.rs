//! Placement of ranks on virtual nodes.

/// Block placement of `np` ranks on virtual nodes of `ppn` processes each:
/// ranks `0..ppn` on node 0, `ppn..2*ppn` on node 1, and so on; the last
/// node may hold fewer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    np: u32,
    ppn: u32,
}

impl Mapping {
    /// `np` ranks, `ppn` per virtual node (all on one node when `ppn` is
    /// `None` or not below `np`).
    ///
    /// # Panics
    ///
    /// Panics if `np` or `ppn` is zero; the command line refuses both.
    pub fn block(np: u32, ppn: Option<u32>) -> Self {
        assert!(np > 0, "a job needs at least one process");
        let ppn = ppn.unwrap_or(np);
        assert!(ppn > 0, "a virtual node needs at least one process");
        Self {
            np,
            ppn: ppn.min(np),
        }
    }

    /// Number of ranks.
    pub fn np(&self) -> u32 {
        self.np
    }

    /// Number of virtual nodes.
    pub fn nodes(&self) -> u32 {
        self.np.div_ceil(self.ppn)
    }

    /// The virtual node of `rank`.
    pub fn node_of(&self, rank: u32) -> u32 {
        rank / self.ppn
    }

    /// The rank of `rank` among the processes of its node.
    pub fn local_rank(&self, rank: u32) -> u32 {
        rank % self.ppn
    }

    /// How many processes share `rank`'s node.
    pub fn local_size(&self, rank: u32) -> u32 {
        let first = self.node_of(rank) * self.ppn;
        self.ppn.min(self.np - first)
    }

    /// The mapping in the `PMI_process_mapping` format: `(vector,B...)`
    /// with blocks `(first_node,node_count,procs_per_node)`.
    pub fn process_mapping(&self) -> String {
        let full_nodes = self.np / self.ppn;
        let rest = self.np % self.ppn;
        let mut value = format!("(vector,(0,{full_nodes},{}))", self.ppn);
        if rest > 0 {
            value.pop();
            value.push_str(&format!(",({full_nodes},1,{rest}))"));
        }
        value
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn everything_on_one_node_by_default() {
        let m = Mapping::block(3, None);
        assert_eq!(m.nodes(), 1);
        assert_eq!((0..3).map(|r| m.node_of(r)).collect::<Vec<_>>(), [0, 0, 0]);
        assert_eq!(
            (0..3).map(|r| m.local_rank(r)).collect::<Vec<_>>(),
            [0, 1, 2]
        );
        assert_eq!(m.local_size(2), 3);
        assert_eq!(m.process_mapping(), "(vector,(0,1,3))");
    }

    #[test]
    fn block_placement_with_a_partial_last_node() {
        let m = Mapping::block(5, Some(2));
        assert_eq!(m.nodes(), 3);
        assert_eq!(
            (0..5).map(|r| m.node_of(r)).collect::<Vec<_>>(),
            [0, 0, 1, 1, 2]
        );
        assert_eq!(
            (0..5).map(|r| m.local_rank(r)).collect::<Vec<_>>(),
            [0, 1, 0, 1, 0]
        );
        assert_eq!(
            (0..5).map(|r| m.local_size(r)).collect::<Vec<_>>(),
            [2, 2, 2, 2, 1]
        );
        assert_eq!(m.process_mapping(), "(vector,(0,2,2),(2,1,1))");
    }

    #[test]
    fn even_split_and_oversized_ppn() {
        assert_eq!(
            Mapping::block(4, Some(2)).process_mapping(),
            "(vector,(0,2,2))"
        );
        assert_eq!(
            Mapping::block(4, Some(1)).process_mapping(),
            "(vector,(0,4,1))"
        );
        let m = Mapping::block(2, Some(8));
        assert_eq!(m.nodes(), 1);
        assert_eq!(m.local_size(1), 2);
        assert_eq!(m.process_mapping(), "(vector,(0,1,2))");
    }
}

//! The hierarchy of a board whose members sit in several packages, NUMA
//! nodes or L3 caches: members are grouped by the coarsest of those
//! levels that tells them apart, and the first member of each group is
//! its *leader*. Barriers and small reductions then cross the boundary
//! between groups once per group instead of once per member:
//! - a barrier: each leader posts once every member of its group did,
//!   and every member waits for the leaders' posts alone (a wide, flat
//!   release: everyone reads the leaders' lines directly);
//! - a small reduce or allreduce: each leader folds its group's vectors
//!   (in rank order) and posts that partial instead of its own vector,
//!   and the members that read the result fold the leaders' partials.
//!
//! Invariant (T1): in a tiered step a leader posts only after every
//! member of its group posted that step, so once every leader posted
//! it, every member has ([`super::Team::missing_leader`] records that,
//! so the next step's BP2 check looks at no line). Every member takes
//! the tiered steps alike: the groups are computed from the places the
//! members published in the node segment, which every member reads the
//! same, and both the direct calls and the schedules follow them.
//!
//! A fold by groups keeps the rank order only where each group is a run
//! of consecutive members ([`Tiers::keeps_order`]); a non-commutative
//! operation on other groups takes the flat steps.
//!
//! A hierarchy is built only where every member's place is known at the
//! level that groups them and some group holds two members or more: an
//! unbound process may move anywhere, and groups of one would only add
//! a hop.

use shm_engine::locality::{Level, Place, UNKNOWN};

/// The levels that may group a board's members, coarsest first.
const LEVELS: [Level; 3] = [Level::Package, Level::Numa, Level::L3];

/// A board's groups and their leaders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tiers {
    /// The level whose objects group the members.
    level: Level,
    /// The members of each group, increasing; groups in the order of
    /// their first member, their leader.
    groups: Vec<Vec<usize>>,
    /// The group of each member.
    group_of: Vec<usize>,
    /// Whether each group is a run of consecutive members.
    in_order: bool,
}

impl Tiers {
    /// The hierarchy of members placed at `places` (in member order;
    /// `None`: not known), or `None` where there is none worth taking
    /// (module docs).
    pub fn of(places: &[Option<Place>]) -> Option<Self> {
        let places: Option<Vec<Place>> = places.iter().copied().collect();
        let places = places?;
        let level = LEVELS.into_iter().find(|&l| {
            let ids: Vec<u32> = places.iter().map(|p| p.id(l)).collect();
            !ids.contains(&UNKNOWN) && ids.iter().any(|&id| id != ids[0])
        })?;
        let mut objects: Vec<u32> = Vec::new();
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut group_of = Vec::with_capacity(places.len());
        for (m, p) in places.iter().enumerate() {
            let id = p.id(level);
            let g = objects.iter().position(|&o| o == id).unwrap_or_else(|| {
                objects.push(id);
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(m);
            group_of.push(g);
        }
        if groups.iter().all(|g| g.len() < 2) {
            return None;
        }
        let in_order = groups.iter().all(|g| g[g.len() - 1] - g[0] + 1 == g.len());
        Some(Self {
            level,
            groups,
            group_of,
            in_order,
        })
    }

    /// The level whose objects group the members.
    pub fn level(&self) -> Level {
        self.level
    }

    /// The leader of each group, in group order (member 0 leads the
    /// first).
    pub fn leaders(&self) -> impl DoubleEndedIterator<Item = usize> + Clone + '_ {
        self.groups.iter().map(|g| g[0])
    }

    /// The members of member `m`'s group, increasing (its leader first).
    pub fn group(&self, m: usize) -> &[usize] {
        &self.groups[self.group_of[m]]
    }

    /// Whether member `m` leads its group.
    pub fn leads(&self, m: usize) -> bool {
        self.group(m)[0] == m
    }

    /// The leader of member `m`'s group.
    pub fn leader_of(&self, m: usize) -> usize {
        self.group(m)[0]
    }

    /// Whether a fold of the groups' partials, in group order, keeps the
    /// rank order of a fold of every member: each group is a run of
    /// consecutive members.
    pub fn keeps_order(&self) -> bool {
        self.in_order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(package: u32, numa: u32, l3: u32) -> Option<Place> {
        Some(Place::new([UNKNOWN, UNKNOWN, l3, numa, package]))
    }

    #[test]
    fn the_coarsest_level_that_tells_members_apart_groups_them() {
        let places = [at(0, 0, 0), at(0, 1, 4), at(0, 0, 0), at(0, 1, 4)];
        let t = Tiers::of(&places).expect("two NUMA nodes");
        assert_eq!(t.level(), Level::Numa);
        assert_eq!(t.leaders().collect::<Vec<_>>(), [0, 1]);
        assert_eq!(t.group(3), [1, 3]);
        assert!(t.leads(1) && !t.leads(2) && t.leader_of(2) == 0);
        assert!(!t.keeps_order(), "groups 0,2 and 1,3 interleave");

        let places = [
            at(0, 0, 0),
            at(0, 0, 0),
            at(8, 1, 8),
            at(8, 1, 8),
            at(8, 1, 8),
        ];
        let t = Tiers::of(&places).expect("two packages");
        assert_eq!(t.level(), Level::Package);
        assert_eq!(t.group(4), [2, 3, 4]);
        assert!(t.keeps_order());
    }

    #[test]
    fn no_hierarchy_without_two_groups_known_places_or_a_shared_group() {
        assert_eq!(Tiers::of(&[at(0, 0, 0), at(0, 0, 0)]), None, "one object");
        assert_eq!(
            Tiers::of(&[at(0, 0, 0), at(4, 1, 4)]),
            None,
            "groups of one"
        );
        assert_eq!(
            Tiers::of(&[at(0, 0, 0), at(0, 0, 0), None]),
            None,
            "unknown"
        );
        let unbound = Some(Place::UNKNOWN);
        assert_eq!(Tiers::of(&[unbound, unbound, at(0, 0, 0)]), None);
        // Packages unknown, L3 known: the L3 caches group.
        let l3 = |c| Some(Place::new([UNKNOWN, UNKNOWN, c, UNKNOWN, UNKNOWN]));
        let t = Tiers::of(&[l3(0), l3(0), l3(6)]).expect("two L3 caches");
        assert_eq!(t.level(), Level::L3);
    }
}

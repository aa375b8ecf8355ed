//! The hierarchy of a flag board ([`crate::board`]) whose members sit in
//! several packages, NUMA nodes or L3 caches: members are grouped by the coarsest of those
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
//! it, every member has; and what a member wrote before its post
//! happens before what any member does after seeing every leader's
//! (Release posts and Acquire loads chain through the leader). Every
//! member takes the tiered steps alike: the groups are computed from the
//! places the members published in the node segment, which every member
//! reads the same. The MPI layer's collectives follow [`barrier_plan`]
//! and take their small reductions the same way.
//!
//! `loom-tests/tests/tiers.rs` runs a tiered barrier on the production
//! board and this module's plan; the `board_tiers` mutation lets a
//! leader post before its group (T1 broken), which loom must catch.
//!
//! A fold by groups keeps the rank order only where each group is a run
//! of consecutive members ([`Tiers::keeps_order`]); a non-commutative
//! operation on other groups takes the flat steps.
//!
//! A hierarchy is built only where every member's place is known at the
//! level that groups them and some group holds two members or more: an
//! unbound process may move anywhere, and groups of one would only add
//! a hop.

use crate::locality::{Level, Place, UNKNOWN};

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

/// Whose posts of a step a member waits for ([`barrier_plan`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Await {
    /// No member.
    Nobody,
    /// Every member.
    Everyone,
    /// Every member but this one.
    Others,
    /// Member 0.
    Member0,
    /// Every group's leader ([`Tiers::leaders`]).
    Leaders,
    /// The other members of this member's group.
    Group,
    /// The other members of this member's group, and the other leaders.
    GroupAndLeaders,
}

/// Whose posts of a barrier's step member `me` waits for, before and
/// after its own post, on a board grouped by `tiers` (`None`: flat) whose
/// members outnumber their CPUs where `crowded`. One plan for every way
/// a member may run the barrier, so that they mix:
/// - flat: post, then wait for everyone; where crowded, member 0
///   releases the others instead: it posts once every other member
///   posted, and they wait for its post alone (the last to arrive would
///   otherwise leave first, and a member that waits for member 0 right
///   after, a bcast's reader, would wait for member 0 to get a core
///   back; this way member 0 runs when it leaves and goes straight on);
/// - tiered: a leader posts once its group posted, and every member
///   waits for the leaders' posts (T1); where crowded, member 0 also
///   waits for the other leaders before it posts, and the others wait
///   for it alone.
///
/// In every case member 0's post of the step comes after every member's
/// where the others wait for it alone.
pub fn barrier_plan(tiers: Option<&Tiers>, crowded: bool, me: usize) -> (Await, Await) {
    match (tiers, crowded) {
        (None, false) => (Await::Nobody, Await::Everyone),
        (None, true) if me == 0 => (Await::Others, Await::Nobody),
        (None, true) => (Await::Nobody, Await::Member0),
        (Some(_), true) if me == 0 => (Await::GroupAndLeaders, Await::Nobody),
        (Some(t), crowded) => {
            let before = if t.leads(me) && !LEADER_POSTS_FIRST {
                Await::Group
            } else {
                Await::Nobody
            };
            let after = if crowded {
                Await::Member0
            } else {
                Await::Leaders
            };
            (before, after)
        }
    }
}

/// Whether a leader posts a tiered barrier's step without waiting for
/// its group: the `board_tiers` mutation, which breaks T1 so that
/// loom-tests can prove loom notices.
const LEADER_POSTS_FIRST: bool = cfg!(tessel_mutation = "board_tiers");

/// The members other than `me` (of `n`, grouped by `tiers`) whose posts
/// `a` names (for `Await::Everyone` and `Await::Leaders`, `me` too,
/// which posted before it waits for them); each once.
pub fn awaited(
    tiers: Option<&Tiers>,
    n: usize,
    me: usize,
    a: Await,
) -> impl Iterator<Item = usize> + '_ {
    use Await::*;
    let tiers = || tiers.expect("a tiered wait on a board without tiers");
    let everyone = matches!(a, Everyone | Others).then_some(0..n);
    let zero = (a == Member0).then_some(0);
    let group = matches!(a, Group | GroupAndLeaders).then(|| tiers().group(me).iter().copied());
    let own_leader = matches!(a, GroupAndLeaders).then(|| tiers().leader_of(me));
    let leaders = matches!(a, Leaders | GroupAndLeaders).then(|| tiers().leaders());
    let keep_me = matches!(a, Everyone | Leaders);
    everyone
        .into_iter()
        .flatten()
        .chain(zero)
        .chain(group.into_iter().flatten())
        .chain(
            leaders
                .into_iter()
                .flatten()
                .filter(move |&l| Some(l) != own_leader),
        )
        .filter(move |&m| keep_me || m != me)
}

#[cfg(all(test, not(tessel_loom)))]
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

    #[test]
    fn plans_wait_for_whom_they_must() {
        let grouped = |places: &[Option<Place>]| Tiers::of(places).unwrap();
        let t = grouped(&[
            at(0, 0, 0),
            at(0, 0, 0),
            at(8, 1, 8),
            at(8, 1, 8),
            at(8, 1, 8),
        ]);
        let list = |me, a| awaited(Some(&t), 5, me, a).collect::<Vec<_>>();
        assert_eq!(
            barrier_plan(None, false, 3),
            (Await::Nobody, Await::Everyone)
        );
        assert_eq!(barrier_plan(None, true, 0), (Await::Others, Await::Nobody));
        assert_eq!(barrier_plan(None, true, 4), (Await::Nobody, Await::Member0));
        if !LEADER_POSTS_FIRST {
            assert_eq!(
                barrier_plan(Some(&t), false, 2),
                (Await::Group, Await::Leaders)
            );
        }
        assert_eq!(
            barrier_plan(Some(&t), false, 3),
            (Await::Nobody, Await::Leaders)
        );
        assert_eq!(
            barrier_plan(Some(&t), true, 0),
            (Await::GroupAndLeaders, Await::Nobody)
        );
        assert_eq!(
            barrier_plan(Some(&t), true, 4),
            (Await::Nobody, Await::Member0)
        );
        assert_eq!(list(2, Await::Group), [3, 4]);
        assert_eq!(list(0, Await::GroupAndLeaders), [1, 2]);
        assert_eq!(list(3, Await::Leaders), [0, 2]);
        assert_eq!(list(2, Await::Leaders), [0, 2]);
        assert_eq!(list(1, Await::Others), [0, 2, 3, 4]);
        assert_eq!(list(1, Await::Everyone), [0, 1, 2, 3, 4]);
        assert_eq!(awaited(None, 3, 0, Await::Member0).count(), 0);
    }
}

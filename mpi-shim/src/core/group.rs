//! Groups: ordered sets of processes, named by their engine process id
//! (MPI-4.0 §7.3). Every operation here is local.

use super::Class;
use super::peer::Rank;
use super::{MpiError, MpiResult};

/// An MPI group: member `i` has rank `i`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    /// Engine process id of each member, in rank order.
    pub members: Vec<u32>,
    /// The session (slot) whose process set it comes from, if not the
    /// world model's; groups made from it keep it.
    pub session: Option<usize>,
}

/// How two groups or communicators relate (MPI-4.1 §7.3.1, §7.4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// The same members in the same order (for communicators: the same
    /// communicator).
    Ident,
    /// Communicators with identical groups but different contexts.
    Congruent,
    /// The same members in another order.
    Similar,
    Unequal,
}

/// How two groups of members relate.
pub fn compare(a: &[u32], b: &[u32]) -> Comparison {
    if a == b {
        Comparison::Ident
    } else if a.len() == b.len() && a.iter().all(|p| b.contains(p)) {
        Comparison::Similar
    } else {
        Comparison::Unequal
    }
}

impl Group {
    /// A group of the world model's processes.
    pub fn new(members: Vec<u32>) -> Self {
        Self {
            members,
            session: None,
        }
    }

    /// A group of `members` from the same session as `self`.
    fn derived(&self, members: Vec<u32>) -> Self {
        Self {
            members,
            session: self.session,
        }
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

    fn contains(&self, pid: u32) -> bool {
        self.members.contains(&pid)
    }

    /// Members of `self`, then those of `other` not in `self`.
    pub fn union(&self, other: &Group) -> Group {
        let mut m = self.members.clone();
        m.extend(other.members.iter().filter(|&&p| !self.contains(p)));
        self.derived(m)
    }

    /// Members of `self` that are in `other`, in `self`'s order.
    pub fn intersection(&self, other: &Group) -> Group {
        self.filter(|p| other.contains(p))
    }

    /// Members of `self` that are not in `other`, in `self`'s order.
    pub fn difference(&self, other: &Group) -> Group {
        self.filter(|p| !other.contains(p))
    }

    fn filter(&self, keep: impl Fn(u32) -> bool) -> Group {
        self.derived(self.members.iter().copied().filter(|&p| keep(p)).collect())
    }

    /// The rank in `other` of each of `ranks` of `self` (`MPI_PROC_NULL`
    /// stays itself); `None` (`MPI_UNDEFINED`) where the process is not in
    /// `other`.
    pub fn translate(
        &self,
        ranks: impl IntoIterator<Item = Rank>,
        other: &Group,
    ) -> MpiResult<Vec<Option<Rank>>> {
        ranks
            .into_iter()
            .map(|r| match r {
                Rank::Null => Ok(Some(Rank::Null)),
                Rank::Proc(r) => Ok(other.rank_of(self.member(r)?).map(Rank::Proc)),
                Rank::Any => Err(MpiError::new(
                    Class::Rank,
                    "MPI_ANY_SOURCE is not a rank of a group",
                )),
            })
            .collect()
    }

    fn member(&self, rank: i32) -> MpiResult<u32> {
        usize::try_from(rank)
            .ok()
            .and_then(|r| self.members.get(r).copied())
            .ok_or_else(|| {
                MpiError::new(
                    Class::Rank,
                    format!("rank {rank} is not in a group of size {}", self.size()),
                )
            })
    }

    /// Check that `ranks` are distinct valid ranks of the group.
    fn distinct(&self, ranks: &[i32]) -> MpiResult<()> {
        let mut seen = vec![false; self.members.len()];
        for &r in ranks {
            self.member(r)?;
            if std::mem::replace(&mut seen[r as usize], true) {
                return Err(MpiError::new(
                    Class::Rank,
                    format!("rank {r} appears twice"),
                ));
            }
        }
        Ok(())
    }

    /// The members of ranks `ranks`, in that order (distinct, valid).
    pub fn incl(&self, ranks: &[i32]) -> MpiResult<Group> {
        self.distinct(ranks)?;
        Ok(self.derived(ranks.iter().map(|&r| self.members[r as usize]).collect()))
    }

    /// The members whose ranks are not in `ranks` (distinct, valid).
    pub fn excl(&self, ranks: &[i32]) -> MpiResult<Group> {
        self.distinct(ranks)?;
        Ok(self.derived(
            self.members
                .iter()
                .enumerate()
                .filter(|(i, _)| !ranks.contains(&(*i as i32)))
                .map(|(_, &p)| p)
                .collect(),
        ))
    }

    /// The ranks `(first, last, stride)` triplets name (MPI-4.0 §7.3.2).
    pub fn expand_ranges(&self, ranges: &[[i32; 3]]) -> MpiResult<Vec<i32>> {
        let mut ranks = Vec::new();
        for &[first, last, stride] in ranges {
            if stride == 0 {
                return Err(MpiError::new(Class::Arg, "range with stride 0"));
            }
            self.member(first)?;
            self.member(last)?;
            let mut r = first;
            while (stride > 0 && r <= last) || (stride < 0 && r >= last) {
                ranks.push(r);
                match r.checked_add(stride) {
                    Some(next) => r = next,
                    None => break,
                }
            }
        }
        Ok(ranks)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(m: &[u32]) -> Group {
        Group::new(m.to_vec())
    }

    #[test]
    fn set_operations_keep_the_first_groups_order() {
        let a = g(&[5, 1, 3]);
        let b = g(&[3, 4, 5]);
        assert_eq!(a.union(&b), g(&[5, 1, 3, 4]));
        assert_eq!(a.intersection(&b), g(&[5, 3]));
        assert_eq!(a.difference(&b), g(&[1]));
        assert_eq!(b.difference(&b), g(&[]));
    }

    #[test]
    fn translate_maps_ranks_and_marks_absent_processes() {
        let a = g(&[5, 1, 3]);
        let b = g(&[3, 5]);
        let ranks = [Rank::Proc(0), Rank::Proc(1), Rank::Proc(2), Rank::Null];
        assert_eq!(
            a.translate(ranks, &b).unwrap(),
            vec![
                Some(Rank::Proc(1)),
                None,
                Some(Rank::Proc(0)),
                Some(Rank::Null)
            ]
        );
        for bad in [Rank::Proc(3), Rank::Any] {
            assert_eq!(a.translate([bad], &b).unwrap_err().code, Class::Rank);
        }
    }

    #[test]
    fn compare_tells_identical_similar_and_unequal() {
        assert_eq!(compare(&[1, 2], &[1, 2]), Comparison::Ident);
        assert_eq!(compare(&[1, 2], &[2, 1]), Comparison::Similar);
        assert_eq!(compare(&[1, 2], &[1, 3]), Comparison::Unequal);
        assert_eq!(compare(&[1, 2], &[1]), Comparison::Unequal);
    }

    #[test]
    fn incl_and_excl_check_their_ranks() {
        let a = g(&[10, 11, 12, 13]);
        assert_eq!(a.incl(&[3, 0]).unwrap(), g(&[13, 10]));
        assert_eq!(a.excl(&[3, 0]).unwrap(), g(&[11, 12]));
        assert_eq!(a.incl(&[1, 1]).unwrap_err().code, Class::Rank);
        assert_eq!(a.excl(&[4]).unwrap_err().code, Class::Rank);
        assert_eq!(a.incl(&[-1]).unwrap_err().code, Class::Rank);
    }

    #[test]
    fn ranges_expand_in_both_directions() {
        let a = g(&[0, 1, 2, 3, 4, 5, 6, 7]);
        assert_eq!(
            a.expand_ranges(&[[0, 6, 3], [7, 4, -2]]).unwrap(),
            vec![0, 3, 6, 7, 5]
        );
        assert_eq!(a.expand_ranges(&[[2, 1, 1]]).unwrap(), Vec::<i32>::new());
        assert_eq!(a.expand_ranges(&[[0, 1, 0]]).unwrap_err().code, Class::Arg);
        assert_eq!(a.expand_ranges(&[[0, 8, 1]]).unwrap_err().code, Class::Rank);
    }
}

//! The launcher as a resource manager (`mpiexec --dynres POLICY`): it
//! proposes resource changes, one at a time, which the job queries and
//! accepts (the seed's `MPIDYNRES_RC_get` / `MPIDYNRES_RC_accept`).
//!
//! A change adds processes (new ones, started when the change is
//! accepted, running the job's program) or removes some (the job's
//! processes named in the change leave by themselves once it is
//! accepted). Each change has a *delta* process set, registered like the
//! sets `MPIX_Pset_create_op` makes (`mpix://add/N`, `mpix://remove/N`),
//! and a tag. Only one change is pending at a time: asking again before
//! accepting gives the same change, and the next is proposed only once it
//! is accepted.
//!
//! Policies:
//! - `schedule:FILE`: one change per line, `add N` or `remove N`, in
//!   order (`#` starts a comment); no change once the file is done;
//! - `step:N`: add N, remove N, add N... (the seed's step manager);
//! - `random:SEED`: add or remove between 1 and 4 processes, chosen by a
//!   generator seeded with SEED (the seed's random manager);
//! - `external`: only what is asked from outside the job.
//!
//! With any policy, `tessel-dynres PID add N|remove N` asks the running
//! `mpiexec` (process PID) for a change, as a batch scheduler would: it is
//! proposed before the policy's next one ([`Manager::request`]).
//!
//! Removals take the most recently added processes first and never the
//! job's first process, and never leave fewer than one process.

/// The abstract unix socket on which `mpiexec` (process `pid`) takes
/// requests for changes.
pub fn control_name(pid: u32) -> String {
    format!("tessel-mpiexec-{pid}")
}

/// What a policy asks for next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Start this many processes.
    Add(u32),
    /// This many processes leave.
    Remove(u32),
}

/// How the launcher proposes changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Policy {
    /// The steps of a file, in order.
    Schedule(Vec<Step>),
    /// Add N, remove N, and so on.
    Step(u32),
    /// Random steps from this seed.
    Random(u64),
    /// None of its own: only requests from outside.
    External,
}

impl Policy {
    /// Parse `--dynres`'s argument (reading a schedule's file).
    pub fn parse(text: &str) -> Result<Self, String> {
        let (kind, arg) = text
            .split_once(':')
            .or((text == "external").then_some(("external", "")))
            .ok_or_else(|| {
                format!("{text:?}: expected schedule:FILE, step:N, random:SEED or external")
            })?;
        match kind {
            "schedule" => {
                let body = std::fs::read_to_string(arg)
                    .map_err(|e| format!("schedule file {arg}: {e}"))?;
                Self::schedule(&body).map_err(|e| format!("schedule file {arg}: {e}"))
            }
            "step" => match arg.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Self::Step(n)),
                _ => Err(format!("step:{arg}: expected a positive number")),
            },
            "external" => Ok(Self::External),
            "random" => arg
                .parse::<u64>()
                .map(Self::Random)
                .map_err(|_| format!("random:{arg}: expected a number (the seed)")),
            _ => Err(format!(
                "{text:?}: expected schedule:FILE, step:N, random:SEED or external"
            )),
        }
    }

    /// A schedule's lines.
    pub fn schedule(body: &str) -> Result<Self, String> {
        let mut steps = Vec::new();
        for (i, line) in body.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = || format!("line {}: {line:?} is not `add N` or `remove N`", i + 1);
            let (verb, n) = line.split_once(char::is_whitespace).ok_or_else(bad)?;
            let n = n
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(bad)?;
            steps.push(match verb {
                "add" => Step::Add(n),
                "remove" => Step::Remove(n),
                _ => return Err(bad()),
            });
        }
        Ok(Self::Schedule(steps))
    }

    /// Change number `k` (from 0), for a job of `live` processes.
    fn step(&self, k: usize, live: usize) -> Option<Step> {
        match self {
            Self::Schedule(steps) => steps.get(k).copied(),
            Self::Step(n) => Some(if k.is_multiple_of(2) {
                Step::Add(*n)
            } else {
                Step::Remove(*n)
            }),
            Self::Random(seed) => {
                // SplitMix64 of (seed, k): reproducible, no state.
                let mut z = seed.wrapping_add((k as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
                z ^= z >> 31;
                let n = (z % 4) as u32 + 1;
                Some(if z & 16 == 0 || live <= 1 {
                    Step::Add(n)
                } else {
                    Step::Remove(n)
                })
            }
            Self::External => None,
        }
    }
}

/// A change proposed and not yet accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// What names it in `rc_accept`: its number, from 1.
    pub tag: u32,
    /// Processes are added (or removed).
    pub add: bool,
    /// The delta set's name.
    pub delta: String,
    /// The delta set's members: the ids added or removed.
    pub ids: Vec<u32>,
}

/// The launcher's resource-manager state.
#[derive(Debug)]
pub struct Manager {
    policy: Policy,
    /// Changes of the policy proposed so far.
    proposed: usize,
    /// Changes asked from outside, not proposed yet.
    requests: std::collections::VecDeque<Step>,
    /// Tags given so far.
    tags: u32,
    /// The change proposed and not accepted yet.
    pub pending: Option<Change>,
    /// The processes the job holds now, oldest first.
    pub live: Vec<u32>,
}

impl Manager {
    /// A manager of a job of processes `live`.
    pub fn new(policy: Policy, live: Vec<u32>) -> Self {
        Self {
            policy,
            proposed: 0,
            requests: std::collections::VecDeque::new(),
            tags: 0,
            pending: None,
            live,
        }
    }

    /// The next step the policy asks for, clamped to what can be done:
    /// removals leave at least one process; `None` when there is none.
    pub fn next_step(&self) -> Option<Step> {
        let step = match self.requests.front() {
            Some(&s) => s,
            None => self.policy.step(self.proposed, self.live.len())?,
        };
        match step {
            Step::Remove(n) => {
                let n = n.min(self.live.len().saturating_sub(1) as u32);
                (n > 0).then_some(Step::Remove(n))
            }
            add => Some(add),
        }
    }

    /// The processes a removal of `n` takes: the newest live ones.
    pub fn removal(&self, n: u32) -> Vec<u32> {
        self.live[self.live.len() - n as usize..].to_vec()
    }

    /// Record a proposed change of processes `ids` (added, or removed),
    /// whose delta set is called `delta`. Returns it.
    pub fn propose(&mut self, add: bool, ids: Vec<u32>, delta: String) -> &Change {
        if self.requests.pop_front().is_none() {
            self.proposed += 1;
        }
        self.tags += 1;
        self.pending = Some(Change {
            tag: self.tags,
            add,
            delta,
            ids,
        });
        self.pending.as_ref().expect("just set")
    }

    /// A change asked from outside the job (`tessel-dynres`), in a job
    /// whose universe holds `universe` ids: queued before the policy's
    /// next, or refused when it cannot be done. Returns how many requests
    /// wait before it.
    pub fn request(&mut self, step: Step, universe: u32) -> Result<usize, String> {
        let mut live = self.live.len() as i64;
        if let Some(c) = &self.pending {
            live += if c.add {
                c.ids.len() as i64
            } else {
                -(c.ids.len() as i64)
            };
        }
        for s in &self.requests {
            live += match *s {
                Step::Add(n) => i64::from(n),
                Step::Remove(n) => -i64::from(n),
            };
        }
        match step {
            Step::Add(n) if live + i64::from(n) > i64::from(universe) => Err(format!(
                "cannot grow past --max-procs {universe}: the job will hold {live} processes, \
                 {n} more were asked"
            )),
            Step::Remove(n) if i64::from(n) >= live => Err(format!(
                "cannot remove {n} of the {live} processes the job will hold: at least one stays"
            )),
            _ => {
                self.requests.push_back(step);
                Ok(self.requests.len() - 1)
            }
        }
    }

    /// Accept the pending change `tag`: the job's processes as they are
    /// after it. `None` when no change with that tag is pending.
    pub fn accept(&mut self, tag: u32) -> Option<Change> {
        if self.pending.as_ref().map(|c| c.tag) != Some(tag) {
            return None;
        }
        let c = self.pending.take()?;
        if c.add {
            self.live.extend(&c.ids);
        } else {
            self.live.retain(|id| !c.ids.contains(id));
        }
        Some(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_and_bad_lines_are_refused() {
        let p = Policy::schedule("# grow, then shrink\nadd 2\n\nremove 1 # one\n").unwrap();
        assert_eq!(p, Policy::Schedule(vec![Step::Add(2), Step::Remove(1)]));
        for bad in ["add", "add 0", "grow 2", "add two"] {
            assert!(Policy::schedule(bad).is_err(), "{bad}");
        }
        assert_eq!(Policy::parse("step:3"), Ok(Policy::Step(3)));
        assert!(Policy::parse("step:0").is_err());
        assert!(Policy::parse("nothing").is_err());
    }

    #[test]
    fn requests_from_outside_come_first_and_are_checked() {
        let mut m = Manager::new(Policy::Step(1), vec![0, 1]);
        assert!(
            m.request(Step::Add(7), 8)
                .unwrap_err()
                .contains("--max-procs 8")
        );
        assert!(m.request(Step::Remove(2), 8).is_err(), "at least one stays");
        assert_eq!(m.request(Step::Add(3), 8), Ok(0));
        assert_eq!(m.request(Step::Remove(4), 8), Ok(1));
        assert_eq!(m.next_step(), Some(Step::Add(3)));
        let tag = m.propose(true, vec![2, 3, 4], "mpix://add/0".into()).tag;
        m.accept(tag);
        assert_eq!(m.next_step(), Some(Step::Remove(4)));
        let ids = m.removal(4);
        let tag = m.propose(false, ids, "mpix://remove/1".into()).tag;
        m.accept(tag);
        assert_eq!(m.live, [0]);
        // Then the policy's own, from its first.
        assert_eq!(m.next_step(), Some(Step::Add(1)));
        assert_eq!(Policy::parse("external"), Ok(Policy::External));
        assert_eq!(Manager::new(Policy::External, vec![0]).next_step(), None);
    }

    #[test]
    fn one_change_at_a_time_and_removals_take_the_newest() {
        let mut m = Manager::new(Policy::Step(2), vec![0, 1]);
        assert_eq!(m.next_step(), Some(Step::Add(2)));
        let tag = m.propose(true, vec![5, 6], "mpix://add/0".into()).tag;
        assert!(m.accept(tag + 1).is_none(), "an unknown tag");
        assert!(m.accept(tag).is_some_and(|c| c.add));
        assert!(m.accept(tag).is_none(), "accepted twice");
        assert_eq!(m.live, [0, 1, 5, 6]);
        assert_eq!(m.next_step(), Some(Step::Remove(2)));
        assert_eq!(m.removal(2), [5, 6]);
        let tag = m.propose(false, m.removal(2), "mpix://remove/1".into()).tag;
        m.accept(tag);
        assert_eq!(m.live, [0, 1]);
        // Never below one process.
        let mut m = Manager::new(Policy::Schedule(vec![Step::Remove(5)]), vec![0, 1]);
        assert_eq!(m.next_step(), Some(Step::Remove(1)));
        m.proposed = 1;
        assert_eq!(m.next_step(), None);
    }
}

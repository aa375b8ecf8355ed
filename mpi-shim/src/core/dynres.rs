//! Resource changes (the seed "An Emulation Layer for Dynamic Resources
//! with MPI Sessions", done with real processes): the launcher, acting as
//! the job's resource manager (`mpiexec --dynres`), proposes a change; a
//! process asks for it ([`Runtime::dynres_get`]: its kind, its delta
//! process set, its tag) and accepts it ([`Runtime::dynres_accept`]).
//!
//! Accepting an addition starts the new processes at once: they map the
//! node segment (the accepting process serves its descriptor, as the root
//! of a spawn does, see `super::dynamic`), and the info given with the
//! acceptance reaches them in `MPI_Session_get_info`. Accepting a removal
//! changes nothing by itself: the processes of the delta set leave when
//! the application lets them (they finalize and exit), after handing
//! their data to the others. The application then builds its new main
//! communicator from process sets (`MPIX_Pset_create_op`, union or
//! difference with the delta, then `MPI_Comm_create_from_group`).

use std::collections::HashMap;

use shm_engine::bootstrap::{DYNRES_INFO_KEY, DynresChange};

use super::{Class, MpiError, MpiResult, Runtime};

/// The resource-change state of this process.
#[derive(Debug, Default)]
pub struct Dynres {
    /// Processes each change seen here adds (by tag), for accepting it.
    seen: HashMap<u32, DynresChange>,
    /// Descriptor servers of the segment, for processes being added.
    leases: Vec<shm_engine::segment::FdServer>,
    /// Whether a change added this process, and the info the accepting
    /// process gave it (`None` until read).
    added: Option<(bool, Vec<(String, String)>)>,
}

impl Runtime {
    /// `MPIX_Dynres_get`: the change the launcher proposes now, if any.
    pub fn dynres_get(&mut self) -> MpiResult<Option<DynresChange>> {
        let change = self
            .ep
            .bootstrap()
            .dynres_get()
            .map_err(|e| MpiError::new(Class::Other, format!("resource change: {e}")))?;
        if let Some(c) = &change {
            self.dynres.seen.insert(c.tag, c.clone());
            // The delta is a process set every process now sees.
            self.refresh_psets()?;
        }
        Ok(change)
    }

    /// `MPIX_Dynres_accept`: accept change `tag`, giving `info` to the
    /// processes it adds. A tag that is not pending (never proposed, or
    /// accepted already) is an error.
    pub fn dynres_accept(&mut self, tag: u32, info: Vec<(String, String)>) -> MpiResult<()> {
        if !self.dynres.seen.contains_key(&tag) {
            // Another process asked: learn what the change adds.
            self.dynres_get()?;
        }
        let procs = self
            .dynres
            .seen
            .get(&tag)
            .map_or(0, |c| if c.add { c.procs } else { 0 });
        let (lease, segment) = if procs > 0 {
            let (server, segment) = self.ep.share_segment(procs).map_err(|e| {
                MpiError::new(Class::Other, format!("sharing the node segment: {e}"))
            })?;
            (Some(server), segment)
        } else {
            (None, (String::new(), Vec::new()))
        };
        self.ep
            .bootstrap()
            .dynres_accept(tag, &info, &segment)
            .map_err(|e| MpiError::new(Class::Arg, format!("resource change {tag}: {e}")))?;
        self.dynres.seen.remove(&tag);
        self.dynres.leases.extend(lease);
        Ok(())
    }

    /// Whether a resource change started this process, and the info the
    /// process that accepted it gave (empty for other processes).
    fn load_added(&mut self) -> &(bool, Vec<(String, String)>) {
        if self.dynres.added.is_none() {
            let text = if self.ep.world().start > 0 {
                self.ep.bootstrap().get(DYNRES_INFO_KEY).ok()
            } else {
                None
            };
            let entries = text.as_deref().map_or_else(Vec::new, |t| {
                String::from_utf8_lossy(t)
                    .lines()
                    .filter_map(|l| l.split_once('='))
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            });
            self.dynres.added = Some((text.is_some(), entries));
        }
        self.dynres.added.as_ref().expect("set above")
    }

    /// The info the process that accepted the change that added this one
    /// gave it (for `MPI_Session_get_info`).
    pub fn dynres_info(&mut self) -> Vec<(String, String)> {
        self.load_added().1.clone()
    }

    /// Whether a resource change started this process: such a process is
    /// not in the seed's `mpi://world`.
    pub fn added_by_change(&mut self) -> bool {
        self.load_added().0
    }
}

//! The one progress driver. Every wait of the library (for requests,
//! probes, collectives, freed requests) is a loop here: each turn asks
//! the waiter whether it is done, advances every outstanding nonblocking
//! collective (MPI-4.1 §6.12: a collective progresses whatever the
//! process waits for, so a blocking `MPI_Probe` must move them too), and
//! progresses the engine, backing off (spin, yield, futex sleep) while
//! nothing moves, so that oversubscribed processes leave their core.

use shm_engine::Backoff;

use super::{MpiResult, Runtime};

/// What one turn of a waiter found.
#[derive(Debug)]
pub enum Poll<T> {
    /// The wait is over.
    Ready(T),
    /// Not yet, but the waiter itself moved something (a schedule posted
    /// its next round): do not back off.
    Moved,
    /// Nothing yet.
    Idle,
}

impl<T> From<Option<T>> for Poll<T> {
    fn from(o: Option<T>) -> Self {
        o.map_or(Poll::Idle, Poll::Ready)
    }
}

impl Runtime {
    /// Turn until `step` is ready; its answer, or the first error it
    /// returns.
    pub fn wait_until<T>(
        &mut self,
        mut step: impl FnMut(&mut Runtime) -> MpiResult<Poll<T>>,
    ) -> MpiResult<T> {
        let mut backoff = Backoff::default();
        loop {
            let moved = match step(self)? {
                Poll::Ready(answer) => return Ok(answer),
                Poll::Moved => true,
                Poll::Idle => false,
            };
            self.turn(&mut backoff, moved);
        }
    }

    /// One turn of a waiting loop whose waiter is not done: advance the
    /// outstanding collectives, serve the windows, and progress the
    /// engine, backing off one step when nothing moved (`moved`: the
    /// waiter itself moved something).
    pub fn turn(&mut self, backoff: &mut Backoff, moved: bool) {
        let (colls_moved, _) = self.progress_colls();
        let served = self.serve_windows();
        if moved || colls_moved || served {
            *backoff = Backoff::default();
        } else {
            self.ep.progress_or_back_off(backoff);
        }
    }
}

//! loom models of `shm-engine`'s production code live in `tests/`; they run
//! only in a build with `RUSTFLAGS="--cfg tessel_loom"` (see `tools/test.sh`).
//! What the models share is here.

/// The message of a model's failure, caught with `catch_unwind` (empty
/// where it is neither a `String` nor a `&str`): a mutation's test checks
/// that loom failed the model for the reason the mutation causes.
pub fn panic_text(why: &(dyn std::any::Any + Send)) -> &str {
    why.downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| why.downcast_ref::<&str>().copied())
        .unwrap_or("")
}

/// Check `f` under loom, preemptions bounded at 3 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise (to stay well under a minute).
#[cfg(tessel_loom)]
pub fn check(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(3);
    }
    builder.check(f);
}

/// What the kernel's futex gives the engine: a wake that arrives before
/// the wait is not lost (the engine gets this from FUTEX_WAIT's value
/// check, here it is a token).
#[cfg(tessel_loom)]
#[derive(Default)]
pub struct Futex {
    woken: loom::sync::Mutex<bool>,
    cv: loom::sync::Condvar,
}

#[cfg(tessel_loom)]
impl std::fmt::Debug for Futex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Futex")
    }
}

#[cfg(tessel_loom)]
impl Futex {
    /// Park until woken (or return at once if a wake came first).
    pub fn wait(&self) {
        let mut woken = self.woken.lock().unwrap();
        while !*woken {
            woken = self.cv.wait(woken).unwrap();
        }
        *woken = false;
    }

    /// Wake the waiter, now or at its next wait.
    pub fn wake(&self) {
        *self.woken.lock().unwrap() = true;
        self.cv.notify_one();
    }
}

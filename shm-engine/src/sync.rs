//! The one place that names atomics and interior-mutable cells.
//!
//! Everything that lives in shared memory or is touched by more than one
//! process goes through these types, so that building with
//! `RUSTFLAGS="--cfg tessel_loom"` swaps in loom's model-checked versions
//! and `loom-tests` checks the production code rather than a copy of it.
//!
//! `tools/test.sh` fails if any other file of the engine names
//! `core::sync::atomic`, `std::sync::atomic` or `cell::UnsafeCell`.
//!
//! `UnsafeCell` offers loom's `with`/`with_mut` access style in both builds,
//! so every slot access is visible to the model.

#[cfg(not(tessel_loom))]
mod imp {
    pub use core::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

    /// `core::cell::UnsafeCell` with loom's closure-based access.
    #[derive(Debug, Default)]
    #[repr(transparent)]
    pub struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        /// Wrap `value`.
        pub const fn new(value: T) -> Self {
            Self(core::cell::UnsafeCell::new(value))
        }

        /// Read access through a raw pointer.
        #[inline(always)]
        pub fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }

        /// Write access through a raw pointer.
        #[inline(always)]
        pub fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }

    /// Hint to the CPU inside a spin loop.
    #[inline(always)]
    pub fn spin_hint() {
        core::hint::spin_loop();
    }

    /// The light side of an asymmetric fence: keeps the compiler from
    /// moving memory accesses across it, and nothing more. It orders like
    /// a full fence only against a heavy side that makes every thread of
    /// the process run one (`membarrier`, `shm_engine::lock`).
    #[inline(always)]
    pub fn light_fence() {
        core::sync::atomic::compiler_fence(Ordering::SeqCst);
    }
}

#[cfg(tessel_loom)]
mod imp {
    pub use loom::cell::UnsafeCell;
    pub use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering, fence};

    /// Under loom a spin must yield, or the model never lets the peer run.
    #[inline(always)]
    pub fn spin_hint() {
        loom::thread::yield_now();
    }

    /// The light side of an asymmetric fence. Loom has no asymmetric
    /// fences: the models run a full fence on both sides, which is what
    /// the pair amounts to (the heavy side makes every running thread
    /// execute one).
    #[inline(always)]
    pub fn light_fence() {
        fence(Ordering::SeqCst);
    }
}

pub use imp::*;

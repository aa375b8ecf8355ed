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
}

pub use imp::*;

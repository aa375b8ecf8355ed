//! How a call holds a datatype: [`TypeRef`].

use std::ptr::NonNull;
use std::sync::Arc;

use super::Datatype;

/// A datatype as a call holds it, one word wide. A derived type is
/// counted, so that freeing its handle does not end an operation that
/// still uses it. A predefined type lives as long as the library and is
/// held without a count: moving a count is a locked instruction, which
/// waits for this process's stores to drain, and a small message or
/// collective would move several. (An enum of the two kinds, two words
/// wide, was tried first: the 8 B ping-pong measured 6% slower with it.)
///
/// The word is the address `Arc::into_raw` gives (aligned as a `Datatype`,
/// so its lowest bit is clear), with its lowest bit set for a predefined
/// type.
pub struct TypeRef(NonNull<Datatype>);

/// The tag of a predefined type's address: a `Datatype`'s address never
/// has this bit set.
const PREDEFINED: usize = 1;
const _: () = assert!(align_of::<Datatype>() > PREDEFINED);

/// What the `Send` and `Sync` below rely on.
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<Arc<Datatype>>();
};

// SAFETY: a `TypeRef` is an `Arc<Datatype>` (or a borrow of a `'static`
// one), which is `Send` and `Sync`.
unsafe impl Send for TypeRef {}
// SAFETY: as above.
unsafe impl Sync for TypeRef {}

impl TypeRef {
    /// A predefined type, which the library never frees.
    pub fn predefined(t: &'static Arc<Datatype>) -> Self {
        let p = Arc::as_ptr(t).cast_mut();
        Self(NonNull::new(p.map_addr(|a| a | PREDEFINED)).expect("an Arc is not null"))
    }

    fn is_predefined(&self) -> bool {
        self.0.as_ptr().addr() & PREDEFINED != 0
    }

    fn ptr(&self) -> *const Datatype {
        self.0.as_ptr().map_addr(|a| a & !PREDEFINED)
    }

    /// The counted reference (for what outlives calls: a type's
    /// envelope, a handle).
    pub fn to_arc(&self) -> Arc<Datatype> {
        // SAFETY: `ptr` came from an `Arc` that is alive: one this
        // `TypeRef` counts, or a predefined one, never freed. The count
        // taken here is the new `Arc`'s.
        unsafe {
            Arc::increment_strong_count(self.ptr());
            Arc::from_raw(self.ptr())
        }
    }
}

impl From<Arc<Datatype>> for TypeRef {
    fn from(t: Arc<Datatype>) -> Self {
        let p = Arc::into_raw(t).cast_mut();
        debug_assert_eq!(p.addr() & PREDEFINED, 0, "an Arc's data is aligned");
        Self(NonNull::new(p).expect("an Arc is not null"))
    }
}

impl Clone for TypeRef {
    fn clone(&self) -> Self {
        if !self.is_predefined() {
            // SAFETY: `ptr` came from `Arc::into_raw`, and this `TypeRef`
            // holds one count, so the `Arc` is alive; the new count is the
            // clone's.
            unsafe { Arc::increment_strong_count(self.ptr()) };
        }
        Self(self.0)
    }
}

impl Drop for TypeRef {
    fn drop(&mut self) {
        if !self.is_predefined() {
            // SAFETY: `ptr` came from `Arc::into_raw`, and this `TypeRef`
            // holds one count, which it gives back.
            unsafe { Arc::decrement_strong_count(self.ptr()) };
        }
    }
}

impl std::ops::Deref for TypeRef {
    type Target = Datatype;

    fn deref(&self) -> &Datatype {
        // SAFETY: the `Arc` is alive as long as `self` (see `to_arc`).
        unsafe { &*self.ptr() }
    }
}

impl std::fmt::Debug for TypeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        Datatype::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::Elem;

    #[test]
    fn type_refs_count_derived_types_only() {
        static FOREVER: std::sync::OnceLock<Arc<Datatype>> = std::sync::OnceLock::new();
        let fixed = FOREVER.get_or_init(|| Arc::new(Datatype::basic(4, Elem::I32)));
        let before = Arc::strong_count(fixed);
        let p = TypeRef::predefined(fixed);
        let q = p.clone();
        assert_eq!(Arc::strong_count(fixed), before, "no count moves");
        assert_eq!(q.size, 4);
        let a = q.to_arc();
        assert!(Arc::ptr_eq(&a, fixed));
        assert_eq!(Arc::strong_count(fixed), before + 1);
        drop((p, q, a));
        assert_eq!(Arc::strong_count(fixed), before);

        let derived = Arc::new(Datatype::basic(8, Elem::F64));
        let d = TypeRef::from(Arc::clone(&derived));
        let e = d.clone();
        assert_eq!(Arc::strong_count(&derived), 3);
        assert_eq!(e.size, 8);
        drop(d);
        assert!(Arc::ptr_eq(&e.to_arc(), &derived));
        drop(e);
        assert_eq!(Arc::strong_count(&derived), 1, "every count given back");
    }
}

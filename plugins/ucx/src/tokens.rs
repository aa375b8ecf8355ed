//! The token table: what the engine holds for a rendezvous payload that
//! waits at its sender.
//!
//! A token is
//!
//! ```text
//! bit 63      0
//! bits 62..48 the table's tag (1..=32767, one per context of the process)
//! bits 47..32 the slot's generation (how often it was emptied, mod 2^16)
//! bits 31..0  slot index + 1
//! ```
//!
//! A slot is emptied by exactly one `take` (a fetch or a discard), which
//! bumps its generation, so a token used twice, a token of an earlier
//! occupant of the slot, a token of another context and a made-up token
//! all miss: the caller answers `ERR_INVALID` and never follows a pointer
//! it did not hand out. Token 0 is never issued. Distinct tags also make
//! the tokens of the contexts of one process distinct, for an engine that
//! keys its own records by token across contexts.

use std::sync::atomic::{AtomicU32, Ordering};

/// The tag of the next table made.
static NEXT_TAG: AtomicU32 = AtomicU32::new(0);
const TAG_SHIFT: u32 = 48;
const TAG_MASK: u64 = 0x7fff;
const GENERATION_SHIFT: u32 = 32;

/// Slots with the values they hold, and the empty ones to reuse.
#[derive(Debug)]
pub(crate) struct Tokens<T> {
    tag: u64,
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
}

#[derive(Debug)]
struct Slot<T> {
    generation: u16,
    value: Option<T>,
}

impl<T> Default for Tokens<T> {
    /// An empty table with the next tag of the process (the counter's
    /// Relaxed order suffices: only distinctness matters).
    fn default() -> Self {
        let n = u64::from(NEXT_TAG.fetch_add(1, Ordering::Relaxed));
        Self {
            tag: n % TAG_MASK + 1,
            slots: Vec::new(),
            free: Vec::new(),
        }
    }
}

impl<T> Tokens<T> {
    /// Store `value` and return its token.
    pub(crate) fn insert(&mut self, value: T) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.slots.len()).expect("fewer than 2^32 live tokens");
                self.slots.push(Slot {
                    generation: 0,
                    value: None,
                });
                i
            }
        };
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.value.is_none());
        slot.value = Some(value);
        self.tag << TAG_SHIFT
            | u64::from(slot.generation) << GENERATION_SHIFT
            | (u64::from(index) + 1)
    }

    fn slot_of(&self, token: u64) -> Option<usize> {
        if token >> TAG_SHIFT != self.tag {
            return None;
        }
        let index = (token & 0xffff_ffff).checked_sub(1)? as usize;
        let slot = self.slots.get(index)?;
        let generation = (token >> GENERATION_SHIFT) & 0xffff;
        (u64::from(slot.generation) == generation && slot.value.is_some()).then_some(index)
    }

    /// The value of a live token.
    pub(crate) fn get(&self, token: u64) -> Option<&T> {
        self.slot_of(token)
            .and_then(|i| self.slots[i].value.as_ref())
    }

    /// Remove a live token's value; the token is dead afterwards.
    pub(crate) fn take(&mut self, token: u64) -> Option<T> {
        let i = self.slot_of(token)?;
        let slot = &mut self.slots[i];
        slot.generation = slot.generation.wrapping_add(1);
        self.free.push(i as u32);
        slot.value.take()
    }

    /// Remove every live value (at close).
    pub(crate) fn drain(&mut self) -> Vec<T> {
        let mut values = Vec::new();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            if let Some(v) = slot.value.take() {
                slot.generation = slot.generation.wrapping_add(1);
                self.free.push(i as u32);
                values.push(v);
            }
        }
        values
    }

    /// Number of live tokens.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_taken_once() {
        let mut t = Tokens::default();
        let a = t.insert("a");
        let b = t.insert("b");
        assert_ne!(a, 0);
        assert_eq!(t.get(a), Some(&"a"));
        assert_eq!(t.take(a), Some("a"));
        assert_eq!(t.take(a), None);
        assert_eq!(t.get(a), None);
        assert_eq!(t.len(), 1);
        // The slot is reused under a new generation: the old token misses.
        let c = t.insert("c");
        assert_ne!(c, a);
        assert_eq!(c & 0xffff_ffff, a & 0xffff_ffff);
        assert_eq!(c >> 63, 0);
        assert_eq!(t.take(a), None);
        assert_eq!(t.take(c), Some("c"));
        assert_eq!(t.take(b), Some("b"));
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn made_up_tokens_miss() {
        let mut t = Tokens::default();
        let live = t.insert(1u8);
        let other = Tokens::<u8>::default();
        let foreign = other.tag << TAG_SHIFT | 1;
        assert_ne!(foreign, live);
        for bogus in [
            0,
            2,
            0xdead_beef_0000_0001,
            u64::MAX,
            1 << 32 | 1,
            foreign,
            live + 1,
        ] {
            assert_eq!(t.get(bogus), None, "{bogus:#x}");
            assert_eq!(t.take(bogus), None, "{bogus:#x}");
        }
        assert_eq!(t.drain(), vec![1]);
        assert_eq!(t.len(), 0);
    }
}

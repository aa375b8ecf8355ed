//! A table of entries named by generation-checked 64-bit keys: tokens
//! handed to the engine, rendezvous sends named on the wire, fetches, and
//! the work requests posted to the send queues (their `wr_id`).
//!
//! A key is `generation << 32 | index`. A slot's generation changes every
//! time it is emptied, so a key that was used up, or was never handed
//! out (the engine's bogus tokens, a peer's garbled op), finds nothing
//! instead of someone else's entry. Generations run in `1..2^31`: no key
//! is zero and bit 63 is always clear (the transport uses it to tell
//! receive work requests apart).

/// Generations wrap below this.
const GEN_LIMIT: u32 = 1 << 31;

#[derive(Debug)]
struct Slot<T> {
    generation: u32,
    value: Option<T>,
}

/// The table.
#[derive(Debug)]
pub(crate) struct Table<T> {
    slots: Vec<Slot<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            slots: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

fn split(key: u64) -> (u32, usize) {
    ((key >> 32) as u32, (key & 0xffff_ffff) as usize)
}

impl<T> Table<T> {
    /// Store `value`; its key.
    pub(crate) fn insert(&mut self, value: T) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push(Slot {
                    generation: 1,
                    value: None,
                });
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 entries")
            }
        };
        let slot = &mut self.slots[index as usize];
        debug_assert!(slot.value.is_none());
        slot.value = Some(value);
        self.len += 1;
        u64::from(slot.generation) << 32 | u64::from(index)
    }

    pub(crate) fn get(&self, key: u64) -> Option<&T> {
        let (g, i) = split(key);
        self.slots
            .get(i)
            .filter(|s| s.generation == g)
            .and_then(|s| s.value.as_ref())
    }

    pub(crate) fn get_mut(&mut self, key: u64) -> Option<&mut T> {
        let (g, i) = split(key);
        self.slots
            .get_mut(i)
            .filter(|s| s.generation == g)
            .and_then(|s| s.value.as_mut())
    }

    /// Take the entry out; the key is dead afterwards.
    pub(crate) fn remove(&mut self, key: u64) -> Option<T> {
        let (g, i) = split(key);
        let slot = self.slots.get_mut(i).filter(|s| s.generation == g)?;
        let value = slot.value.take()?;
        slot.generation = if slot.generation + 1 >= GEN_LIMIT {
            1
        } else {
            slot.generation + 1
        };
        self.free.push(i as u32);
        self.len -= 1;
        Some(value)
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The keys of the entries for which `pick` holds.
    pub(crate) fn keys_where(&self, mut pick: impl FnMut(&T) -> bool) -> Vec<u64> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                let v = s.value.as_ref()?;
                pick(v).then_some(u64::from(s.generation) << 32 | i as u64)
            })
            .collect()
    }

    /// Remove every entry (dropping them).
    pub(crate) fn clear(&mut self) {
        let keys = self.keys_where(|_| true);
        for k in keys {
            self.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_find_their_entry_once() {
        let mut t = Table::default();
        let a = t.insert("a");
        let b = t.insert("b");
        assert_ne!(a, b);
        assert_eq!(t.get(a), Some(&"a"));
        assert_eq!(t.len(), 2);
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.remove(a), None, "a key is used once");
        assert_eq!(t.get(a), None);
        // The slot is reused with a new generation: the old key stays dead.
        let c = t.insert("c");
        assert_eq!(c & 0xffff_ffff, a & 0xffff_ffff);
        assert_ne!(c, a);
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(c), Some(&"c"));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn made_up_keys_find_nothing() {
        let mut t = Table::default();
        let k = t.insert(1u8);
        assert!(k != 0 && k >> 63 == 0);
        for bogus in [0, 1, 0xdead_beef_0000_0001, u64::MAX, k ^ 1 << 32] {
            assert_eq!(t.get(bogus), None);
            assert_eq!(t.get_mut(bogus), None);
            assert_eq!(t.remove(bogus), None);
        }
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn generations_wrap_without_reaching_zero_or_bit_63() {
        let mut t = Table::default();
        let k = t.insert(0u8);
        t.slots[0].generation = GEN_LIMIT - 1;
        t.slots[0].value = None;
        t.free.push(0);
        t.len = 0;
        let k2 = t.insert(1u8);
        assert_eq!(k2 >> 32, u64::from(GEN_LIMIT - 1));
        assert_eq!(t.remove(k2), Some(1));
        let k3 = t.insert(2u8);
        assert_eq!(k3 >> 32, 1);
        // After 2^31 - 1 reuses of one slot a key comes back: the check
        // catches stale keys, not ones that old.
        assert_eq!(k3, k);
        assert!(k3 >> 63 == 0);
    }

    #[test]
    fn keys_where_and_clear() {
        let mut t = Table::default();
        let keys: Vec<u64> = (0..10).map(|i| t.insert(i)).collect();
        let even = t.keys_where(|v| v % 2 == 0);
        assert_eq!(even.len(), 5);
        for k in &even {
            assert_eq!(t.get(*k).map(|v| v % 2), Some(0));
        }
        t.remove(keys[0]);
        t.clear();
        assert!(t.is_empty());
        assert!(keys.iter().all(|&k| t.get(k).is_none()));
    }
}

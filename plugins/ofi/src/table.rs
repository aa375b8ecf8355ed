//! A table of values named by 64-bit ids that carry a generation, so a
//! stale or made-up id (a token the engine already used, a FIN for an
//! operation that failed) finds nothing instead of someone else's entry.
//!
//! Id invariant: `id = generation << 32 | index`; the entry at `index`
//! answers to `id` only while it holds a value inserted under that
//! generation. A slot's generation grows by one at each removal and is
//! never 0, so 0 is never an id.

/// One slot: its current generation and maybe a value.
#[derive(Debug)]
struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

/// Values named by generation-checked ids.
#[derive(Debug)]
pub struct Table<T> {
    entries: Vec<Entry<T>>,
    free: Vec<u32>,
    len: usize,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

fn split(id: u64) -> (u32, usize) {
    ((id >> 32) as u32, (id & 0xffff_ffff) as usize)
}

impl<T> Table<T> {
    /// Store `value` and return its id.
    pub fn insert(&mut self, value: T) -> u64 {
        let index = match self.free.pop() {
            Some(i) => i,
            None => {
                let i = u32::try_from(self.entries.len()).expect("fewer than 2^32 entries");
                self.entries.push(Entry {
                    generation: 1,
                    value: None,
                });
                i
            }
        };
        let e = &mut self.entries[index as usize];
        debug_assert!(e.value.is_none());
        e.value = Some(value);
        self.len += 1;
        u64::from(e.generation) << 32 | u64::from(index)
    }

    /// The value named `id`, if it is still there.
    pub fn get(&self, id: u64) -> Option<&T> {
        let (generation, index) = split(id);
        self.entries
            .get(index)
            .filter(|e| e.generation == generation)
            .and_then(|e| e.value.as_ref())
    }

    /// The value named `id`, mutable.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut T> {
        let (generation, index) = split(id);
        self.entries
            .get_mut(index)
            .filter(|e| e.generation == generation)
            .and_then(|e| e.value.as_mut())
    }

    /// Take the value named `id` out; its id becomes stale.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        let (generation, index) = split(id);
        let e = self.entries.get_mut(index)?;
        if e.generation != generation {
            return None;
        }
        let value = e.value.take()?;
        e.generation = e.generation.checked_add(1).unwrap_or(1);
        self.free.push(index as u32);
        self.len -= 1;
        Some(value)
    }

    /// Ids of the values `keep` selects.
    pub fn ids_where(&self, mut keep: impl FnMut(&T) -> bool) -> Vec<u64> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let v = e.value.as_ref()?;
                keep(v).then_some(u64::from(e.generation) << 32 | i as u64)
            })
            .collect()
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Remove every value, yielding them.
    pub fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        let ids = self.ids_where(|_| true);
        ids.into_iter().filter_map(|id| self.remove(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_go_stale_after_removal() {
        let mut t = Table::default();
        let a = t.insert("a");
        assert_ne!(a, 0);
        assert_eq!(t.get(a), Some(&"a"));
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None);
        assert_eq!(t.remove(a), None);
        let b = t.insert("b");
        assert_eq!(b & 0xffff_ffff, a & 0xffff_ffff, "the slot is reused");
        assert_ne!(a, b, "under a new generation");
        assert_eq!(t.get(a), None);
        assert_eq!(t.get(b), Some(&"b"));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn made_up_ids_find_nothing() {
        let mut t = Table::default();
        t.insert(1u8);
        t.insert(2u8);
        assert_eq!(t.get(0), None);
        assert_eq!(t.get(0xdead_beef_0000_0001), None);
        assert_eq!(t.get(u64::MAX), None);
        assert_eq!(t.get_mut(1 << 32 | 7), None);
    }

    #[test]
    fn ids_where_and_drain_see_every_value() {
        let mut t = Table::default();
        let ids: Vec<u64> = (0..5).map(|i| t.insert(i)).collect();
        t.remove(ids[1]);
        let even = t.ids_where(|v| v % 2 == 0);
        assert_eq!(even, vec![ids[0], ids[2], ids[4]]);
        let mut all: Vec<i32> = t.drain().collect();
        all.sort_unstable();
        assert_eq!(all, vec![0, 2, 3, 4]);
        assert!(t.is_empty());
    }
}

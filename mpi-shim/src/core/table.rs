//! A table of library objects addressed by slot index, reusing freed
//! slots: what every handle kind (groups, datatypes, requests, ...) is
//! stored in. The entry layer turns slots into handles and back.

/// Objects of one kind, by slot.
#[derive(Debug)]
pub struct Table<T> {
    slots: Vec<Option<T>>,
    free: Vec<usize>,
    /// Slots below this are reserved for predefined objects and never
    /// handed out by [`Table::insert`].
    reserved: usize,
}

impl<T> Table<T> {
    /// An empty table whose first `reserved` slots are never allocated.
    pub fn new(reserved: usize) -> Self {
        Self {
            slots: (0..reserved).map(|_| None).collect(),
            free: Vec::new(),
            reserved,
        }
    }

    /// Store `value` in slot `slot` (predefined objects).
    pub fn set(&mut self, slot: usize, value: T) {
        assert!(slot < self.reserved, "slot {slot} is not a reserved slot");
        self.slots[slot] = Some(value);
    }

    /// Store `value`; returns its slot.
    pub fn insert(&mut self, value: T) -> usize {
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(value);
                i
            }
            None => {
                self.slots.push(Some(value));
                self.slots.len() - 1
            }
        }
    }

    pub fn get(&self, slot: usize) -> Option<&T> {
        self.slots.get(slot).and_then(Option::as_ref)
    }

    pub fn get_mut(&mut self, slot: usize) -> Option<&mut T> {
        self.slots.get_mut(slot).and_then(Option::as_mut)
    }

    /// Take the object out of `slot`, freeing the slot for reuse (reserved
    /// slots are emptied but never reused).
    pub fn remove(&mut self, slot: usize) -> Option<T> {
        let v = self.slots.get_mut(slot)?.take()?;
        if slot >= self.reserved {
            self.free.push(slot);
        }
        Some(v)
    }

    /// The first live slot at or after `from`: a walk over the slots
    /// that holds no borrow of the table between steps.
    pub fn next_slot(&self, from: usize) -> Option<usize> {
        let rest = self.slots.get(from..)?;
        rest.iter().position(Option::is_some).map(|i| from + i)
    }

    /// Live objects, with their slots.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &T)> {
        self.slots
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.as_ref().map(|v| (i, v)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_reused_but_reserved_ones_are_not_allocated() {
        let mut t = Table::new(2);
        t.set(0, "predef");
        let a = t.insert("a");
        let b = t.insert("b");
        assert_eq!((a, b), (2, 3));
        assert_eq!(t.remove(a), Some("a"));
        assert_eq!(t.get(a), None);
        assert_eq!(t.insert("c"), a);
        assert_eq!(t.remove(0), Some("predef"));
        assert_eq!(t.insert("d"), 4);
        assert_eq!(t.iter().count(), 3);
        // Slot 0 emptied, 1 never set; 2, 3 and 4 live.
        assert_eq!(t.next_slot(0), Some(2));
        assert_eq!(t.next_slot(3), Some(3));
        assert_eq!(t.next_slot(5), None);
        assert_eq!(t.next_slot(9), None);
    }
}

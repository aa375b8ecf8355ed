//! `MPI_Info` objects: ordered string key/value lists.
//!
//! MPI-4 lets applications use info objects before the library is
//! initialized (for example to pass to `MPI_Session_init`), so they live in
//! a table of their own, outside the runtime, behind their own lock.

use std::sync::{Mutex, MutexGuard};

use super::table::Table;

/// One info object: keys in the order they were first set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    pub entries: Vec<(String, String)>,
}

impl Info {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Set `key` to `value`, keeping the key's place if it exists.
    pub fn set(&mut self, key: &str, value: &str) {
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some((_, v)) => *v = value.to_owned(),
            None => self.entries.push((key.to_owned(), value.to_owned())),
        }
    }

    /// Remove `key`; whether it was there.
    pub fn delete(&mut self, key: &str) -> bool {
        let n = self.entries.len();
        self.entries.retain(|(k, _)| k != key);
        self.entries.len() != n
    }
}

/// Slot 0 is `MPI_INFO_ENV` (filled on first use by the entry layer).
pub const ENV: usize = 0;

static INFOS: Mutex<Option<Table<Info>>> = Mutex::new(None);

/// The info table, locked.
pub fn table() -> InfoTable {
    let mut g = INFOS.lock().unwrap_or_else(|p| p.into_inner());
    g.get_or_insert_with(|| Table::new(1));
    InfoTable(g)
}

/// The locked info table.
#[derive(Debug)]
pub struct InfoTable(MutexGuard<'static, Option<Table<Info>>>);

impl std::ops::Deref for InfoTable {
    type Target = Table<Info>;
    fn deref(&self) -> &Table<Info> {
        self.0.as_ref().expect("initialised by table()")
    }
}

impl std::ops::DerefMut for InfoTable {
    fn deref_mut(&mut self) -> &mut Table<Info> {
        self.0.as_mut().expect("initialised by table()")
    }
}

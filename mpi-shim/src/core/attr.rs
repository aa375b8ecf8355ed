//! Attribute caching (MPI-4.0 §7.7): keyvals with their copy and delete
//! callbacks, and the attributes cached on datatypes (a communicator keeps
//! its own in [`super::Comm::attrs`], a window in
//! [`super::win::Win::attrs`]).
//!
//! The callbacks are the application's C functions; the entry layer calls
//! them without the library lock (they may call MPI themselves), so this
//! module only hands out what is to be called.

use std::collections::HashMap;

use super::Class;
use super::peer::Rank;
use super::table::Table;
use super::{AppFn, Code, MpiError, MpiResult, Runtime};

/// What kind of object a keyval caches attributes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Object {
    Comm,
    Datatype,
    Win,
}

/// A key for attributes, with its callbacks.
#[derive(Clone, Copy, Debug)]
pub struct Keyval {
    pub object: Object,
    /// `MPI_Comm_copy_attr_function` or `MPI_Type_copy_attr_function`.
    pub copy: Option<AppFn>,
    /// `MPI_Comm_delete_attr_function` or `MPI_Type_delete_attr_function`.
    pub delete: Option<AppFn>,
    /// The application's `extra_state` pointer, passed to the callbacks.
    pub extra: usize,
    /// Freed by the application: no longer usable for new attributes,
    /// but attributes already set keep it (MPI-4.0 §7.7.2).
    pub freed: bool,
}

/// One cached attribute: keyval slot and the application's value (a
/// pointer-sized word).
pub type Attr = (usize, usize);

/// The predefined attributes of `MPI_COMM_WORLD` (MPI-4.1 §9.1.1),
/// which every communicator serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Predefined {
    TagUb,
    Host,
    Io,
    WtimeIsGlobal,
    UniverseSize,
    LastUsedCode,
    Appnum,
}

/// The value of a predefined attribute, for the entry layer to spell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Int(i32),
    /// `MPI_HOST` and `MPI_IO` name a rank, or a special one.
    Rank(Rank),
    /// `MPI_LASTUSEDCODE`: the largest code the application added, `None`
    /// for the ABI's `MPI_ERR_LASTCODE` (see [`super::errh::Errors::last_used`]).
    LastCode(Option<Code>),
}

/// The largest tag: the lower 31 bits of the engine tag's MPI half
/// (bit 31 marks partitioned messages).
pub const TAG_UB: i32 = 0x7fff_ffff;

impl Runtime {
    /// The value of predefined attribute `key`: no host, every process
    /// may do I/O, clocks are not synchronized, and the universe is the
    /// job.
    pub fn predefined_attr(&self, key: Predefined) -> Value {
        match key {
            Predefined::TagUb => Value::Int(TAG_UB),
            Predefined::Host => Value::Rank(Rank::Null),
            Predefined::Io => Value::Rank(Rank::Any),
            Predefined::WtimeIsGlobal => Value::Int(0),
            Predefined::Appnum => Value::Int(self.dynamic.appnum as i32),
            Predefined::UniverseSize => Value::Int(self.ep.universe_size() as i32),
            Predefined::LastUsedCode => Value::LastCode(self.errors.last_used()),
        }
    }
}

/// Every keyval and the attributes cached on datatypes.
#[derive(Debug)]
pub struct Attrs {
    keyvals: Table<Keyval>,
    /// Attributes of each datatype, by the entry layer's handle of it (a
    /// predefined datatype has no slot): the entry layer drops a handle's
    /// entry when the datatype is freed.
    pub types: HashMap<i64, Vec<Attr>>,
}

impl Default for Attrs {
    fn default() -> Self {
        Self {
            keyvals: Table::new(0),
            types: HashMap::new(),
        }
    }
}

impl Attrs {
    pub fn create_keyval(&mut self, kv: Keyval) -> usize {
        self.keyvals.insert(kv)
    }

    /// The keyval in `slot`, which must be for `object`; a freed keyval is
    /// found only with `allow_freed` (to run callbacks of existing
    /// attributes).
    pub fn keyval(&self, slot: usize, object: Object, allow_freed: bool) -> MpiResult<Keyval> {
        match self.keyvals.get(slot) {
            Some(kv) if kv.object == object && (allow_freed || !kv.freed) => Ok(*kv),
            Some(kv) if kv.object != object => Err(MpiError::new(
                Class::Keyval,
                format!("keyval is for {:?} attributes, not {object:?}", kv.object),
            )),
            _ => Err(MpiError::new(Class::Keyval, "invalid keyval")),
        }
    }

    /// Mark a keyval freed (its slot is never reused, so attributes that
    /// still use it stay valid).
    pub fn free_keyval(&mut self, slot: usize, object: Object) -> MpiResult<()> {
        self.keyval(slot, object, false)?;
        if let Some(kv) = self.keyvals.get_mut(slot) {
            kv.freed = true;
        }
        Ok(())
    }
}

/// The value cached under `kv` in `attrs`.
pub fn lookup(attrs: &[Attr], kv: usize) -> Option<usize> {
    attrs.iter().find(|a| a.0 == kv).map(|a| a.1)
}

/// Set `kv` to `value` in `attrs`, keeping its place if it exists.
pub fn store(attrs: &mut Vec<Attr>, kv: usize, value: usize) {
    match attrs.iter_mut().find(|a| a.0 == kv) {
        Some(a) => a.1 = value,
        None => attrs.push((kv, value)),
    }
}

/// Remove `kv` from `attrs`; whether it was there.
pub fn remove(attrs: &mut Vec<Attr>, kv: usize) -> bool {
    let n = attrs.len();
    attrs.retain(|a| a.0 != kv);
    attrs.len() != n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyval(object: Object) -> Keyval {
        Keyval {
            object,
            copy: None,
            delete: None,
            extra: 0,
            freed: false,
        }
    }

    #[test]
    fn attributes_keep_their_order_and_are_replaced_in_place() {
        let mut a = Vec::new();
        store(&mut a, 3, 30);
        store(&mut a, 1, 10);
        store(&mut a, 3, 31);
        assert_eq!(a, [(3, 31), (1, 10)]);
        assert_eq!(lookup(&a, 1), Some(10));
        assert!(remove(&mut a, 3));
        assert!(!remove(&mut a, 3));
        assert_eq!(lookup(&a, 3), None);
    }

    #[test]
    fn a_freed_keyval_serves_existing_attributes_only() {
        let mut attrs = Attrs::default();
        let k = attrs.create_keyval(keyval(Object::Comm));
        assert!(attrs.keyval(k, Object::Comm, false).is_ok());
        let wrong = attrs.keyval(k, Object::Datatype, true).unwrap_err();
        assert_eq!(wrong.code, Class::Keyval);
        attrs.free_keyval(k, Object::Comm).unwrap();
        assert!(attrs.keyval(k, Object::Comm, false).is_err());
        assert!(attrs.keyval(k, Object::Comm, true).is_ok());
        assert!(attrs.free_keyval(k, Object::Comm).is_err(), "freed twice");
        let other = attrs.create_keyval(keyval(Object::Datatype));
        assert_ne!(other, k, "a freed keyval's slot is not reused");
    }
}

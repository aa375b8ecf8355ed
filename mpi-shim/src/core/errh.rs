//! User error handlers and user error classes, codes and strings
//! (MPI-4.0 §9.3, §9.5).

use std::ffi::c_int;

use super::table::Table;
use super::{MpiError, MpiResult, is_predefined_class};
use crate::abi;

/// `MPI_Comm_errhandler_function`: called with pointers to the
/// communicator handle and the error code.
pub type CommErrhFn = unsafe extern "C" fn(*mut c_int, *mut c_int, ...);

/// The first user error class or code: above `MPI_ERR_LASTCODE`, the last
/// predefined code.
pub const FIRST_USER_CODE: c_int = abi::MPI_ERR_LASTCODE + 1;

/// A user error class or code.
#[derive(Clone, Debug)]
struct UserCode {
    class: c_int,
    text: String,
}

/// User error handlers and error codes.
#[derive(Debug)]
pub struct Errors {
    /// User error handlers by slot, and whether the application freed
    /// them. A freed handler stays, since the communicators it is set on
    /// keep using it (MPI-4.0 §9.3.4), but cannot be set again.
    handlers: Table<(CommErrhFn, bool)>,
    /// User classes and codes: code `FIRST_USER_CODE + i` is `codes[i]`.
    codes: Vec<UserCode>,
}

impl Default for Errors {
    fn default() -> Self {
        Self {
            handlers: Table::new(0),
            codes: Vec::new(),
        }
    }
}

impl Errors {
    pub fn create_handler(&mut self, f: CommErrhFn) -> usize {
        self.handlers.insert((f, false))
    }

    /// The handler in `slot`, freed or not (to call it).
    pub fn handler(&self, slot: usize) -> Option<CommErrhFn> {
        self.handlers.get(slot).map(|h| h.0)
    }

    /// Whether `slot` holds a handler the application has not freed.
    pub fn is_live(&self, slot: usize) -> bool {
        self.handlers.get(slot).is_some_and(|h| !h.1)
    }

    /// Mark the handler in `slot` freed; whether it was live.
    pub fn free_handler(&mut self, slot: usize) -> bool {
        match self.handlers.get_mut(slot) {
            Some(h) if !h.1 => {
                h.1 = true;
                true
            }
            _ => false,
        }
    }

    fn user(&self, code: c_int) -> Option<&UserCode> {
        usize::try_from(code.checked_sub(FIRST_USER_CODE)?)
            .ok()
            .and_then(|i| self.codes.get(i))
    }

    /// A new error class (its own class).
    pub fn add_class(&mut self) -> MpiResult<c_int> {
        let code = self.next()?;
        self.codes.push(UserCode {
            class: code,
            text: String::new(),
        });
        Ok(code)
    }

    /// A new error code of `class` (predefined or added).
    pub fn add_code(&mut self, class: c_int) -> MpiResult<c_int> {
        let valid =
            is_predefined_class(class) || self.user(class).is_some_and(|u| u.class == class);
        if !valid {
            return Err(MpiError::new(
                abi::MPI_ERR_ARG,
                format!("{class} is not an error class"),
            ));
        }
        let code = self.next()?;
        self.codes.push(UserCode {
            class,
            text: String::new(),
        });
        Ok(code)
    }

    fn next(&self) -> MpiResult<c_int> {
        c_int::try_from(self.codes.len())
            .ok()
            .and_then(|n| FIRST_USER_CODE.checked_add(n))
            .ok_or_else(|| MpiError::new(abi::MPI_ERR_INTERN, "error codes exhausted"))
    }

    /// The largest error code in use (`MPI_LASTUSEDCODE`).
    pub fn last_used(&self) -> c_int {
        FIRST_USER_CODE - 1 + self.codes.len() as c_int
    }

    /// Attach `text` to a user class or code.
    pub fn set_string(&mut self, code: c_int, text: &str) -> MpiResult<()> {
        let i = code.wrapping_sub(FIRST_USER_CODE);
        match usize::try_from(i).ok().and_then(|i| self.codes.get_mut(i)) {
            Some(u) => {
                u.text = text.to_owned();
                Ok(())
            }
            None => Err(MpiError::new(
                abi::MPI_ERR_ARG,
                format!("{code} is not a user error class or code"),
            )),
        }
    }

    /// The class of `code`, predefined or user.
    pub fn class_of(&self, code: c_int) -> Option<c_int> {
        if is_predefined_class(code) {
            Some(code)
        } else {
            self.user(code).map(|u| u.class)
        }
    }

    /// The string of a user class or code.
    pub fn string(&self, code: c_int) -> Option<&str> {
        self.user(code).map(|u| u.text.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_classes_and_codes_count_up_from_above_the_last_predefined_code() {
        let mut e = Errors::default();
        assert_eq!(e.last_used(), abi::MPI_ERR_LASTCODE);
        let class = e.add_class().unwrap();
        let code = e.add_code(class).unwrap();
        let code2 = e.add_code(abi::MPI_ERR_ARG).unwrap();
        assert_eq!(
            (class, code, code2),
            (FIRST_USER_CODE, FIRST_USER_CODE + 1, FIRST_USER_CODE + 2)
        );
        assert_eq!(e.class_of(code), Some(class));
        assert_eq!(e.class_of(code2), Some(abi::MPI_ERR_ARG));
        assert_eq!(e.last_used(), code2);
        assert!(e.add_code(code).is_err(), "a code is not a class");
        e.set_string(code, "mine").unwrap();
        assert_eq!(e.string(code), Some("mine"));
        assert!(e.set_string(abi::MPI_ERR_ARG, "no").is_err());
        assert_eq!(e.class_of(FIRST_USER_CODE + 3), None);
    }
}

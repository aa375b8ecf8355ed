//! Error codes in MPICH's numbers: the predefined classes at their values
//! in the ABI table (by name), the application's classes and codes from
//! [`FIRST_USER_CODE`] up, and any other value kept as it is
//! ([`Code::Foreign`]).

use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::OnceLock;

use crate::abi;
use crate::core::{Class, Code};

/// The first class or code the application adds: above
/// `MPI_ERR_LASTCODE`, the last predefined code.
pub(crate) const FIRST_USER_CODE: c_int = abi::MPI_ERR_LASTCODE + 1;

struct Values {
    /// MPICH's value of each class, by discriminant.
    out: Vec<c_int>,
    /// The class of each value.
    back: HashMap<c_int, Class>,
}

fn values() -> &'static Values {
    static VALUES: OnceLock<Values> = OnceLock::new();
    VALUES.get_or_init(|| {
        let out: Vec<c_int> = Class::ALL
            .iter()
            .map(|c| {
                abi::CONSTANTS
                    .iter()
                    .chain(abi::LATER_CLASSES)
                    .find(|k| k.name == c.name())
                    .map(|k| k.value as c_int)
                    .unwrap_or_else(|| panic!("{} is not in the MPICH table", c.name()))
            })
            .collect();
        let back = Class::ALL.iter().map(|&c| (out[c as usize], c)).collect();
        Values { out, back }
    })
}

/// `code` as MPICH numbers it.
pub(crate) fn code_out(code: Code) -> c_int {
    match code {
        Code::Class(c) => values().out[c as usize],
        Code::User(n) => FIRST_USER_CODE + n as c_int,
        Code::Foreign(v) => v,
    }
}

/// An MPICH error code as the core's.
pub(crate) fn code_in(v: c_int) -> Code {
    // Every status the application reads back carries one: no look-up.
    if v == abi::MPI_SUCCESS {
        return Code::SUCCESS;
    }
    if let Some(&c) = values().back.get(&v) {
        Code::Class(c)
    } else if v >= FIRST_USER_CODE {
        Code::User((v - FIRST_USER_CODE) as u32)
    } else {
        Code::Foreign(v)
    }
}

/// `MPI_LASTUSEDCODE` given the largest class or code the application
/// added ([`crate::core::errh::Errors::last_used`]).
pub(crate) fn last_used_out(last: Option<Code>) -> c_int {
    last.map_or(abi::MPI_ERR_LASTCODE, code_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_have_mpichs_values_and_come_back() {
        assert_eq!(code_out(Code::SUCCESS), abi::MPI_SUCCESS);
        assert_eq!(code_out(Class::Arg.into()), abi::MPI_ERR_ARG);
        assert_eq!(
            code_out(Class::TNotSupported.into()),
            abi::MPI_T_ERR_NOT_SUPPORTED
        );
        assert_eq!(code_out(Class::Abi.into()), abi::MPI_ERR_ABI);
        for &c in Class::ALL {
            assert_eq!(code_in(code_out(c.into())), Code::Class(c));
        }
        // MPICH leaves 54 unused; MPI_ERR_LASTCODE is a bound, not a class.
        assert_eq!(code_in(54), Code::Foreign(54));
        assert_eq!(
            code_in(abi::MPI_ERR_LASTCODE),
            Code::Foreign(abi::MPI_ERR_LASTCODE)
        );
        assert_eq!(code_in(-3), Code::Foreign(-3));
    }

    #[test]
    fn user_codes_follow_the_last_predefined_code() {
        assert_eq!(code_out(Code::User(0)), abi::MPI_ERR_LASTCODE + 1);
        assert_eq!(code_in(abi::MPI_ERR_LASTCODE + 4), Code::User(3));
        assert_eq!(last_used_out(None), abi::MPI_ERR_LASTCODE);
        assert_eq!(last_used_out(Some(Code::User(2))), FIRST_USER_CODE + 2);
    }
}

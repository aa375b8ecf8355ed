//! User error handlers and user error classes, codes and strings
//! (MPI-4.0 §9.3, §9.5), and their removal (MPI-4.1 §9.5).
//!
//! User classes and codes are [`Code::User`]`(n)`, numbered from 0 in the
//! order they are added; each entry layer places them above its own
//! `MPI_ERR_LASTCODE`. A removed one leaves its number unused for the
//! rest of the run, so that a stale code never names a newer class or
//! code; `MPI_LASTUSEDCODE` is the largest one still there.

use std::sync::{Mutex, MutexGuard};

use super::table::Table;
use super::{AppFn, Class, Code, MpiError, MpiResult, Runtime, WORLD, report};

/// Error handlers made for sessions (`MPI_Session_create_errhandler`,
/// MPI-4.1 §9.3.4), by slot, each with the number of handles to it the
/// application holds (as [`Errors`] counts communicators' handlers). They
/// may be made before initialization (MPI-4.1 §11.4.1), so they live for
/// the process, outside the runtime.
static SESSION_HANDLERS: Mutex<Vec<(AppFn, usize)>> = Mutex::new(Vec::new());

fn session_handlers() -> MutexGuard<'static, Vec<(AppFn, usize)>> {
    SESSION_HANDLERS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A new session error handler: its slot.
pub fn create_session_handler(f: AppFn) -> usize {
    let mut table = session_handlers();
    table.push((f, 1));
    table.len() - 1
}

/// The session handler in `slot`, freed or not (to call it).
pub fn session_handler(slot: usize) -> Option<AppFn> {
    session_handlers().get(slot).map(|h| h.0)
}

/// Add (`by` 1: a get returned it) or free (-1) a handle to session
/// handler `slot`; whether there is one (and, freeing, had a handle left).
pub fn count_session_handler(slot: usize, by: isize) -> bool {
    match session_handlers().get_mut(slot) {
        Some(h) if h.1 as isize + by >= 0 => {
            h.1 = (h.1 as isize + by) as usize;
            true
        }
        _ => false,
    }
}

/// An error handler as communicators and sessions hold it (MPI-4.1
/// §9.3): a predefined one, or one the application created, by slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errhandler {
    /// `MPI_ERRORS_ARE_FATAL`: the job ends.
    Fatal,
    /// `MPI_ERRORS_ABORT`: the processes of the object end (here, the job).
    Abort,
    /// `MPI_ERRORS_RETURN`: the call returns the error code.
    Return,
    /// A communicator handler the application created (its slot in
    /// [`Errors`]).
    User(usize),
    /// A session handler the application created (its slot among the
    /// session handlers).
    Session(usize),
}

impl Errhandler {
    pub fn is_predefined(self) -> bool {
        matches!(
            self,
            Errhandler::Fatal | Errhandler::Abort | Errhandler::Return
        )
    }
}

/// A user error class or code.
#[derive(Clone, Debug)]
struct UserCode {
    /// Its class: itself for a class.
    class: Code,
    /// The string `MPI_Add_error_string` attached, if any.
    text: Option<String>,
}

/// User error handlers and error codes.
#[derive(Debug)]
pub struct Errors {
    /// User error handlers by slot, and how many handles to each the
    /// application holds: one from its creation, one more from each
    /// `MPI_Comm_get_errhandler` that returned it (MPI-4.1 §9.3: each
    /// is freed with `MPI_Errhandler_free`). A handler freed by all stays,
    /// since the communicators it is set on keep using it (§9.3.4), but
    /// cannot be set again.
    handlers: Table<(AppFn, usize)>,
    /// User classes and codes: [`Code::User`]`(n)` is `codes[n]`, `None`
    /// once removed.
    codes: Vec<Option<UserCode>>,
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
    pub fn create_handler(&mut self, f: AppFn) -> usize {
        self.handlers.insert((f, 1))
    }

    /// The handler in `slot`, freed or not (to call it).
    pub fn handler(&self, slot: usize) -> Option<AppFn> {
        self.handlers.get(slot).map(|h| h.0)
    }

    /// Whether the application holds a handle to the handler in `slot`.
    pub fn is_live(&self, slot: usize) -> bool {
        self.handlers.get(slot).is_some_and(|h| h.1 > 0)
    }

    /// One more handle to the handler in `slot` (a get returned it).
    pub fn retain_handler(&mut self, slot: usize) {
        if let Some(h) = self.handlers.get_mut(slot) {
            h.1 += 1;
        }
    }

    /// Free one handle to the handler in `slot`; whether there was one.
    pub fn free_handler(&mut self, slot: usize) -> bool {
        match self.handlers.get_mut(slot) {
            Some(h) if h.1 > 0 => {
                h.1 -= 1;
                true
            }
            _ => false,
        }
    }

    fn user(&self, code: Code) -> Option<&UserCode> {
        match code {
            Code::User(n) => self.codes.get(n as usize)?.as_ref(),
            _ => None,
        }
    }

    fn user_mut(&mut self, code: Code) -> Option<&mut UserCode> {
        match code {
            Code::User(n) => self.codes.get_mut(n as usize)?.as_mut(),
            _ => None,
        }
    }

    fn not_user(code: Code) -> MpiError {
        let what = match code {
            Code::Class(c) => format!("{} is a predefined error class", c.name()),
            _ => format!("{code:?} is not a user error class or code"),
        };
        MpiError::new(Class::Arg, what)
    }

    /// Whether `code` is a user class (rather than a code of a class).
    fn is_user_class(&self, code: Code) -> bool {
        self.user(code).is_some_and(|u| u.class == code)
    }

    /// A new error class (its own class).
    pub fn add_class(&mut self) -> MpiResult<Code> {
        let code = self.next()?;
        self.codes.push(Some(UserCode {
            class: code,
            text: None,
        }));
        Ok(code)
    }

    /// A new error code of `class` (predefined or added).
    pub fn add_code(&mut self, class: Code) -> MpiResult<Code> {
        if !matches!(class, Code::Class(_)) && !self.is_user_class(class) {
            return Err(MpiError::new(
                Class::Arg,
                format!("{class:?} is not an error class"),
            ));
        }
        let code = self.next()?;
        self.codes.push(Some(UserCode { class, text: None }));
        Ok(code)
    }

    fn next(&self) -> MpiResult<Code> {
        u32::try_from(self.codes.len())
            .ok()
            .filter(|&n| n < MAX_USER_CODES)
            .map(Code::User)
            .ok_or_else(|| MpiError::new(Class::Intern, "error codes exhausted"))
    }

    /// The largest error class or code in use (`MPI_LASTUSEDCODE`):
    /// `None`, which stands for `MPI_ERR_LASTCODE`, when the application
    /// added none, or removed every one it added.
    pub fn last_used(&self) -> Option<Code> {
        let live = self.codes.iter().rposition(Option::is_some)?;
        Some(Code::User(live as u32))
    }

    /// Attach `text` to a user class or code (replacing any string it had).
    pub fn set_string(&mut self, code: Code, text: &str) -> MpiResult<()> {
        match self.user_mut(code) {
            Some(u) => {
                u.text = Some(text.to_owned());
                Ok(())
            }
            None => Err(Self::not_user(code)),
        }
    }

    /// Remove the string `MPI_Add_error_string` attached to a user class
    /// or code (`MPI_Remove_error_string`); `MPI_ERR_ARG` if it has none.
    pub fn remove_string(&mut self, code: Code) -> MpiResult<()> {
        let u = self.user_mut(code).ok_or_else(|| Self::not_user(code))?;
        match u.text.take() {
            Some(_) => Ok(()),
            None => Err(MpiError::new(
                Class::Arg,
                format!("error code {code:?} has no string to remove"),
            )),
        }
    }

    /// Remove a code `MPI_Add_error_code` added (`MPI_Remove_error_code`).
    /// Its string must have been removed first (MPI-4.1 §9.5).
    pub fn remove_code(&mut self, code: Code) -> MpiResult<()> {
        let u = match self.user(code) {
            Some(u) if u.class != code => u,
            Some(_) => {
                return Err(MpiError::new(
                    Class::Arg,
                    format!("{code:?} is an error class (MPI_Remove_error_class removes it)"),
                ));
            }
            None => return Err(Self::not_user(code)),
        };
        if u.text.is_some() {
            return Err(MpiError::new(
                Class::Arg,
                format!("error code {code:?} still has its string (remove it first)"),
            ));
        }
        self.remove(code);
        Ok(())
    }

    /// Remove a class `MPI_Add_error_class` added
    /// (`MPI_Remove_error_class`). Its codes and its string must have
    /// been removed first (MPI-4.1 §9.5), as a code's string before it.
    pub fn remove_class(&mut self, class: Code) -> MpiResult<()> {
        if !self.is_user_class(class) {
            return Err(match self.user(class) {
                Some(_) => MpiError::new(
                    Class::Arg,
                    format!("{class:?} is an error code (MPI_Remove_error_code removes it)"),
                ),
                None => Self::not_user(class),
            });
        }
        let codes = self
            .codes
            .iter()
            .flatten()
            .filter(|u| u.class == class)
            .count();
        if codes > 1 {
            return Err(MpiError::new(
                Class::Arg,
                format!(
                    "error class {class:?} still has {} error code(s) (remove them first)",
                    codes - 1
                ),
            ));
        }
        if self.user(class).is_some_and(|u| u.text.is_some()) {
            return Err(MpiError::new(
                Class::Arg,
                format!("error class {class:?} still has its string (remove it first)"),
            ));
        }
        self.remove(class);
        Ok(())
    }

    /// Forget user class or code `code`; its number is never used again.
    fn remove(&mut self, code: Code) {
        if let Code::User(n) = code {
            self.codes[n as usize] = None;
        }
    }

    /// The class of `code`, predefined or user; `None` for a value that
    /// names no class or code.
    pub fn class_of(&self, code: Code) -> Option<Code> {
        match code {
            Code::Class(_) => Some(code),
            _ => self.user(code).map(|u| u.class),
        }
    }

    /// The string of a user class or code (empty if none was added).
    pub fn string(&self, code: Code) -> Option<&str> {
        self.user(code)
            .map(|u| u.text.as_deref().unwrap_or_default())
    }
}

/// What handling an error leaves to the entry layer, once the library
/// lock is released (an application's handler may call MPI).
#[derive(Debug)]
pub enum Handling {
    /// Return the error code (`MPI_ERRORS_RETURN`).
    Return,
    /// Call this handler of the application, then return the code.
    User(AppFn),
}

impl Runtime {
    /// The handler of errors that no valid object of the call can take
    /// (an invalid communicator or session handle): `MPI_COMM_WORLD`'s in
    /// the world model (MPI-4.1 §9.3), otherwise that of the open session
    /// in the lowest slot when it is predefined, otherwise
    /// `MPI_ERRORS_ARE_FATAL`.
    pub fn default_errhandler(&self) -> Errhandler {
        if let Ok(world) = self.comm(WORLD) {
            return world.errhandler;
        }
        self.sessions
            .iter()
            .find(|(_, s)| !s.hidden)
            .map(|(_, s)| s.errhandler)
            .filter(|h| h.is_predefined())
            .unwrap_or(Errhandler::Fatal)
    }

    /// The handler that takes error `e` of a call on communicator `comm`
    /// (a request's error names its own communicator first), with the slot
    /// of the communicator it belongs to; the default handler, with
    /// `None`, when neither is valid.
    pub fn comm_errhandler(
        &self,
        e: &MpiError,
        comm: Option<usize>,
    ) -> (Errhandler, Option<usize>) {
        match e.comm.or(comm).and_then(|s| Some((self.comm(s).ok()?, s))) {
            Some((c, s)) => (c.errhandler, Some(s)),
            None => (self.default_errhandler(), None),
        }
    }

    /// Apply `handler` to error `e` of call `name` (MPI-4.1 §9.3): a fatal
    /// or aborting handler ends the job here with a message (and exit
    /// status `status`); returning and the application's handlers are
    /// left to the entry layer.
    pub fn handle_error(
        &mut self,
        name: &str,
        handler: Errhandler,
        e: &MpiError,
        status: i32,
    ) -> Handling {
        match handler {
            Errhandler::Return => return Handling::Return,
            Errhandler::User(i) => {
                if let Some(f) = self.errors.handler(i) {
                    return Handling::User(f);
                }
            }
            Errhandler::Session(i) => {
                if let Some(f) = session_handler(i) {
                    return Handling::User(f);
                }
            }
            Errhandler::Fatal | Errhandler::Abort => {}
        }
        let message = format!("{name}: {e}");
        report(&message);
        self.ep.bootstrap().abort(status, &message);
        Handling::Return
    }
}

/// How many classes and codes the application may add: as many as every
/// ABI can number with positive `int`s above its `MPI_ERR_LASTCODE`
/// (MPICH's, `2^30 - 1`, leaves the fewest).
pub const MAX_USER_CODES: u32 = 0x3fff_0000;

#[cfg(test)]
mod tests {
    use super::*;

    const ARG: Code = Code::Class(Class::Arg);

    #[test]
    fn user_classes_and_codes_count_up_from_0() {
        let mut e = Errors::default();
        assert_eq!(e.last_used(), None);
        let class = e.add_class().unwrap();
        let code = e.add_code(class).unwrap();
        let code2 = e.add_code(ARG).unwrap();
        assert_eq!(
            (class, code, code2),
            (Code::User(0), Code::User(1), Code::User(2))
        );
        assert_eq!(e.class_of(code), Some(class));
        assert_eq!(e.class_of(code2), Some(ARG));
        assert_eq!(e.last_used(), Some(code2));
        assert!(e.add_code(code).is_err(), "a code is not a class");
        assert!(e.add_code(Code::Foreign(7)).is_err(), "nor a foreign value");
        e.set_string(code, "mine").unwrap();
        assert_eq!(e.string(code), Some("mine"));
        assert!(e.set_string(ARG, "no").is_err());
        assert_eq!(e.class_of(Code::User(3)), None);
        assert_eq!(e.class_of(Code::Foreign(-5)), None);
    }

    #[test]
    fn removal_goes_string_then_codes_then_class() {
        let mut e = Errors::default();
        let class = e.add_class().unwrap();
        let code = e.add_code(class).unwrap();
        let other = e.add_code(Class::Other.into()).unwrap();
        e.set_string(code, "mine").unwrap();
        // Predefined classes and codes stay; a class with codes stays.
        for c in [ARG, Code::SUCCESS, Code::Foreign(0x3fff_ffff)] {
            assert!(e.remove_class(c).is_err() && e.remove_code(c).is_err());
            assert!(e.remove_string(c).is_err());
        }
        let still = e.remove_class(class).unwrap_err();
        assert_eq!(still.code, ARG);
        assert_eq!(e.class_of(class), Some(class));
        // A class is not a code and a code not a class.
        assert!(e.remove_code(class).is_err());
        assert!(e.remove_class(code).is_err());
        // A code keeps its string until that is removed.
        assert!(e.remove_code(code).is_err());
        e.remove_string(code).unwrap();
        assert!(e.remove_string(code).is_err(), "no string left");
        assert_eq!(e.string(code), Some(""));
        e.remove_code(code).unwrap();
        assert_eq!(e.class_of(code), None);
        assert!(e.remove_code(code).is_err(), "already removed");
        assert!(e.set_string(code, "late").is_err());
        // The class goes once its string went, then is gone.
        e.set_string(class, "class").unwrap();
        assert!(e.remove_class(class).is_err(), "its string first");
        e.remove_string(class).unwrap();
        e.remove_class(class).unwrap();
        assert_eq!((e.class_of(class), e.string(class)), (None, None));
        assert!(e.add_code(class).is_err());
        // The code of a predefined class is still the largest in use.
        assert_eq!(e.last_used(), Some(other));
        e.remove_code(other).unwrap();
        assert_eq!(e.last_used(), None);
        // Numbers are not used again.
        assert_eq!(e.add_class().unwrap(), Code::User(3));
        assert_eq!(e.last_used(), Some(Code::User(3)));
    }
}

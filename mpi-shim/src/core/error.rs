//! Errors as the core speaks of them (MPI-4.1 §9.4): the predefined error
//! classes by name, error codes (a class, or a class or code the
//! application added), and [`MpiError`], what a failed call returns.
//!
//! The core never sees an ABI's numbers for these: each entry layer maps
//! [`Class`] to its constants (by [`Class::name`], so a class added here
//! that an ABI table lacks fails that layer's tests) and numbers the
//! application's classes and codes above its own `MPI_ERR_LASTCODE`.

use std::fmt;

macro_rules! classes {
    ($($variant:ident = $name:literal,)*) => {
        /// A predefined error class; [`Class::Success`] is `MPI_SUCCESS`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Class {
            $($variant,)*
        }

        impl Class {
            /// Every class, in the order of the enum (its discriminants
            /// index this array).
            pub const ALL: &[Class] = &[$(Class::$variant,)*];

            /// The class's name in the standard (`MPI_ERR_ARG`...).
            pub const fn name(self) -> &'static str {
                match self {
                    $(Class::$variant => $name,)*
                }
            }
        }
    };
}

classes! {
    Success = "MPI_SUCCESS",
    Buffer = "MPI_ERR_BUFFER",
    Count = "MPI_ERR_COUNT",
    Type = "MPI_ERR_TYPE",
    Tag = "MPI_ERR_TAG",
    Comm = "MPI_ERR_COMM",
    Rank = "MPI_ERR_RANK",
    Root = "MPI_ERR_ROOT",
    Group = "MPI_ERR_GROUP",
    Op = "MPI_ERR_OP",
    Topology = "MPI_ERR_TOPOLOGY",
    Dims = "MPI_ERR_DIMS",
    Arg = "MPI_ERR_ARG",
    Unknown = "MPI_ERR_UNKNOWN",
    Truncate = "MPI_ERR_TRUNCATE",
    Other = "MPI_ERR_OTHER",
    Intern = "MPI_ERR_INTERN",
    InStatus = "MPI_ERR_IN_STATUS",
    Pending = "MPI_ERR_PENDING",
    Request = "MPI_ERR_REQUEST",
    Access = "MPI_ERR_ACCESS",
    Amode = "MPI_ERR_AMODE",
    BadFile = "MPI_ERR_BAD_FILE",
    Conversion = "MPI_ERR_CONVERSION",
    DupDatarep = "MPI_ERR_DUP_DATAREP",
    FileExists = "MPI_ERR_FILE_EXISTS",
    FileInUse = "MPI_ERR_FILE_IN_USE",
    File = "MPI_ERR_FILE",
    Info = "MPI_ERR_INFO",
    InfoKey = "MPI_ERR_INFO_KEY",
    InfoValue = "MPI_ERR_INFO_VALUE",
    InfoNokey = "MPI_ERR_INFO_NOKEY",
    Io = "MPI_ERR_IO",
    Name = "MPI_ERR_NAME",
    NoMem = "MPI_ERR_NO_MEM",
    NotSame = "MPI_ERR_NOT_SAME",
    NoSpace = "MPI_ERR_NO_SPACE",
    NoSuchFile = "MPI_ERR_NO_SUCH_FILE",
    Port = "MPI_ERR_PORT",
    Quota = "MPI_ERR_QUOTA",
    ReadOnly = "MPI_ERR_READ_ONLY",
    Service = "MPI_ERR_SERVICE",
    Spawn = "MPI_ERR_SPAWN",
    UnsupportedDatarep = "MPI_ERR_UNSUPPORTED_DATAREP",
    UnsupportedOperation = "MPI_ERR_UNSUPPORTED_OPERATION",
    Win = "MPI_ERR_WIN",
    Base = "MPI_ERR_BASE",
    Locktype = "MPI_ERR_LOCKTYPE",
    Keyval = "MPI_ERR_KEYVAL",
    RmaConflict = "MPI_ERR_RMA_CONFLICT",
    RmaSync = "MPI_ERR_RMA_SYNC",
    Size = "MPI_ERR_SIZE",
    Disp = "MPI_ERR_DISP",
    Assert = "MPI_ERR_ASSERT",
    RmaRange = "MPI_ERR_RMA_RANGE",
    RmaAttach = "MPI_ERR_RMA_ATTACH",
    RmaShared = "MPI_ERR_RMA_SHARED",
    RmaFlavor = "MPI_ERR_RMA_FLAVOR",
    Session = "MPI_ERR_SESSION",
    ProcAborted = "MPI_ERR_PROC_ABORTED",
    ValueTooLarge = "MPI_ERR_VALUE_TOO_LARGE",
    Errhandler = "MPI_ERR_ERRHANDLER",
    Abi = "MPI_ERR_ABI",
    TMemory = "MPI_T_ERR_MEMORY",
    TNotInitialized = "MPI_T_ERR_NOT_INITIALIZED",
    TCannotInit = "MPI_T_ERR_CANNOT_INIT",
    TInvalidIndex = "MPI_T_ERR_INVALID_INDEX",
    TInvalidItem = "MPI_T_ERR_INVALID_ITEM",
    TInvalidHandle = "MPI_T_ERR_INVALID_HANDLE",
    TOutOfHandles = "MPI_T_ERR_OUT_OF_HANDLES",
    TOutOfSessions = "MPI_T_ERR_OUT_OF_SESSIONS",
    TInvalidSession = "MPI_T_ERR_INVALID_SESSION",
    TCvarSetNotNow = "MPI_T_ERR_CVAR_SET_NOT_NOW",
    TCvarSetNever = "MPI_T_ERR_CVAR_SET_NEVER",
    TPvarNoStartstop = "MPI_T_ERR_PVAR_NO_STARTSTOP",
    TPvarNoWrite = "MPI_T_ERR_PVAR_NO_WRITE",
    TPvarNoAtomic = "MPI_T_ERR_PVAR_NO_ATOMIC",
    TInvalidName = "MPI_T_ERR_INVALID_NAME",
    TInvalid = "MPI_T_ERR_INVALID",
    TNotSupported = "MPI_T_ERR_NOT_SUPPORTED",
    TNotAccessible = "MPI_T_ERR_NOT_ACCESSIBLE",
}

/// An error code: what a call returns, a status's `MPI_ERROR`, what an
/// error handler receives (MPI-4.1 §9.4, §9.5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// A predefined class, which is its own code.
    Class(Class),
    /// The `n`-th class or code the application added with
    /// `MPI_Add_error_class` or `MPI_Add_error_code`, counting from 0
    /// (see [`super::errh::Errors`]).
    User(u32),
    /// A value that names no class or code, as the application's entry
    /// layer spells it: the application may put any integer in a status
    /// (`MPI_Status_set_error`) or hand it to an error handler
    /// (`MPI_Comm_call_errhandler`), and gets it back unchanged. The core
    /// never reads it.
    Foreign(i32),
}

impl Code {
    pub const SUCCESS: Code = Code::Class(Class::Success);

    pub fn is_success(self) -> bool {
        self == Code::SUCCESS
    }
}

impl PartialEq<Class> for Code {
    fn eq(&self, c: &Class) -> bool {
        *self == Code::Class(*c)
    }
}

impl From<Class> for Code {
    fn from(c: Class) -> Self {
        Code::Class(c)
    }
}

/// An MPI error: its code and what the application should be told. One
/// word wide (the details are boxed), so that every `MpiResult` a call
/// passes along on its path of success stays small: errors are rare, and
/// moving a wide result costs the hot path (the 1-byte receive path
/// spent a tenth of its time moving them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MpiError(Box<ErrorDetails>);

/// What an [`MpiError`] holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorDetails {
    pub code: Code,
    pub message: String,
    /// The communicator slot whose error handler applies, when it is not
    /// the one the call names (a request's communicator).
    pub comm: Option<usize>,
}

impl MpiError {
    #[cold]
    pub fn new(code: impl Into<Code>, message: impl Into<String>) -> Self {
        Self(Box::new(ErrorDetails {
            code: code.into(),
            message: message.into(),
            comm: None,
        }))
    }

    pub(crate) fn on(mut self, comm: usize) -> Self {
        self.comm = Some(comm);
        self
    }
}

impl std::ops::Deref for MpiError {
    type Target = ErrorDetails;

    fn deref(&self) -> &ErrorDetails {
        &self.0
    }
}

impl std::ops::DerefMut for MpiError {
    fn deref_mut(&mut self) -> &mut ErrorDetails {
        &mut self.0
    }
}

impl fmt::Display for MpiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.code {
            Code::Class(c) => write!(f, "{} ({})", self.message, c.name()),
            Code::User(n) => write!(f, "{} (error code {n} of the application's)", self.message),
            Code::Foreign(v) => write!(f, "{} (error code {v})", self.message),
        }
    }
}

pub type MpiResult<T> = Result<T, MpiError>;

impl From<shm_engine::Error> for MpiError {
    fn from(e: shm_engine::Error) -> Self {
        let class = match e {
            shm_engine::Error::InvalidPeer { .. } => Class::Rank,
            shm_engine::Error::Truncated { .. } => Class::Truncate,
            _ => Class::Other,
        };
        MpiError::new(class, e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_has_a_distinct_name_and_its_place_in_all() {
        let mut names: Vec<_> = Class::ALL.iter().map(|c| c.name()).collect();
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert!(c.name().starts_with("MPI_"), "{}", c.name());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Class::ALL.len());
    }

    #[test]
    fn messages_name_the_class() {
        let e = MpiError::new(Class::Arg, "null pointer");
        assert_eq!(e.to_string(), "null pointer (MPI_ERR_ARG)");
        let truncated: MpiError = shm_engine::Error::Truncated {
            source: 1,
            tag: 2,
            incoming: 8,
            capacity: 4,
        }
        .into();
        assert_eq!(truncated.code, Class::Truncate);
    }
}

//! Errors of the engine's public API.

use std::fmt;

use crate::bootstrap::BootstrapError;
use crate::config::ConfigError;
use crate::segment::SegmentError;

/// Why an endpoint could not be created (or finalized).
#[derive(Debug)]
#[non_exhaustive]
pub enum InitError {
    /// The launcher could not be reached or answered badly.
    Bootstrap(BootstrapError),
    /// A `TESSEL_*` variable is invalid.
    Config(ConfigError),
    /// The node segment could not be created, received or mapped.
    Segment(SegmentError),
    /// The job spans nodes and no network plugin could be opened.
    Net(String),
}

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Bootstrap(e) => write!(f, "bootstrap failed: {e}"),
            Self::Config(e) => write!(f, "invalid configuration: {e}"),
            Self::Segment(e) => write!(f, "node segment: {e}"),
            Self::Net(m) => write!(f, "inter-node transport: {m}"),
        }
    }
}

impl std::error::Error for InitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Bootstrap(e) => Some(e),
            Self::Config(e) => Some(e),
            Self::Segment(e) => Some(e),
            Self::Net(_) => None,
        }
    }
}

impl From<BootstrapError> for InitError {
    fn from(e: BootstrapError) -> Self {
        Self::Bootstrap(e)
    }
}
impl From<ConfigError> for InitError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}
impl From<SegmentError> for InitError {
    fn from(e: SegmentError) -> Self {
        Self::Segment(e)
    }
}

/// Why a send or receive failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// The process id is not one of the job's (`0..size` for the job the
    /// launcher started), nor one admitted from the universe.
    InvalidPeer {
        /// The id given.
        peer: u32,
        /// The job size.
        size: u32,
    },
    /// The peer runs on another node and no inter-node transport is loaded.
    Unreachable {
        /// The id given.
        peer: u32,
    },
    /// The matched message is larger than the receive buffer. The first
    /// `capacity` bytes were delivered.
    Truncated {
        /// Sender of the message.
        source: u32,
        /// Its tag.
        tag: u64,
        /// Its full size in bytes.
        incoming: usize,
        /// The receive buffer's size.
        capacity: usize,
    },
    /// The network transport failed to move a message to or from `peer`
    /// (on another node).
    Net {
        /// The peer.
        peer: u32,
        /// What the transport said.
        message: String,
    },
    /// Copying a large message between the processes failed (the OS
    /// refused cross-memory attach midway, or a buffer was unmapped).
    Copy {
        /// Sender of the message.
        source: u32,
        /// The OS error number.
        errno: i32,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidPeer { peer, size } => {
                write!(
                    f,
                    "invalid peer {peer}: the job has {size} processes, and {peer} is none of those it has met"
                )
            }
            Self::Unreachable { peer } => write!(
                f,
                "process {peer} is on another node and no inter-node transport is loaded"
            ),
            Self::Truncated {
                source,
                tag,
                incoming,
                capacity,
            } => write!(
                f,
                "message truncated: {incoming} bytes from {source} (tag {tag}) into a {capacity}-byte buffer"
            ),
            Self::Net { peer, message } => {
                write!(f, "network transfer with process {peer} failed: {message}")
            }
            Self::Copy { source, errno } => write!(
                f,
                "copying a message from process {source} failed: {}",
                std::io::Error::from_raw_os_error(*errno)
            ),
        }
    }
}

impl std::error::Error for Error {}

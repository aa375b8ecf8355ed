//! Tessel's shared-memory message engine.
//!
//! Processes of a job, identified by their rank in a [`bootstrap`], exchange
//! tagged messages through an [`Endpoint`]: between processes of one node
//! through a shared node segment (control rings, doorbells, staging, and
//! cross-memory attach for large messages), with MPI matching semantics
//! (wildcard source and tag, tag masks, non-overtaking order).
//!
//! Buffers that other processes of the node should reach directly live in
//! the [`heap`]: [`SharedVec`] and [`SharedBox`].
//!
//! ```no_run
//! use shm_engine::{Endpoint, Source, TagMatch, bootstrap};
//!
//! let mut ep = Endpoint::new(bootstrap::from_env()?)?;
//! let (me, n) = (ep.rank(), ep.size());
//! let next = (me + 1) % n;
//! let prev = (me + n - 1) % n;
//! let req = ep.irecv(Source::Rank(prev), TagMatch::exact(7), 64)?;
//! ep.send(next, 7, format!("hello from {me}").as_bytes())?;
//! let got = ep.wait(req)?;
//! println!("{}", String::from_utf8_lossy(&got.data.unwrap()));
//! ep.finalize()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod board;
pub mod bootstrap;
pub mod config;
pub mod copy;
pub mod doorbell;
pub mod endpoint;
pub mod error;
pub mod heap;
pub mod iov;
pub mod layout;
pub mod locality;
pub mod lock;
pub mod matching;
mod net;
pub mod queue;
pub mod rndv;
pub mod segment;
pub mod stats;
pub mod steal;
pub mod sync;
mod sys;
pub mod tiers;
pub mod topo;
pub mod transport;

pub use config::{CmaMode, Config, RndvMode};
pub use endpoint::{Backoff, Completion, Endpoint, Message, Next, RecvBuf, Request, Status, Waker};
pub use error::{Error, InitError};
pub use heap::{HeapError, HeapRef, PeerHeaps, SharedBox, SharedVec};
pub use iov::Piece;
pub use locality::Place;
pub use matching::{Source, TagMatch};

/// The README's Rust example, compiled by `cargo test --doc`.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExample;

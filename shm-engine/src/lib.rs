//! Tessel's shared-memory message engine.
#![warn(missing_docs)]

pub mod bootstrap;
pub mod sync;

//! Lock-free queues that live in shared memory.

pub mod spmc;
pub mod spsc;

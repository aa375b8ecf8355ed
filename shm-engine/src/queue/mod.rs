//! Lock-free queues that live in shared memory.

pub mod spsc;

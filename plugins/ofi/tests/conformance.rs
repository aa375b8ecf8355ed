//! The plugin-api conformance check on the `tcp` provider (which libfabric
//! serves as `tcp;ofi_rxm` for RDM endpoints), on the loopback domain.
//! It is also the provider the plugin picks by default on this machine, so
//! no second run for the default is needed; `conformance_sockets.rs` runs
//! the check on another provider.
//!
//! libfabric reads `FI_PROVIDER` once per process, at its first call: each
//! provider gets its own test binary, with one test in it.

mod common;

#[test]
fn conformance_over_tcp() {
    common::conformance_over("tcp", "tcp;ofi_rxm on lo");
}

//! The plugin-api conformance check on libfabric's `sockets` provider
//! (native RDM, automatic progress by its own threads, a wait descriptor):
//! a provider with another progress model than `tcp;ofi_rxm`, on the
//! loopback domain. One test per binary: libfabric reads `FI_PROVIDER`
//! once per process.

mod common;

#[test]
fn conformance_over_sockets() {
    common::conformance_over("sockets", "sockets on lo");
}

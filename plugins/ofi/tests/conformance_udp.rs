//! The plugin-api conformance check on libfabric's `udp` provider
//! (`udp;ofi_rxd`: reliability and RMA emulated over datagrams, manual progress):
//! a provider with another progress model than `tcp;ofi_rxm`, on the
//! loopback domain. One test per binary: libfabric reads `FI_PROVIDER`
//! once per process.

mod common;

#[test]
fn conformance_over_udp() {
    common::conformance_over("udp", "udp;ofi_rxd on lo");
}

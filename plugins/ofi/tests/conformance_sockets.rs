//! The plugin-api conformance check on libfabric's `sockets` provider
//! (native RDM, automatic progress by its own threads, a wait descriptor):
//! a provider with another progress model than `tcp;ofi_rxm`, on the
//! loopback domain. One test per binary: libfabric reads `FI_PROVIDER`
//! once per process.

#[test]
fn conformance_over_sockets() {
    // SAFETY: the only test of this binary sets the variables before any
    // thread of it reads the environment or calls libfabric.
    unsafe {
        std::env::set_var("FI_PROVIDER", "sockets");
        std::env::set_var("TESSEL_OFI_DOMAIN", "lo");
    }
    let report = plugin_api::conformance::run(tessel_plugin_ofi::tessel_plugin_descriptor)
        .unwrap_or_else(|e| panic!("conformance over sockets: {e}"));
    println!("{report}");
    let attr = report.attr.expect("attributes reported");
    println!(
        "  flags {:#x} (wake fd {}, RMA read {}); latency {} ns, bandwidth {} MB/s (estimates)",
        attr.flags,
        attr.flags & plugin_api::ATTR_WAKE_FD != 0,
        attr.flags & plugin_api::ATTR_RMA_READ != 0,
        attr.latency_ns,
        attr.bandwidth_mbs
    );
    assert!(
        attr.device().starts_with("sockets on lo"),
        "{}",
        attr.device()
    );
}

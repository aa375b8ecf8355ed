//! The plugin-api conformance check on the `tcp` provider (which libfabric
//! serves as `tcp;ofi_rxm` for RDM endpoints), on the loopback domain.
//! It is also the provider the plugin picks by default on this machine, so
//! no second run for the default is needed; `conformance_sockets.rs` runs
//! the check on another provider.
//!
//! libfabric reads `FI_PROVIDER` once per process, at its first call: each
//! provider gets its own test binary, with one test in it.

#[test]
fn conformance_over_tcp() {
    // SAFETY: the only test of this binary sets the variables before any
    // thread of it reads the environment or calls libfabric.
    unsafe {
        std::env::set_var("FI_PROVIDER", "tcp");
        std::env::set_var("TESSEL_OFI_DOMAIN", "lo");
    }
    let report = plugin_api::conformance::run(tessel_plugin_ofi::tessel_plugin_descriptor)
        .unwrap_or_else(|e| panic!("conformance over tcp: {e}"));
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
        attr.device().starts_with("tcp;ofi_rxm on lo"),
        "{}",
        attr.device()
    );
    assert!(report.fetched > 0 && report.discarded > 0 && report.data > 0);
}

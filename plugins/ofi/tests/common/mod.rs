//! The conformance check on one libfabric provider, shared by the
//! `conformance*.rs` binaries (libfabric reads `FI_PROVIDER` once per
//! process, at its first call: each provider gets its own binary, with
//! one test in it).

/// Run the check with `FI_PROVIDER=provider` on the loopback domain and
/// expect the device text to start with `device`.
pub fn conformance_over(provider: &str, device: &str) {
    // SAFETY: called by the only test of its binary, before any thread of
    // it reads the environment or calls libfabric.
    unsafe {
        std::env::set_var("FI_PROVIDER", provider);
        std::env::set_var("TESSEL_OFI_DOMAIN", "lo");
    }
    let report = plugin_api::conformance::run(tessel_plugin_ofi::tessel_plugin_descriptor)
        .unwrap_or_else(|e| panic!("conformance over {provider}: {e}"));
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
    assert!(attr.device().starts_with(device), "{}", attr.device());
    // Every path ran: payloads as data, fetched through tokens, discarded.
    assert!(report.fetched > 0 && report.discarded > 0 && report.data > 0);
}

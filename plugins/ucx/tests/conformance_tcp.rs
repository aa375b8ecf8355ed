//! The plugin conformance check of `plugin-api` over UCX's tcp transport on
//! the loopback device only. A test binary of its own: UCX reads `UCX_*`
//! when the contexts open, and this binary's only test sets them first.

#[test]
fn conformance_over_tcp_on_loopback() {
    // SAFETY: the only test of this binary, so no other thread reads or
    // writes the environment while it is set.
    unsafe {
        std::env::set_var("UCX_TLS", "tcp");
        std::env::set_var("UCX_NET_DEVICES", "lo");
    }
    let report = plugin_api::conformance::run(tessel_plugin_ucx::tessel_plugin_descriptor)
        .unwrap_or_else(|e| panic!("conformance over tcp failed: {e}"));
    println!("{report}");
    let device = report.attr.map(|a| a.device()).unwrap_or_default();
    assert!(device.starts_with("tcp(lo)"), "device {device:?}");
}

//! The plugin conformance check of `plugin-api` over UCX's default
//! transports (whatever UCX picks on this machine).

#[test]
fn conformance_with_default_transports() {
    let report = plugin_api::conformance::run(tessel_plugin_ucx::tessel_plugin_descriptor)
        .unwrap_or_else(|e| panic!("conformance failed: {e}"));
    println!("{report}");
}

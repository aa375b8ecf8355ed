//! Without a provider that works, `open` answers "no device" and says what
//! it asked for. One test per binary: libfabric reads `FI_PROVIDER` once
//! per process.

#[test]
fn an_unknown_provider_is_no_device() {
    // SAFETY: the only test of this binary sets the variable before any
    // thread of it reads the environment or calls libfabric.
    unsafe { std::env::set_var("FI_PROVIDER", "no-such-provider") };
    let (rc, message) =
        plugin_api::conformance::open_error(tessel_plugin_ofi::tessel_plugin_descriptor)
            .expect("open must fail");
    assert_eq!(rc, plugin_api::ERR_NO_DEVICE, "{message}");
    assert!(
        message.contains("FI_PROVIDER=no-such-provider"),
        "{message}"
    );
    println!("{message}");
}

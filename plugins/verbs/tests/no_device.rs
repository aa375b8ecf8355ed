//! The plugin on whatever machine runs the tests: without an RDMA device
//! `open` must fail with `ERR_NO_DEVICE` and say why; with one, the
//! transport-level conformance check runs between two contexts.

use plugin_api::{ERR_NO_DEVICE, conformance, status_name};
use tessel_plugin_verbs::{device_names, tessel_plugin_descriptor};

unsafe extern "C" fn descriptor() -> *const plugin_api::Descriptor {
    tessel_plugin_descriptor()
}

/// Whether the kernel shows RDMA devices (`/sys/class/infiniband`).
fn sysfs_devices() -> Vec<String> {
    std::fs::read_dir("/sys/class/infiniband")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn open_reports_no_device_or_passes_conformance() {
    let listed = device_names();
    let sysfs = sysfs_devices();
    eprintln!("libibverbs devices: {listed:?}; /sys/class/infiniband: {sysfs:?}");
    let has_device = matches!(&listed, Ok(names) if !names.is_empty());
    if !has_device {
        let (rc, message) =
            conformance::open_error(descriptor).expect("open succeeded without any RDMA device");
        eprintln!("open: {} ({message})", status_name(rc));
        assert_eq!(rc, ERR_NO_DEVICE, "{message}");
        assert!(message.contains("device"), "{message}");
        if let Err(why) = &listed {
            // The reason names the failing call and its errno text.
            assert!(message.contains(why.as_str()), "{message} vs {why}");
        }
        return;
    }
    // A device exists. A made-up name in TESSEL_VERBS_DEVICE is still
    // "no device" (set and cleared here, in the only test of this binary
    // that opens, so nothing reads it concurrently).
    // SAFETY: no other thread of this test binary touches the environment.
    unsafe { std::env::set_var("TESSEL_VERBS_DEVICE", "no_such_hca_0") };
    let named = conformance::open_error(descriptor);
    // SAFETY: as above.
    unsafe { std::env::remove_var("TESSEL_VERBS_DEVICE") };
    let (rc, message) = named.expect("opened a device that does not exist");
    assert_eq!(rc, ERR_NO_DEVICE, "{message}");
    assert!(message.contains("no_such_hca_0"), "{message}");

    // The real device may still have no active port, which `open` must
    // report the same way; otherwise run the full check.
    if let Some((rc, message)) = conformance::open_error(descriptor) {
        assert_eq!(rc, ERR_NO_DEVICE, "{message}");
        assert!(message.contains("active port"), "{message}");
        eprintln!("devices but no active port: {message}");
        return;
    }
    match conformance::run(descriptor) {
        Ok(report) => eprintln!("{report}"),
        Err(e) => panic!("conformance on {listed:?}: {e}"),
    }
}

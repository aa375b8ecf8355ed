//! Bindings to the system libfabric: pkg-config finds and links it, bindgen
//! reads its headers. Only the types, the few exported functions and the
//! constants the plugin uses are generated (most of libfabric's API is
//! `static inline` calls through ops tables, which `src/fi.rs` makes by hand).

include!("../build_common.rs");

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    let lib = probe("libfabric", "1.10", "libfabric-dev");
    // "1.17.0" -> "1.17", for the descriptor's version text.
    let major_minor: Vec<&str> = lib.version.split('.').take(2).collect();
    println!(
        "cargo:rustc-env=TESSEL_OFI_LIBFABRIC_VERSION={}",
        major_minor.join(".")
    );

    let builder = builder(&lib)
        .header("wrapper.h")
        .allowlist_function("fi_(getinfo|freeinfo|dupinfo|fabric|strerror|version)")
        .allowlist_type("fi_(info|cq_msg_entry|cq_err_entry|cq_attr|av_attr|context2)")
        .allowlist_type("fid_(fabric|domain|ep|cq|av|mr)")
        .allowlist_var("FI_.*");
    generate(builder, "<rdma/fabric.h>", "fabric.rs");
}

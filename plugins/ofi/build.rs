//! Bindings to the system libfabric: pkg-config finds and links it, bindgen
//! reads its headers. Only the types, the few exported functions and the
//! constants the plugin uses are generated (most of libfabric's API is
//! `static inline` calls through ops tables, which `src/fi.rs` makes by hand).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=build.rs");
    let lib = pkg_config::Config::new()
        .atleast_version("1.10")
        .probe("libfabric")
        .unwrap_or_else(|e| {
            panic!("libfabric not found by pkg-config (Debian: libfabric-dev): {e}")
        });
    // "1.17.0" -> "1.17", for the descriptor's version text.
    let major_minor: Vec<&str> = lib.version.split('.').take(2).collect();
    println!(
        "cargo:rustc-env=TESSEL_OFI_LIBFABRIC_VERSION={}",
        major_minor.join(".")
    );

    let mut builder = bindgen::Builder::default()
        .header("wrapper.h")
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .allowlist_function("fi_(getinfo|freeinfo|dupinfo|fabric|strerror|version)")
        .allowlist_type("fi_(info|cq_msg_entry|cq_err_entry|cq_attr|av_attr|context2)")
        .allowlist_type("fid_(fabric|domain|ep|cq|av|mr)")
        .allowlist_var("FI_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(false);
    for dir in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on <rdma/fabric.h>: {e}"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join("fabric.rs"))
        .expect("write the libfabric bindings");
}

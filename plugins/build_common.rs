// The bindgen setup the plugins' build scripts share, included by each
// (`include!("../build_common.rs")`): pkg-config finds and links the
// library, and bindgen generates what the plugin allowlists with the same
// options everywhere (C enums as constants, `Default` derived, layout
// tests, no comments). What a plugin generates stays in its build.rs.

/// Find `package` (at least version `min`) with pkg-config, which also
/// tells cargo to link it; `debian` names the package that provides it.
fn probe(package: &str, min: &str, debian: &str) -> pkg_config::Library {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=../build_common.rs");
    pkg_config::Config::new()
        .atleast_version(min)
        .probe(package)
        .unwrap_or_else(|e| panic!("{package} not found by pkg-config (Debian: {debian}): {e}"))
}

/// A bindgen builder with the plugins' common options and `lib`'s include
/// directories; the caller adds the header and its allowlists.
fn builder(lib: &pkg_config::Library) -> bindgen::Builder {
    let mut builder = bindgen::Builder::default()
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(true)
        .generate_comments(false);
    for dir in &lib.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    builder
}

/// Generate the bindings of `builder` (`what` names the header for
/// errors) into `$OUT_DIR/<file>`, which `src/sys.rs` includes.
fn generate(builder: bindgen::Builder, what: &str, file: &str) {
    let bindings = builder
        .generate()
        .unwrap_or_else(|e| panic!("bindgen failed on {what}: {e}"));
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    bindings
        .write_to_file(out.join(file))
        .unwrap_or_else(|e| panic!("write the bindings of {what}: {e}"));
}

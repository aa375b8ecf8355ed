//! Mutation testing of the loom models: `TESSEL_MUTATION=NAME` weakens
//! one memory ordering of the queues (`cfg(tessel_mutation = "NAME")`,
//! the values the workspace declares), so that the models in
//! `loom-tests` must catch it. A variable rather than `RUSTFLAGS`: a
//! change rebuilds this crate and the tests, not every dependency. The
//! bare `cfg(tessel_mutation)` says that some mutation is on (the models
//! it does not concern are then left out).
pub fn main() {
    println!("cargo:rerun-if-env-changed=TESSEL_MUTATION");
    if let Some(m) = std::env::var("TESSEL_MUTATION")
        .ok()
        .filter(|m| !m.is_empty())
    {
        println!("cargo:rustc-cfg=tessel_mutation=\"{m}\"");
        println!("cargo:rustc-cfg=tessel_mutation");
    }
}

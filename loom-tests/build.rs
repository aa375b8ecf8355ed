//! The mutation under test, as in `shm-engine/build.rs`: the models
//! expect the weakened ordering `TESSEL_MUTATION` names to be caught.
fn main() {
    println!("cargo:rerun-if-env-changed=TESSEL_MUTATION");
    if let Some(m) = std::env::var("TESSEL_MUTATION")
        .ok()
        .filter(|m| !m.is_empty())
    {
        println!("cargo:rustc-cfg=tessel_mutation=\"{m}\"");
    }
}

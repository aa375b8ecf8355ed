//! The mutation under test: the same script as `shm-engine`'s, so the
//! models expect the weakened ordering `TESSEL_MUTATION` names.
#[path = "../shm-engine/build.rs"]
mod engine;

fn main() {
    engine::main();
}

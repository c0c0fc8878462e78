//! The functions library the crate embeds: the copy a packaged crate holds
//! (`ratelimit.lua`, put beside Cargo.toml before `cargo package`), else the
//! repository's `functions/ratelimit.lua`. A library whose scripts cannot be
//! derived fails the build here rather than a call at run time.

#[path = "src/scripts.rs"]
mod scripts;

use std::path::PathBuf;

fn main() {
    let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let candidates = [
        dir.join("ratelimit.lua"),
        dir.join("../../functions/ratelimit.lua"),
    ];
    let Some(library) = candidates.iter().find(|p| p.is_file()) else {
        panic!(
            "no functions library: neither {} (a packaged crate's) nor {} (the repository's) exists",
            candidates[0].display(),
            candidates[1].display()
        );
    };
    // Only the file read: a path that does not exist would run this script,
    // and build the crate, every time. A copy appears only while packaging.
    println!("cargo:rerun-if-changed={}", library.display());
    let text = std::fs::read_to_string(library).unwrap_or_else(|e| panic!("{}: {e}", library.display()));
    if let Err(error) = scripts::scripts_from_library(&text) {
        panic!("{}: {error}", library.display());
    }
    println!("cargo:rustc-env=RL_LIBRARY={}", library.display());
}

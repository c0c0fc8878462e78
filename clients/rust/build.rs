//! Embeds the packaged copies of the functions library and of the
//! standalone scripts (`functions/` beside this file, copied from the
//! repository's `functions/` by `sync-functions`): `OUT_DIR/embedded.rs`
//! holds each file's text, or `None` for a file the package lacks.

use std::path::Path;

/// The functions of the library, in the order of `Command::EVERY`.
const FUNCTIONS: [&str; 9] = [
    "rl_gcra",
    "rl_token_bucket",
    "rl_fixed",
    "rl_sliding_log",
    "rl_sliding_counter",
    "rl_all",
    "rl_concurrency",
    "rl_release",
    "rl_renew",
];

fn embed(path: &Path) -> String {
    if path.is_file() {
        format!("Some(include_str!({:?}))", path.display().to_string())
    } else {
        "None".to_string()
    }
}

fn main() {
    let dir = Path::new(&std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR")).join("functions");
    println!("cargo:rerun-if-changed=functions");
    println!("cargo:rerun-if-changed=functions/scripts");
    let mut out = format!(
        "/// `functions/ratelimit.lua`, when packaged.\npub(crate) const LIBRARY: Option<&str> = {};\n",
        embed(&dir.join("ratelimit.lua"))
    );
    out.push_str(
        "/// `functions/scripts/<function>.lua`, in the order of `Command::EVERY`.\npub(crate) const SCRIPTS: [Option<&str>; 9] = [\n",
    );
    for name in FUNCTIONS {
        out.push_str(&format!(
            "    {},\n",
            embed(&dir.join("scripts").join(format!("{name}.lua")))
        ));
    }
    out.push_str("];\n");
    let target = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("embedded.rs");
    std::fs::write(target, out).expect("write embedded.rs");
}

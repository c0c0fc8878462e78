//! The Lua the crate embeds: in the repository, `functions/ratelimit.lua`
//! (a packaged crate holds a copy: build.rs), and each script it derives
//! from the library is the one `functions/build.py` writes, byte for byte.

mod common;

use std::path::PathBuf;
use std::process::Command;

use redis_ratelimit_client::{library_source, scripts_from_library};

#[test]
fn in_the_repository_the_crate_embeds_functions_ratelimit_lua() {
    let text = std::fs::read_to_string(common::repository_functions().join("ratelimit.lua")).unwrap();
    assert!(
        library_source() == text,
        "the embedded library is not functions/ratelimit.lua"
    );
}

#[test]
fn each_script_is_what_build_py_writes() {
    let out = std::env::temp_dir().join(format!("rl-rust-build-{}", std::process::id()));
    let status = Command::new("python3")
        .arg(common::repository_functions().join("build.py"))
        .arg("--out")
        .arg(&out)
        .output()
        .expect("python3 runs functions/build.py");
    assert!(
        status.status.success(),
        "{}",
        String::from_utf8_lossy(&status.stderr)
    );
    let mut written: Vec<(String, String)> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("rl_"))
        .map(|p: PathBuf| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).unwrap())
        })
        .collect();
    written.sort();
    let names: Vec<&str> = written.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "rl_all",
            "rl_concurrency",
            "rl_fixed",
            "rl_gcra",
            "rl_inspect",
            "rl_log",
            "rl_release",
            "rl_renew",
            "rl_sliding_counter",
            "rl_sliding_log",
            "rl_token_bucket",
            "rl_version",
        ]
    );
    let library = std::fs::read_to_string(out.join("ratelimit.lua")).unwrap();
    let mut derived = scripts_from_library(&library).unwrap();
    derived.sort();
    std::fs::remove_dir_all(&out).unwrap();
    for ((name, want), (got_name, got)) in written.iter().zip(&derived) {
        assert_eq!(got_name, name);
        assert!(got == want, "{name}: the derived script differs from build.py's");
    }
    assert_eq!(derived.len(), written.len());
}

#[test]
fn the_rule_on_a_small_library() {
    let text = "#!lua name=x\n\
        -- script rl_a: PRE | one three | return a()\n\
        -- script rl_b: PRE | two | return b()\n\
        -- script rl_c: PRE | one | local x = a() | two three | return x\n\
        -- part: one\nlocal one = 1\n\
        -- part: two\nlocal two = 2\n\n\
        -- part: three\nlocal three = 3";
    assert_eq!(
        scripts_from_library(text).unwrap(),
        [
            (
                "rl_a".to_string(),
                "PRE\n-- part: one\nlocal one = 1\n-- part: three\nlocal three = 3return a()\n".to_string()
            ),
            (
                "rl_b".to_string(),
                "PRE\n-- part: two\nlocal two = 2\n\nreturn b()\n".to_string()
            ),
            (
                "rl_c".to_string(),
                "PRE\n-- part: one\nlocal one = 1\nlocal x = a()\n-- part: two\nlocal two = 2\n\n-- part: three\nlocal three = 3return x\n"
                    .to_string()
            ),
        ]
    );
}

#[test]
fn a_library_the_rule_cannot_read_is_a_clear_error() {
    assert_eq!(
        scripts_from_library("-- script rl_a: PRE | one\n-- part: one\n"),
        Err("the library's script line for rl_a is not 'LINE | PARTS | LINE [| PARTS | LINE ...]': 'PRE | one'".to_string())
    );
    assert_eq!(
        scripts_from_library("-- script rl_a: PRE | one two | return 1\n-- part: one\n"),
        Err("the library's script line for rl_a names parts it lacks: two".to_string())
    );
}

//! The crate ships copies of the repository's `functions/` (made by
//! `sync-functions`): each must equal its source, and the crate embeds
//! exactly them.

mod common;

use std::path::Path;

fn lua_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(".lua"))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn packaged_copies_equal_the_repository_sources() {
    let source = common::repository_functions();
    let packaged = Path::new(env!("CARGO_MANIFEST_DIR")).join("functions");
    for sub in ["", "scripts"] {
        let (from, to) = (source.join(sub), packaged.join(sub));
        let names = lua_files(&from);
        assert_eq!(
            lua_files(&to),
            names,
            "{}: the packaged files differ from the sources (run clients/rust/sync-functions)",
            to.display()
        );
        for name in names {
            let a = std::fs::read(from.join(&name)).unwrap();
            let b = std::fs::read(to.join(&name)).unwrap();
            assert!(
                a == b,
                "{sub}/{name} differs from its source: run clients/rust/sync-functions"
            );
        }
    }
    assert!(
        source.join("ratelimit.lua").is_file(),
        "no functions/ratelimit.lua in the repository"
    );
}

#[test]
fn the_crate_embeds_the_packaged_library() {
    let packaged = Path::new(env!("CARGO_MANIFEST_DIR")).join("functions/ratelimit.lua");
    let text = std::fs::read_to_string(packaged).unwrap();
    assert_eq!(redis_ratelimit_client::library_source(), text);
}

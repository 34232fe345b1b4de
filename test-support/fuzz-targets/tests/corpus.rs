//! Replays every file of every target's corpus (`fuzz/corpus/<target>/`) through the function
//! the fuzz target calls, on stable and without libFuzzer: the inputs that once found bugs, and
//! the seeds, stay checked by the normal test command. Whatever files the directory holds are
//! read; in a fresh checkout that is the committed ones (libFuzzer's own additions are ignored
//! by git).

use std::fs;
use std::path::{Path, PathBuf};

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz")
}

#[test]
fn every_corpus_file_runs_clean() {
    for (name, target) in fuzz_targets::TARGETS {
        let dir = fuzz_dir().join("corpus").join(name);
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.is_file())
            .collect();
        files.sort();
        assert!(!files.is_empty(), "{}: no corpus files", dir.display());
        for file in files {
            let data = fs::read(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            eprintln!("{}", file.display());
            target(&data);
        }
    }
}

/// Each cargo-fuzz binary (a `[[bin]]` of fuzz/Cargo.toml) has its function here and its
/// corpus directory, and each corpus directory its binary; and each binary calls the function
/// of its own name, so the corpus replayed here is the one that binary fuzzes.
#[test]
fn targets_binaries_and_corpora_match() {
    let manifest = fs::read_to_string(fuzz_dir().join("Cargo.toml")).expect("fuzz/Cargo.toml");
    let mut binaries: Vec<&str> = Vec::new();
    for bin in manifest.split("[[bin]]").skip(1) {
        let field = |key: &str| {
            bin.lines()
                .find_map(|l| l.strip_prefix(key)?.trim().strip_prefix('='))
                .map(|value| value.trim().trim_matches('"'))
                .unwrap_or_else(|| panic!("a [[bin]] of fuzz/Cargo.toml without {key}: {bin}"))
        };
        let (name, path) = (field("name"), field("path"));
        let source = fs::read_to_string(fuzz_dir().join(path)).expect("a fuzz target's source");
        assert_eq!(called_targets(&source), [name], "fuzz/{path} calls");
        binaries.push(name);
    }
    let mut corpora: Vec<String> = fs::read_dir(fuzz_dir().join("corpus"))
        .expect("fuzz/corpus")
        .map(|entry| entry.expect("a directory entry").file_name())
        .map(|name| name.to_string_lossy().into_owned())
        .collect();
    let mut targets: Vec<&str> = fuzz_targets::TARGETS.iter().map(|(n, _)| *n).collect();
    binaries.sort_unstable();
    corpora.sort_unstable();
    targets.sort_unstable();
    assert_eq!(binaries, targets, "fuzz/Cargo.toml's binaries");
    assert_eq!(corpora, targets, "fuzz/corpus/'s directories");
}

/// The `fuzz_targets::` functions that `source` calls, comments left out.
fn called_targets(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .flat_map(|line| line.split("fuzz_targets::").skip(1))
        .filter_map(|call| call.split_once('(').map(|(name, _)| name.trim()))
        .collect()
}

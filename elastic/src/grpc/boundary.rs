//! ARCHITECTURE.md's claim, kept true: tonic's statuses and codes are made and read only
//! under `src/grpc/` and the generated code.

use std::path::{Path, PathBuf};

/// The one use of tonic outside this layer: the public [`Error::InvalidAddress`]'s
/// source is the transport's refusal of the address (file, text).
///
/// [`Error::InvalidAddress`]: crate::Error::InvalidAddress
const ALLOWED: &[(&str, &str)] = &[("error.rs", "source: tonic::transport::Error,")];

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source directory") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            sources(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// ARCHITECTURE.md's claim: tonic's statuses and codes are made and read only here (and
/// in the generated code); the core, the etcd backend and the client speak the crate's
/// own `CallError` and `Code`.
#[test]
fn only_the_grpc_layer_names_tonic() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    assert!(
        files.len() > 20,
        "{} files under {}",
        files.len(),
        src.display()
    );
    let mut uses = Vec::new();
    for file in files {
        let relative = file.strip_prefix(&src).expect("under src");
        let inside = |dir: &str| {
            relative.starts_with(dir) || relative == Path::new(dir).with_extension("rs")
        };
        if inside("grpc") || inside("generated") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("a readable source");
        for (i, line) in text.lines().enumerate() {
            let allowed = ALLOWED
                .iter()
                .any(|(f, l)| relative == Path::new(f) && line.trim() == *l);
            if line.contains("tonic::") && !allowed {
                uses.push(format!(
                    "src/{}:{}: {}",
                    relative.display(),
                    i + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(
        uses.is_empty(),
        "tonic outside src/grpc/:\n{}",
        uses.join("\n")
    );
}

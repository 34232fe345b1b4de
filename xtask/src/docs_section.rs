//! One command's part of a shared document: the text between `<!-- begin NAME -->` and
//! `<!-- end NAME -->`, so that each benchmark command rewrites only its own section of
//! `docs/benchmarks.md`.

use std::fs;
use std::path::Path;

/// The title a new document gets.
const TITLE: &str = "# Benchmarks\n\nEach section is written by the command it names; \
                     run it again to refresh that section alone.\n";

/// Replaces section `name` of the document at `path` with `body` (markers kept), or adds
/// it at the end when the document has none; creates the document when missing.
pub(crate) fn write(path: &Path, name: &str, body: &str) -> Result<(), String> {
    let old = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => TITLE.to_owned(),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    let new = replaced(&old, name, body).map_err(|e| format!("{}: {e}", path.display()))?;
    fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))
        .and_then(|()| fs::write(path, new))
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// `document` with section `name` set to `body`.
fn replaced(document: &str, name: &str, body: &str) -> Result<String, String> {
    let begin = format!("<!-- begin {name} -->\n");
    let end = format!("<!-- end {name} -->\n");
    let section = format!("{begin}{}\n{end}", body.trim_end());
    match (document.find(&begin), document.find(&end)) {
        (Some(b), Some(e)) if b < e => Ok(format!(
            "{}{section}{}",
            &document[..b],
            &document[e + end.len()..]
        )),
        (None, None) => Ok(format!("{}\n\n{section}", document.trim_end())),
        _ => Err(format!(
            "the markers of section {name:?} are broken: fix them by hand"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::replaced;

    #[test]
    fn replaces_only_its_own_section() {
        let doc = "# T\n\n<!-- begin a -->\nold a\n<!-- end a -->\n\n<!-- begin b -->\nb\n<!-- end b -->\n";
        let new = replaced(doc, "a", "new a\n").unwrap();
        assert_eq!(
            new,
            "# T\n\n<!-- begin a -->\nnew a\n<!-- end a -->\n\n<!-- begin b -->\nb\n<!-- end b -->\n"
        );
        let added = replaced(&new, "c", "c").unwrap();
        assert!(added.ends_with("<!-- end b -->\n\n<!-- begin c -->\nc\n<!-- end c -->\n"));
        assert!(replaced("<!-- end a -->\n<!-- begin a -->\n", "a", "x").is_err());
    }
}

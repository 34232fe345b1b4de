//! Every relative link of the Markdown docs (the root's `*.md`, `docs/**/*.md`, every
//! `README.md` at any depth) resolved against the repository: a file or directory that exists,
//! and an anchor (`file.md#section`, `#section`) that names a heading of that file as GitHub
//! makes its id. One check per file, in the test command; links to other sites are not
//! fetched (CI reaches no network it can count on).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use crate::tally::{self, Suite};
use crate::workspace;

/// The suite's name in the tally and the floors file.
const SUITE: &str = "links: Markdown docs";

/// Directories never searched for docs: build outputs (a crate's `README.md` in the registry
/// sources cargo unpacks there is not ours).
const SKIPPED: [&str; 1] = ["target"];

/// `cargo xtask links`: the check alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

/// The Markdown docs, each checked: one check per file.
pub(crate) fn suite() -> Suite {
    let root = workspace::root();
    let mut suite = Suite::new(SUITE);
    let files = match docs(&root) {
        Ok(files) => files,
        Err(e) => {
            suite.failed.push(e);
            return suite;
        }
    };
    let mut anchors = HashMap::new();
    for file in &files {
        let shown = file
            .strip_prefix(&root)
            .unwrap_or(file)
            .display()
            .to_string();
        suite.record(&shown, check(file, &mut anchors));
    }
    suite
}

/// The Markdown files the check covers, in order: the root's `*.md`, every `README.md` at
/// any depth, and everything under `docs/`.
pub(crate) fn docs(root: &Path) -> Result<Vec<PathBuf>, String> {
    let read = |dir: &Path| {
        std::fs::read_dir(dir)
            .map_err(|e| format!("cannot list {}: {e}", dir.display()))
            .map(|entries| entries.flatten().map(|e| e.path()).collect::<Vec<_>>())
    };
    let is_md = |path: &Path| path.extension().is_some_and(|ext| ext == "md");
    let docs = root.join("docs");
    let mut files = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for path in read(&dir)? {
            let name = path
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            if path.is_dir() {
                if !name.starts_with('.') && !SKIPPED.contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if is_md(&path) && (dir == root || name == "README.md" || dir.starts_with(&docs))
            {
                files.push(path);
            }
        }
    }
    files.sort();
    Ok(files)
}

/// Every relative link of `file` resolved; `anchors` caches each file's heading ids.
fn check(file: &Path, anchors: &mut HashMap<PathBuf, BTreeSet<String>>) -> Result<(), String> {
    let text = read(file)?;
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut broken = Vec::new();
    for target in links(&text) {
        if target.contains("://") || target.starts_with("mailto:") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((path, anchor)) => (path, Some(anchor)),
            None => (target.as_str(), None),
        };
        let resolved = if path.is_empty() {
            file.to_path_buf()
        } else {
            dir.join(path)
        };
        if !resolved.exists() {
            broken.push(format!("{target}: no such file"));
            continue;
        }
        let Some(anchor) = anchor.filter(|_| resolved.extension().is_some_and(|e| e == "md"))
        else {
            continue;
        };
        let ids = match anchors.get(&resolved) {
            Some(ids) => ids,
            None => {
                let ids = heading_ids(&read(&resolved)?);
                anchors.entry(resolved.clone()).or_insert(ids)
            }
        };
        if !ids.contains(anchor) {
            broken.push(format!("{target}: no heading with id {anchor:?}"));
        }
    }
    if broken.is_empty() {
        Ok(())
    } else {
        Err(broken.join("; "))
    }
}

fn read(file: &Path) -> Result<String, String> {
    std::fs::read_to_string(file).map_err(|e| format!("cannot read {}: {e}", file.display()))
}

/// The docs' Markdown parser, as GitHub reads them (tables, heading ids).
pub(crate) fn parser(text: &str) -> Parser<'_> {
    Parser::new_ext(
        text,
        Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES,
    )
}

/// The targets of the links and images of `text` (inline, reference and autolinks), as
/// CommonMark reads them: none from code.
fn links(text: &str) -> Vec<String> {
    parser(text)
        .filter_map(|event| match event {
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                Some(dest_url.into_string())
            }
            _ => None,
        })
        .collect()
}

/// The ids GitHub gives the headings of `text`: the heading's text lowercased, every
/// character but letters, digits, `-`, `_` and spaces dropped, spaces made `-`; a repeated
/// id gets `-1`, `-2`, ... An explicit `{#id}` is its id.
fn heading_ids(text: &str) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut heading: Option<(String, Option<String>)> = None;
    for event in parser(text) {
        match event {
            Event::Start(Tag::Heading { id, .. }) => {
                heading = Some((String::new(), id.map(|id| id.into_string())));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((words, _)) = heading.as_mut() {
                    words.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let Some((words, explicit)) = heading.take() else {
                    continue;
                };
                let id = explicit.unwrap_or_else(|| slug(&words));
                let n = seen.entry(id.clone()).or_default();
                ids.insert(if *n == 0 {
                    id.clone()
                } else {
                    format!("{id}-{n}")
                });
                *n += 1;
            }
            _ => {}
        }
    }
    ids
}

/// GitHub's id of a heading whose text is `words`.
fn slug(words: &str) -> String {
    words
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_get_githubs_ids() {
        let ids = heading_ids(
            "# Watching a job\n## A job at a glance: `tfcluster status`\n## Metrics\n\
             ## Metrics\n```\n# not a heading\n```\n### Différences (TF) {#diff}\n",
        );
        let expected = [
            "a-job-at-a-glance-tfcluster-status",
            "diff",
            "metrics",
            "metrics-1",
            "watching-a-job",
        ];
        assert_eq!(ids.iter().map(String::as_str).collect::<Vec<_>>(), expected);
    }

    #[test]
    fn links_are_read_as_commonmark_reads_them_none_from_code() {
        let text = "[a](x.md#y) and ![i](img.png) `[no](code.md)`\n\n```\n[no](block.md)\n```\n\
                    [ref]: ref.md\n[r][ref] <https://example.com>\n";
        assert_eq!(
            links(text),
            ["x.md#y", "img.png", "ref.md", "https://example.com"]
        );
    }
}

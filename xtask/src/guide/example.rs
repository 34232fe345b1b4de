//! The guide's shell examples: every ```` ```sh ```` block of `README.md` and `docs/guide/`,
//! each with the annotation before it that says how the test runs it
//! (`<!-- example: SCENE; OPTION; ... -->`). A block without one, or with a scene or option
//! this file does not know, is an error naming its file and line. In a comment of several
//! lines the options are one a line (and may hold `;`).
//!
//! Scenes: `local` (this machine), `hosts NAME,...` (network-namespace hosts named in
//! `/etc/hosts`, the block run on every one at once), `etcd NAME,...` (the same, each host
//! running an etcd member on port 2379), `slurm` (in the Slurm suite's cluster),
//! `checked-by SUITE,...: WHY` (run by those suites of the test command, not here) and
//! `not-run: WHY` (hardware or a platform this machine lacks). Options: `runs Ns` (the block
//! runs until then and is stopped: it serves or follows forever; it needs an `expects`, as
//! running on proves nothing), `expects TEXT` (its output holds TEXT; repeatable), `first CMD` (run in the same shell before the block: the server
//! or variable the text around it says is there), `until CMD` (the same, waiting until CMD
//! succeeds: the job the block watches is up), `then CMD` (run in the same shell after the
//! block, its output checked with the block's: what a block that only sets a variable set), `serving ARGS` (a `tfcluster serve ARGS`
//! started first and waited for: the running task the text presumes), `on HOST: CMD` (that
//! host runs CMD, a server the text says is there, instead of the block), `in-checkout` (it runs in the repository,
//! which it builds from) and `substitutes OLD => NEW` (a placeholder the user fills, filled).

use std::path::Path;
use std::time::Duration;

use pulldown_cmark::{CodeBlockKind, Event, Tag, TagEnd};

use crate::doc_links;

/// How long a block that is not declared to run on may take.
pub(crate) const DEFAULT_DEADLINE: Duration = Duration::from_secs(90);

/// How long an `in-checkout` block may take: it builds from the repository, which in a fresh
/// clone compiles `tfcluster` with the features a user gets, a build no suite before it made.
pub(crate) const IN_CHECKOUT_DEADLINE: Duration = Duration::from_secs(20 * 60);

/// One shell block, where it is, and how it runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Example {
    /// `FILE:LINE` of its opening fence.
    pub(crate) place: String,
    /// The block's text, as a user pastes it.
    pub(crate) script: String,
    pub(crate) scene: Scene,
    /// `runs Ns`: it runs until then and is stopped; a block without it must exit 0 within
    /// [`DEFAULT_DEADLINE`] ([`IN_CHECKOUT_DEADLINE`] in the checkout).
    pub(crate) runs: Option<Duration>,
    /// Texts its output must hold.
    pub(crate) expects: Vec<String>,
    /// Placeholders filled, `(what the docs say, what runs)`.
    pub(crate) substitutes: Vec<(String, String)>,
    /// `first CMD`: what the scene runs in the same shell before the block (a server the
    /// block's text says is running, a variable its job has).
    pub(crate) first: Vec<String>,
    /// `then CMD`: what the scene runs in the same shell after the block (showing what a
    /// block that prints nothing did, for `expects`).
    pub(crate) then: Vec<String>,
    /// `serving ARGS`: a `tfcluster serve ARGS` the scene starts first and waits for (until it
    /// prints its `serving` line): the running task the block's text presumes.
    pub(crate) serving: Vec<String>,
    /// `on HOST: CMD`: on that host the scene runs CMD (a server the text says runs there)
    /// instead of the block, until the block has ended on the other hosts.
    pub(crate) on: Vec<(String, String)>,
    /// `in-checkout`: it runs in the repository (it builds from it), not a scene directory.
    pub(crate) in_checkout: bool,
}

/// Where an example runs.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Scene {
    Local,
    /// Network-namespace hosts with these names, the block run on each.
    Hosts(Vec<String>),
    /// The same, each host running an etcd member.
    Etcd(Vec<String>),
    /// In the Slurm suite's cluster.
    Slurm,
    /// Run by these suites of the test command (the prefixes of their names in the floors).
    CheckedBy(Vec<String>),
    /// Needs what this machine lacks: why.
    NotRun(String),
}

impl Example {
    /// The script as it runs: the scene's first commands, then the block with the declared
    /// placeholders filled.
    pub(crate) fn filled(&self) -> String {
        let block = self
            .substitutes
            .iter()
            .fold(self.script.clone(), |text, (old, new)| {
                text.replace(old, new)
            });
        let mut script = String::new();
        for (i, args) in self.serving.iter().enumerate() {
            let log = format!(".serving-{i}.log");
            script.push_str(&format!(
                "tfcluster serve {args} > {log} 2>&1 &\n\
                 until grep -q '^serving' {log}; do sleep 0.1; done\n"
            ));
        }
        script.extend(self.first.iter().map(|c| format!("{c}\n")));
        script.push_str(&block);
        if !self.then.is_empty() && !script.ends_with('\n') {
            script.push('\n');
        }
        script.extend(self.then.iter().map(|c| format!("{c}\n")));
        script
    }
}

/// The files whose examples are run: the root README and the guide.
pub(crate) fn files(root: &Path) -> Result<Vec<std::path::PathBuf>, String> {
    let guide = root.join("docs/guide");
    Ok(doc_links::docs(root)?
        .into_iter()
        .filter(|f| *f == root.join("README.md") || f.parent() == Some(guide.as_path()))
        .collect())
}

/// Every shell block of `text` (shown as `file`), or for each bad one, why.
pub(crate) fn examples(file: &str, text: &str) -> Vec<Result<Example, String>> {
    let mut found = Vec::new();
    let mut comment: Option<String> = None;
    let mut block: Option<(usize, String)> = None;
    for (event, range) in doc_links::parser(text).into_offset_iter() {
        match event {
            Event::Start(Tag::HtmlBlock) => comment = Some(String::new()),
            Event::Html(html) => {
                if let Some(c) = comment.as_mut() {
                    c.push_str(&html);
                }
            }
            Event::End(TagEnd::HtmlBlock) => {}
            Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))) if &*lang == "sh" => {
                let line = text[..range.start].matches('\n').count() + 1;
                block = Some((line, String::new()));
            }
            Event::Text(code) if block.is_some() => {
                if let Some((_, script)) = block.as_mut() {
                    script.push_str(&code);
                }
            }
            Event::End(TagEnd::CodeBlock) => {
                if let Some((line, script)) = block.take() {
                    let place = format!("{file}:{line}");
                    found.push(annotated(&place, comment.take(), script));
                }
                comment = None;
            }
            // Anything else between the comment and the block: the comment is not its.
            Event::Start(_) => comment = None,
            _ => {}
        }
    }
    found
}

/// The example at `place` from its preceding HTML block, if any.
fn annotated(place: &str, comment: Option<String>, script: String) -> Result<Example, String> {
    let Some(body) = comment.as_deref().and_then(|c| {
        c.trim()
            .strip_prefix("<!--")?
            .strip_suffix("-->")?
            .trim()
            .strip_prefix("example:")
    }) else {
        return Err(format!(
            "{place}: a ```sh block without `<!-- example: SCENE -->` before it saying how \
             the test runs it"
        ));
    };
    let body = body.trim();
    let (scene, options) = parse_scene(body).map_err(|e| format!("{place}: {e}"))?;
    let mut example = Example {
        place: place.to_owned(),
        script,
        scene,
        runs: None,
        expects: Vec::new(),
        substitutes: Vec::new(),
        first: Vec::new(),
        then: Vec::new(),
        serving: Vec::new(),
        on: Vec::new(),
        in_checkout: false,
    };
    // One option a line in a comment of several lines (an option may then hold `;`).
    let separator = if body.contains('\n') { '\n' } else { ';' };
    for option in options
        .split(separator)
        .map(str::trim)
        .filter(|o| !o.is_empty())
    {
        parse_option(&mut example, option).map_err(|e| format!("{place}: {e}"))?;
    }
    if example.runs.is_some() && example.expects.is_empty() {
        return Err(format!(
            "{place}: `runs` without `expects TEXT`: a block stopped while it runs passes by \
             running, so it must show what it does"
        ));
    }
    if !example.substitutes.is_empty() {
        for (old, _) in &example.substitutes {
            if !example.script.contains(old.as_str()) {
                return Err(format!(
                    "{place}: substitutes {old:?}, which the block lacks"
                ));
            }
        }
    }
    Ok(example)
}

/// The scene at the start of `body`, and the options after it.
fn parse_scene(body: &str) -> Result<(Scene, &str), String> {
    let names = |list: &str| -> Result<Vec<String>, String> {
        let names: Vec<String> = list.split(',').map(|n| n.trim().to_owned()).collect();
        if names.iter().any(|n| n.is_empty() || n.contains(' ')) {
            return Err(format!("bad host list {list:?}"));
        }
        Ok(names)
    };
    // Reasons run to the end of the comment: they may hold `;`.
    if let Some(why) = body.strip_prefix("not-run:") {
        return Ok((Scene::NotRun(why.trim().to_owned()), ""));
    }
    if let Some(rest) = body.strip_prefix("checked-by ") {
        let Some((suites, why)) = rest.split_once(':') else {
            return Err(format!("checked-by without `: WHY` in {body:?}"));
        };
        if why.trim().is_empty() {
            return Err(format!("checked-by without a reason in {body:?}"));
        }
        return Ok((Scene::CheckedBy(names(suites)?), ""));
    }
    let separator = if body.contains('\n') { '\n' } else { ';' };
    let (head, options) = body.split_once(separator).unwrap_or((body, ""));
    let head = head.trim();
    let scene = match head.split_once(' ') {
        None if head == "local" => Scene::Local,
        None if head == "slurm" => Scene::Slurm,
        Some(("hosts", list)) => Scene::Hosts(names(list)?),
        Some(("etcd", list)) => Scene::Etcd(names(list)?),
        _ => {
            return Err(format!(
                "unknown scene {head:?} (local, hosts NAMES, etcd NAMES, slurm, \
                 checked-by SUITES: WHY, not-run: WHY)"
            ));
        }
    };
    Ok((scene, options))
}

fn parse_option(example: &mut Example, option: &str) -> Result<(), String> {
    if let Some(seconds) = option
        .strip_prefix("runs ")
        .and_then(|s| s.trim().strip_suffix('s'))
    {
        let seconds: u64 = seconds
            .parse()
            .map_err(|e| format!("bad `runs` {option:?}: {e}"))?;
        example.runs = Some(Duration::from_secs(seconds));
    } else if let Some(text) = option.strip_prefix("expects ") {
        example.expects.push(text.trim().to_owned());
    } else if let Some(command) = option.strip_prefix("first ") {
        example.first.push(command.trim().to_owned());
    } else if let Some(command) = option.strip_prefix("then ") {
        example.then.push(command.trim().to_owned());
    } else if let Some(on) = option.strip_prefix("on ") {
        let Some((host, command)) = on.split_once(':') else {
            return Err(format!("`on` without `HOST: CMD` in {option:?}"));
        };
        example
            .on
            .push((host.trim().to_owned(), command.trim().to_owned()));
    } else if let Some(command) = option.strip_prefix("until ") {
        example
            .first
            .push(format!("until {}; do sleep 0.5; done", command.trim()));
    } else if let Some(args) = option.strip_prefix("serving ") {
        example.serving.push(args.trim().to_owned());
    } else if option == "in-checkout" {
        example.in_checkout = true;
    } else if let Some(pair) = option.strip_prefix("substitutes ") {
        let Some((old, new)) = pair.split_once(" => ") else {
            return Err(format!("substitutes without ` => ` in {option:?}"));
        };
        example
            .substitutes
            .push((old.trim().to_owned(), new.trim().to_owned()));
    } else {
        return Err(format!(
            "unknown option {option:?} (runs Ns, expects TEXT, first CMD, until CMD, then CMD, \
             serving ARGS, on HOST: CMD, in-checkout, substitutes OLD => NEW)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn annotations_give_each_block_its_scene_and_options() {
        let text = "# T\n\n<!-- example: hosts node0,node1; runs 5s; expects serving; \
                    substitutes X.whl => y.whl -->\n```sh\npip install X.whl\n```\n\n\
                    <!-- example: not-run: needs a GPU; really -->\n```sh\nnvidia-smi\n```\n\n\
                    ```text\noutput\n```\n";
        let found: Vec<Example> = examples("f.md", text).into_iter().flatten().collect();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].place, "f.md:4");
        assert_eq!(
            found[0].scene,
            Scene::Hosts(vec!["node0".into(), "node1".into()])
        );
        assert_eq!(found[0].runs, Some(Duration::from_secs(5)));
        assert_eq!(found[0].expects, ["serving"]);
        assert_eq!(found[0].filled(), "pip install y.whl\n");
        assert_eq!(found[1].scene, Scene::NotRun("needs a GPU; really".into()));
        let text = "<!-- example: local\nfirst a; b\nruns 2s\nexpects x\nthen echo $X\n-->\n\
                    ```sh\nexport X=1\n```\n";
        let found: Vec<Example> = examples("h.md", text).into_iter().flatten().collect();
        assert_eq!(found[0].first, ["a; b"]);
        assert_eq!(found[0].runs, Some(Duration::from_secs(2)));
        assert_eq!(found[0].filled(), "a; b\nexport X=1\necho $X\n");
    }

    #[test]
    fn a_block_that_runs_on_without_expects_is_refused() {
        let text = "<!-- example: local; runs 5s -->\n```sh\ntfcluster serve\n```\n";
        let found = examples("r.md", text);
        let error = found[0].as_ref().unwrap_err();
        assert!(
            error.starts_with("r.md:2: `runs` without `expects TEXT`"),
            "{error}"
        );
    }

    #[test]
    fn a_block_without_annotation_or_with_an_unknown_scene_names_its_line() {
        let text = "```sh\nls\n```\n\nText.\n<!-- example: local -->\n\nText.\n\n```sh\nls\n```\n\
                    <!-- example: moon -->\n```sh\nls\n```\n";
        let found = examples("g.md", text);
        let errors: Vec<String> = found.into_iter().filter_map(Result::err).collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(errors[0].starts_with("g.md:1: "), "{errors:?}");
        assert!(errors[1].starts_with("g.md:10: "), "{errors:?}");
        assert!(errors[2].contains("unknown scene \"moon\""), "{errors:?}");
    }
}

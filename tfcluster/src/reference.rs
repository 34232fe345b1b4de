//! The command reference (`docs/guide/reference.md`): every command's `--help` as this build
//! prints it, rendered from the command line's definition, so a test can tell when the file
//! is behind the code.

use std::fmt::Write as _;

use clap::Command;

/// The reference of `cli` and each of its commands, depth first, as Markdown.
pub(crate) fn render(mut cli: Command) -> String {
    // Built, each command's usage line names its parents (`tfcluster rendezvous serve`).
    cli.build();
    let mut commands = Vec::new();
    walk(&cli, &mut Vec::new(), &mut commands);
    let mut out = String::from(
        "# Command reference\n\n\
         Every command's `--help`, as `tfcluster` built with all its features prints it \
         (`--from gce` and `--from tpu` need the `gce` feature; the rest is in every build). \
         Generated from the command line's definition; `cargo test -p tfcluster` fails when \
         this file is behind it (`TFCLUSTER_WRITE_REFERENCE=1 cargo test -p tfcluster \
         --all-features reference` writes it again).\n\n",
    );
    for (path, _) in &commands {
        let _ = writeln!(out, "- [`{path}`](#{})", path.replace(' ', "-"));
    }
    for (path, help) in &commands {
        let _ = write!(out, "\n## {path}\n\n```text\n{}\n```\n", help.trim_end());
    }
    out
}

/// `command` and its subcommands (but `help`), each with its path from the top.
fn walk<'a>(command: &'a Command, path: &mut Vec<&'a str>, out: &mut Vec<(String, String)>) {
    path.push(command.get_name());
    let help = command
        .clone()
        .term_width(100)
        .render_long_help()
        .to_string();
    out.push((path.join(" "), help));
    for sub in command.get_subcommands().filter(|s| s.get_name() != "help") {
        walk(sub, path, out);
    }
    path.pop();
}

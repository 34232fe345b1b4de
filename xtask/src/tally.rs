//! What the test command ran: each suite's passed, failed and skipped tests, read from the
//! runners' own output (libtest's lines through cargo, pytest's reports through
//! `xtask/pytest/tfcluster_tally.py`, the Slurm checks as they run), checked against the floors
//! of [`FLOORS`], and summed into the one closing line `cargo xtask test` ends with.
//!
//! A suite that runs fewer tests than its floor, or more (the floor was not raised with the
//! tests added), a suite no floor names or a floor no suite ran, and a skipped or ignored test
//! the floors file does not list, each count as a failure: a dropped test target, a renamed
//! module or a new skip cannot pass unnoticed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use crate::timings::Timings;
use crate::workspace;

/// The floors file, relative to the workspace root.
pub(crate) const FLOORS: &str = "xtask/test-floors.txt";

/// One suite: a test binary of one cargo run, the pytest run, the Slurm checks.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Suite {
    pub(crate) name: String,
    pub(crate) passed: usize,
    /// Each failed test's name, or what broke the suite (it did not build, it crashed).
    pub(crate) failed: Vec<String>,
    /// Each skipped (pytest) or ignored (libtest) test's name.
    pub(crate) skipped: Vec<String>,
    /// How long its tests ran, when its runner says (libtest's `finished in`); the table of
    /// [`crate::timings`] has the rest.
    pub(crate) seconds: Option<f64>,
    /// Each check this suite leaves to another suite, which runs it (a guide example
    /// `checked-by` one): neither passed nor failed here, and shown beside the count.
    pub(crate) elsewhere: Vec<String>,
}

impl Suite {
    pub(crate) fn new(name: impl Into<String>) -> Suite {
        Suite {
            name: name.into(),
            ..Suite::default()
        }
    }

    /// A check that passed or failed (the Slurm checks, which are not a test runner's).
    pub(crate) fn record(&mut self, check: &str, outcome: Result<(), String>) {
        match outcome {
            Ok(()) => self.passed += 1,
            Err(e) => {
                eprintln!("xtask: FAILED: {check}: {e}");
                self.failed.push(format!("{check}: {e}"));
            }
        }
    }
}

/// A suite that could not run at all (its runner could not start, what it tests did not
/// build): one failure under `name`.
pub(crate) fn broken_suite(name: &str, why: String) -> Suite {
    let mut suite = Suite::new(name);
    suite.failed.push(why);
    suite
}

/// The suites in the order they ran.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    suites: Vec<Suite>,
}

impl Tally {
    pub(crate) fn add(&mut self, suites: impl IntoIterator<Item = Suite>) {
        self.suites.extend(suites);
    }

    /// Checks every suite against `floors` and returns the closing line's figures:
    /// (passed, failed, every failure's description).
    pub(crate) fn close(&self, floors: &Floors, whole: bool) -> (usize, usize, Vec<String>) {
        let mut problems = Vec::new();
        let mut passed = 0;
        let mut failed = 0;
        let ran: BTreeSet<&str> = self.suites.iter().map(|s| s.name.as_str()).collect();
        for suite in &self.suites {
            passed += suite.passed;
            failed += suite.failed.len();
            for failure in &suite.failed {
                problems.push(format!("{}: {failure}", suite.name));
            }
            for skip in &suite.skipped {
                if !floors.skips.contains(&format!("{}: {skip}", suite.name)) {
                    failed += 1;
                    problems.push(format!(
                        "{}: {skip} was skipped, and {FLOORS} does not list it as a known skip",
                        suite.name
                    ));
                }
            }
            match floors.counts.get(&suite.name) {
                None => {
                    failed += 1;
                    problems.push(format!(
                        "{}: ran {} tests, but {FLOORS} has no floor for it: add `{} {}`",
                        suite.name, suite.passed, suite.passed, suite.name
                    ));
                }
                // A broken suite's floor is moot: its failure is counted already.
                Some(_) if !suite.failed.is_empty() => {}
                Some(&floor) if suite.passed < floor => {
                    failed += 1;
                    problems.push(format!(
                        "{}: {} tests passed, its floor is {floor}: a test target, module or \
                         test went missing",
                        suite.name, suite.passed
                    ));
                }
                Some(&floor) if suite.passed > floor => {
                    failed += 1;
                    problems.push(format!(
                        "{}: {} tests passed, its floor is {floor}: raise it in {FLOORS} with the \
                         tests added",
                        suite.name, suite.passed
                    ));
                }
                Some(_) => {}
            }
        }
        for name in floors.counts.keys().filter(|_| whole) {
            if !ran.contains(name.as_str()) {
                failed += 1;
                problems.push(format!(
                    "{name}: {FLOORS} has a floor for it, but it did not run"
                ));
            }
        }
        (passed, failed, problems)
    }

    /// Each suite's line, as the summary before the closing line shows it.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.suites
            .iter()
            .map(|s| {
                let seconds = s.seconds.map_or(String::new(), |t| format!("{t:.1} s"));
                let elsewhere = match s.elsewhere.len() {
                    0 => String::new(),
                    n => format!(" ({n} checked by other suites, not counted here)"),
                };
                format!(
                    "{:>6} passed {:>3} failed {:>3} skipped {seconds:>8}  {}{elsewhere}",
                    s.passed,
                    s.failed.len(),
                    s.skipped.len(),
                    s.name
                )
            })
            .collect()
    }
}

/// The floors file: each suite's exact count of passing tests, and the skips it may have.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Floors {
    counts: BTreeMap<String, usize>,
    /// `SUITE: TEST` of each test that may be skipped or ignored.
    skips: BTreeSet<String>,
}

impl Floors {
    /// The workspace's floors file, read before any suite runs so that a bad line fails at
    /// once rather than after the suites.
    /// The suites the floors name: those the test command runs.
    pub(crate) fn suites(&self) -> impl Iterator<Item = &str> {
        self.counts.keys().map(String::as_str)
    }

    pub(crate) fn read() -> Result<Floors, String> {
        let path = workspace::root().join(FLOORS);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        Floors::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Lines `COUNT SUITE` and `skip SUITE: TEST`; `#` starts a comment line.
    fn parse(text: &str) -> Result<Floors, String> {
        let mut floors = Floors::default();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = || format!("line {}: {line:?}", number + 1);
            let (first, rest) = line
                .split_once(char::is_whitespace)
                .ok_or_else(|| format!("{}: expected `COUNT SUITE` or `skip TEST`", at()))?;
            let rest = rest.trim().to_owned();
            if first == "skip" {
                floors.skips.insert(rest);
                continue;
            }
            let count = first
                .parse()
                .map_err(|e| format!("{}: {first:?} is not a count: {e}", at()))?;
            if floors.counts.insert(rest, count).is_some() {
                return Err(format!("{}: a second floor for this suite", at()));
            }
        }
        Ok(floors)
    }
}

/// Runs `command` (a `cargo test`) and returns its suites, named `LABEL: ...`.
pub(crate) fn cargo_test(label: &str, command: &mut Command) -> Vec<Suite> {
    match workspace::run_merged(command) {
        Ok((output, succeeded)) => cargo_suites(label, &output, succeeded),
        Err(e) => vec![broken_suite(&format!("{label}: cargo"), e)],
    }
}

/// A task that runs `suites` alone (`cargo xtask python`, `links`, ...): each counted against
/// its floor, and the closing line.
pub(crate) fn alone(suites: impl IntoIterator<Item = Suite>) -> Result<(), String> {
    let floors = Floors::read()?;
    let mut tally = Tally::default();
    tally.add(suites);
    finish(&tally, &floors, false, None)
}

/// Prints each suite's line, the table of `timings` (when there is one) and every failure,
/// then the closing line, `xtask: N passed, N failed`, last of all. `whole` when the tally is
/// the whole test command's, so that a floor whose suite did not run counts; a task that runs
/// some suites alone passes `false`. Fails (with nothing left to say: the closing line said
/// it) when anything failed.
pub(crate) fn finish(
    tally: &Tally,
    floors: &Floors,
    whole: bool,
    timings: Option<&Timings>,
) -> Result<(), String> {
    let (passed, failed, problems) = tally.close(floors, whole);
    println!("\nxtask: suites:");
    for line in tally.lines() {
        println!("  {line}");
    }
    if let Some(timings) = timings {
        println!("\nxtask: where the time went:");
        for line in timings.table() {
            println!("  {line}");
        }
    }
    if !problems.is_empty() {
        println!("\nxtask: failures:");
        for problem in &problems {
            println!("  {problem}");
        }
    }
    println!("\nxtask: {passed} passed, {failed} failed");
    if failed == 0 {
        Ok(())
    } else {
        Err(String::new())
    }
}

/// The suites of one `cargo test` run, from its merged stdout and stderr: cargo's
/// `Running unittests src/lib.rs (target/debug/deps/cluster_spec-HASH)` and
/// `Doc-tests cluster_spec` lines name each binary, libtest's `test NAME ... FAILED`,
/// `test NAME ... ignored` and `test result:` lines give its tests. Each suite is named
/// `LABEL: BINARY PATH` (`LABEL: CRATE doc-tests`). A binary with no `test result:` line
/// (it crashed, or was killed) is one failure; so is a run that failed with no failure of a
/// binary to show for it (it did not build). A criterion bench (`Running benches/NAME.rs`)
/// run as a test prints `Testing BENCHMARK` and, once it ran, `Success`: each is a test,
/// and one that never printed `Success` failed.
pub(crate) fn cargo_suites(label: &str, output: &str, succeeded: bool) -> Vec<Suite> {
    let mut suites: Vec<Suite> = Vec::new();
    // Whether the last suite printed a result line; the last such line counts, as a failed
    // test's captured output, printed before it, may hold one too.
    let mut result = true;
    // The criterion benchmark that said `Testing` and not yet `Success`.
    let mut testing: Option<String> = None;
    for line in output.lines() {
        let trimmed = line.trim();
        if let Some(name) = binary(trimmed) {
            close(&mut suites, result, testing.take());
            let bench = name.contains(" benches/");
            suites.push(Suite::new(format!("{label}: {name}")));
            // A bench has no `test result:` line: its `Success` lines are its result.
            result = bench;
        } else if let Some(suite) = suites.last_mut() {
            let bench = suite.name.contains(" benches/");
            if let Some(benchmark) = trimmed.strip_prefix("Testing ").filter(|_| bench) {
                close(
                    std::slice::from_mut(suite),
                    true,
                    testing.replace(benchmark.to_owned()),
                );
            } else if trimmed == "Success" && bench && testing.take().is_some() {
                suite.passed += 1;
            } else if let Some(line) = trimmed.strip_prefix("test result: ") {
                suite.passed = count(line, " passed");
                suite.seconds = line
                    .rsplit_once("finished in ")
                    .and_then(|(_, t)| t.strip_suffix('s')?.parse().ok());
                result = true;
            } else if let Some(test) = trimmed.strip_prefix("test ") {
                if let Some(name) = test.strip_suffix(" ... FAILED") {
                    suite.failed.push(name.to_owned());
                } else if let Some((name, _)) = test.split_once(" ... ignored") {
                    suite.skipped.push(name.to_owned());
                }
            }
        }
    }
    close(&mut suites, result, testing);
    if !succeeded && suites.iter().all(|s| s.failed.is_empty()) {
        // It did not build, or failed in a way no binary's result shows.
        suites.push(broken_suite(
            &format!("{label}: cargo"),
            "cargo test failed, and no test binary's result says why: see its output above"
                .to_owned(),
        ));
    }
    suites
}

/// Marks the last suite broken when it never printed its result, and its criterion
/// benchmark `testing` failed when it never printed `Success`.
fn close(suites: &mut [Suite], result: bool, testing: Option<String>) {
    let Some(suite) = suites.last_mut() else {
        return;
    };
    if let Some(benchmark) = testing {
        suite.failed.push(format!(
            "{benchmark}: no `Success`: the bench panicked or was killed"
        ));
    } else if !result {
        suite
            .failed
            .push("no `test result:` line: the test binary crashed or was killed".to_owned());
    }
}

/// `cluster_spec src/lib.rs` from cargo's `Running unittests src/lib.rs
/// (target/debug/deps/cluster_spec-0a1b2c)`, `cluster_spec doc-tests` from `Doc-tests
/// cluster_spec`.
fn binary(line: &str) -> Option<String> {
    if let Some(krate) = line.strip_prefix("Doc-tests ") {
        return Some(format!("{krate} doc-tests"));
    }
    let rest = line.strip_prefix("Running ")?;
    let rest = rest.strip_prefix("unittests ").unwrap_or(rest);
    let (source, artifact) = rest.split_once(" (")?;
    let file = Path::new(artifact.strip_suffix(')')?)
        .file_name()?
        .to_str()?;
    let name = file.rsplit_once('-').map_or(file, |(name, _hash)| name);
    Some(format!("{name} {source}"))
}

/// The number before `word` in libtest's `ok. 9 passed; 0 failed; 2 ignored; ...`.
fn count(result: &str, word: &str) -> usize {
    result
        .split(';')
        .map(str::trim)
        .find_map(|part| part.strip_suffix(word)?.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::{Floors, Suite, Tally, cargo_suites};

    const RUN: &str = "\
   Compiling xtask v0.1.0
     Running unittests src/lib.rs (target/debug/deps/cluster_spec-0a1b2c3d)

running 3 tests
test a ... ok
test b ... ignored, needs a GPU
test c ... ok

test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/elastic.rs (target/debug/deps/elastic-99aa)

running 2 tests
test rounds::x ... FAILED
test rounds::y ... ok

failures:

---- rounds::x stdout ----
test result: ok. 7 passed; this line is the test's own output

failures:
    rounds::x

test result: FAILED. 1 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.00s

     Running tests/crash.rs (target/debug/deps/crash-77)

running 1 test
error: test failed, to rerun pass `--test crash`
   Doc-tests cluster_spec

running 1 test
test cluster-spec/src/lib.rs - (line 5) ... ok

test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.5s
";

    #[test]
    fn each_binary_is_a_suite_with_its_passes_failures_and_skips() {
        let suites = cargo_suites("workspace", RUN, false);
        let names: Vec<&str> = suites.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "workspace: cluster_spec src/lib.rs",
                "workspace: elastic tests/elastic.rs",
                "workspace: crash tests/crash.rs",
                "workspace: cluster_spec doc-tests",
            ]
        );
        assert_eq!(
            (suites[0].passed, suites[0].skipped.clone()),
            (2, vec!["b".to_owned()])
        );
        // The result line is the last one, not the failed test's own output.
        assert_eq!(
            (suites[1].passed, suites[1].failed.clone()),
            (1, vec!["rounds::x".to_owned()])
        );
        assert_eq!(suites[2].passed, 0);
        assert!(suites[2].failed[0].contains("crashed"), "{:?}", suites[2]);
        assert_eq!(suites[3].passed, 1);
        let seconds: Vec<Option<f64>> = suites.iter().map(|s| s.seconds).collect();
        assert_eq!(seconds, [Some(0.01), Some(1.0), None, Some(0.5)]);
    }

    #[test]
    fn each_criterion_benchmark_run_once_is_a_test() {
        let run = "\
     Running benches/visibility.rs (target/debug/deps/visibility-0a1b)
Testing filter 1k devices
Success

Testing filter 100k devices
Success

     Running benches/rendezvous.rs (target/debug/deps/rendezvous-2c3d)
Testing 64 agents
Success
Testing 1024 agents
thread 'main' panicked at benches/rendezvous.rs:9:5:
     Running tests/elastic.rs (target/debug/deps/elastic-4e5f)
Testing words in a test's own output are not a benchmark
test result: ok. 1 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.0s
";
        let suites = cargo_suites("benches", run, false);
        let counts: Vec<(&str, usize, usize)> = suites
            .iter()
            .map(|s| (s.name.as_str(), s.passed, s.failed.len()))
            .collect();
        assert_eq!(
            counts,
            [
                ("benches: visibility benches/visibility.rs", 2, 0),
                ("benches: rendezvous benches/rendezvous.rs", 1, 1),
                ("benches: elastic tests/elastic.rs", 1, 0),
            ]
        );
        assert!(suites[1].failed[0].starts_with("1024 agents: no `Success`"));
    }

    #[test]
    fn a_run_that_fails_with_no_failed_binary_is_a_failure() {
        let suites = cargo_suites("workspace", "error[E0425]: cannot find value `x`\n", false);
        assert_eq!(suites.len(), 1);
        assert_eq!(suites[0].name, "workspace: cargo");
        assert_eq!(suites[0].failed.len(), 1);
        assert!(cargo_suites("workspace", "", true).is_empty());
    }

    fn tally(passed: usize, skipped: &[&str]) -> Tally {
        let mut tally = Tally::default();
        let mut suite = Suite::new("pytest: python/tests");
        suite.passed = passed;
        suite.skipped = skipped.iter().map(|s| (*s).to_owned()).collect();
        tally.add([suite]);
        tally
    }

    #[test]
    fn floors_hold_each_suite_to_its_count_and_its_listed_skips() {
        let floors = Floors::parse(
            "# comment\n\n12 pytest: python/tests\nskip pytest: python/tests: t.py::gpu\n",
        )
        .unwrap();
        assert_eq!(tally(12, &["t.py::gpu"]).close(&floors, true).1, 0);
        let (_, failed, problems) = tally(11, &[]).close(&floors, true);
        assert_eq!(failed, 1);
        assert!(
            problems[0].contains("11 tests passed, its floor is 12"),
            "{problems:?}"
        );
        let (_, failed, problems) = tally(13, &["t.py::other"]).close(&floors, true);
        assert_eq!(failed, 2, "{problems:?}");
        assert!(
            problems
                .iter()
                .any(|p| p.contains("t.py::other was skipped"))
        );
        assert!(problems.iter().any(|p| p.contains("raise it")));
        // A floor with no suite counts only for the whole command.
        let (passed, failed, _) = Tally::default().close(&floors, true);
        assert_eq!((passed, failed), (0, 1));
        assert_eq!(Tally::default().close(&floors, false).1, 0);
        let unknown = Floors::parse("3 other: suite\n").unwrap();
        let (_, failed, problems) = tally(12, &[]).close(&unknown, false);
        assert_eq!(failed, 1);
        assert!(problems[0].contains("has no floor for it"), "{problems:?}");
    }

    #[test]
    fn a_bad_floors_line_names_itself() {
        let e = Floors::parse("twelve pytest: python/tests\n").unwrap_err();
        assert!(
            e.starts_with("line 1: \"twelve pytest: python/tests\""),
            "{e}"
        );
        let e = Floors::parse("1 a\n2 a\n").unwrap_err();
        assert!(e.contains("a second floor"), "{e}");
    }
}

//! `cargo xtask python` and `cargo xtask wheel`: the `tfcluster` Python distribution
//! (`python/`) built, installed into the TensorFlow venv, and tested there.
//!
//! The wheel is built the way `pip install ./python` builds it: through the package's PEP 517
//! backend (maturin's, which first builds the `tfcluster` CLI into the wheel's scripts), with
//! maturin and pytest installed into the venv with pip. The test wheel is a `dev`-profile
//! build, sharing every compiled crate with the workspace's tests (the release profile's fat
//! LTO takes many minutes on CI's two cores); `wheel` builds the release abi3 wheel once and
//! measures it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::tally::{self, Suite};
use crate::{docs_section, machine, static_cli, stats, tf_venv, venv, workspace};

/// What the venv needs besides TensorFlow to build and test the package: maturin builds it,
/// pytest and hypothesis test it beside TensorFlow, mypy's stubtest checks its stubs,
/// grpcio-tools' protoc (the reference compiler, pinned: its version is the compiler's)
/// compiles every `.proto` we publish into Python stubs (`python/tests/test_protos.py`); and to
/// check the Kubernetes manifests (`cargo xtask kubernetes`): the official Kubernetes client's
/// models, PyYAML and jsonschema, pinned so a new client's models do not change the checks.
const TOOLS: &[&str] = &[
    "maturin>=1.9,<2",
    "pytest",
    "hypothesis>=6,<7",
    "mypy>=1.10,<3",
    "grpcio-tools==1.85.1",
    "kubernetes==35.0.0",
    "PyYAML==6.0.3",
    "jsonschema==4.25.1",
];

/// The suite's name in the tally and the floors file.
const SUITE: &str = "pytest: python/tests";

/// `cargo xtask python`: the dev wheel built and installed, then the pytest suite, counted.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

/// The dev wheel built and installed, then `python/tests` with pytest, each test's outcome
/// taken from pytest's own reports (`xtask/pytest/tfcluster_tally.py`). A wheel that does not
/// build or install, or a pytest that reports nothing, is the suite's failure.
pub(crate) fn suite() -> Suite {
    let mut suite = Suite::new(SUITE);
    if let Err(e) = pytest(&mut suite) {
        suite.failed.push(e);
    }
    suite
}

fn pytest(suite: &mut Suite) -> Result<(), String> {
    let python = install()?;
    let root = workspace::root();
    let report = root.join("target/pytest-tally.jsonl");
    clear_file(&report)?;
    // pytest's exit status says what the report says too; the report is what is counted.
    let _ = workspace::run(
        venv::command(&python)
            .args([
                "-m",
                "pytest",
                "-p",
                "no:cacheprovider",
                "-p",
                "tfcluster_tally",
                "-v",
                "-rs",
                "python/tests",
            ])
            .env("PYTHONPATH", root.join("xtask/pytest"))
            .env("TFCLUSTER_TALLY", &report)
            .env("TF_CPP_MIN_LOG_LEVEL", "2"),
    );
    let text = std::fs::read_to_string(&report).map_err(|e| {
        format!(
            "pytest wrote no report to {} ({e}): did it start, and load tfcluster_tally?",
            report.display()
        )
    })?;
    for line in text.lines() {
        let entry: serde_json::Value = serde_json::from_str(line)
            .map_err(|e| format!("{}: not a JSON line ({e}): {line}", report.display()))?;
        let test = entry["test"].as_str().unwrap_or_default().to_owned();
        match entry["outcome"].as_str() {
            Some("passed") => suite.passed += 1,
            Some("skipped") => suite.skipped.push(test),
            _ => suite.failed.push(test),
        }
    }
    Ok(())
}

fn clear_file(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", path.display())),
    }
}

/// The TensorFlow venv's python with the dev wheel of the package installed (for the Slurm
/// scenarios too).
pub(crate) fn install() -> Result<PathBuf, String> {
    let python = tf_venv::python()?;
    ensure_tools(&python)?;
    let started = Instant::now();
    let wheel = build(&python, "dev", "dev")?;
    install_wheel(&python, &wheel)?;
    eprintln!(
        "xtask: python: built and installed {} in {:.2?}",
        wheel.display(),
        started.elapsed()
    );
    Ok(python)
}

/// The CPython versions the wheel claims (abi3 from 3.9), as `python3.X` on the PATH (pyenv's
/// shims on these machines).
const PYTHONS: [&str; 5] = ["3.9", "3.10", "3.11", "3.12", "3.13"];

/// The tests that need neither TensorFlow nor mypy: the module and the CLI (but for the
/// tests marked `tensorflow`, which train).
const PLAIN_TESTS: [&str; 2] = ["python/tests/test_api.py", "python/tests/test_cli.py"];

/// `cargo xtask python --all-pythons [--with-tensorflow]`: the dev wheel built once (abi3,
/// cp39), then on each CPython of [`PYTHONS`] this machine has, a venv of its own
/// (`target/py-venvs/3.X`, pytest and hypothesis from PyPI) with the wheel installed and
/// [`PLAIN_TESTS`] run there; with `--with-tensorflow`, TensorFlow 2.21 installed too where
/// it has a wheel for that Python (about 1.5 GB a venv) and every test but stubtest's and
/// protoc's run (both `cargo xtask python`'s, in the TensorFlow venv: neither depends on the
/// Python version). A table of each Python's outcome; an error when one failed.
pub(crate) fn all_pythons(with_tensorflow: bool) -> Result<(), String> {
    let builder = tf_venv::python()?;
    ensure_tools(&builder)?;
    let wheel = build(&builder, "dev", "dev")?;
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for version in PYTHONS {
        let Some(base) = interpreter(version) else {
            rows.push(format!("| {version} | | not on this machine | |"));
            continue;
        };
        let name = format!("py-venvs/{version}");
        let venv = venv::Venv {
            name: &name,
            check: "import pytest, hypothesis",
        };
        let python = venv.ensure_from(&base, &[&["pytest", "hypothesis>=6,<7"]])?;
        install_wheel(&python, &wheel)?;
        // With TensorFlow where it has a wheel for this Python: every test but stubtest's and
        // protoc's.
        let tensorflow = with_tensorflow
            && workspace::run(venv::pip(&python, "install").args(tf_venv::INSTALL)).is_ok();
        let mut pytest = venv::command(&python);
        pytest.args(["-m", "pytest", "-q", "-p", "no:cacheprovider"]);
        if tensorflow {
            pytest.args([
                "python/tests",
                "--ignore",
                "python/tests/test_stubs.py",
                "--ignore",
                "python/tests/test_protos.py",
            ]);
        } else {
            pytest.args(["-m", "not tensorflow"]).args(PLAIN_TESTS);
        }
        let started = Instant::now();
        let (out, ok) = workspace::run_merged(pytest.env("TF_CPP_MIN_LOG_LEVEL", "2"))?;
        let summary = out
            .lines()
            .rev()
            .find(|line| line.contains(" passed") || line.contains(" failed"))
            .unwrap_or("no pytest summary")
            .trim_matches(|c: char| c == '=' || c.is_whitespace())
            .to_owned();
        let tests = if tensorflow {
            "all but stubtest and protoc, with TensorFlow 2.21"
        } else {
            "module and CLI"
        };
        rows.push(format!(
            "| {version} | {tests} | {summary} | {:.1} s |",
            started.elapsed().as_secs_f64()
        ));
        if !ok {
            failed.push(version);
        }
    }
    println!(
        "\nThe wheel {} on each CPython:\n\n| Python | tests | pytest | time |\n|---|---|---|---|",
        wheel.display()
    );
    for row in rows {
        println!("{row}");
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("pytest failed on Python {}", failed.join(", ")))
    }
}

/// A CPython `version` (`3.12`) of this machine: pyenv's (`$PYENV_ROOT` or `~/.pyenv`,
/// `versions/3.12.*/bin/python3.12`, whatever pyenv's global choice), else `python3.12` on
/// the PATH when it runs.
fn interpreter(version: &str) -> Option<String> {
    let runs = |python: &str| {
        Command::new(python)
            .arg("--version")
            .output()
            .is_ok_and(|out| out.status.success())
    };
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pyenv")))?;
    let mut pyenv: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            name.strip_prefix(version)
                .is_some_and(|rest| rest.starts_with('.'))
        })
        .map(|entry| entry.path().join("bin").join(format!("python{version}")))
        .collect();
    pyenv.sort();
    pyenv
        .into_iter()
        .rev()
        .map(|path| path.to_string_lossy().into_owned())
        .chain(std::iter::once(format!("python{version}")))
        .find(|python| runs(python))
}

/// `cargo xtask wheel`: the release abi3 wheel (`maturin build --release`, manylinux tag, the
/// release CLI in its scripts) in `target/wheels/release`, installed into the venv; prints
/// its size and `import tfcluster`'s time and writes them to `docs/benchmarks.md`.
pub(crate) fn release() -> Result<(), String> {
    let python = tf_venv::python()?;
    ensure_tools(&python)?;
    let started = Instant::now();
    let out = workspace::root().join("target/wheels/release");
    clear(&out)?;
    workspace::run(
        venv::command(&python)
            .arg("python/build_backend/tfcluster_build.py")
            .arg("release"),
    )?;
    workspace::run(
        venv::command(&python)
            .args(["-m", "maturin", "build", "--release", "--manifest-path"])
            .arg("python/Cargo.toml")
            .arg("--out")
            .arg(&out),
    )?;
    let wheel = only_wheel(&out)?;
    let built = started.elapsed();
    install_wheel(&python, &wheel)?;
    let size = std::fs::metadata(&wheel)
        .map_err(|e| format!("cannot stat {}: {e}", wheel.display()))?
        .len();
    let import = import_time_ms(&python)?;
    let name = wheel.file_name().unwrap_or_default().to_string_lossy();
    let body = format!(
        "## The Python wheel\n\n\
         `cargo xtask wheel` on {machine}, {load}: the release abi3 wheel `{name}` \
         (the extension module and the `tfcluster` CLI, both stripped) built in {built:.0?}.\n\n\
         | figure | target | measured |\n|---|---|---|\n\
         | wheel size | ≤ 15 MB | {size_mb:.1} MB |\n\
         | `import tfcluster` (median of {runs}, `python -X importtime`, no TensorFlow) | ≤ 20 ms | \
         {median:.1} ms (min {min:.1}, max {max:.1}) |\n",
        machine = machine::describe(),
        load = machine::load(),
        size_mb = size as f64 / 1e6,
        runs = import.count,
        median = import.median,
        min = import.min,
        max = import.max,
    );
    print!("{body}");
    docs_section::write(
        &workspace::root().join("docs/benchmarks.md"),
        "wheel",
        &body,
    )
}

/// Installs [`TOOLS`] with pip when the venv cannot import them, or holds another
/// grpcio-tools than the pinned one (another protoc).
pub(crate) fn ensure_tools(python: &Path) -> Result<(), String> {
    let grpcio_tools = TOOLS
        .iter()
        .find_map(|tool| tool.strip_prefix("grpcio-tools=="))
        .expect("TOOLS pins grpcio-tools");
    let check = format!(
        "import maturin, pytest, hypothesis, mypy.stubtest, grpc_tools.protoc, kubernetes, yaml, \
         jsonschema\n\
         from importlib.metadata import version\n\
         assert version('grpcio-tools') == '{grpcio_tools}'"
    );
    let ready = Command::new(python)
        .args(["-c", &check])
        .output()
        .is_ok_and(|out| out.status.success());
    if ready {
        return Ok(());
    }
    workspace::run(venv::pip(python, "install").args(TOOLS))
}

/// The dev wheel built ahead, beside the other suites, into a directory of its own (the
/// suites' own builds of it then find cargo's work done; it is not installed).
pub(crate) fn build_ahead() -> Result<(), String> {
    let python = tf_venv::python()?;
    ensure_tools(&python)?;
    build(&python, "dev", "ahead").map(drop)
}

/// Builds the wheel through the package's PEP 517 backend, as `pip install ./python` does,
/// in cargo profile `profile`, its CLI the static one of [`static_cli`] (one build for the
/// image, the wheel and README's `cargo run`), into `target/wheels/DIR`; returns its path.
fn build(python: &Path, profile: &str, dir: &str) -> Result<PathBuf, String> {
    static_cli::install()?;
    let out = workspace::root().join("target/wheels").join(dir);
    clear(&out)?;
    let mut pip = venv::pip(python, "wheel");
    pip.args(["--no-deps", "--no-build-isolation", "--wheel-dir"])
        .arg(&out)
        // A path, not a requirement name.
        .arg("./python")
        .env("MATURIN_PEP517_ARGS", format!("--profile {profile}"));
    workspace::run(static_cli::backend_builds_it(&mut pip))?;
    only_wheel(&out)
}

fn install_wheel(python: &Path, wheel: &Path) -> Result<(), String> {
    workspace::run(
        venv::pip(python, "install")
            .args(["--no-deps", "--force-reinstall"])
            .arg(wheel),
    )
}

/// Removes the wheels a previous build left in `dir`, so the one found after is this build's.
fn clear(dir: &Path) -> Result<(), String> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(format!("cannot remove {}: {e}", dir.display())),
    }
}

/// The one `.whl` in `dir`.
fn only_wheel(dir: &Path) -> Result<PathBuf, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let wheels: Vec<PathBuf> = entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .collect();
    match wheels.as_slice() {
        [wheel] => Ok(wheel.clone()),
        _ => Err(format!(
            "expected one wheel in {}, found {wheels:?}",
            dir.display()
        )),
    }
}

/// `import tfcluster`'s cumulative time in milliseconds, as `python -X importtime` reports
/// it, over 21 fresh interpreters (the first run, which warms the page cache, left out).
fn import_time_ms(python: &Path) -> Result<stats::Summary, String> {
    let mut times = Vec::new();
    for run in 0..22 {
        let out = Command::new(python)
            .args(["-X", "importtime", "-c", "import tfcluster"])
            .current_dir(std::env::temp_dir())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
        if !out.status.success() {
            return Err(format!(
                "import tfcluster failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        // `import time: self [us] | cumulative | imported package`, the package's own line.
        let micros = stderr
            .lines()
            .filter_map(|line| {
                let mut fields = line.strip_prefix("import time:")?.split('|');
                let cumulative = fields.nth(1)?.trim().parse::<f64>().ok()?;
                (fields.next()?.trim() == "tfcluster").then_some(cumulative)
            })
            .next()
            .ok_or_else(|| format!("python -X importtime printed no tfcluster line:\n{stderr}"))?;
        if run > 0 {
            times.push(micros / 1000.0);
        }
    }
    stats::Summary::of(&times).ok_or_else(|| "no import time measured".to_owned())
}

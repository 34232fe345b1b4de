//! Warm restarts: [`Prewarm`], which modules a warm interpreter imports before its round,
//! which commands qualify, and what a launcher does with them ([`WarmPool`]).

mod pool;
mod warm;

use std::path::Path;
use std::time::Duration;

use tokio::process::Command;

pub use pool::WarmPool;

/// The module a `python` command's warm interpreter imports unless told otherwise.
pub const DEFAULT_MODULE: &str = "tensorflow";

/// The interpreters' program, run as `python -c BOOTSTRAP MODE MODULES TARGET...`.
const BOOTSTRAP: &str = include_str!("prewarm/bootstrap.py");

/// How long the check of `--prewarm`'s modules may take (a dotted name imports its parents).
const CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// Which modules the agent's warm interpreters import before their round.
///
/// **What qualifies.** A command `python`, `python3` or `python3.N` (any directory), then
/// interpreter options among `-b -B -d -E -I -O -P -q -s -S -u -v` (combined too: `-OO`,
/// `-uB`) and `-W ARG`, `-X ARG`, then a script and its arguments, or `-m MODULE` and its
/// arguments. Anything else (`-c`, `-i`, `-x`, a script on stdin `-`, a shell, a wrapper
/// such as `env python`) starts cold.
///
/// **How.** For each local task the agent keeps an interpreter started with the task's
/// options, its fixed variables (its `CUDA_VISIBLE_DEVICES`, `PYTHONUNBUFFERED`) and the
/// agent's environment less `TF_CONFIG`, which imports the modules and then waits on its
/// stdin (a socket) for the round. When the round forms, the agent writes the task's
/// environment there; the interpreter sets it (`os.environ`, so C's `getenv` sees it too:
/// TensorFlow reads `TF_CONFIG` when a strategy is built, not at import), sets
/// `TFCLUSTER_WARM` to its start time (seconds since the epoch), writes out what it printed
/// while importing (the last 64 KiB of each stream), points stdin at `/dev/null` and runs the
/// target as python would: `sys.argv`, `__main__`, `sys.path[0]` the script's directory (the
/// working directory for `-m`), exit status (an uncaught exception's traceback and status 1,
/// SIGINT's for `KeyboardInterrupt`). It is the task's process from then on, in its own
/// process group. A module that fails to import is dropped from `sys.modules` (the script
/// imports it afresh, as cold) and the agent starts no more warm interpreters; a warning
/// says so. A warm interpreter still importing is handed its round all the same: it
/// finishes the import, then runs. One that died starts its task cold. The first
/// interpreters start before the agent joins; after a handoff, the slot's next one starts
/// once the one handed the round has imported (two imports at once would share the cores
/// with the round's own start), and imports while the round runs. The agent kills its spare
/// interpreters when it ends. What differs from a cold start: `sys.orig_argv` (the
/// bootstrap's), and modules imported before the script's own code runs.
///
/// **GPUs.** `CUDA_VISIBLE_DEVICES` must be in a process's environment before TensorFlow
/// first lists or uses a device, and `import tensorflow` does neither; a local task's GPUs
/// are fixed for the agent's life, so its warm interpreter starts with them set. A prewarmed
/// module that touches a GPU when imported would still see the right devices, but would hold
/// them (its CUDA context) from before its round.
///
/// **Memory.** Each warm interpreter holds what its imports load (TensorFlow 2.21 on a CPU
/// host: about 0.5 GB resident); the agent logs it (`rss_mb`) when one is ready. The agent
/// itself holds nothing of Python.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Prewarm {
    /// No warm interpreters: every task starts cold.
    #[default]
    Off,
    /// [`DEFAULT_MODULE`]; when it does not import (TensorFlow not installed), a warning, and
    /// no more warm interpreters: tasks start cold.
    Default,
    /// These modules, named by the user: one that cannot be found (from the script's
    /// `sys.path`) fails the agent before it joins ([`PrewarmError::Module`]); one found that
    /// fails to import, a warning, and no more warm interpreters.
    Modules(Vec<String>),
}

impl Prewarm {
    /// The modules to import; none when off.
    fn modules(&self) -> Vec<String> {
        match self {
            Self::Off => Vec::new(),
            Self::Default => vec![DEFAULT_MODULE.to_owned()],
            Self::Modules(modules) => modules.clone(),
        }
    }
}

/// Why a launcher's Python command cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PrewarmError {
    /// The command's script does not exist: python's own message, said once before joining
    /// rather than by a failed task in every round.
    #[error("{program}: can't open file '{path}': [Errno 2] No such file or directory")]
    NoScript {
        /// The interpreter, as the command names it.
        program: String,
        /// The script's absolute path.
        path: String,
    },
    /// A module of `--prewarm` cannot be found.
    #[error("cannot prewarm module `{module}` (--prewarm): {error}")]
    Module {
        /// The module.
        module: String,
        /// Python's exception, e.g. `ModuleNotFoundError: No module named 'x'`.
        error: String,
    },
}

/// A command that a warm interpreter can run: see the module's doc.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PythonCommand {
    program: String,
    /// Interpreter options: the warm interpreter starts with them.
    options: Vec<String>,
    /// `[SCRIPT, ARGS...]` or `[-m, MODULE, ARGS...]`.
    target: Vec<String>,
}

/// Single-letter options that take no argument and change nothing a warm start would miss.
const FLAG_LETTERS: &str = "bBdEIOPqsSuv";

impl PythonCommand {
    /// `argv` when it qualifies.
    pub(crate) fn parse(argv: &[String]) -> Option<Self> {
        let (program, rest) = argv.split_first()?;
        let name = Path::new(program).file_name()?.to_str()?;
        let version = name.strip_prefix("python")?;
        let qualifies = match version.strip_prefix("3.") {
            Some(minor) => !minor.is_empty() && minor.bytes().all(|b| b.is_ascii_digit()),
            None => version.is_empty() || version == "3",
        };
        if !qualifies {
            return None;
        }
        let mut options = Vec::new();
        let mut i = 0;
        while let Some(arg) = rest.get(i) {
            let Some(letters) = arg.strip_prefix('-') else {
                break;
            };
            match letters {
                "m" => break,
                "W" | "X" => {
                    options.extend([arg.clone(), rest.get(i + 1)?.clone()]);
                    i += 2;
                    continue;
                }
                _ if letters.starts_with(['W', 'X']) && letters.len() > 1 => {}
                _ if !letters.is_empty() && letters.chars().all(|c| FLAG_LETTERS.contains(c)) => {}
                _ => return None,
            }
            options.push(arg.clone());
            i += 1;
        }
        let target = rest[i..].to_vec();
        match target.first().map(String::as_str) {
            Some("-m") if target.len() >= 2 => {}
            Some(script) if !script.starts_with('-') => {}
            _ => return None,
        }
        Some(Self {
            program: program.clone(),
            options,
            target,
        })
    }

    /// The script, unless the target is a module.
    fn script(&self) -> Option<&str> {
        let first = self.target.first()?;
        (first != "-m").then_some(first.as_str())
    }

    /// The interpreter with its options.
    fn interpreter(&self) -> Command {
        let mut command = Command::new(&self.program);
        command.args(&self.options);
        command
    }

    /// What a cold start would report at once, said before joining: a script that does not
    /// exist ([`PrewarmError::NoScript`]), and for [`Prewarm::Modules`] a module that cannot
    /// be found ([`PrewarmError::Module`]; by `importlib.util.find_spec` from the script's
    /// `sys.path`, without importing it). An interpreter that cannot run is left to the task's own start.
    pub(crate) async fn check(&self, prewarm: &Prewarm) -> Result<(), PrewarmError> {
        if let Some(script) = self.script()
            && let Err(e) = std::fs::metadata(script)
            && e.kind() == std::io::ErrorKind::NotFound
        {
            let path = std::path::absolute(script).unwrap_or_else(|_| script.into());
            return Err(PrewarmError::NoScript {
                program: self.program.clone(),
                path: path.display().to_string(),
            });
        }
        let Prewarm::Modules(modules) = prewarm else {
            return Ok(());
        };
        let mut command = self.interpreter();
        command
            .args(["-c", BOOTSTRAP, "find", &modules.join(",")])
            .args(&self.target)
            .env_remove("TF_CONFIG")
            .kill_on_drop(true);
        crate::withheld_env::withhold(&mut command);
        let output = match tokio::time::timeout(CHECK_TIMEOUT, command.output()).await {
            Ok(Ok(output)) => output,
            Ok(Err(e)) => {
                tracing::warn!(program = %self.program, error = %e, "cannot check the --prewarm modules");
                return Ok(());
            }
            Err(_) => {
                tracing::warn!(program = %self.program, timeout = ?CHECK_TIMEOUT, "the check of the --prewarm modules ran past its deadline");
                return Ok(());
            }
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        match stdout.lines().next().and_then(|line| line.split_once('\t')) {
            Some((module, error)) => Err(PrewarmError::Module {
                module: module.to_owned(),
                error: error.to_owned(),
            }),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;

//! # failure-policy — what a TensorFlow task's failure means
//!
//! Pure rules over how a task ended, shared by whatever acts on them: the launcher that
//! supervises a host's tasks (`tfcluster run --local`), the elastic agent, and the
//! rendezvous that decides for a whole job (`tfcluster rendezvous serve`). Nothing here
//! starts a process, opens a socket or reads a clock, so the rendezvous applies the same
//! rules as the launcher without linking a process supervisor, and every rule is a plain
//! function to test.
//!
//! - [`TaskEnd`]: how a task ended (an exit status, a signal, the watchdog's hung verdict,
//!   a failure to start), and whether it was a planned exit ([`TaskEnd::is_planned`]:
//!   TensorFlow's `PreemptionCheckpointHandler` exits 42 after saving, or 143).
//! - What a failure restarts: TensorFlow's failure domains ([`RestartScope::restart`]: a
//!   ParameterServerStrategy worker alone, a parameter server with the chief, an evaluator
//!   alone, a MultiWorkerMirroredStrategy worker with the round, the [`Strategy`] read from
//!   the cluster's jobs), and the bound on one task's restarts ([`RestartPolicy`]).
//! - Crash loops ([`CrashLoop`]): the same failure, by its [`Signature`] (how it ended and
//!   its stderr's last line, numbers masked), on two hosts in a row or twice on one host
//!   without progress: the program's bug, not the machine's; restarting it again only spends
//!   the job's restarts.
//!
//! **Who depends on it:** `tfcluster-launcher` (its supervisor reports a [`TaskEnd`]),
//! `tfcluster-elastic` (the rendezvous's rules and its agent), the `tfcluster` CLI; and any
//! Rust program that restarts TensorFlow tasks and wants TensorFlow's failure domains. It
//! depends on nothing of ours and pulls only `thiserror` and `libc` (the platform's signal
//! numbers).
//!
//! ## Features
//!
//! None.
//!
//! ## Example
//!
//! A ParameterServerStrategy worker's failure restarts it alone; the same traceback on two
//! hosts in a row is a crash loop:
//!
//! ```
//! use failure_policy::{CrashLoop, Restart, RestartScope, Signature, Strategy, TaskEnd};
//!
//! let strategy = Strategy::of_jobs(["chief", "ps", "worker"]);
//! assert_eq!(RestartScope::Auto.restart(strategy, "worker"), Restart::Task);
//! assert_eq!(RestartScope::Auto.restart(strategy, "ps"), Restart::WithChief);
//!
//! let end = TaskEnd::Exited(1);
//! let tail = "Traceback (most recent call last):\nValueError: bad shape (3, 4)\n";
//! let signature = Signature::of(&end, tail);
//! let mut loops = CrashLoop::default();
//! assert_eq!(loops.failed("host-a", signature.clone(), true), None);
//! assert!(loops.failed("host-b", signature, true).is_some());
//! assert!(TaskEnd::Exited(42).is_planned());
//! ```
//!
//! ## Differences from TensorFlow
//!
//! TensorFlow has no restart policy: it documents what each strategy survives (a
//! ParameterServerStrategy `ClusterCoordinator` waits for a lost worker to come back at its
//! address; MultiWorkerMirroredStrategy's collectives cannot take a new process) and leaves
//! restarting to whatever runs it. These rules are that documentation as code; the
//! exceptions TensorFlow raises when *another* task failed (`UnavailableError`,
//! `AbortedError`, ...) are never a crash loop's signature, since every survivor of a lost
//! task raises them.
//!
//! ## Performance
//!
//! A signature reads the last lines of a task's stderr tail (at most 8 KiB as the launcher
//! keeps it) once per failure; a decision is a table look-up. `benches/failure_policy.rs`
//! measures both.

mod crash_loop;
mod failure_domain;
mod task_end;

pub use crash_loop::{CrashLoop, CrashLoopFound, LastFailure, Signature};
pub use failure_domain::{
    DEFAULT_MAX_TASK_RESTARTS, InvalidRestartScope, Restart, RestartPolicy, RestartScope, Strategy,
};
pub use task_end::{PLANNED_EXIT_CODES, TaskEnd};

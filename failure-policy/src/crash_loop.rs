//! Crash loops: a failure that is the program's, not the machine's, found by its
//! [`Signature`] — how the task ended and the last line of its stderr, numbers and addresses
//! masked — recurring: on two different hosts one after the other, or twice in a row on one
//! host with no progress in between. Restarting it again would only spend the job's
//! restarts, each a full start, on the same traceback.
//!
//! Only a failure the program raised has a signature: a non-zero exit or a fault signal
//! (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL). A kill from outside (SIGKILL from an operator or
//! the OOM killer, SIGTERM, SIGINT, SIGHUP), a hung task (the watchdog's kill), a planned
//! exit ([`TaskEnd::is_planned`]) and a task that could not start say nothing about the
//! program's code. Nor does a failure TensorFlow blames on another task (a peer unreachable,
//! collectives aborted because a peer stopped, a collective's deadline): every survivor of a
//! lost task fails with the same words, on every host, fault after fault (measured: a task
//! stopped, then a host's link down, made the same `UnavailableError` on two hosts in a row),
//! and the cause is elsewhere.
//!
//! ```
//! use failure_policy::{CrashLoop, Signature, TaskEnd};
//!
//! let tail = "Traceback (most recent call last):\nValueError: shape (3, 4) at step 17\n";
//! let signature = Signature::of(&TaskEnd::Exited(1), tail).unwrap();
//! assert_eq!(signature.as_str(), "exited with status 1: ValueError: shape (N, N) at step N");
//!
//! let mut loops = CrashLoop::default();
//! assert_eq!(loops.failed("host-a", Some(signature.clone()), true), None);
//! let found = loops.failed("host-b", Some(signature), true).unwrap();
//! assert_eq!(found.hosts, ["host-a", "host-b"]);
//! ```

use std::fmt;

use crate::TaskEnd;

/// The most characters of a signature: a last line is a message, not a document.
const MAX_SIGNATURE: usize = 300;

/// Signals a program raises on itself when it crashes (a fault, an abort): the same signal
/// again is the same bug. Others come from outside.
const FAULT_SIGNALS: [i32; 5] = [
    libc::SIGILL,
    libc::SIGABRT,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGSEGV,
];

/// A failure's signature: how the task ended and the last non-empty line of its stderr,
/// with every run of digits (addresses, ports, pids, steps, shapes) masked as `N`, so the
/// same bug reads the same on every host and at every step.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Signature(String);

impl Signature {
    /// The signature of a task that ended with `end`, its stderr ending with `tail`; `None`
    /// when the end is not the program's own doing (see the module's documentation).
    pub fn of(end: &TaskEnd, tail: &str) -> Option<Self> {
        let raised = match end {
            TaskEnd::Exited(code) => *code != 0 && !end.is_planned(),
            TaskEnd::Signaled(signal) => FAULT_SIGNALS.contains(signal),
            _ => false,
        };
        if !raised || blames_a_peer(tail) {
            return None;
        }
        let line = tail
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Some(Self::from_parts(end, line))
    }

    /// The signature of a planned exit (42, 143) that the caller found to loop (the
    /// rendezvous's rule: several in a row without progress and with no notice standing),
    /// which [`of`](Self::of) gives none: its status and its stderr's last line, as a
    /// failure's, so that the loop is a crash loop.
    pub fn of_planned_loop(end: &TaskEnd, tail: &str) -> Self {
        let line = tail.lines().rev().find(|l| !l.trim().is_empty());
        Self::from_parts(end, line.unwrap_or(""))
    }

    fn from_parts(end: &TaskEnd, line: &str) -> Self {
        let mut text = end.to_string();
        // The status's own number stays: exit 1 and exit 2 are different failures.
        if !line.trim().is_empty() {
            text.push_str(": ");
            text.push_str(&mask(line.trim()));
        }
        if let Some((cut, _)) = text.char_indices().nth(MAX_SIGNATURE) {
            text.truncate(cut);
        }
        Self(text)
    }

    /// A signature as stored and shown (what [`as_str`](Self::as_str) gave).
    pub fn from_stored(text: String) -> Self {
        Self(text)
    }

    /// The signature as text: `exited with status 1: ValueError: bad shape (N, N)`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The exceptions TensorFlow raises when another task failed: unreachable
/// (`UnavailableError`; ParameterServerStrategy's `PSUnavailableError`), a collective
/// aborted or a peer back as a new incarnation (`AbortedError`), a collective's deadline
/// (`DeadlineExceededError`).
const PEER_ERRORS: [&str; 4] = [
    "UnavailableError",
    "PSUnavailableError",
    "AbortedError",
    "DeadlineExceededError",
];

/// The coordination service's and the collectives' words for a peer's failure, in its
/// runtime's log or an exception's message.
const PEER_WORDS: [&str; 3] = [
    "Collective ops is aborted",
    "The following tasks are unhealthy",
    "failed to connect to all addresses",
];

/// How many of the tail's last lines are read for [`PEER_WORDS`]: an exception's message and
/// the runtime's last errors, not the program's whole log.
const PEER_LINES: usize = 20;

/// Whether the task's stderr ends with TensorFlow blaming another task: the last exception
/// Python raised (`module.NameError: message`) is one of [`PEER_ERRORS`], or its last
/// lines say one of [`PEER_WORDS`].
fn blames_a_peer(tail: &str) -> bool {
    let mut lines = tail.lines().rev().filter(|l| !l.trim().is_empty());
    if lines
        .clone()
        .take(PEER_LINES)
        .any(|l| PEER_WORDS.iter().any(|w| l.contains(w)))
    {
        return true;
    }
    let raised = lines.find_map(|line| {
        let (head, _) = line.trim_start().split_once(": ")?;
        let plain = head
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
        let name = head.rsplit('.').next()?;
        (plain && (name.ends_with("Error") || name.ends_with("Exception"))).then_some(name)
    });
    raised.is_some_and(|name| PEER_ERRORS.contains(&name))
}

/// `line` with each run of digits (and hex digits after `0x`) replaced by `N`.
fn mask(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() {
            let hex = c == '0' && chars.peek() == Some(&'x');
            if hex {
                chars.next();
                while chars.next_if(char::is_ascii_hexdigit).is_some() {}
            } else {
                while chars.next_if(char::is_ascii_digit).is_some() {}
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

/// The last failure a [`CrashLoop`] saw: its host and its signature (none: not the
/// program's).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LastFailure {
    /// The host its task ran on.
    pub host: String,
    /// Its signature, when it has one.
    pub signature: Option<Signature>,
}

/// A crash loop found: the signature and the hosts it was seen on, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashLoopFound {
    /// The signature both failures share.
    pub signature: Signature,
    /// The hosts, the earlier failure's first (the same host twice when it recurred there
    /// without progress).
    pub hosts: [String; 2],
}

impl fmt::Display for CrashLoopFound {
    /// `a crash loop: "exited with status 1: ValueError: …" on host-a, then on host-b`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [first, second] = &self.hosts;
        if first == second {
            write!(
                f,
                "a crash loop: {:?} twice in a row on {first}, with no progress in between",
                self.signature.as_str()
            )
        } else {
            write!(
                f,
                "a crash loop: {:?} on {first}, then on {second}",
                self.signature.as_str()
            )
        }
    }
}

/// Watches a job's failures, one after the other, for a crash loop.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CrashLoop {
    /// The last failure seen (planned exits are not failures).
    pub last: Option<LastFailure>,
}

impl CrashLoop {
    /// A task on `host` failed with `signature` (`None`: not the program's doing); it made
    /// progress before it failed when `progressed` (any output past its start, or a touch of
    /// its progress file). Returns the crash loop it completes: the same signature as the
    /// last failure, seen on another host, or on the same host without progress.
    pub fn failed(
        &mut self,
        host: &str,
        signature: Option<Signature>,
        progressed: bool,
    ) -> Option<CrashLoopFound> {
        let last = self.last.replace(LastFailure {
            host: host.to_owned(),
            signature: signature.clone(),
        })?;
        let signature = signature?;
        let recurred = last.signature.as_ref() == Some(&signature);
        (recurred && (last.host != host || !progressed)).then(|| CrashLoopFound {
            signature,
            hosts: [last.host, host.to_owned()],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planned_exit_has_a_signature_only_when_found_to_loop() {
        let planned = TaskEnd::Exited(42);
        assert_eq!(Signature::of(&planned, "saved\n"), None);
        let looped = Signature::of_planned_loop(&planned, "saved at step 7\n\n");
        assert_eq!(
            looped,
            Signature::of_planned_loop(&planned, "saved at step 9")
        );
        assert_ne!(
            looped,
            Signature::of_planned_loop(&TaskEnd::Exited(143), "saved")
        );
    }

    fn sig(end: TaskEnd, tail: &str) -> Option<Signature> {
        Signature::of(&end, tail)
    }

    #[test]
    fn numbers_and_addresses_are_masked_and_the_status_kept() {
        let s = sig(
            TaskEnd::Exited(1),
            "Unavailable: failed to connect to 10.0.0.2:2222 at 0x7f3a9c after 30s\n\n",
        )
        .unwrap();
        assert_eq!(
            s.as_str(),
            "exited with status 1: Unavailable: failed to connect to N.N.N.N:N at N after Ns"
        );
        let two = sig(
            TaskEnd::Exited(2),
            "Unavailable: failed to connect to 10.0.0.9:2223",
        );
        assert_ne!(Some(s), two, "exit 1 and exit 2 are different failures");
        assert_eq!(
            sig(TaskEnd::Signaled(11), "").unwrap().as_str(),
            "was killed by signal 11"
        );
    }

    #[test]
    fn only_what_the_program_raised_has_a_signature() {
        assert_eq!(sig(TaskEnd::Exited(0), "done"), None);
        for planned in [42, 143] {
            assert_eq!(sig(TaskEnd::Exited(planned), "saved"), None);
        }
        for outside in [9, 15, 2, 1] {
            assert_eq!(sig(TaskEnd::Signaled(outside), "step 3"), None, "{outside}");
        }
        let hung = TaskEnd::Hung {
            quiet: std::time::Duration::from_secs(5),
        };
        assert_eq!(sig(hung, "File \"x.py\", line 3"), None);
        assert_eq!(sig(TaskEnd::Error("no such file".into()), ""), None);
        assert!(sig(TaskEnd::Signaled(6), "Fatal Python error: Aborted").is_some());
    }

    /// The end of a MultiWorkerMirroredStrategy survivor's stderr (TF 2.21) after a peer's
    /// host lost its link: what every survivor prints, fault after fault.
    const SURVIVOR: &str = "\
E0000 00:00:1795938337.138434   24574 ring_alg.cc:291] Aborting RingReduce with UNAVAILABLE: Collective ops is aborted by: Error reported from /job:worker/task:2: The following tasks are unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:2
Traceback (most recent call last):
  File \"goodput_train.py\", line 79, in <module>
    train_step(x, tf.matmul(x, w_true) + 0.5)
tensorflow.python.framework.errors_impl.UnavailableError: Graph execution error:

Detected at node CollectiveReduceV2 defined at (most recent call last):
  File \"goodput_train.py\", line 79, in <module>

Collective ops is aborted by: Error reported from /job:worker/task:2: The following tasks are unhealthy (stopped sending heartbeats):
/job:worker/replica:0/task:2
The tasks have crashed. Check the task logs for an earlier error, or scheduler events (e.g. preemption, eviction) to debug further.
The error could be from a previous operation. Restart your program to reset.
	 [[{{node CollectiveReduceV2}}]] [Op:__inference_train_step_152]
";

    #[test]
    fn a_failure_tensorflow_blames_on_a_peer_has_no_signature() {
        assert_eq!(sig(TaskEnd::Exited(1), SURVIVOR), None);
        // Twice on two hosts in a row: no crash loop.
        let mut loops = CrashLoop::default();
        for host in ["a", "b"] {
            assert_eq!(
                loops.failed(host, sig(TaskEnd::Exited(1), SURVIVOR), false),
                None
            );
        }
        // The exception alone, deep in the tail, is enough; so are the words alone.
        let ps = "Traceback (most recent call last):\n  File \"c.py\", line 9\n\
                  tensorflow.python.distribute.coordinator.cluster_coordinator.PSUnavailableError: \
                  ps 0 is gone\n  more context\n";
        assert_eq!(sig(TaskEnd::Exited(1), ps), None);
        let deadline = "tensorflow.python.framework.errors_impl.DeadlineExceededError: \
                        Collective timed out\n";
        assert_eq!(sig(TaskEnd::Exited(1), deadline), None);
        assert_eq!(
            sig(
                TaskEnd::Signaled(6),
                "F0000 coordination: The following tasks are unhealthy"
            ),
            None
        );
        // The program's own exception after an earlier, caught one of a peer: its own.
        let own = "WARNING:tensorflow:From x.py:3: UnavailableError: retrying\n\
                   Traceback (most recent call last):\nValueError: bad batch 7\n";
        assert_eq!(
            sig(TaskEnd::Exited(1), own).unwrap().as_str(),
            "exited with status 1: ValueError: bad batch N"
        );
    }

    #[test]
    fn a_long_line_is_cut() {
        let s = sig(TaskEnd::Exited(1), &"é".repeat(1000)).unwrap();
        assert_eq!(s.as_str().chars().count(), MAX_SIGNATURE);
    }

    #[test]
    fn the_same_signature_on_two_hosts_is_a_loop_whatever_the_progress() {
        let boom = sig(TaskEnd::Exited(1), "ValueError: bad input 3");
        let mut loops = CrashLoop::default();
        assert_eq!(loops.failed("a", boom.clone(), true), None);
        let found = loops.failed("b", boom, true).unwrap();
        assert_eq!(found.hosts, ["a", "b"]);
        assert_eq!(
            found.to_string(),
            "a crash loop: \"exited with status 1: ValueError: bad input N\" on a, then on b"
        );
    }

    #[test]
    fn on_one_host_only_without_progress() {
        let boom = sig(TaskEnd::Exited(1), "ValueError: bad input");
        let mut loops = CrashLoop::default();
        assert_eq!(loops.failed("a", boom.clone(), false), None);
        assert_eq!(loops.failed("a", boom.clone(), true), None, "it progressed");
        let found = loops.failed("a", boom, false).unwrap();
        assert!(
            found
                .to_string()
                .contains("twice in a row on a, with no progress")
        );
    }

    #[test]
    fn another_failure_in_between_breaks_the_chain() {
        let boom = sig(TaskEnd::Exited(1), "ValueError: bad input");
        let other = sig(TaskEnd::Exited(1), "OSError: disk full");
        let mut loops = CrashLoop::default();
        loops.failed("a", boom.clone(), false);
        loops.failed("b", other, false);
        assert_eq!(loops.failed("c", boom.clone(), false), None);
        // A kill from outside has no signature, and breaks it too.
        loops.failed("c", None, false);
        assert_eq!(loops.failed("d", boom, false), None);
    }
}

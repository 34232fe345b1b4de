//! Properties of the failure rules over any input: signatures (numbers masked, messages kept
//! apart, bounded, none for what is not the program's doing), the failure-domain table (one
//! answer per scope, strategy and job, as the guide's table says), crash loops (found only
//! for a signature seen twice), and the restart scope's words.

use failure_policy::{CrashLoop, Restart, RestartScope, Signature, Strategy, TaskEnd};
use proptest::prelude::*;
use proptest::strategy::Strategy as Generator;

/// A message with numbers in it: words, each followed by a number, as a traceback's last
/// line reads (`shape (3, 4) at step 17`, `10.0.0.2:2222`).
fn message() -> impl Generator<Value = (Vec<String>, Vec<u64>)> {
    prop::collection::vec("[A-Za-z][A-Za-z:(),. ]{0,12}", 1..6).prop_flat_map(|words| {
        let n = words.len();
        (Just(words), prop::collection::vec(any::<u64>(), n))
    })
}

fn line(words: &[String], numbers: &[u64]) -> String {
    words
        .iter()
        .zip(numbers)
        .map(|(w, n)| format!("{w}{n}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// How a task may end: any exit status, any signal, hung, could not start.
fn any_end() -> impl Generator<Value = TaskEnd> {
    prop_oneof![
        any::<i32>().prop_map(TaskEnd::Exited),
        (1..65i32).prop_map(TaskEnd::Signaled),
        ".{0,20}".prop_map(TaskEnd::Error),
        (0..100_000u64).prop_map(|s| TaskEnd::Hung {
            quiet: std::time::Duration::from_secs(s)
        }),
    ]
}

proptest! {
    /// The same bug reads the same wherever its numbers (steps, shapes, ports, pids) differ.
    #[test]
    fn masking_is_stable_under_changed_numbers(
        (words, first) in message(),
        seed in any::<u64>(),
        code in 1..255i32,
    ) {
        prop_assume!(code != 42 && code != 143);
        let second: Vec<u64> = first.iter().map(|n| n.wrapping_mul(31).wrapping_add(seed)).collect();
        let end = TaskEnd::Exited(code);
        let a = Signature::of(&end, &format!("Traceback\nValueError: {}\n", line(&words, &first)));
        let b = Signature::of(&end, &format!("Traceback\nValueError: {}\n", line(&words, &second)));
        prop_assert!(a.is_some());
        prop_assert_eq!(a, b);
    }

    /// Different messages (or different exit statuses) are different failures.
    #[test]
    fn different_messages_differ(a in "[A-Za-z]{1,40}", b in "[A-Za-z]{1,40}", code in 1..42i32) {
        prop_assume!(a != b);
        let end = TaskEnd::Exited(code);
        let sa = Signature::of(&end, &format!("RuntimeError: {a}"));
        let sb = Signature::of(&end, &format!("RuntimeError: {b}"));
        prop_assert_ne!(&sa, &sb);
        let other = Signature::of(&TaskEnd::Exited(code + 1), &format!("RuntimeError: {a}"));
        prop_assert_ne!(sa, other);
    }

    /// Any tail, however long or strange, gives a bounded signature or none, never a panic;
    /// planned exits, success, hung tasks and tasks that could not start have none.
    #[test]
    fn signatures_are_bounded_and_only_for_the_programs_failures(end in any_end(), tail in ".{0,2000}") {
        let signature = Signature::of(&end, &tail);
        if let Some(s) = &signature {
            prop_assert!(s.as_str().chars().count() <= 300, "{}", s.as_str().len());
            prop_assert!(s.as_str().starts_with(&end.to_string()));
        }
        let none_expected = end.success()
            || end.is_planned()
            || matches!(end, TaskEnd::Hung { .. } | TaskEnd::Error(_));
        if none_expected {
            prop_assert_eq!(signature, None);
        }
    }

    /// Every scope, strategy and job name has one answer, as the guide's table says: `round`
    /// restarts the round; otherwise an evaluator restarts alone, a parameter server with the
    /// chief under `task` or ParameterServerStrategy, everything else alone under those, and
    /// a MultiWorkerMirroredStrategy task under `auto` restarts the round.
    #[test]
    fn the_failure_domain_table_is_total(job in "[a-z][a-z0-9_]{0,10}", pss in any::<bool>(), scope in 0..3usize) {
        let strategy = if pss { Strategy::ParameterServer } else { Strategy::MultiWorkerMirrored };
        let scope = [RestartScope::Auto, RestartScope::Task, RestartScope::Round][scope];
        let expected = match (scope, strategy, job.as_str()) {
            (RestartScope::Round, _, _) => Restart::Round,
            (_, _, "evaluator") => Restart::Task,
            (RestartScope::Auto, Strategy::MultiWorkerMirrored, _) => Restart::Round,
            (_, _, "ps") => Restart::WithChief,
            _ => Restart::Task,
        };
        prop_assert_eq!(scope.restart(strategy, &job), expected);
        prop_assert_eq!(Strategy::of_jobs(["chief", job.as_str()]) == Strategy::ParameterServer, job == "ps");
    }

    /// A crash loop needs the same signature twice in a row: failures without a signature,
    /// or whose signature differs from the one before, never complete one.
    #[test]
    fn crash_loops_need_one_signature_twice_in_a_row(
        failures in prop::collection::vec((0..3usize, prop::option::of(0..3usize), any::<bool>()), 0..30),
    ) {
        let mut loops = CrashLoop::default();
        let mut last: Option<(usize, Option<usize>)> = None;
        for (host, kind, progressed) in failures {
            let signature = kind.map(|k| Signature::from_stored(format!("exited with status 1: E{k}")));
            let found = loops.failed(&format!("host-{host}"), signature, progressed);
            let expected = match (last, kind) {
                (Some((h, Some(k))), Some(now)) => k == now && (h != host || !progressed),
                _ => false,
            };
            prop_assert_eq!(found.is_some(), expected);
            last = Some((host, kind));
        }
    }

    /// Scopes parse from their words; any other word is refused, quoted.
    #[test]
    fn scope_words_round_trip_and_others_are_named(word in ".{0,12}") {
        match word.parse::<RestartScope>() {
            Ok(scope) => prop_assert_eq!(scope.as_str(), word.as_str()),
            Err(e) => {
                let quoted = format!("{word:?}");
                prop_assert!(e.to_string().contains(&quoted));
            }
        }
    }
}

//! `cargo xtask stress [--loops N] -- COMMAND...`: COMMAND run beside N busy loops (2 by
//! default), as on a loaded CI machine. A test whose bound holds on a quiet machine and fails
//! here has a bound too tight or waits on time instead of an event: the way to try a flaky
//! test before calling it fixed (`cargo xtask stress -- cargo test -p CRATE --all-features
//! NAME`), or the whole test command (`cargo xtask stress -- cargo xtask test`).

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::workspace;

/// Runs the task: `args` are `[--loops N] -- COMMAND...`.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let (loops, command) = match args {
        ["--loops", n, "--", command @ ..] => (
            n.parse::<usize>()
                .map_err(|e| format!("--loops {n:?}: {e}"))?,
            command,
        ),
        ["--", command @ ..] => (2, command),
        _ => return Err("usage: cargo xtask stress [--loops N] -- COMMAND...".to_owned()),
    };
    let Some((program, rest)) = command.split_first() else {
        return Err("stress: no COMMAND after `--`".to_owned());
    };
    let stop = Arc::new(AtomicBool::new(false));
    let spinners: Vec<_> = (0..loops)
        .map(|_| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            })
        })
        .collect();
    eprintln!("xtask: stress: {loops} busy loops beside the command");
    let outcome = workspace::run(Command::new(program).args(rest));
    stop.store(true, Ordering::Relaxed);
    for spinner in spinners {
        let _ = spinner.join();
    }
    outcome
}

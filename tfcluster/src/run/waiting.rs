//! [`Waiting`]: what a host's agent says while it waits for a round: the rendezvous, the
//! job, what the round waits for (hosts joined of MIN:MAX, the last call) and the join
//! timeout. On a terminal, a spinner on stderr redrawn as the wait goes (cleared when the
//! round comes); otherwise a line when the wait starts, when what it waits for changes, and
//! every [`REPEAT`] while nothing does.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use elastic::{WaitProgress, WaitWatcher};
use indicatif::{ProgressBar, ProgressStyle};

/// How often a line repeats while the wait stands still.
const REPEAT: Duration = Duration::from_secs(30);

/// The agent's [`WaitWatcher`] for `tfcluster run --rdzv`.
pub(crate) struct Waiting {
    /// `at RDZV for job "ID"`.
    place: String,
    state: Mutex<Shown>,
    terminal: bool,
}

/// What was shown last.
#[derive(Default)]
struct Shown {
    /// The detail of the last line, and when it was printed.
    line: Option<(String, Instant)>,
    spinner: Option<ProgressBar>,
}

impl Waiting {
    /// Says what a wait at `rdzv` for job `rdzv_id` waits for.
    pub(crate) fn new(rdzv: &str, rdzv_id: &str) -> Self {
        Self {
            place: format!("at {rdzv} for job \"{rdzv_id}\""),
            state: Mutex::default(),
            terminal: std::io::stderr().is_terminal(),
        }
    }

    /// The text of a line (or the spinner's message).
    fn text(&self, progress: &WaitProgress) -> String {
        format!(
            "waiting {}: {}; waited {} of the {} join timeout (--join-timeout)",
            self.place,
            progress.detail(),
            humantime::format_duration(Duration::from_secs(progress.waited().as_secs())),
            humantime::format_duration(progress.timeout()),
        )
    }
}

impl WaitWatcher for Waiting {
    fn pending(&self, progress: &WaitProgress) {
        let mut shown = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if self.terminal {
            let spinner = shown.spinner.get_or_insert_with(|| {
                let spinner = ProgressBar::new_spinner().with_style(
                    ProgressStyle::with_template("{spinner} tfcluster: {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                spinner.enable_steady_tick(Duration::from_millis(120));
                spinner
            });
            spinner.set_message(self.text(progress));
            return;
        }
        let due = match &shown.line {
            None => true,
            Some((detail, at)) => detail != progress.detail() || at.elapsed() >= REPEAT,
        };
        if due {
            eprintln!("tfcluster: {}", self.text(progress));
            shown.line = Some((progress.detail().to_owned(), Instant::now()));
        }
    }

    fn ended(&self) {
        let mut shown = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(spinner) = shown.spinner.take() {
            spinner.finish_and_clear();
        }
        shown.line = None;
    }
}

//! A task's output: each line of its stdout or stderr goes to ours behind the task's name
//! (`[worker:1] ...`) and to its log file when it has one, and the end of its stderr is kept
//! for the failure report.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, PipeReader, Write};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::task_log::LogFile;
use super::watchdog::Beacon;

/// How much of a task's stderr is kept: what the rendezvous keeps of a report.
const TAIL_BYTES: usize = 8 * 1024;

/// Which of our streams a task's pipe goes to: stdout stays stdout, stderr stays stderr.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Where a pipe's lines go: our `stream` (unless not `echo`), and a log file.
#[derive(Debug)]
pub(crate) struct Sink {
    pub(crate) stream: Stream,
    pub(crate) echo: bool,
    pub(crate) file: Option<LogFile>,
}

/// The last lines of a pipe, shared with the thread that copies it.
#[derive(Clone, Default, Debug)]
pub(crate) struct Tail(Arc<Mutex<VecDeque<u8>>>);

impl Tail {
    fn push(&self, line: &[u8]) {
        let mut tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        tail.extend(line);
        let excess = tail.len().saturating_sub(TAIL_BYTES);
        tail.drain(..excess);
    }

    /// The kept bytes as text, starting at a line boundary when one is kept.
    pub(crate) fn text(&self) -> String {
        let tail = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let bytes: Vec<u8> = tail.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        match text.find('\n') {
            Some(newline) if bytes.len() >= TAIL_BYTES => text[newline + 1..].to_owned(),
            _ => text.into_owned(),
        }
    }
}

/// A pipe being copied; [`Pump::finished`] resolves once the pipe is closed (the task and
/// everything it started have exited) and its last line is written.
#[derive(Clone, Debug)]
pub(crate) struct Pump(watch::Receiver<bool>);

impl Pump {
    /// Copies `pipe` line by line to `sink` (our stream, each line behind `[task] `, and its
    /// log file), and into `tail` when given; whatever it reads is progress on `beacon` (the
    /// watchdog's). A thread of its own, since the reads and writes block; each line is
    /// written whole under the stream's lock, so lines of different tasks never mix. A line
    /// its log file cannot take goes to our stream even when it would not (`--quiet-tasks`).
    pub(crate) fn start(
        pipe: PipeReader,
        task: &str,
        sink: Sink,
        tail: Option<Tail>,
        beacon: Beacon,
    ) -> Self {
        let prefix = format!("[{task}] ");
        let (done, finished) = watch::channel(false);
        std::thread::spawn(move || {
            let pipe = BufReader::new(beacon.reading(pipe));
            copy_lines(pipe, prefix.as_bytes(), sink, tail);
            let _ = done.send(true);
        });
        Self(finished)
    }

    /// Resolves when the pipe is drained.
    pub(crate) async fn finished(&self) {
        let mut done = self.0.clone();
        let _ = done.wait_for(|&done| done).await;
    }
}

fn copy_lines(mut pipe: impl BufRead, prefix: &[u8], mut sink: Sink, tail: Option<Tail>) {
    let mut line = prefix.to_vec();
    // Once our stream is gone (`| head`) the task's lines are read and dropped, so the task
    // never blocks on a full pipe.
    let mut open = true;
    loop {
        line.truncate(prefix.len());
        match pipe.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if let Some(tail) = &tail {
            tail.push(&line[prefix.len()..]);
        }
        if let Some(file) = &mut sink.file {
            file.write(&line[prefix.len()..]);
        }
        let filed = sink.file.as_ref().is_some_and(LogFile::is_open);
        if open && (sink.echo || !filed) {
            open = write_line(&line, sink.stream).is_ok();
        }
    }
}

fn write_line(line: &[u8], stream: Stream) -> std::io::Result<()> {
    match stream {
        Stream::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(line).and_then(|()| out.flush())
        }
        Stream::Stderr => std::io::stderr().lock().write_all(line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_whole_lines() {
        let tail = Tail::default();
        tail.push(b"first\n");
        assert_eq!(tail.text(), "first\n");
        for i in 0..2000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert!(text.starts_with("line "), "{text:?}");
        assert!(text.ends_with("line 1999\n"));
        assert!(text.len() <= TAIL_BYTES);
    }
}

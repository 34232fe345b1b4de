//! The output of `run --local`'s tasks: each line of a task's stdout or stderr goes to ours,
//! behind the task's name (`[worker:1] ...`).

use std::io::{BufRead, BufReader, PipeReader, Write};

use tokio::sync::oneshot;

/// Which of our streams a task's pipe goes to: stdout stays stdout, stderr stays stderr.
#[derive(Clone, Copy)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// A pipe being copied; [`Pump::finished`] resolves once the pipe is closed (the task and
/// everything it started have exited) and its last line is written.
pub(crate) struct Pump(oneshot::Receiver<()>);

impl Pump {
    /// Copies `pipe` line by line to `stream`, each line behind `[task] `. A thread of its
    /// own, since the reads and writes block; each line is written whole under the stream's
    /// lock, so lines of different tasks never mix.
    pub(crate) fn start(pipe: PipeReader, task: &str, stream: Stream) -> Self {
        let prefix = format!("[{task}] ");
        let (done, finished) = oneshot::channel();
        std::thread::spawn(move || {
            copy_lines(BufReader::new(pipe), prefix.as_bytes(), stream);
            let _ = done.send(());
        });
        Self(finished)
    }

    /// Resolves when the pipe is drained.
    pub(crate) async fn finished(self) {
        let _ = self.0.await;
    }
}

fn copy_lines(mut pipe: impl BufRead, prefix: &[u8], stream: Stream) {
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
        if open {
            open = write_line(&line, stream).is_ok();
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

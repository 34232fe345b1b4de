//! A process's line in `/proc/PID/stat`: its command name, state and parent, read without
//! procps (what `pgrep` would list).

use std::fs;

/// What `/proc/PID/stat` says of a process.
#[derive(Debug, Clone)]
pub(crate) struct ProcStat {
    pub(crate) pid: u32,
    /// The command name (`comm`), at most 15 bytes.
    pub(crate) comm: String,
    pub(crate) parent: u32,
    state: String,
}

impl ProcStat {
    /// Process `pid`'s, while it exists.
    pub(crate) fn read(pid: u32) -> Option<Self> {
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid ...`: comm may hold spaces and parentheses, the last `) `
        // ends it.
        let (head, rest) = stat.rsplit_once(") ")?;
        let (_, comm) = head.split_once(" (")?;
        let mut rest = rest.split_whitespace();
        let state = rest.next()?.to_owned();
        let parent = rest.next()?.parse().ok()?;
        Some(Self {
            pid,
            comm: comm.to_owned(),
            parent,
            state,
        })
    }

    /// Whether it runs: a zombie (or a dead one) has exited, only its parent's wait is missing.
    pub(crate) fn alive(&self) -> bool {
        self.state != "Z" && self.state != "X"
    }
}

/// Every process that runs now.
pub(crate) fn running() -> impl Iterator<Item = ProcStat> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(ProcStat::read)
        .filter(ProcStat::alive)
}

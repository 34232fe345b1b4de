//! The watchdog: a task that shows no progress for a while is hung. Progress is a beacon the
//! task gives: any output on its stdout or stderr (its output pumps read through
//! [`Beacon::reading`]), a line or the part of one a progress bar redraws,
//! or a touch of its progress file, `$TFCLUSTER_PROGRESS_FILE` (its mtime, polled; Python's
//! `tfcluster.progress()` touches it), for programs that are quiet for long. A SIGSTOPped
//! task gives none, so it is hung too.
//!
//! A hung task is asked for its stack and killed ([`kill_hung`]): SIGABRT to its process
//! group (Python's faulthandler, which the launchers arm with `PYTHONFAULTHANDLER=1`, prints
//! every thread's stack to stderr on it and dies), SIGCONT to the group (a stopped task must
//! run to print), up to [`DUMP_WAIT`] for its stderr to close, then SIGKILL to the group.
//! Its report is then [`TaskEnd::Hung`](crate::TaskEnd::Hung), its stderr tail the
//! stack.

use std::io::Read;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use nix::sys::signal::Signal;

use super::group::Group;
use super::output::Pump;

/// The variable that names a task's progress file (given only while a watchdog is on).
pub const PROGRESS_FILE: &str = "TFCLUSTER_PROGRESS_FILE";

/// How long a hung task has, after SIGABRT, to print its stack and exit before SIGKILL.
pub const DUMP_WAIT: Duration = Duration::from_secs(2);

/// How often progress files are looked at: a tenth of the watchdog's period, within these
/// bounds (a stat is cheap, but a watchdog of minutes needs no 100 ms polling).
const POLL_BOUNDS: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(1));

/// How long after its start a task is first judged, unless told otherwise: a cold start of
/// TensorFlow MultiWorkerMirroredStrategy (import, then the strategy waiting for every peer's)
/// took up to about 50 s on a loaded 2-core machine running six of them.
pub const WATCHDOG_START: Duration = Duration::from_secs(60);

/// How long a task's start is, for telling whether it made progress
/// ([`Supervisor::progressed`](super::Supervisor::progressed)): what it prints in its first
/// 30 s is TensorFlow's import and warnings and the strategy's set-up, not training.
pub const PROGRESS_START: Duration = Duration::from_secs(30);

/// One task's progress: when it last gave a beacon. Shared by its output pumps (which beat
/// for each line), the supervisor's waiter (which marks its exit) and the [`Watchdog`].
#[derive(Clone, Debug)]
pub(crate) struct Beacon(Arc<BeaconState>);

#[derive(Debug)]
struct BeaconState {
    /// When the task started: the beacons' clock counts from here.
    started: Instant,
    /// The last beacon, in milliseconds since `started` (the start is the first).
    last_ms: AtomicU64,
    /// Its progress file and the mtime last seen there, when a watchdog is on.
    file: Option<(PathBuf, Mutex<Option<SystemTime>>)>,
    /// Its progress file's mtime when it was made: a later one is a touch.
    created: Option<SystemTime>,
    /// Set once the task exited: an exited task is not hung.
    exited: AtomicBool,
    /// Set once the watchdog found it hung: it is reported so once, and as hung.
    hung: AtomicBool,
}

impl Beacon {
    fn new(file: Option<(PathBuf, Option<SystemTime>)>) -> Self {
        Self(Arc::new(BeaconState {
            started: Instant::now(),
            last_ms: AtomicU64::new(0),
            created: file.as_ref().and_then(|(_, mtime)| *mtime),
            file: file.map(|(path, mtime)| (path, Mutex::new(mtime))),
            exited: AtomicBool::new(false),
            hung: AtomicBool::new(false),
        }))
    }

    /// The task made progress now.
    pub(crate) fn beat(&self) {
        let now = u64::try_from(self.0.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.0.last_ms.fetch_max(now, Ordering::Relaxed);
    }

    /// `pipe`, beating whenever it reads something: any output is progress, a line or a
    /// part of one (a progress bar redrawn with `\r`).
    pub(crate) fn reading<R: Read>(&self, pipe: R) -> Beating<R> {
        Beating {
            pipe,
            beacon: self.clone(),
        }
    }

    /// The task exited.
    pub(crate) fn exited(&self) {
        self.0.exited.store(true, Ordering::Relaxed);
    }

    /// Whether the watchdog found it hung.
    pub(crate) fn is_hung(&self) -> bool {
        self.0.hung.load(Ordering::Relaxed)
    }

    /// Whether the task made progress past its start: output after [`PROGRESS_START`], or a
    /// touch of its progress file (looked at now: the watchdog may not have polled it yet).
    pub(crate) fn progressed(&self) -> bool {
        let last = Duration::from_millis(self.0.last_ms.load(Ordering::Relaxed));
        let touched = self.0.file.as_ref().is_some_and(|(path, _)| {
            std::fs::metadata(path)
                .and_then(|m| m.modified())
                .is_ok_and(|mtime| Some(mtime) != self.0.created)
        });
        last > PROGRESS_START || touched
    }

    /// How long since its last beacon.
    fn quiet(&self) -> Duration {
        let last = Duration::from_millis(self.0.last_ms.load(Ordering::Relaxed));
        self.0.started.elapsed().saturating_sub(last)
    }

    /// Beats if its progress file was touched since last looked at.
    async fn look_at_file(&self) {
        let Some((path, seen)) = &self.0.file else {
            return;
        };
        let Ok(mtime) = tokio::fs::metadata(path).await.and_then(|m| m.modified()) else {
            // Removed by the task, or not readable: no progress, and no error of the job's.
            return;
        };
        let mut seen = seen.lock().unwrap_or_else(|e| e.into_inner());
        if *seen != Some(mtime) {
            *seen = Some(mtime);
            self.beat();
        }
    }
}

/// A task's output pipe that beats its [`Beacon`] for what it reads.
pub(crate) struct Beating<R> {
    pipe: R,
    beacon: Beacon,
}

impl<R: Read> Read for Beating<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let read = self.pipe.read(buf)?;
        if read > 0 {
            self.beacon.beat();
        }
        Ok(read)
    }
}

/// A supervisor's side of the watchdog: its period, its tasks' beacons (by the supervisor's
/// index) and the directory of their progress files, removed with it.
#[derive(Debug, Default)]
pub(crate) struct Watch {
    handle: Watchdog,
    /// Made at the first task's start with a watchdog on.
    dir: Option<tempfile::TempDir>,
    /// How many progress files were made: each task's file is new.
    made: u64,
}

impl Watch {
    pub(crate) fn new(after: Option<Duration>, start: Duration) -> Self {
        Self {
            handle: Watchdog {
                after,
                start,
                beacons: Arc::default(),
            },
            ..Self::default()
        }
    }

    /// A new task's beacon, and its progress file's variable when a watchdog is on (the file
    /// made empty now). Pass the beacon to [`add`](Self::add) once the task started.
    pub(crate) fn prepare(&mut self) -> std::io::Result<(Beacon, Option<(String, String)>)> {
        if self.handle.after.is_none() {
            return Ok((Beacon::new(None), None));
        }
        let dir = match &self.dir {
            Some(dir) => dir,
            None => self.dir.insert(
                tempfile::Builder::new()
                    .prefix("tfcluster-progress-")
                    .tempdir()?,
            ),
        };
        self.made += 1;
        let path = dir.path().join(format!("task-{}", self.made));
        let file = std::fs::File::create(&path)?;
        let mtime = file.metadata().and_then(|m| m.modified()).ok();
        let var = (
            PROGRESS_FILE.to_owned(),
            path.to_string_lossy().into_owned(),
        );
        Ok((Beacon::new(Some((path, mtime))), Some(var)))
    }

    /// `beacon`'s task started as the supervisor's next index.
    pub(crate) fn add(&self, beacon: Beacon) {
        self.handle.lock().push(beacon);
    }

    /// The tasks are gone: their beacons and progress files go too.
    pub(crate) fn clear(&self) {
        for beacon in self.handle.lock().drain(..) {
            if let Some((path, _)) = &beacon.0.file {
                let _ = std::fs::remove_file(path);
            }
        }
    }

    /// Task `index`'s beacon.
    pub(crate) fn beacon(&self, index: usize) -> Option<Beacon> {
        self.handle.lock().get(index).cloned()
    }

    /// The handle to await hangs with.
    pub(crate) fn watchdog(&self) -> Watchdog {
        self.handle.clone()
    }
}

/// Finds a supervisor's hung tasks: from [`Supervisor::watchdog`](super::Supervisor::watchdog),
/// awaited beside its exits. With no period set, it never finds one.
#[derive(Clone, Debug, Default)]
pub struct Watchdog {
    after: Option<Duration>,
    start: Duration,
    beacons: Arc<Mutex<Vec<Beacon>>>,
}

impl Watchdog {
    /// How long a task may show no progress; `None`: no watchdog.
    pub fn after(&self) -> Option<Duration> {
        self.after
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Beacon>> {
        self.beacons.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How long after its start a task is first judged: a start (an import, a strategy that
    /// waits for its slowest peer, a first trace) may be quiet longer than a step.
    pub fn start(&self) -> Duration {
        self.start
    }

    /// The supervisor's index of the next task found hung: running for at least the start
    /// period, and with no progress for the watchdog's period. Each task is found once.
    /// Never, without a period.
    ///
    /// # Errors
    ///
    /// None: it waits until a task is hung.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: a task is marked hung only as its index is returned.
    pub async fn hung(&self) -> usize {
        let Some(after) = self.after else {
            return std::future::pending().await;
        };
        let poll = (after / 10).clamp(POLL_BOUNDS.0, POLL_BOUNDS.1);
        loop {
            let watched: Vec<(usize, Beacon)> = self
                .lock()
                .iter()
                .cloned()
                .enumerate()
                .filter(|(_, b)| !b.0.exited.load(Ordering::Relaxed) && !b.is_hung())
                .collect();
            for (index, beacon) in watched {
                beacon.look_at_file().await;
                if beacon.quiet() >= after && beacon.0.started.elapsed() >= self.start {
                    beacon.0.hung.store(true, Ordering::Relaxed);
                    return index;
                }
            }
            tokio::time::sleep(poll).await;
        }
    }
}

/// Asks the hung task of `group` for its stack and kills it: SIGABRT and SIGCONT to the
/// group at once, then, in the background, SIGKILL to the group once its stderr (`stderr`)
/// closed or [`DUMP_WAIT`] passed. The task's exit comes as any exit does.
pub(crate) fn kill_hung(group: Group, stderr: Pump) {
    group.signal(Signal::SIGABRT);
    group.signal(Signal::SIGCONT);
    tokio::spawn(async move {
        let _ = tokio::time::timeout(DUMP_WAIT, stderr.finished()).await;
        group.signal(Signal::SIGKILL);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(after: Duration) -> (Watch, Beacon) {
        let mut watch = Watch::new(Some(after), Duration::ZERO);
        let (beacon, var) = watch.prepare().unwrap();
        let (name, path) = var.unwrap();
        assert_eq!(name, PROGRESS_FILE);
        assert!(std::fs::metadata(&path).unwrap().len() == 0, "made empty");
        watch.add(beacon.clone());
        (watch, beacon)
    }

    // Periods twenty times the beats' 100 ms: a loaded machine may delay a beat by a good
    // part of a second, which must not pass for a hang.

    #[tokio::test]
    async fn lines_are_progress_and_quiet_is_hung() {
        let after = Duration::from_secs(2);
        let (watch, beacon) = watch(after);
        let dog = watch.watchdog();
        let started = Instant::now();
        // Lines every 100 ms for a second: never hung.
        let lines = async {
            while started.elapsed() < Duration::from_secs(1) {
                beacon.beat();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            index = dog.hung() => panic!("task {index} found hung while it printed"),
            () = lines => {}
        }
        // Then quiet: hung after the period, once.
        let quiet = Instant::now();
        assert_eq!(dog.hung().await, 0);
        assert!(quiet.elapsed() >= after - Duration::from_millis(150));
        assert!(beacon.is_hung());
        let again = tokio::time::timeout(after + Duration::from_millis(500), dog.hung()).await;
        assert!(again.is_err(), "found hung twice");
    }

    #[test]
    fn progress_is_output_past_the_start_or_a_touch() {
        let mut watch = Watch::new(Some(Duration::from_secs(60)), WATCHDOG_START);
        let (beacon, var) = watch.prepare().unwrap();
        beacon.beat();
        assert!(!beacon.progressed(), "output at the start is not progress");
        beacon
            .0
            .last_ms
            .store(PROGRESS_START.as_millis() as u64 + 1, Ordering::Relaxed);
        assert!(beacon.progressed());
        let (beacon, var2) = watch.prepare().unwrap();
        assert_ne!(var, var2);
        assert!(!beacon.progressed());
        let path = var2.unwrap().1;
        let later = SystemTime::now() + Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert!(beacon.progressed(), "a touch is progress at any time");
    }

    #[tokio::test]
    async fn touching_the_progress_file_is_progress() {
        let after = Duration::from_secs(2);
        let (watch, beacon) = watch(after);
        let path = beacon.0.file.as_ref().unwrap().0.clone();
        let dog = watch.watchdog();
        let started = Instant::now();
        let touches = async {
            while started.elapsed() < Duration::from_millis(1500) {
                let file = std::fs::File::options().write(true).open(&path).unwrap();
                file.set_modified(SystemTime::now()).unwrap();
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        };
        tokio::select! {
            index = dog.hung() => panic!("task {index} found hung while it touched its file"),
            () = touches => {}
        }
        assert_eq!(dog.hung().await, 0);
        // Its file goes with it.
        watch.clear();
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn exited_tasks_are_not_hung_and_no_period_finds_none() {
        let (watch, beacon) = watch(Duration::from_millis(100));
        beacon.exited();
        let dog = watch.watchdog();
        assert!(
            tokio::time::timeout(Duration::from_millis(500), dog.hung())
                .await
                .is_err()
        );
        let mut off = Watch::new(None, Duration::ZERO);
        let (beacon, var) = off.prepare().unwrap();
        assert!(var.is_none());
        off.add(beacon);
        let dog = off.watchdog();
        assert_eq!(dog.after(), None);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), dog.hung())
                .await
                .is_err()
        );
    }
}

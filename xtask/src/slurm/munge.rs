//! MUNGE, Slurm's authentication: its key, its runtime directory, and a `munged` of our own
//! running as user `munge` on our own socket.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt, chown};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use super::config::{Layout, MUNGE_DIR, MUNGE_KEY};
use super::daemon::Daemon;
use super::deadline::NotReady;
use super::{deadline, install};

/// How long munged gets to answer on its socket.
const READY_TIMEOUT: Duration = Duration::from_secs(20);

/// The `munge` account the Debian package creates.
#[derive(Debug, Clone, Copy)]
struct Account {
    uid: u32,
    gid: u32,
}

/// Prepares the key and `/run/munge`, starts `munged -F`, and waits until it answers.
pub(crate) fn start(layout: &Layout) -> Result<Daemon, String> {
    let account = account()?;
    ensure_key(account)?;
    ensure_dir(Path::new(MUNGE_DIR), account, 0o755)?;
    let socket = layout.munge_socket();
    let mut command = Command::new(install::program("munged").ok_or("munged is not installed")?);
    command
        .arg("--foreground")
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--key-file={MUNGE_KEY}"))
        .arg(format!("--pid-file={MUNGE_DIR}/tfcluster.pid"))
        .arg(format!("--seed-file={MUNGE_DIR}/tfcluster.seed"))
        // In the foreground munged logs to stderr, which is our log file; no second copy.
        .arg("--log-file=/dev/null")
        .uid(account.uid)
        .gid(account.gid);
    let mut daemon = Daemon::spawn("munged", command, &layout.log("munged"), &layout.run)?;
    let munge = install::program("munge").ok_or("munge is not installed")?;
    let ready = deadline::until(READY_TIMEOUT, Duration::from_millis(100), || {
        daemon.check_running()?;
        let mut encode = Command::new(&munge);
        encode
            .arg("--no-input")
            .arg(format!("--socket={}", socket.display()));
        let shown = deadline::show(&encode);
        deadline::run(
            &mut encode,
            &layout.scratch("munge"),
            Duration::from_secs(10),
        )?
        .success(&shown)
        .map_err(NotReady::Yet)
    });
    match ready {
        Ok(_) => Ok(daemon),
        Err(e) => {
            let tail = daemon.log_tail();
            let _ = daemon.stop();
            Err(format!("munged did not come up: {e}\n{tail}"))
        }
    }
}

/// Reads the `munge` account from /etc/passwd.
fn account() -> Result<Account, String> {
    let passwd =
        fs::read_to_string("/etc/passwd").map_err(|e| format!("cannot read /etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            match fields.as_slice() {
                ["munge", _, uid, gid, ..] => Some(Account {
                    uid: uid.parse().ok()?,
                    gid: gid.parse().ok()?,
                }),
                _ => None,
            }
        })
        .ok_or_else(|| "no user `munge` in /etc/passwd: is the munge package installed?".to_owned())
}

/// Creates the key with mungekey when missing; makes sure munged (as `munge`) may read it.
fn ensure_key(account: Account) -> Result<(), String> {
    let key = Path::new(MUNGE_KEY);
    ensure_dir(
        key.parent().ok_or("the munge key has no directory")?,
        account,
        0o700,
    )?;
    if !key.exists() {
        let mut create =
            Command::new(install::program("mungekey").ok_or("mungekey is not installed")?);
        create
            .arg("--create")
            .arg(format!("--keyfile={MUNGE_KEY}"))
            .uid(account.uid)
            .gid(account.gid);
        let shown = deadline::show(&create);
        let scratch = super::state_dir().join("mungekey");
        deadline::run(&mut create, &scratch, Duration::from_secs(30))?.success(&shown)?;
        eprintln!("xtask: created {MUNGE_KEY}");
    }
    // munged refuses a key that others can read or that is not its own.
    let meta = fs::metadata(key).map_err(|e| format!("cannot stat {MUNGE_KEY}: {e}"))?;
    if meta.uid() != account.uid {
        chown(key, Some(account.uid), Some(account.gid))
            .map_err(|e| format!("cannot chown {MUNGE_KEY} to munge: {e}"))?;
    }
    if meta.mode() & 0o077 != 0 {
        fs::set_permissions(key, fs::Permissions::from_mode(0o600))
            .map_err(|e| format!("cannot chmod 600 {MUNGE_KEY}: {e}"))?;
    }
    Ok(())
}

/// Creates `dir` if needed, owned by `munge` with `mode` (munged checks both).
fn ensure_dir(dir: &Path, account: Account, mode: u32) -> Result<(), String> {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    chown(dir, Some(account.uid), Some(account.gid))
        .map_err(|e| format!("cannot chown {} to munge: {e}", dir.display()))?;
    fs::set_permissions(dir, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {mode:o} {}: {e}", dir.display()))
}

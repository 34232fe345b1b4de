//! Files and directories the launcher writes where others may also write (a shared
//! `--log-dir`, `/tmp`): a file is opened without following a symlink at its name (another
//! user's link to our `~/.bashrc` is an error, not a truncation) and made readable by us only
//! (0600); a directory is made 0700, and one made inside a shared directory is taken only
//! when it is a directory of ours. The task
//! logs, their directory's probe and `tfcluster run --error-file` are written this way.

use std::fs::{DirBuilder, File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, OpenOptionsExt as _};
use std::path::Path;

/// The mode of a file we create: its owner's alone. An existing file keeps its own mode (a
/// Kubernetes termination log, say, or a file the user made readable on purpose).
const FILE_MODE: u32 = 0o600;
/// The mode of a directory we create.
const DIR_MODE: u32 = 0o700;

/// Opens `path` for writing, truncated, made 0600 when created; a symlink at `path` is
/// refused (`O_NOFOLLOW`: the kernel's "too many levels of symbolic links", ELOOP).
///
/// # Errors
///
/// The file cannot be opened, or `path` is a symlink.
pub fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .custom_flags(nix::libc::O_NOFOLLOW)
        .open(path)
}

/// Makes directory `dir` and any missing parent, each made 0700 (an existing one keeps its
/// mode: the user's `--log-dir` may be shared on purpose, or a symlink to a larger disk).
///
/// # Errors
///
/// A directory cannot be made.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    DirBuilder::new().recursive(true).mode(DIR_MODE).create(dir)
}

/// Checks that `dir` is a directory of ours, not a symlink: for the directories we make
/// inside a shared one, which another user could have made first, for our files to land in.
///
/// # Errors
///
/// `dir` cannot be read, is a symlink or not a directory, or another user owns it.
pub fn check_own_dir(dir: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{} is a symlink or not a directory",
            dir.display()
        )));
    }
    let me = nix::unistd::geteuid().as_raw();
    if meta.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} belongs to uid {}, not to us (uid {me})",
                dir.display(),
                meta.uid()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_ours_alone_and_symlinks_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("task.err");
        create(&path).unwrap().write_all(b"one\n").unwrap();
        assert_eq!(mode(&path), 0o600);
        // Truncated when written again, its mode kept.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
        create(&path).unwrap().write_all(b"two\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "two\n");
        assert_eq!(mode(&path), 0o640);

        let victim = dir.path().join("victim");
        std::fs::write(&victim, "keep me\n").unwrap();
        let link = dir.path().join("planted.err");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = create(&link).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(nix::libc::ELOOP), "{e}");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me\n");
    }

    #[test]
    fn directories_are_ours_alone_and_never_a_symlink() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("logs/job/round-1");
        create_dir_all(&dir).unwrap();
        check_own_dir(&dir).unwrap();
        for d in [root.path().join("logs"), root.path().join("logs/job"), dir] {
            assert_eq!(mode(&d), 0o700, "{}", d.display());
        }
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        let link = root.path().join("logs/job/round-2");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        create_dir_all(&link).unwrap();
        let e = check_own_dir(&link).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
    }

    #[test]
    fn a_directory_another_user_made_is_refused() {
        if !nix::unistd::geteuid().is_root() {
            panic!("this test needs root (to make a directory another user owns)");
        }
        let root = tempfile::tempdir().unwrap();
        let theirs = root.path().join("theirs");
        std::fs::create_dir(&theirs).unwrap();
        std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        create_dir_all(&theirs).unwrap();
        let e = check_own_dir(&theirs).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert!(e.to_string().contains("uid 65534"), "{e}");
    }
}

//! [`Token`]: a rendezvous job's shared secret, the one credential its hosts share. It is
//! read from a file or `TFCLUSTER_RDZV_TOKEN` (never a command-line value, which `ps` shows),
//! checked once, and never shown: its `Debug` says `Token(<redacted>)` and it has no
//! `Display`. The rendezvous keeps only its hash, keyed by the job.

use std::path::Path;

use crate::error::token::{TokenError, TokenOrigin, TokenProblem};

/// The environment variable a rendezvous token may come from (`tfcluster run --rdzv`,
/// `rendezvous serve`), as an alternative to a token file; an [`Agent`](crate::Agent) has
/// the launcher withhold it from every task ([`launcher::withhold_env`]).
pub const TOKEN_ENV: &str = "TFCLUSTER_RDZV_TOKEN";

/// The shortest token accepted, in bytes.
pub(crate) const MIN_TOKEN_BYTES: usize = 16;
/// The longest token accepted, in bytes.
pub(crate) const MAX_TOKEN_BYTES: usize = 1024;

/// A rendezvous job token: 16 to 1,024 bytes of printable ASCII (no space at either end).
///
/// Give it to the client ([`ClientOptions::with_token`](crate::ClientOptions::with_token)):
/// the job's first join sets the job's token, and every later call on the job (joins, waits,
/// heartbeats, reports, leaves, and observers' `WatchRounds`) must carry it, else the
/// rendezvous refuses it (`UNAUTHENTICATED`). A server given one
/// ([`RendezvousServerBuilder::with_token`](crate::RendezvousServerBuilder::with_token)) takes no call without it.
/// See [the crate's Security section](crate#security).
///
/// ```
/// use elastic::Token;
///
/// let token = Token::generate();
/// assert_eq!(format!("{token:?}"), "Token(<redacted>)");
/// assert!(Token::new("too short").is_err());
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(<redacted>)")
    }
}

impl Token {
    /// A token from a string given in the program.
    ///
    /// # Errors
    ///
    /// [`TokenError`] when it is not 16 to 1,024 bytes of printable ASCII.
    pub fn new(value: impl Into<String>) -> Result<Self, TokenError> {
        Self::checked(value.into(), TokenOrigin::Value)
    }

    /// The token in file `path`: its text, one trailing newline (`\n` or `\r\n`) trimmed.
    /// At most a token's length (and that newline) is read: a path that names something else
    /// (a device, a log) is not read whole. A file any user may read is taken, with a
    /// warning (`tracing`) saying to `chmod 600` it: a Docker secret is mounted readable by
    /// all by default, often in a container of one user, and refusing it would stop those
    /// jobs rather than protect them. Group read is no warning: it is how Kubernetes gives a
    /// pod's non-root user its Secret (`fsGroup`, `defaultMode: 0440`).
    ///
    /// # Errors
    ///
    /// [`TokenError`] naming the file, when it cannot be read or its text is not a token.
    pub fn from_file(path: &Path) -> Result<Self, TokenError> {
        use std::io::Read as _;
        use std::os::unix::fs::PermissionsExt as _;

        let origin = TokenOrigin::File(path.to_owned());
        let error = |problem| TokenError {
            origin: origin.clone(),
            problem,
        };
        let file = std::fs::File::open(path).map_err(|e| error(TokenProblem::Unreadable(e)))?;
        let (size, mode) = file
            .metadata()
            .map_or((0, 0), |m| (m.len(), m.permissions().mode()));
        let mut bytes = Vec::new();
        let limit = MAX_TOKEN_BYTES + "\r\n".len();
        file.take(limit as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| error(TokenProblem::Unreadable(e)))?;
        if bytes.len() > limit {
            let len = usize::try_from(size).unwrap_or(usize::MAX).max(bytes.len());
            return Err(error(TokenProblem::Length { len }));
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            error(TokenProblem::NotPrintable {
                at: e.utf8_error().valid_up_to(),
            })
        })?;
        if mode & 0o007 != 0 {
            tracing::warn!(
                path = %path.display(),
                mode = format_args!("{:o}", mode & 0o777),
                "the rendezvous token file may be read by any user: chmod 600 it"
            );
        }
        Self::checked(trim_newline(text), origin)
    }

    /// The token in environment variable [`TOKEN_ENV`] (`TFCLUSTER_RDZV_TOKEN`), one
    /// trailing newline trimmed; `None` when it is unset or empty.
    ///
    /// # Errors
    ///
    /// [`TokenError`] naming the variable, when its value is not a token (or not Unicode).
    pub fn from_env() -> Result<Option<Self>, TokenError> {
        let origin = TokenOrigin::Env(TOKEN_ENV);
        match std::env::var(TOKEN_ENV) {
            Ok(value) if value.is_empty() => Ok(None),
            Ok(value) => Self::checked(trim_newline(value), origin).map(Some),
            Err(std::env::VarError::NotPresent) => Ok(None),
            Err(std::env::VarError::NotUnicode(value)) => Err(TokenError {
                origin,
                problem: TokenProblem::NotPrintable {
                    at: value
                        .as_encoded_bytes()
                        .iter()
                        .position(|b| !b.is_ascii())
                        .unwrap_or_default(),
                },
            }),
        }
    }

    /// A fresh random token: 256 bits from the operating system's generator, in hex
    /// (`tfcluster rendezvous token`).
    pub fn generate() -> Self {
        Self::random::<32>()
    }

    /// `N` random bytes from the OS, in hex: always a valid token for `N` from 8 to 512.
    pub(crate) fn random<const N: usize>() -> Self {
        Self(random_hex::<N>())
    }

    /// A token as received from `origin`, checked.
    pub(crate) fn checked(value: String, origin: TokenOrigin) -> Result<Self, TokenError> {
        check(&value).map_err(|problem| TokenError { origin, problem })?;
        Ok(Self(value))
    }

    /// The token itself, for whoever must pass it on (`tfcluster rendezvous token` prints a
    /// generated one); never log it. The client sends it only in its calls' metadata, and
    /// the rendezvous keeps only its hash, keyed by the job.
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

/// `text` less one trailing newline, as editors and `echo` leave one.
fn trim_newline(mut text: String) -> String {
    if text.ends_with('\n') {
        text.pop();
        if text.ends_with('\r') {
            text.pop();
        }
    }
    text
}

/// Whether `value` is a token: 16 to 1,024 bytes of printable ASCII, no space at either end.
fn check(value: &str) -> Result<(), TokenProblem> {
    if let Some(at) = value
        .bytes()
        .position(|b| !(b == b' ' || b.is_ascii_graphic()))
    {
        return Err(TokenProblem::NotPrintable { at });
    }
    if !(MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES).contains(&value.len()) {
        return Err(TokenProblem::Length { len: value.len() });
    }
    if value.starts_with(' ') || value.ends_with(' ') {
        return Err(TokenProblem::EdgeSpace);
    }
    Ok(())
}

/// `N` random bytes from the operating system, in hex. The OS's generator failing is no
/// state to go on from with a secret: it panics, as `getrandom`'s users do.
fn random_hex<const N: usize>() -> String {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the operating system's random generator failed");
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_never_shown() {
        let token = Token::new("0123456789abcdef").unwrap();
        assert_eq!(format!("{token:?}"), "Token(<redacted>)");
        let err = Token::new("short").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the rendezvous token from the value given is 5 bytes long; a token is 16 to 1024 \
             bytes of printable ASCII"
        );
        let err = Token::new("0123456789abcdef\u{7}").unwrap_err();
        assert!(
            err.to_string()
                .ends_with("at byte 16; a token is printable ASCII"),
            "{err}"
        );
        assert!(!format!("{err:?}").contains("0123456789"), "{err:?}");
        assert!(Token::new(" 0123456789abcdef").is_err());
        assert!(Token::new("0123456789 abcdef").is_ok());
        assert!(Token::new("x".repeat(1025)).is_err());
        assert_eq!(Token::generate().expose_secret().len(), 64);
        assert_ne!(Token::generate(), Token::generate());
    }

    #[test]
    fn a_file_loses_one_trailing_newline() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef\r\n").unwrap();
        assert_eq!(
            Token::from_file(&path).unwrap().expose_secret(),
            "0123456789abcdef"
        );
        std::fs::write(&path, "0123456789abcdef\n\n").unwrap();
        let err = Token::from_file(&path).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the rendezvous token from file \""),
            "{err}"
        );
        assert!(err.to_string().contains("at byte 16"), "{err}");
        let err = Token::from_file(&dir.path().join("missing")).unwrap_err();
        assert!(
            err.to_string().ends_with("missing\" cannot be read"),
            "{err}"
        );
        // The longest token with its newline is read; a byte more is not a token.
        let longest = "x".repeat(MAX_TOKEN_BYTES);
        std::fs::write(&path, format!("{longest}\r\n")).unwrap();
        assert_eq!(Token::from_file(&path).unwrap().expose_secret(), longest);
        std::fs::write(&path, "x".repeat(1 << 20)).unwrap();
        let err = Token::from_file(&path).unwrap_err();
        assert!(err.to_string().contains("is 1048576 bytes long"), "{err}");
    }

    #[test]
    fn a_path_that_is_no_file_is_read_no_further_than_a_token() {
        // Endless: read whole, it would never end.
        let err = Token::from_file(Path::new("/dev/zero")).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("the rendezvous token from file \"/dev/zero\" is 1027 bytes long"),
            "{err}"
        );
    }
}

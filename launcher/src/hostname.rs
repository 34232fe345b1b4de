//! [`hostname`]: this host's name, as a launcher names itself in logs and to a rendezvous.

/// This host's name (`gethostname(2)`, so on every Unix, not only where `/proc` is); empty
/// when the system gives none that is UTF-8.
///
/// ```
/// assert_eq!(launcher::hostname(), launcher::hostname().trim());
/// ```
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|name| name.into_string().ok())
        .map(|name| name.trim().to_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_name_is_the_kernels() {
        // Linux keeps it here too: the two must agree.
        let proc = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(super::hostname(), proc.trim());
        assert!(!super::hostname().is_empty());
    }
}

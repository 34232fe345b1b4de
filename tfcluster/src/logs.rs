//! Log output on standard error: `-v` counts, or `RUST_LOG`, set what is shown.

/// The targets whose info events a long-running server shows without `-v`: the rendezvous's
/// rounds formed and ended and its nodes gone, a line each.
pub(crate) const RENDEZVOUS_EVENTS: &[&str] = &["elastic::rendezvous::registry"];

/// Installs the subscriber: tfcluster's own crates at the level `-v` gives (none: warn, `-v`
/// info, `-vv` debug, `-vvv` trace), and `events`' targets at info at least, unless RUST_LOG
/// says otherwise.
pub(crate) fn init(verbose: u8, events: &[&str]) {
    let level = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    // The dependencies (h2, hyper, tonic) stay at warn: at debug they log every frame.
    let ours = [
        "tfcluster",
        "remote_connect",
        "cluster_resolver",
        "cluster_spec",
        "device_filter",
        "elastic",
    ];
    let mut default = ours.iter().fold("warn".to_owned(), |mut filter, krate| {
        filter.push_str(&format!(",{krate}={level}"));
        filter
    });
    if verbose == 0 {
        for target in events {
            default.push_str(&format!(",{target}=info"));
        }
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colours for a terminal only: a log file or a pipe gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}

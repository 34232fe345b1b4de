//! Log output on standard error: `-v` counts, or `RUST_LOG`, set what is shown;
//! `--log-format` how: text for people, or one JSON object a line for a log collector, each
//! with its spans' fields (the job's `rdzv_id`, the agent's `node`, a round's `round` and
//! `rank`, a rendezvous call's name).

/// How log records are written.
#[derive(Clone, Copy, Debug, Default, clap::ValueEnum)]
pub(crate) enum LogFormat {
    /// One readable line a record, the spans' fields before the message.
    #[default]
    Text,
    /// One JSON object a line: `timestamp`, `level`, `target`, `fields` (the message and the
    /// record's fields), `span` (the innermost) and `spans` (all, outermost first).
    Json,
}

/// The targets whose info events a long-running server shows without `-v`: the rendezvous's
/// rounds formed and ended and its nodes gone, a line each.
pub(crate) const RENDEZVOUS_EVENTS: &[&str] = &["elastic::rendezvous::registry"];

/// Installs the subscriber: tfcluster's own crates at the level `-v` gives (none: warn, `-v`
/// info, `-vv` debug, `-vvv` trace), and `events`' targets at info at least, unless RUST_LOG
/// says otherwise.
pub(crate) fn init(verbose: u8, format: LogFormat, events: &[&str]) {
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
        "launcher",
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
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // Colours for a terminal only: a log file or a pipe gets plain text.
        LogFormat::Text => logs
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
}

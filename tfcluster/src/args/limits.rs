//! `serve`'s limits: what one client, and all of them together, may hold of the task server
//! (remote-connect's `Limits`), each a flag that defaults to the library's default.

use std::time::Duration;

use remote_connect::Limits;

/// The flags; each left out keeps `Limits::default()`'s value, given in its help.
#[derive(clap::Args, Debug, Default)]
#[command(next_help_heading = "Limits (what clients may hold; TensorFlow sets none)")]
pub(crate) struct LimitArgs {
    /// Concurrent requests on one connection, announced in HTTP/2's SETTINGS [default: 256].
    #[arg(long, value_name = "N")]
    max_streams: Option<u32>,
    /// Open connections, at most the open-file limit less 64; at the limit the oldest that has
    /// not started HTTP/2 makes room, else a new one is closed at accept [default: 10000].
    #[arg(long, value_name = "N")]
    max_connections: Option<usize>,
    /// Time a new connection has to start HTTP/2 or TLS [default: 5s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    handshake_timeout: Option<Duration>,
    /// Time a connection may stay open with no request in flight, or `none` [default: 10m].
    #[arg(long, value_name = "DURATION|none", value_parser = duration_or_none)]
    idle_timeout: Option<OrNone>,
    /// Time a request has to arrive whole, from its headers to its last byte [default: 60s].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    message_timeout: Option<Duration>,
    /// How often idle connections are pinged to find dead peers, or `none` [default: 60s].
    #[arg(long, value_name = "DURATION|none", value_parser = duration_or_none)]
    keepalive: Option<OrNone>,
    /// Memory for requests being received and decoded, all clients together: `128MiB`,
    /// `1GiB`, or bytes [default: 128MiB].
    #[arg(long, value_name = "SIZE", value_parser = size)]
    request_memory: Option<usize>,
    /// Live remote contexts [default: 10000].
    #[arg(long, value_name = "N")]
    max_contexts: Option<usize>,
    /// Memory the live contexts may hold, their device lists [default: 128MiB].
    #[arg(long, value_name = "SIZE", value_parser = size)]
    context_memory: Option<usize>,
    /// Collect contexts created without keep-alive once idle this long [default: never, as
    /// TensorFlow].
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration)]
    context_idle_limit: Option<Duration>,
}

impl LimitArgs {
    /// The limits the flags give.
    pub(crate) fn limits(&self) -> Limits {
        let Self {
            max_streams,
            max_connections,
            handshake_timeout,
            idle_timeout,
            message_timeout,
            keepalive,
            request_memory,
            max_contexts,
            context_memory,
            context_idle_limit,
        } = *self;
        let limits = Limits::default();
        let limits = set(limits, max_streams, Limits::with_max_streams_per_connection);
        let limits = set(limits, max_connections, Limits::with_max_connections);
        let limits = set(limits, handshake_timeout, Limits::with_handshake_timeout);
        let limits = set(limits, idle_timeout.map(|d| d.0), Limits::with_idle_timeout);
        let limits = set(limits, message_timeout, Limits::with_message_timeout);
        let limits = set(
            limits,
            keepalive.map(|d| d.0),
            Limits::with_keepalive_interval,
        );
        let limits = set(limits, request_memory, Limits::with_request_memory);
        let limits = set(limits, max_contexts, Limits::with_max_contexts);
        let limits = set(limits, context_memory, Limits::with_context_memory);
        set(
            limits,
            context_idle_limit.map(Some),
            Limits::with_context_idle_limit,
        )
    }
}

/// `limits` with the flag's value set by `with`, or unchanged when the flag is not given.
fn set<T>(limits: Limits, flag: Option<T>, with: fn(Limits, T) -> Limits) -> Limits {
    match flag {
        Some(value) => with(limits, value),
        None => limits,
    }
}

/// A duration, or none at all (`none`). A type of its own: clap reads a flag of type
/// `Option<Option<_>>` as one whose value may be left out.
#[derive(Clone, Copy, Debug, PartialEq)]
struct OrNone(Option<Duration>);

fn duration_or_none(s: &str) -> Result<OrNone, String> {
    if s == "none" {
        return Ok(OrNone(None));
    }
    humantime::parse_duration(s)
        .map(|d| OrNone(Some(d)))
        .map_err(|e| format!("{e} (a duration such as 30s or 10m, or none)"))
}

/// A size in bytes: a whole number, optionally with `KiB`, `MiB` or `GiB`.
fn size(s: &str) -> Result<usize, String> {
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let shift = match unit {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err(format!("unknown unit {unit:?}: use KiB, MiB or GiB")),
    };
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("{s:?} is not a size such as 128MiB, 1GiB or 65536"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_flags_are_the_library_defaults_and_each_flag_sets_its_limit() {
        assert_eq!(LimitArgs::default().limits(), Limits::default());
        let args = LimitArgs {
            idle_timeout: Some(OrNone(None)),
            request_memory: Some(1 << 20),
            context_idle_limit: Some(Duration::from_secs(60)),
            ..LimitArgs::default()
        };
        let limits = Limits::default()
            .with_idle_timeout(None)
            .with_request_memory(1 << 20)
            .with_context_idle_limit(Some(Duration::from_secs(60)));
        assert_eq!(args.limits(), limits);
    }

    #[test]
    fn sizes_and_durations_parse_or_say_why_not() {
        assert_eq!(size("65536"), Ok(65536));
        assert_eq!(size("128MiB"), Ok(128 << 20));
        assert_eq!(size("1GiB"), Ok(1 << 30));
        assert!(size("12MB").unwrap_err().contains("unknown unit \"MB\""));
        assert!(size("MiB").unwrap_err().contains("is not a size"));
        assert_eq!(duration_or_none("none"), Ok(OrNone(None)));
        assert_eq!(
            duration_or_none("90s"),
            Ok(OrNone(Some(Duration::from_secs(90))))
        );
        assert!(duration_or_none("soon").unwrap_err().contains("or none"));
    }
}

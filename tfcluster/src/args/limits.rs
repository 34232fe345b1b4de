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
        let mut limits = Limits::default();
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
        set(&mut limits.max_streams_per_connection, max_streams);
        set(&mut limits.max_connections, max_connections);
        set(&mut limits.handshake_timeout, handshake_timeout);
        set(&mut limits.idle_timeout, idle_timeout.map(|d| d.0));
        set(&mut limits.message_timeout, message_timeout);
        set(&mut limits.keepalive_interval, keepalive.map(|d| d.0));
        set(&mut limits.request_memory, request_memory);
        set(&mut limits.max_contexts, max_contexts);
        set(&mut limits.context_memory, context_memory);
        if context_idle_limit.is_some() {
            limits.context_idle_limit = context_idle_limit;
        }
        limits
    }
}

fn set<T>(field: &mut T, flag: Option<T>) {
    if let Some(value) = flag {
        *field = value;
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
        let limits = args.limits();
        assert_eq!(limits.idle_timeout, None);
        assert_eq!(limits.request_memory, 1 << 20);
        assert_eq!(limits.context_idle_limit, Some(Duration::from_secs(60)));
        assert_eq!(limits.max_connections, Limits::default().max_connections);
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

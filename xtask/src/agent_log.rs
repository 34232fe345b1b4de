//! Our agents' log lines (`tfcluster -v`, tracing's format: `2026-11-24T05:31:25.309576Z
//! INFO target: message`), read by the benchmarks to tell where a rendezvous's or a
//! restart's time goes.

/// The time of the first line of `log` containing `needle`, in nanoseconds since the Unix
/// epoch.
pub(crate) fn first_ns(log: &str, needle: &str) -> Option<u128> {
    stamped(log)
        .find(|(_, line)| line.contains(needle))
        .map(|(ns, _)| ns)
}

/// Every line of `log` that starts with a timestamp, with its time in nanoseconds since the
/// Unix epoch.
pub(crate) fn stamped(log: &str) -> impl Iterator<Item = (u128, &str)> {
    log.lines()
        .filter_map(|line| Some((parse_ns(line.split_whitespace().next()?)?, line)))
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z` in nanoseconds since the Unix epoch.
fn parse_ns(stamp: &str) -> Option<u128> {
    let stamp = stamp.strip_suffix('Z')?;
    let (date, time) = stamp.split_once('T')?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut clock = clock.splitn(3, ':').map(str::parse::<i64>);
    let (h, m, s) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let digits = fraction.get(..fraction.len().min(9))?;
    let nanos: u128 = if digits.is_empty() {
        0
    } else {
        digits.parse::<u128>().ok()? * 10u128.pow(9 - digits.len() as u32)
    };
    let seconds = days_from_civil(year, month, day) * 86_400 + h * 3600 + m * 60 + s;
    Some(u128::try_from(seconds).ok()? * 1_000_000_000 + nanos)
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (Howard
/// Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_tracing_timestamps() {
        assert_eq!(
            parse_ns("2026-11-24T05:26:17.198444Z"),
            Some(1_795_497_977_198_444_000)
        );
        assert_eq!(
            parse_ns("2000-03-01T00:00:00Z"),
            Some(951_868_800_000_000_000)
        );
        assert_eq!(parse_ns("2026-11-24 05:26:17Z"), None);
        let log = "2026-11-24T05:26:17.1Z  INFO elastic::agent: round formed round=1\n";
        assert_eq!(
            first_ns(log, "round formed"),
            Some(1_795_497_977_100_000_000)
        );
        assert_eq!(first_ns(log, "joined"), None);
        // Lines without a timestamp (a task's, behind its prefix) are no log lines.
        let mixed = format!("[h/worker:0] round formed\n{log}");
        let stamps: Vec<u128> = stamped(&mixed).map(|(ns, _)| ns).collect();
        assert_eq!(stamps, [1_795_497_977_100_000_000]);
    }
}

//! The clouds' time formats: RFC 3339 (EC2's spot `time`, rebalance `noticeTime`) and the
//! HTTP date without or with its weekday (EC2's scheduled `NotBefore`, `21 Jan 2019
//! 09:00:43 GMT`; Azure's `NotBefore`, `Mon, 19 Sep 2016 18:29:47 GMT`).

use std::time::SystemTime;

/// An RFC 3339 time in UTC, as EC2 writes it (`2017-09-18T08:22:00Z`).
pub(crate) fn rfc3339(text: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(text.trim()).ok()
}

/// `[Wkd, ]DD Mon YYYY HH:MM:SS GMT`.
pub(crate) fn http_date(text: &str) -> Option<SystemTime> {
    let text = text.trim();
    let text = text.split_once(", ").map_or(text, |(_, rest)| rest);
    let mut parts = text.split_whitespace();
    let (day, month, year, time, zone) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    if parts.next().is_some() || !matches!(zone, "GMT" | "UTC") {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let day: u32 = day.parse().ok()?;
    let year: u32 = year.parse().ok()?;
    rfc3339(&format!("{year:04}-{month:02}-{day:02}T{time}Z"))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn the_clouds_documented_examples_parse() {
        assert_eq!(rfc3339("2017-09-18T08:22:00Z"), Some(at(1_505_722_920)));
        assert_eq!(
            http_date("21 Jan 2019 09:00:43 GMT"),
            Some(at(1_548_061_243))
        );
        assert_eq!(
            http_date("Mon, 19 Sep 2016 18:29:47 GMT"),
            Some(at(1_474_309_787))
        );
    }

    #[test]
    fn garbage_is_no_time() {
        for text in [
            "",
            "yesterday",
            "21 Jan 2019",
            "32 Jan 2019 09:00:43 GMT",
            "21 Foo 2019 09:00:43 GMT",
            "21 Jan 2019 09:00:43 CET",
            "21 Jan 2019 25:00:43 GMT",
            "21 Jan 2019 09:00:43 GMT x",
        ] {
            assert_eq!(http_date(text), None, "{text:?}");
        }
        assert_eq!(rfc3339("2017-13-18T08:22:00Z"), None);
    }
}

//! Building Google API URLs from user-given names.

use std::fmt::Write as _;

/// `s` percent-encoded for one URL path segment or query value: everything but RFC 3986's
/// unreserved characters is escaped, so a name like `example.com:proj` or a page token with
/// `/`, `+` or `=` cannot change the URL's structure.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            // Writing to a String cannot fail.
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// `base` without trailing slashes, so `base + "/projects/…"` has exactly one.
pub(crate) fn trim_base(base: &str) -> String {
    base.trim_end_matches('/').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreserved_kept_everything_else_escaped() {
        assert_eq!(escape("my-project_1.x~"), "my-project_1.x~");
        assert_eq!(escape("example.com:proj"), "example.com%3Aproj");
        assert_eq!(escape("a/b+c=d é"), "a%2Fb%2Bc%3Dd%20%C3%A9");
        assert_eq!(trim_base("http://h:1/v1//"), "http://h:1/v1");
    }
}

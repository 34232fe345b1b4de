//! Table tests for every rule of the C++ `ParseFullName` grammar (tf-semantics §5.2).

use device_filter::{DeviceName, Error, ParseErrorKind};

/// Accepted names and their canonical form.
pub(crate) const ACCEPTED: &[(&str, &str)] = &[
    // "" and "/" are the all-unset name.
    ("", ""),
    ("/", ""),
    // Full names and every subset of the parts.
    (
        "/job:worker/replica:0/task:3/device:GPU:1",
        "/job:worker/replica:0/task:3/device:GPU:1",
    ),
    ("/job:foo", "/job:foo"),
    ("/replica:2", "/replica:2"),
    ("/task:7", "/task:7"),
    ("/device:TPU:0", "/device:TPU:0"),
    ("/job:foo/task:1", "/job:foo/task:1"),
    ("/job:worker/replica:3", "/job:worker/replica:3"),
    // Components in any order; repeats: the later wins.
    ("/replica:0/job:foo", "/job:foo/replica:0"),
    (
        "/job:foo/cpu:1/task:2/replica:1",
        "/job:foo/replica:1/task:2/device:CPU:1",
    ),
    ("/job:a/job:b", "/job:b"),
    ("/task:1/task:2", "/task:2"),
    // A /device: component sets both type and id: a missing id clears an earlier one.
    ("/gpu:1/device:GPU", "/device:GPU:*"),
    ("/device:GPU:1/device:*", ""),
    ("/device:GPU:1/cpu:2", "/device:CPU:2"),
    // Wildcards mean unset.
    ("/job:*", ""),
    ("/job:*/replica:*/task:*/device:*:*", ""),
    ("/job:*/task:3", "/task:3"),
    ("/device:GPU:*", "/device:GPU:*"),
    ("/device:GPU", "/device:GPU:*"),
    ("/device:*", ""),
    ("/device:*:3", "/device:*:3"),
    // Legacy forms: only /cpu:, /CPU:, /gpu:, /GPU:, giving CPU and GPU.
    ("/cpu:0", "/device:CPU:0"),
    ("/CPU:1", "/device:CPU:1"),
    ("/gpu:*", "/device:GPU:*"),
    ("/GPU:2", "/device:GPU:2"),
    ("/job:ps/cpu:*", "/job:ps/device:CPU:*"),
    // /device: keeps the type's case.
    ("/device:cpu:3", "/device:cpu:3"),
    ("/device:Gpu:0", "/device:Gpu:0"),
    // Names: a letter, then letters, digits, '_'.
    (
        "/job:a_1/device:TPU_SYSTEM:0",
        "/job:a_1/device:TPU_SYSTEM:0",
    ),
    ("/job:A9", "/job:A9"),
    ("/device:XLA_CPU:0", "/device:XLA_CPU:0"),
    // Numbers: leading zeros, up to 2^31 - 1.
    ("/task:01", "/task:1"),
    ("/replica:000", "/replica:0"),
    ("/task:2147483647", "/task:2147483647"),
];

#[test]
fn accepted_forms_parse_to_their_canonical_form() {
    for &(input, canonical) in ACCEPTED {
        let name: DeviceName = input
            .parse()
            .unwrap_or_else(|e| panic!("{input:?} should parse: {e}"));
        assert_eq!(name.to_string(), canonical, "canonical form of {input:?}");
        let again: DeviceName = canonical.parse().expect("canonical form parses");
        assert_eq!(again, name, "{input:?} -> {canonical:?} -> parse");
    }
}

#[test]
fn accepted_forms_have_the_right_parts() {
    let n: DeviceName = "/job:foo/cpu:1/task:2/replica:1".parse().unwrap();
    assert_eq!(
        (n.job(), n.replica(), n.task(), n.device_type(), n.id()),
        (Some("foo"), Some(1), Some(2), Some("CPU"), Some(1))
    );
    let n: DeviceName = "/device:*:3".parse().unwrap();
    assert_eq!((n.device_type(), n.id()), (None, Some(3)));
    let n: DeviceName = "/device:cpu:3".parse().unwrap();
    assert_eq!(n.device_type(), Some("cpu"));
    let n: DeviceName = "/GPU:*".parse().unwrap();
    assert_eq!((n.device_type(), n.id()), (Some("GPU"), None));
    assert!(
        "/".parse::<DeviceName>().unwrap().is_empty()
            && "".parse::<DeviceName>().unwrap().is_empty()
    );
}

fn start(what: &'static str, found: Option<char>) -> ParseErrorKind {
    ParseErrorKind::NameStart { what, found }
}

fn bad_char(what: &'static str, found: char) -> ParseErrorKind {
    ParseErrorKind::NameChar { what, found }
}

fn number(after: &'static str, found: Option<char>) -> ParseErrorKind {
    ParseErrorKind::ExpectedNumber { after, found }
}

fn unknown(text: &str) -> ParseErrorKind {
    ParseErrorKind::UnknownComponent(text.into())
}

fn unexpected(text: &str) -> ParseErrorKind {
    ParseErrorKind::UnexpectedText(text.into())
}

/// Rejected names, the offset of the first character that does not fit, and why.
pub(crate) fn rejected() -> Vec<(&'static str, usize, ParseErrorKind)> {
    use ParseErrorKind::{MissingLeadingSlash, TrailingSlash};
    vec![
        // The failures listed in §5.2.
        ("foobar", 0, MissingLeadingSlash),
        ("job:foo", 0, MissingLeadingSlash),
        ("/job:123", 5, start("job name", Some('1'))),
        ("/job:foo-bar", 8, bad_char("job name", '-')),
        ("/job:foo:bar", 8, bad_char("job name", ':')),
        ("/job:foo/", 8, TrailingSlash),
        ("/replica:-1", 9, number("/replica:", Some('-'))),
        ("/task:-2", 6, number("/task:", Some('-'))),
        ("/job:foo/replica:1/bar:3", 18, unknown("/bar:3")),
        ("/device:GPU:3/extra", 13, unknown("/extra")),
        ("/device:GPU:3x", 13, unexpected("x")),
        ("/cpu", 0, unknown("/cpu")),
        ("/gpu:", 5, number("/gpu:", None)),
        ("/device:gpu:", 12, number("/device:TYPE:", None)),
        // Prefixes are case-sensitive; legacy forms only for cpu/CPU/gpu/GPU.
        ("/JOB:foo", 0, unknown("/JOB:foo")),
        ("/Cpu:0", 0, unknown("/Cpu:0")),
        ("/tpu:0", 0, unknown("/tpu:0")),
        ("/xla_cpu:0", 0, unknown("/xla_cpu:0")),
        ("/Device:GPU:0", 0, unknown("/Device:GPU:0")),
        // Empty names, bad starts and characters.
        ("/job:", 5, start("job name", None)),
        ("/job:/task:0", 5, start("job name", Some('/'))),
        ("/job:_a", 5, start("job name", Some('_'))),
        ("/job:a b", 6, bad_char("job name", ' ')),
        ("/job:wörker", 6, bad_char("job name", 'ö')),
        ("/device:", 8, start("device type", None)),
        ("/device:1GPU:0", 8, start("device type", Some('1'))),
        ("/device:GP-U:0", 10, bad_char("device type", '-')),
        // Wildcards are a whole component value.
        ("/job:**", 6, unexpected("*")),
        ("/job:*x", 6, unexpected("x")),
        ("/task:*1", 7, unexpected("1")),
        ("/device:GPU:*0", 13, unexpected("0")),
        // Numbers: decimal digits only, at most 2^31 - 1.
        ("/task:", 6, number("/task:", None)),
        ("/task:x", 6, number("/task:", Some('x'))),
        ("/task:+1", 6, number("/task:", Some('+'))),
        ("/task: 1", 6, number("/task:", Some(' '))),
        (
            "/task:2147483648",
            6,
            ParseErrorKind::NumberOutOfRange {
                digits: "2147483648".into(),
            },
        ),
        (
            "/replica:18446744073709551616",
            9,
            ParseErrorKind::NumberOutOfRange {
                digits: "18446744073709551616".into(),
            },
        ),
        ("/cpu:0x1", 6, unexpected("x1")),
        // Slashes and spaces.
        ("//", 0, unknown("/")),
        ("//job:a", 0, unknown("/")),
        ("/job:a//task:0", 6, unknown("/")),
        (" /job:a", 0, MissingLeadingSlash),
        ("/job:a ", 6, bad_char("job name", ' ')),
        ("/task:0 ", 7, unexpected(" ")),
    ]
}

#[test]
fn rejected_forms_say_where_and_why() {
    for (input, position, reason) in rejected() {
        match input.parse::<DeviceName>() {
            Err(Error::InvalidDeviceName {
                name,
                position: at,
                reason: why,
            }) => {
                assert_eq!(name, input);
                assert_eq!((at, &why), (position, &reason), "error for {input:?}");
            }
            other => panic!("{input:?} should be rejected, got {other:?}"),
        }
    }
}

#[test]
fn rejection_messages_read_well() {
    let cases = [
        (
            "/job:1x/task:0",
            "invalid device name \"/job:1x/task:0\": job name must start with a letter, found '1' (offset 5)",
        ),
        (
            "/job:foo/",
            "invalid device name \"/job:foo/\": trailing '/' after the last component (offset 8)",
        ),
        (
            "/cpu",
            "invalid device name \"/cpu\": unknown component \"/cpu\": expected /job:, /replica:, \
             /task:, /device:, /cpu:, /CPU:, /gpu: or /GPU: (offset 0)",
        ),
        (
            "/task:-2",
            "invalid device name \"/task:-2\": expected a number or '*' after \"/task:\", found '-' (offset 6)",
        ),
        (
            "/task:4294967296",
            "invalid device name \"/task:4294967296\": number 4294967296 is out of range: at most 2147483647 (offset 6)",
        ),
    ];
    for (input, message) in cases {
        assert_eq!(
            input.parse::<DeviceName>().unwrap_err().to_string(),
            message
        );
    }
}

/// Issue 13: a 100 MB device name gave a 209 MB message (the name, then the rest of it again).
#[test]
fn messages_quote_a_window_of_long_names() {
    let name = format!("/job:w/{}", "x".repeat(1_000_000));
    let e = name
        .parse::<device_filter::DeviceName>()
        .unwrap_err()
        .to_string();
    assert!(e.len() < 600 && e.contains("(1000007 bytes)"), "{e}");
}

//! The TF_CONFIG `cluster` JSON shape: `{"worker": ["h:1", ...], "ps": {"3": "h:2"}}`.
//!
//! [`parse`] is a reader for exactly this shape rather than a generic JSON parser followed by a
//! conversion: each address is validated in the same pass that finds its closing quote and is
//! copied once, into the spec's text. Strings with escapes take a slower, equally strict path.
//! [`write`] renders TensorFlow's `as_dict` shape.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::Error;
use crate::builder::{Assembler, MAX_TASK_INDEX};
use crate::grammar::scan_address;
use crate::spec::ClusterSpec;

/// Parses cluster JSON; see [`ClusterSpec::from_json`].
pub(crate) fn parse(src: &str) -> Result<ClusterSpec, Error> {
    let mut reader = Reader {
        text: src,
        src: src.as_bytes(),
        pos: 0,
    };
    let mut assembler = Assembler::from_source(src)?;
    reader.cluster(&mut assembler)?;
    assembler.finish()
}

struct Reader<'a> {
    text: &'a str,
    src: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn cluster(&mut self, assembler: &mut Assembler) -> Result<(), Error> {
        self.ws();
        if self.peek() != Some(b'{') {
            return Err(self.unexpected("a JSON object mapping job names to tasks"));
        }
        self.items(b'}', "',' or '}' after a job", |r| {
            let name = r.key("a job name in double quotes", "':' after the job name")?;
            assembler.begin_job(&name)?;
            match r.peek() {
                // `[ "h:1", "h:2" ]`: task `i` is the `i`-th address.
                Some(b'[') => r.items(b']', "',' or ']' after an address", |r| {
                    r.address(assembler, assembler.next_dense_index())
                })?,
                // `{ "0": "h:1", "3": "h:2" }`: keys are decimal task indices.
                Some(b'{') => r.items(b'}', "',' or '}' after an address", |r| {
                    let key = r.key("a task index in double quotes", "':' after the task index")?;
                    r.address(assembler, task_index(&name, &key)?)
                })?,
                other => {
                    return Err(Error::InvalidTasks {
                        job: name.into_owned(),
                        found: describe(other),
                    });
                }
            }
            assembler.end_job()
        })?;
        self.ws();
        if self.pos < self.src.len() {
            return Err(self.unexpected("the end of the input after the cluster object"));
        }
        Ok(())
    }

    /// The items of the array or object opening at `pos`, up to `close`, each read by `item`
    /// (which starts at the item, whitespace skipped).
    #[inline]
    fn items<F>(&mut self, close: u8, after_item: &str, mut item: F) -> Result<(), Error>
    where
        F: FnMut(&mut Self) -> Result<(), Error>,
    {
        self.pos += 1;
        self.ws();
        if self.eat(close) {
            return Ok(());
        }
        loop {
            self.ws();
            item(self)?;
            self.ws();
            if self.eat(b',') {
                continue;
            }
            if self.eat(close) {
                return Ok(());
            }
            return Err(self.unexpected(after_item));
        }
    }

    /// An object key and its `:`, leaving `pos` at the value.
    fn key(&mut self, what: &str, colon: &str) -> Result<Cow<'a, str>, Error> {
        let key = self.string(what)?;
        self.ws();
        if !self.eat(b':') {
            return Err(self.unexpected(colon));
        }
        self.ws();
        Ok(key)
    }

    /// One address string, validated while its closing quote is found.
    #[inline]
    fn address(&mut self, assembler: &mut Assembler, index: u32) -> Result<(), Error> {
        if self.peek() != Some(b'"') {
            return Err(self.unexpected(&format!("an address string for task {index}")));
        }
        let start = self.pos + 1;
        let rest = &self.src[start..];
        if let Ok(len) = scan_address(rest)
            && rest.get(len) == Some(&b'"')
        {
            self.pos = start + len + 1;
            assembler.task_in_source(index, start, start + len);
            return Ok(());
        }
        // Escapes, or an invalid address: decode it fully and let the assembler say why.
        let decoded = self.string("an address string")?;
        assembler.task(index, &decoded)
    }

    /// A JSON string, borrowed unless it holds escapes.
    fn string(&mut self, what: &str) -> Result<Cow<'a, str>, Error> {
        if !self.eat(b'"') {
            return Err(self.unexpected(what));
        }
        let start = self.pos;
        while let Some(&b) = self.src.get(self.pos) {
            match b {
                b'"' => {
                    self.pos += 1;
                    return Ok(Cow::Borrowed(&self.text[start..self.pos - 1]));
                }
                b'\\' => return self.escaped_string(start).map(Cow::Owned),
                0..0x20 => return Err(self.error_at(self.pos, "control character in a string")),
                _ => self.pos += 1,
            }
        }
        Err(self.error_at(self.src.len(), "unterminated string"))
    }

    #[cold]
    fn escaped_string(&mut self, start: usize) -> Result<String, Error> {
        let mut out = String::from(&self.text[start..self.pos]);
        loop {
            let run = self.pos;
            while let Some(&b) = self.src.get(self.pos) {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // Runs end at ASCII bytes, so they are whole characters.
            out.push_str(&self.text[run..self.pos]);
            match self.src.get(self.pos) {
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    let escape = self.pos;
                    self.pos += 1;
                    let c = match self.src.get(self.pos) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            self.pos += 1;
                            let c = self.unicode_escape(escape)?;
                            out.push(c);
                            continue;
                        }
                        _ => return Err(self.error_at(escape, "invalid escape in a string")),
                    };
                    self.pos += 1;
                    out.push(c);
                }
                Some(_) => return Err(self.error_at(self.pos, "control character in a string")),
                None => return Err(self.error_at(self.src.len(), "unterminated string")),
            }
        }
    }

    /// The character of `\uXXXX` (and its low surrogate, if any); `pos` is just past `u`.
    fn unicode_escape(&mut self, escape: usize) -> Result<char, Error> {
        let high = self.hex4(escape)?;
        let code = if (0xD800..0xDC00).contains(&high) {
            if self.src.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return Err(self.error_at(escape, "unpaired surrogate in \\u escape"));
            }
            self.pos += 2;
            let low = self.hex4(escape)?;
            if !(0xDC00..0xE000).contains(&low) {
                return Err(self.error_at(escape, "unpaired surrogate in \\u escape"));
            }
            0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
        } else {
            high
        };
        char::from_u32(code)
            .ok_or_else(|| self.error_at(escape, "unpaired surrogate in \\u escape"))
    }

    fn hex4(&mut self, escape: usize) -> Result<u32, Error> {
        let digits = self
            .src
            .get(self.pos..self.pos + 4)
            .and_then(|d| std::str::from_utf8(d).ok())
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error_at(escape, "\\u must be followed by four hex digits"))?;
        self.pos += 4;
        u32::from_str_radix(digits, 16)
            .map_err(|_| self.error_at(escape, "\\u must be followed by four hex digits"))
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.src.get(self.pos) {
            self.pos += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.src.get(self.pos).copied()
    }

    #[inline]
    fn eat(&mut self, byte: u8) -> bool {
        let hit = self.peek() == Some(byte);
        self.pos += usize::from(hit);
        hit
    }

    #[cold]
    fn unexpected(&self, expected: &str) -> Error {
        let found = describe(self.peek());
        self.error_at(self.pos, &format!("expected {expected}, found {found}"))
    }

    #[cold]
    fn error_at(&self, pos: usize, message: &str) -> Error {
        let before = &self.src[..pos.min(self.src.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        let column = String::from_utf8_lossy(&before[line_start..])
            .chars()
            .count()
            + 1;
        Error::Json {
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column,
            message: message.into(),
        }
    }
}

/// What a JSON value starting with `byte` is, for error messages.
fn describe(byte: Option<u8>) -> &'static str {
    match byte {
        None => "the end of the input",
        Some(b'"') => "a string",
        Some(b'[') => "a list",
        Some(b'{') => "an object",
        Some(b'n') => "null",
        Some(b't' | b'f') => "a boolean",
        Some(b'-' | b'0'..=b'9') => "a number",
        Some(b']') => "']'",
        Some(b'}') => "'}'",
        Some(b',') => "','",
        Some(b':') => "':'",
        Some(_) => "an unexpected character",
    }
}

/// A sparse job's key: ASCII decimal digits (leading zeros allowed, as TF's `int()`), at most
/// 2^31-1.
pub(crate) fn task_index(job: &str, key: &str) -> Result<u32, Error> {
    let invalid = |reason| Error::InvalidTaskIndex {
        job: job.into(),
        index: key.into(),
        reason,
    };
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid("task indices must be non-negative decimal numbers"));
    }
    let digits = key.trim_start_matches('0');
    match digits.parse::<u64>() {
        _ if digits.is_empty() => Ok(0),
        Ok(n) if n <= u64::from(MAX_TASK_INDEX) => Ok(n as u32),
        _ => Err(invalid("task indices must be at most 2147483647")),
    }
}

/// TensorFlow's `as_dict` shape as compact JSON: jobs in definition order, dense jobs as
/// arrays, sparse jobs as objects keyed by decimal index, empty jobs as `{}`.
pub(crate) fn write(spec: &ClusterSpec) -> String {
    let mut out = String::with_capacity(spec.text.len() + 8 * spec.total_tasks() + 16);
    out.push('{');
    for (n, job) in spec.jobs.iter().enumerate() {
        if n > 0 {
            out.push(',');
        }
        // Names and addresses hold no character JSON must escape.
        out.push('"');
        out.push_str(spec.job_name(job));
        out.push_str("\":");
        let dense = job.is_dense() && !job.tasks.is_empty();
        out.push(if dense { '[' } else { '{' });
        for (k, task) in job.tasks.iter().enumerate() {
            if k > 0 {
                out.push(',');
            }
            if !dense {
                let _ = write!(out, "\"{}\":", task.index);
            }
            out.push('"');
            out.push_str(spec.str_of(task.address));
            out.push('"');
        }
        out.push(if dense { ']' } else { '}' });
    }
    out.push('}');
    out
}

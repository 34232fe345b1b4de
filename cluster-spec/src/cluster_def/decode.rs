//! Reading `ClusterDef` wire bytes straight into a spec.
//!
//! prost would decode every `JobDef` into its own `String` and `HashMap` before any of them is
//! validated: 100 MB of `0a 00` (empty jobs) took 2.4 GB and 5 s to fail on the first empty
//! name. This reader walks the wire once and hands each job to the [`Assembler`] as soon as it
//! is read, so invalid input fails at its first invalid job and memory stays within
//! [`DECODE_MEMORY_FACTOR`](crate::DECODE_MEMORY_FACTOR) bytes per input byte. It follows
//! proto3's rules exactly as prost does: a repeated field keeps its last value, map entries
//! keep the last value of a key, missing map keys and values are `0` and `""`, unknown fields
//! of any wire type are skipped, and strings must be UTF-8.

use crate::Error;
use crate::builder::{Assembler, MAX_TASK_INDEX};
use crate::spec::ClusterSpec;

const VARINT: u8 = 0;
const FIXED64: u8 = 1;
const LEN: u8 = 2;
const START_GROUP: u8 = 3;
const END_GROUP: u8 = 4;
const FIXED32: u8 = 5;
/// prost's limit on nested messages and groups.
const RECURSION_LIMIT: u32 = 100;

/// Decodes `ClusterDef` bytes; see [`ClusterSpec::decode_cluster_def`].
pub(crate) fn decode(bytes: &[u8]) -> Result<ClusterSpec, Error> {
    if bytes.len() > u32::MAX as usize {
        return Err(Error::TooLarge);
    }
    let mut assembler = Assembler::new();
    // Names and addresses are sub-slices of the input, so this is their most.
    assembler.reserve_text(bytes.len());
    let mut wire = Wire { bytes, pos: 0 };
    while let Some((field, kind)) = wire.key()? {
        match (field, kind) {
            (1, LEN) => job(&mut assembler, wire.len_delimited("ClusterDef.job")?)?,
            (1, _) => return Err(wrong_type("ClusterDef.job")),
            _ => wire.skip(field, kind, 0)?,
        }
    }
    assembler.finish()
}

/// One `JobDef`: its last name, then its tasks, last value of each key, by index.
fn job(assembler: &mut Assembler, bytes: &[u8]) -> Result<(), Error> {
    // First walk: the name, and how many entries to make room for.
    let mut name: &str = "";
    let mut entries = 0;
    let mut wire = Wire { bytes, pos: 0 };
    while let Some((field, kind)) = wire.key()? {
        match (field, kind) {
            (1, LEN) => name = utf8(wire.len_delimited("JobDef.name")?, "JobDef.name")?,
            (2, LEN) => {
                wire.len_delimited("JobDef.tasks")?;
                entries += 1;
            }
            (1 | 2, _) => return Err(wrong_type("JobDef")),
            _ => wire.skip(field, kind, 0)?,
        }
    }
    assembler.begin_job(name)?;
    // Second walk: the entries, 12 bytes each (an entry is at least 2 bytes of wire; offsets
    // fit in u32, checked in `decode`).
    let mut tasks: Vec<(i32, u32, u32)> = Vec::with_capacity(entries);
    let mut wire = Wire { bytes, pos: 0 };
    while let Some((field, kind)) = wire.key()? {
        if (field, kind) == (2, LEN) {
            let entry = wire.len_delimited("JobDef.tasks")?;
            let (key, value) = map_entry(entry)?;
            let start = value.as_ptr() as usize - bytes.as_ptr() as usize;
            tasks.push((key, start as u32, (start + value.len()) as u32));
        } else if field != 1 {
            wire.skip(field, kind, 0)?;
        } else {
            wire.len_delimited("JobDef.name")?;
        }
    }
    // A map keeps the last value of a key: sort by key, then by offset (written order), and
    // take the last of each run. An unstable sort needs no buffer.
    tasks.sort_unstable_by_key(|&(key, start, _)| (key, start));
    let mut at = 0;
    while at < tasks.len() {
        let key = tasks[at].0;
        while at + 1 < tasks.len() && tasks[at + 1].0 == key {
            at += 1;
        }
        let (_, start, end) = tasks[at];
        let index = u32::try_from(key).map_err(|_| Error::InvalidTaskIndex {
            job: name.into(),
            index: key.to_string(),
            reason: "task indices must be non-negative",
        })?;
        debug_assert!(index <= MAX_TASK_INDEX);
        // Checked to be UTF-8 by `map_entry`.
        let address = std::str::from_utf8(&bytes[start as usize..end as usize]).unwrap_or_default();
        assembler.task(index, address)?;
        at += 1;
    }
    assembler.end_job()
}

/// A `map<int32, string>` entry: its last key (default 0) and last value (default `""`, a
/// slice of `bytes` like any other value).
fn map_entry(bytes: &[u8]) -> Result<(i32, &str), Error> {
    let (mut key, mut value) = (0, utf8(&bytes[..0], "JobDef.tasks")?);
    let mut wire = Wire { bytes, pos: 0 };
    while let Some((field, kind)) = wire.key()? {
        match (field, kind) {
            // int32 is a varint whose low 32 bits are the value, as prost reads it.
            (1, VARINT) => key = wire.varint()? as i32,
            (2, LEN) => value = utf8(wire.len_delimited("JobDef.tasks")?, "JobDef.tasks")?,
            (1 | 2, _) => return Err(wrong_type("JobDef.tasks")),
            _ => wire.skip(field, kind, 0)?,
        }
    }
    Ok((key, value))
}

fn utf8<'a>(bytes: &'a [u8], field: &str) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes)
        .map_err(|e| decode_error(field, &format!("invalid string value: {e}")))
}

fn wrong_type(field: &str) -> Error {
    decode_error(field, "invalid wire type")
}

fn decode_error(field: &str, message: &str) -> Error {
    Error::Decode {
        message: format!("{field}: {message}"),
    }
}

/// A cursor over protobuf wire bytes.
struct Wire<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Wire<'a> {
    /// The next field number and wire type, or `None` at the end.
    fn key(&mut self) -> Result<Option<(u64, u8)>, Error> {
        if self.pos == self.bytes.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let (field, kind) = (key >> 3, (key & 7) as u8);
        if field == 0 || key > u64::from(u32::MAX) {
            return Err(decode_error("key", &format!("invalid tag value: {field}")));
        }
        if kind > FIXED32 {
            return Err(decode_error(
                "key",
                &format!("invalid wire type value: {kind}"),
            ));
        }
        Ok(Some((field, kind)))
    }

    fn varint(&mut self) -> Result<u64, Error> {
        let mut value: u64 = 0;
        for shift in 0..10 {
            let Some(&b) = self.bytes.get(self.pos) else {
                return Err(decode_error("varint", "buffer underflow"));
            };
            self.pos += 1;
            // The tenth byte may only hold the top bit of 64.
            if shift == 9 && b > 1 {
                break;
            }
            value |= u64::from(b & 0x7f) << (7 * shift);
            if b < 0x80 {
                return Ok(value);
            }
        }
        Err(decode_error("varint", "invalid varint"))
    }

    fn take(&mut self, n: u64, field: &str) -> Result<&'a [u8], Error> {
        let rest = self.bytes.len() - self.pos;
        if n > rest as u64 {
            return Err(decode_error(field, "buffer underflow"));
        }
        let out = &self.bytes[self.pos..self.pos + n as usize];
        self.pos += n as usize;
        Ok(out)
    }

    fn len_delimited(&mut self, field: &str) -> Result<&'a [u8], Error> {
        let n = self.varint()?;
        self.take(n, field)
    }

    /// Skips the value of unknown field `field` of wire type `kind`, `depth` groups deep.
    fn skip(&mut self, field: u64, kind: u8, depth: u32) -> Result<(), Error> {
        match kind {
            VARINT => self.varint().map(drop),
            FIXED64 => self.take(8, "unknown field").map(drop),
            LEN => self.len_delimited("unknown field").map(drop),
            FIXED32 => self.take(4, "unknown field").map(drop),
            // Groups (deprecated, but prost skips them): fields up to the matching end.
            // Nesting is bounded as prost bounds it, so hostile input cannot exhaust the stack.
            START_GROUP if depth >= RECURSION_LIMIT => {
                Err(decode_error("group", "recursion limit reached"))
            }
            START_GROUP => loop {
                match self.key()? {
                    None => return Err(decode_error("group", "unexpected end of group")),
                    // Only the end of this group closes it, as in prost.
                    Some((end, END_GROUP)) if end == field => return Ok(()),
                    Some((_, END_GROUP)) => {
                        return Err(decode_error("group", "unexpected end group tag"));
                    }
                    Some((inner, kind)) => self.skip(inner, kind, depth + 1)?,
                }
            },
            _ => Err(decode_error("group", "unexpected end group tag")),
        }
    }
}

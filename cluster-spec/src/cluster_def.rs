//! Conversion to and from TensorFlow's `ClusterDef` proto, and its wire encoding.

mod decode;

use cluster_proto::{ClusterDef, JobDef};

use crate::Error;
use crate::builder::{Assembler, MAX_TASK_INDEX};
use crate::spec::{ClusterSpec, Job};

impl ClusterSpec {
    /// The spec as TensorFlow's `ClusterDef`, jobs sorted by name and tasks by index, exactly
    /// as `ClusterSpec.as_cluster_def()` builds it.
    ///
    /// This allocates one `String` per address. To put the spec on the wire, prefer
    /// [`encode_cluster_def`](Self::encode_cluster_def), which writes the same bytes directly.
    pub fn as_cluster_def(&self) -> ClusterDef {
        ClusterDef {
            job: self
                .jobs_by_name()
                .map(|job| JobDef {
                    name: self.job_name(job).into(),
                    tasks: job
                        .tasks
                        .iter()
                        .map(|t| (t.index as i32, self.str_of(t.address).into()))
                        .collect(),
                })
                .collect(),
        }
    }

    /// The protobuf encoding of [`as_cluster_def`](Self::as_cluster_def), byte for byte what
    /// prost produces for it, written straight from the spec without building the message.
    pub fn encode_cluster_def(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_cluster_def_to(&mut out);
        out
    }

    /// Appends the encoding of [`as_cluster_def`](Self::as_cluster_def) to `out`.
    pub fn encode_cluster_def_to(&self, out: &mut Vec<u8>) {
        // Lengths first (one pass over 12-byte task records), then every byte written into a
        // slice of the final size through a local cursor: no capacity checks per byte.
        let bodies: Vec<usize> = self.jobs_by_name().map(|j| self.job_body_len(j)).collect();
        let total = bodies
            .iter()
            .map(|&b| 1 + varint_len(b as u64) + b)
            .sum::<usize>();
        let start = out.len();
        out.resize(start + total, 0);
        let mut w = Writer {
            buf: &mut out[start..],
            at: 0,
        };
        let text = self.text.as_bytes();
        for (job, body) in self.jobs_by_name().zip(bodies) {
            // ClusterDef.job = 1, length-delimited; JobDef.name = 1 (never empty).
            let name = self.job_name(job).as_bytes();
            w.byte(0x0a);
            w.varint(body as u64);
            w.byte(0x0a);
            w.varint(name.len() as u64);
            w.bytes(name);
            for task in &job.tasks {
                let address = &text[task.address.start as usize..task.address.end as usize];
                // JobDef.tasks = 2: a map entry {key = 1, value = 2}. proto3 omits key 0, as
                // prost does (TensorFlow's C++ encoder writes it; both decode the same).
                w.byte(0x12);
                w.varint(entry_len(task.index, address.len()) as u64);
                if task.index != 0 {
                    w.byte(0x08);
                    w.varint(u64::from(task.index));
                }
                w.byte(0x12);
                w.varint(address.len() as u64);
                w.bytes(address);
            }
        }
        debug_assert_eq!(w.at, total);
    }

    fn job_body_len(&self, job: &Job) -> usize {
        let name = (job.name.end - job.name.start) as usize;
        let tasks: usize = job
            .tasks
            .iter()
            .map(|t| {
                let entry = entry_len(t.index, (t.address.end - t.address.start) as usize);
                1 + varint_len(entry as u64) + entry
            })
            .sum();
        1 + varint_len(name as u64) + name + tasks
    }

    /// Decodes `ClusterDef` bytes (as TensorFlow's `SerializeToString` writes them) into a spec,
    /// validating it as [`TryFrom<ClusterDef>`](#impl-TryFrom<ClusterDef>-for-ClusterSpec) does.
    ///
    /// The bytes are read straight into the spec, job by job, without building the prost
    /// message first: invalid input fails at its first invalid job, and the decode holds at
    /// most [`DECODE_MEMORY_FACTOR`](crate::DECODE_MEMORY_FACTOR) bytes per input byte.
    pub fn decode_cluster_def(bytes: &[u8]) -> Result<Self, Error> {
        decode::decode(bytes)
    }
}

#[inline]
fn entry_len(index: u32, address: usize) -> usize {
    let key = if index == 0 {
        0
    } else {
        1 + varint_len(u64::from(index))
    };
    key + 1 + varint_len(address as u64) + address
}

#[inline]
fn varint_len(v: u64) -> usize {
    // Addresses and entries are almost always shorter than 128 bytes.
    if v < 0x80 {
        return 1;
    }
    // One byte per started group of 7 bits; `| 1` makes zero take one byte.
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// A cursor over an output slice sized in advance.
struct Writer<'a> {
    buf: &'a mut [u8],
    at: usize,
}

impl Writer<'_> {
    #[inline]
    fn byte(&mut self, b: u8) {
        self.buf[self.at] = b;
        self.at += 1;
    }

    #[inline]
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.byte((v as u8) | 0x80);
            v >>= 7;
        }
        self.byte(v as u8);
    }

    #[inline]
    fn bytes(&mut self, b: &[u8]) {
        self.buf[self.at..self.at + b.len()].copy_from_slice(b);
        self.at += b.len();
    }
}

/// Jobs in proto order (TensorFlow keeps that order for a spec built from a `ClusterDef`).
/// Repeated job names and invalid names, addresses or negative indices are errors.
impl TryFrom<&ClusterDef> for ClusterSpec {
    type Error = Error;

    fn try_from(def: &ClusterDef) -> Result<Self, Error> {
        let mut assembler = Assembler::new();
        for job in &def.job {
            assembler.begin_job(&job.name)?;
            for (&index, address) in &job.tasks {
                let index = u32::try_from(index).map_err(|_| Error::InvalidTaskIndex {
                    job: job.name.clone(),
                    index: index.to_string(),
                    reason: "task indices must be non-negative",
                })?;
                debug_assert!(index <= MAX_TASK_INDEX);
                assembler.task(index, address)?;
            }
            assembler.end_job()?;
        }
        assembler.finish()
    }
}

impl TryFrom<ClusterDef> for ClusterSpec {
    type Error = Error;

    fn try_from(def: ClusterDef) -> Result<Self, Error> {
        Self::try_from(&def)
    }
}

impl From<&ClusterSpec> for ClusterDef {
    fn from(spec: &ClusterSpec) -> Self {
        spec.as_cluster_def()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_lengths() {
        for (v, len) in [
            (0, 1),
            (1, 1),
            (127, 1),
            (128, 2),
            (16383, 2),
            (16384, 3),
            (u64::MAX, 10),
        ] {
            assert_eq!(varint_len(v), len, "{v}");
            let mut buf = [0u8; 10];
            let mut w = Writer {
                buf: &mut buf,
                at: 0,
            };
            w.varint(v);
            assert_eq!(w.at, len, "{v}");
        }
    }
}

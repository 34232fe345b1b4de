//! Slurm hostlists: `node[001-128],login[1-2]` to host names and back.
//!
//! Slurm passes the nodes of a job step as a compressed *hostlist* in `SLURM_STEP_NODELIST`
//! and the tasks on each as `SLURM_STEP_TASKS_PER_NODE` (`2(x3),1`). [`expand`] and
//! [`expand_tasks_per_node`] turn them into lists in node order; [`compress`] is the inverse of
//! [`expand`]; [`HostList`] is the parsed form that counts, indexes and walks the hosts without
//! writing them all out.
//!
//! ```
//! use cluster_resolver::hostlist::{HostList, compress, expand, expand_tasks_per_node};
//!
//! let hosts = expand("node[1-3],gpu[01,07]")?;
//! assert_eq!(hosts, ["node1", "node2", "node3", "gpu01", "gpu07"]);
//! assert_eq!(compress(&hosts), "node[1-3],gpu[01,07]");
//!
//! assert_eq!(expand_tasks_per_node("2(x3),1")?, [2, 2, 2, 1]);
//!
//! let big = HostList::parse("rack[00-99]-node[0001-1000]")?;
//! assert_eq!(big.len(), 100_000);
//! assert_eq!(big.get(1000).as_deref(), Some("rack01-node0001"));
//! # Ok::<(), cluster_resolver::Error>(())
//! ```
//!
//! # Grammar and meaning
//!
//! ```text
//! hostlist := SEP* ( pattern ( SEP+ pattern )* )? SEP*     SEP := ',' | ASCII whitespace
//! pattern  := ( LITERAL | '[' group ']' )+                 LITERAL := any char but SEP, '[', ']'
//! group    := range ( ',' range )*                         (',' inside brackets does not separate)
//! range    := DIGITS ( '-' DIGITS )?                       lo <= hi < 2^64, ASCII digits only
//! ```
//!
//! - A pattern without brackets is one host, taken verbatim (digits in it are text).
//! - A range is written zero padded to the number of digits of its **low** endpoint as written,
//!   which is what Slurm does: `n[009-011]` is n009,n010,n011, `b04-[09-10]` is b04-09,b04-10,
//!   `n[9-011]` is n9,n10,n11 (the high endpoint's zeros are ignored), `n[011-12]` is n011,n012.
//! - A group lists its ranges in written order (`n[3,1-2]` is n3,n1,n2); nothing is sorted and
//!   duplicates are kept (`n[1-2],n1` is n1,n2,n1), because a host's position is its rank.
//! - Several groups in one pattern multiply, in Slurm's order: the **last group varies
//!   fastest, then the first, second, …, last-but-one** (slowest). For one or two groups that is
//!   plain lexicographic order (`a[1-2]b[3-4]` is a1b3,a1b4,a2b3,a2b4); for three it is not:
//!   `a[1-2]b[3-4]c[5-6]` is a1b3c5,a1b3c6,a2b3c5,a2b3c6,a1b4c5,… — Slurm expands the groups
//!   right to left, recursing on the text before the last one.
//! - Text may follow the last group (`gpu[1-4].ib`); see the differences from Slurm.
//! - `,` and ASCII whitespace separate names; empty input, and empty items between separators
//!   (`,n1,,n2,`), name no host.
//!
//! Every error names the input and the byte where the problem is, e.g.
//! `invalid hostlist "n[1-": unclosed '[' at byte 1`: a [`ParseError`], whose
//! [`ParseErrorKind`] lists the problems ([`TasksPerNodeError`] for tasks per node). Nothing
//! panics on any input.
//!
//! # Limits
//!
//! A hostlist may name at most [`MAX_HOSTS`] hosts whose names add up to at most [`MAX_BYTES`]
//! bytes; beyond that parsing fails ([`ParseErrorKind::TooManyHosts`],
//! [`ParseErrorKind::TooLarge`]) before any name is written, so
//! `n[0-99999999999]` is an error, not an out-of-memory kill. The limits apply to
//! [`HostList::parse`] too, so every parsed list can be expanded. Parsing itself holds at most
//! [`PARSE_MEMORY_FACTOR`] bytes per byte of text, however the text is made (a million
//! bracket groups in one name included).
//!
//! # Performance
//!
//! [`HostList`] parses in time proportional to the text and walks names with an odometer on the
//! last digits: about 5 ns per host through [`HostList::cursor`] (100,000 names in 0.5 ms).
//! [`expand`] must allocate one `String` per host, and that allocation (and its later free) is
//! nearly all of its cost: it runs at the speed of copying the same names into a new
//! `Vec<String>`. Prefer the lazy form for large lists you only look through.
//!
//! # Differences from Slurm
//!
//! Checked against Slurm 22.05's own code (`scontrol show hostnames` / `scontrol show hostlist`)
//! by the differential test in `tests/cluster_resolver/hostlist/`, which also asserts each
//! difference below. Where Slurm accepts a hostlist and means something sensible, the hosts
//! are the same; where it produces garbage, crashes or is needlessly strict, not:
//!
//! | input | Slurm 22.05 | here |
//! |---|---|---|
//! | unclosed `[`: `n[1-2`, `x,n[1,m` | made-up hosts `n]` / `x`,`n]`,`m` | error: unclosed `[` |
//! | stray `]`: `a]b`, `n1]` | hosts `a]b`, `n1]` | error: unmatched `]` |
//! | text after the last group: `n[1-2]x`, `gpu[1-2].ib` | `Invalid hostlist` | n1x,n2x / gpu1.ib,gpu2.ib |
//! | newline or CR: `n[1-2]\n`, `a\nb`, `a\rb` | part of the name (`n[1-2]\n` is invalid, `a\n` is a host `a\n`); only `,`, space and tab separate | separators, like space and tab |
//! | a range of more than 65,536 hosts: `n[1-65537]` | `Too many hosts in range` | accepted up to [`MAX_HOSTS`] in all |
//! | `+` or whitespace in a range: `n[+1]`, `n[ 1-2]`, `n[1- 2]` | accepted by `strtoul`, the space counting as padding: n01 / n01,n02 / n1,n2 | error: expected a digit |
//! | a bound above 2^64−1: `n[18446744073709551616]` | clamped to `n18446744073709551615` | error: does not fit in 64 bits |
//! | a plain name with a number above 2^64−1: `n18446744073709551616` | renamed `n18446744073709551615` | kept verbatim |
//! | a range ending at 2^64−1: `n[18446744073709551614-18446744073709551615]` | `scontrol` dies of SIGSEGV (its loop counter wraps) | two hosts |
//!
//! Multi-group order, padding (including mixed widths), duplicates, descending ranges (an
//! error in both) and the handling of empty items are the same.
//!
//! [`compress`] gives exactly the text of `scontrol show hostlist`, which in 22.05 does not
//! sort either (`n3,n1,n2` → `n[3,1-2]`), on every list the differential test tries; the one
//! exception is a name whose number does not fit in 64 bits, which Slurm clamps (so its
//! compression renames the host) and [`compress`] keeps as text.
//!
//! # Differences from TensorFlow
//!
//! TensorFlow's `expand_hostlist` / `expand_tasks_per_node` (`slurm_cluster_resolver.py`,
//! checked with TF 2.21):
//!
//! - **Zero padding.** Releases before the fix for tensorflow#49956 dropped it (`n[009-011]` →
//!   n9,n10,n11: hosts that do not exist). TF 2.21 pads like Slurm and like this module
//!   (width of the low endpoint, `str(i).zfill(len(lo))`).
//! - **Order.** `expand_hostlist` keeps order and duplicates, as here, but TF's
//!   `SlurmClusterResolver` then sorts hosts by name (so `n10` comes before `n9`) and
//!   collapses duplicates; that is the resolver's business, not the hostlist's.
//! - **Grammar.** TF allows one group, only at the end of a name (regex
//!   `([^,[\]]*)(\[([^\]]+)\])?$`); it rejects `a[1-2]b[3-4]`, `n[1-2][3-4]`, `n[1-3]-x[1-2]`
//!   (Slurm multi-dimensional names) and `n[1-2].ib`, all of which are accepted here.
//! - **Separators.** TF splits on `,` only and rejects empty items (`n1,,n2`, `,n1`, but not
//!   the trailing `n1,`); whitespace is part of a name (`"n1 n2"` and `"n1\nn2"` are one host
//!   each). Here, as in Slurm, whitespace separates too and empty items are skipped.
//! - **Descending ranges.** TF expands `n[5-3]` to nothing, silently; Slurm and this module
//!   reject it.
//! - **Numbers.** TF uses Python's `int()`: it accepts `n[+1]` (n01), `n[ 1-2]` (n01,n02: the
//!   space counts as padding), `n[1_0]` (n010), Arabic-Indic digits `n[١-٣]` (n1,n2,n3), and
//!   numbers of any size; here only ASCII digits up to 2^64−1.
//! - **Size.** TF has no limit: `n[0-99999999999]` starts building 10^11 names and runs until
//!   memory is exhausted.
//! - **Speed.** On 100,000 hosts TF 2.21 takes about 245 ns per host; [`expand`] is several
//!   times faster and the lazy [`HostList`] about fifty times.
//! - **Errors.** TF raises `ValueError('Invalid hostlist format "…": …')` whose detail is often
//!   empty (a failed `assert`); here each error names the problem and the byte.
//! - **Tasks per node**: same grammar and results (`3(x0)` is nothing); errors name the byte.

mod compress;
mod cursor;
mod digits;
mod expand_tasks;
mod host_list;
mod layout;
mod parse;

pub use compress::compress;
pub use cursor::{Cursor, Iter};
pub use expand_tasks::expand_tasks_per_node;
pub use host_list::HostList;

pub use crate::error::hostlist::{ParseError, ParseErrorKind};
pub use crate::error::tasks_per_node_list::{TasksPerNodeError, TasksPerNodeErrorKind};

/// Most hosts a hostlist may name: 4,194,304 (2^22), forty times the largest machines Slurm
/// runs today; its expansion is a few hundred MB.
pub const MAX_HOSTS: usize = 1 << 22;

/// Most bytes the host names of one hostlist may add up to: 256 MiB. Bounds the memory of
/// [`expand`] when names are long.
pub const MAX_BYTES: usize = 1 << 28;

/// Most heap bytes [`HostList::parse`] holds per byte of its input, at any moment, whatever the
/// input: 22 (plus a few hundred bytes). A pattern takes 32 bytes, a bracket group 24 and a
/// range 24, and each is at least 2 or 3 bytes of text (`a,`, `[1]`, `,1`); `[1],` repeated is
/// the worst case at 21, and an error holds one more copy of the input.
pub const PARSE_MEMORY_FACTOR: usize = 22;

/// Expands a Slurm hostlist into host names, in Slurm's order, duplicates kept.
///
/// `node[1-3],gpu[01,07]` → node1, node2, node3, gpu01, gpu07. See the [module
/// documentation](self) for the grammar, the limits and the errors; [`HostList`] is the lazy
/// form.
///
/// Memory: the parsed list ([`PARSE_MEMORY_FACTOR`] bytes per input byte at most) and the
/// result, one `String` per host (24 bytes plus the name's heap block), which the limits bound
/// ([`MAX_HOSTS`] names, [`MAX_BYTES`] bytes): a list that names each host once (no ranges)
/// peaks below 48 bytes per input byte.
///
/// ```
/// use cluster_resolver::hostlist::expand;
///
/// assert_eq!(expand("n[009-011]")?, ["n009", "n010", "n011"]);
/// assert_eq!(
///     expand("n[1-").unwrap_err().to_string(),
///     "invalid hostlist \"n[1-\": unclosed '[' at byte 1",
/// );
/// # Ok::<(), cluster_resolver::hostlist::ParseError>(())
/// ```
pub fn expand(s: &str) -> Result<Vec<String>, ParseError> {
    Ok(HostList::parse(s)?.to_vec())
}

//! Host names to a hostlist, keeping their order: the inverse of [`expand`](super::expand).

use super::digits::{digit_count, push_padded};

/// A run of names `prefix{lo..=hi}` written with `width` minimum digits.
struct Run {
    lo: u64,
    hi: u64,
    width: usize,
}

/// Consecutive names with the same prefix and a numeric suffix: one `prefix[...]`.
struct Bracket {
    prefix: String,
    runs: Vec<Run>,
}

/// Splits `name` into the text before its trailing digits and the digits' value and width.
/// `None` if there are no trailing digits or they do not fit in 64 bits (kept as text).
fn split_number(name: &str) -> Option<(&str, u64, usize)> {
    let bytes = name.as_bytes();
    let start = bytes
        .iter()
        .rposition(|b| !b.is_ascii_digit())
        .map_or(0, |i| i + 1);
    let digits = &bytes[start..];
    if digits.is_empty() {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        value = value.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
    }
    // `start` follows an ASCII byte (or is 0), so it is a char boundary.
    Some((&name[..start], value, digits.len()))
}

/// Compresses host names into a Slurm hostlist, **preserving their order and duplicates**:
/// `expand(&compress(hosts))` gives `hosts` back.
///
/// Consecutive names that differ only in their trailing number share one bracket group
/// (`n1,n2,n3,n7` → `n[1-3,7]`), consecutive numbers with the same zero padding become a range,
/// and nothing is reordered (`n3,n1,n2` → `n[3,1-2]`), because the position of a host is its
/// rank. This is what `scontrol show hostlist` prints for the same names.
///
/// Names must be host names: a name containing a separator (`,`, space, tab, newline) or a
/// bracket is written as is and cannot come back intact, and empty names are lost.
///
/// ```
/// use cluster_resolver::hostlist::{compress, expand};
///
/// let hosts = ["n009", "n010", "n011", "login", "gpu3", "gpu1"];
/// let list = compress(hosts);
/// assert_eq!(list, "n[009-011],login,gpu[3,1]");
/// assert_eq!(expand(&list)?, hosts);
/// # Ok::<(), cluster_resolver::hostlist::ParseError>(())
/// ```
pub fn compress<I, S>(hosts: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out = String::new();
    let mut open: Option<Bracket> = None;
    for host in hosts {
        let name = host.as_ref();
        let Some((prefix, value, width)) = split_number(name) else {
            flush(&mut out, open.take());
            push_item(&mut out, name);
            continue;
        };
        if let Some(bracket) = open.as_mut().filter(|b| b.prefix == prefix) {
            if let Some(run) = bracket.runs.last_mut().filter(|r| {
                // The next number, and written as the run would write it: the run's width
                // applies to every member, so `n9,n010` cannot share a range.
                r.hi.checked_add(1) == Some(value) && digit_count(value).max(r.width) == width
            }) {
                run.hi = value;
            } else {
                bracket.runs.push(Run {
                    lo: value,
                    hi: value,
                    width,
                });
            }
            continue;
        }
        flush(&mut out, open.take());
        open = Some(Bracket {
            prefix: prefix.to_owned(),
            runs: vec![Run {
                lo: value,
                hi: value,
                width,
            }],
        });
    }
    flush(&mut out, open);
    out
}

fn push_item(out: &mut String, item: &str) {
    if !out.is_empty() {
        out.push(',');
    }
    out.push_str(item);
}

/// Writes a bracket group; a single host is written without brackets, as Slurm does.
fn flush(out: &mut String, bracket: Option<Bracket>) {
    let Some(Bracket { prefix, runs }) = bracket else {
        return;
    };
    push_item(out, &prefix);
    if let [run] = runs.as_slice()
        && run.lo == run.hi
    {
        push_padded(out, run.lo, run.width);
        return;
    }
    out.push('[');
    for (i, run) in runs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_padded(out, run.lo, run.width);
        if run.hi != run.lo {
            out.push('-');
            push_padded(out, run.hi, run.width);
        }
    }
    out.push(']');
}

#[cfg(test)]
mod tests {
    use super::super::expand;
    use super::*;

    fn c(names: &str) -> String {
        let hosts: Vec<&str> = if names.is_empty() {
            Vec::new()
        } else {
            names.split(',').collect()
        };
        let out = compress(&hosts);
        assert_eq!(expand(&out).unwrap(), hosts, "round trip of {out:?}");
        out
    }

    #[test]
    fn ranges_and_lists() {
        assert_eq!(c(""), "");
        assert_eq!(c("node"), "node");
        assert_eq!(c("n1"), "n1");
        assert_eq!(c("n1,n2,n3"), "n[1-3]");
        assert_eq!(c("n1,n3,n5"), "n[1,3,5]");
        assert_eq!(c("n1,n2,n4,n5"), "n[1-2,4-5]");
        assert_eq!(c("1,2,3"), "[1-3]");
        assert_eq!(c("a1-1,a1-2"), "a1-[1-2]");
        assert_eq!(c("b04-09,b04-10"), "b04-[09-10]");
    }

    #[test]
    fn order_and_duplicates_are_kept() {
        assert_eq!(c("n3,n1,n2"), "n[3,1-2]");
        assert_eq!(c("n2,n1"), "n[2,1]");
        assert_eq!(c("n1,n2,n1"), "n[1-2,1]");
        assert_eq!(c("n1,n1"), "n[1,1]");
        assert_eq!(c("n1,n2,n2,n3"), "n[1-2,2-3]");
        assert_eq!(c("b,a"), "b,a");
        assert_eq!(c("a,b,a"), "a,b,a");
        assert_eq!(c("n1,m1,n2"), "n1,m1,n2");
        assert_eq!(c("n1,m,n2,n3"), "n1,m,n[2-3]");
    }

    #[test]
    fn padding_is_kept_per_name() {
        assert_eq!(c("n009,n010,n011"), "n[009-011]");
        assert_eq!(c("n9,n10,n11"), "n[9-11]");
        assert_eq!(c("n09,n10,n100"), "n[09-10,100]");
        assert_eq!(c("n99,n100"), "n[99-100]");
        assert_eq!(c("n099,n100"), "n[099-100]");
        assert_eq!(c("n9,n010"), "n[9,010]");
        assert_eq!(c("n1,n01"), "n[1,01]");
        assert_eq!(c("n0,n00"), "n[0,00]");
        assert_eq!(c("n00,n01"), "n[00-01]");
        assert_eq!(
            c("n0000000000000000000000001,n0000000000000000000000002"),
            "n[0000000000000000000000001-0000000000000000000000002]"
        );
    }

    #[test]
    fn numbers_that_do_not_fit_stay_text() {
        let max = u64::MAX;
        assert_eq!(
            c(&format!("n{},n{max}", max - 1)),
            format!("n[{}-{max}]", max - 1)
        );
        assert_eq!(
            c("n18446744073709551615,n18446744073709551616"),
            "n18446744073709551615,n18446744073709551616"
        );
    }

    #[test]
    fn names_that_are_not_host_names() {
        // Documented: written as is, so they do not survive expansion.
        assert_eq!(compress(["a,b", ""]), "a,b,");
        assert_eq!(compress(Vec::<String>::new()), "");
    }
}

//! [`expand_tasks_per_node`]: a Slurm tasks-per-node list (`SLURM_STEP_TASKS_PER_NODE`,
//! `SLURM_TASKS_PER_NODE`) to one count per node: `2(x3),1` is 2,2,2,1.

use super::{MAX_HOSTS, TasksPerNodeError, TasksPerNodeErrorKind};

/// Expands a Slurm tasks-per-node list, one count per node in node-list order.
///
/// Grammar: `count ( '(x' repeat ')' )?`, comma separated, counts and repeats decimal `u32`s;
/// `3(x0)` contributes nothing (as in TensorFlow). Strict, since Slurm writes these itself: no
/// whitespace and no empty elements; the empty string is an error (a step has at least one
/// node). At most [`MAX_HOSTS`] nodes.
///
/// ```
/// use cluster_resolver::hostlist::expand_tasks_per_node;
///
/// assert_eq!(expand_tasks_per_node("2(x3),1")?, [2, 2, 2, 1]);
/// assert!(expand_tasks_per_node("2(x3").is_err());
/// # Ok::<(), cluster_resolver::hostlist::TasksPerNodeError>(())
/// ```
///
/// Memory: the result, allocated once at its final size (4 bytes per node), after the whole
/// list has been checked; nothing else grows with the input.
pub fn expand_tasks_per_node(s: &str) -> Result<Vec<u32>, TasksPerNodeError> {
    // Two walks: the first checks the list and counts the nodes, the second fills a vector of
    // exactly that size (growing one would hold up to three times the result while copying).
    let mut nodes = 0;
    runs(s, |_, repeat| nodes += repeat)?;
    let mut out = Vec::with_capacity(nodes);
    runs(s, |count, repeat| out.resize(out.len() + repeat, count))?;
    Ok(out)
}

/// Calls `run(count, repeat)` for each element of the list, in order, after checking it and
/// the node limit.
fn runs(s: &str, mut run: impl FnMut(u32, usize)) -> Result<(), TasksPerNodeError> {
    let mut p = Parser { input: s, i: 0 };
    let mut nodes: usize = 0;
    loop {
        let at = p.i;
        let count = p.number()?;
        let mut repeat = 1;
        let has_repeat = p.peek() == Some(b'(');
        if has_repeat {
            p.i += 1;
            p.expect(b'x', "'x'")?;
            repeat = p.number()?;
            p.expect(b')', "')'")?;
        }
        // u32 to usize is lossless on every platform this crate builds for (16-bit is not one).
        let repeat = repeat as usize;
        if repeat > MAX_HOSTS - nodes {
            return Err(TasksPerNodeError::new(
                s,
                at,
                TasksPerNodeErrorKind::TooManyNodes { max: MAX_HOSTS },
            ));
        }
        nodes += repeat;
        run(count, repeat);
        match p.peek() {
            None => return Ok(()),
            Some(b',') => p.i += 1,
            Some(_) => {
                let expected = if has_repeat {
                    "',' or the end"
                } else {
                    "',', '(' or the end"
                };
                return Err(p.unexpected(expected));
            }
        }
    }
}

struct Parser<'a> {
    input: &'a str,
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.input.as_bytes().get(self.i).copied()
    }

    fn expect(&mut self, b: u8, what: &'static str) -> Result<(), TasksPerNodeError> {
        if self.peek() == Some(b) {
            self.i += 1;
            Ok(())
        } else {
            Err(self.unexpected(what))
        }
    }

    fn number(&mut self) -> Result<u32, TasksPerNodeError> {
        let start = self.i;
        let mut value: u32 = 0;
        let mut overflow = false;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            match value
                .checked_mul(10)
                .and_then(|v| v.checked_add(u32::from(b - b'0')))
            {
                Some(v) => value = v,
                None => overflow = true,
            }
            self.i += 1;
        }
        if self.i == start {
            return Err(self.unexpected("a digit"));
        }
        if overflow {
            return Err(TasksPerNodeError::new(
                self.input,
                start,
                TasksPerNodeErrorKind::NumberOverflow,
            ));
        }
        Ok(value)
    }

    fn unexpected(&self, expected: &'static str) -> TasksPerNodeError {
        // The cursor only moves over ASCII, so it sits on a char boundary.
        let found = self.input[self.i..].chars().next();
        TasksPerNodeError::new(
            self.input,
            self.i,
            TasksPerNodeErrorKind::UnexpectedChar { expected, found },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        match expand_tasks_per_node(s) {
            Ok(v) => panic!("{s:?} should fail, got {v:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn expands_counts_and_repeats() {
        let ok = |s| expand_tasks_per_node(s).unwrap();
        assert_eq!(ok("2(x3),1"), [2, 2, 2, 1]);
        assert_eq!(ok("2(x2),1"), [2, 2, 1]);
        assert_eq!(ok("3(x2),2,1"), [3, 3, 2, 1]);
        assert_eq!(ok("1"), [1]);
        assert_eq!(ok("0"), [0]);
        assert_eq!(ok("3(x0)"), Vec::<u32>::new());
        assert_eq!(ok("3(x0),1"), [1]);
        assert_eq!(ok("007(x01)"), [7]);
        assert_eq!(ok("4294967295"), [u32::MAX]);
    }

    #[test]
    fn syntax_errors_name_the_byte() {
        assert_eq!(
            err(""),
            "invalid tasks-per-node list \"\": expected a digit at byte 0, found end of input"
        );
        assert_eq!(
            err("2,"),
            "invalid tasks-per-node list \"2,\": expected a digit at byte 2, found end of input"
        );
        assert_eq!(
            err(",2"),
            "invalid tasks-per-node list \",2\": expected a digit at byte 0, found ','"
        );
        assert_eq!(
            err("3x2"),
            "invalid tasks-per-node list \"3x2\": expected ',', '(' or the end at byte 1, found 'x'"
        );
        assert_eq!(
            err(" 2"),
            "invalid tasks-per-node list \" 2\": expected a digit at byte 0, found ' '"
        );
        assert_eq!(
            err("2(x3"),
            "invalid tasks-per-node list \"2(x3\": expected ')' at byte 4, found end of input"
        );
        assert_eq!(
            err("2(3)"),
            "invalid tasks-per-node list \"2(3)\": expected 'x' at byte 2, found '3'"
        );
        assert_eq!(
            err("2(x)"),
            "invalid tasks-per-node list \"2(x)\": expected a digit at byte 3, found ')'"
        );
        assert_eq!(
            err("2(x3)(x2)"),
            "invalid tasks-per-node list \"2(x3)(x2)\": expected ',' or the end at byte 5, found '('"
        );
        assert_eq!(
            err("2(x3)1"),
            "invalid tasks-per-node list \"2(x3)1\": expected ',' or the end at byte 5, found '1'"
        );
        assert_eq!(
            err("-1"),
            "invalid tasks-per-node list \"-1\": expected a digit at byte 0, found '-'"
        );
        assert_eq!(
            err("2é"),
            "invalid tasks-per-node list \"2é\": expected ',', '(' or the end at byte 1, found 'é'"
        );
    }

    #[test]
    fn overflow_and_size_limits() {
        assert_eq!(
            err("1,4294967296"),
            "invalid tasks-per-node list \"1,4294967296\": number at byte 2 does not fit in 32 bits"
        );
        assert_eq!(
            err("1(x99999999999)"),
            "invalid tasks-per-node list \"1(x99999999999)\": number at byte 3 does not fit in 32 bits"
        );
        assert_eq!(
            err("1,2(x4294967295)"),
            "invalid tasks-per-node list \"1,2(x4294967295)\": expands to more than 4194304 nodes (limit passed at byte 2)"
        );
        assert_eq!(
            expand_tasks_per_node(&format!("1(x{MAX_HOSTS})"))
                .unwrap()
                .len(),
            MAX_HOSTS
        );
    }
}

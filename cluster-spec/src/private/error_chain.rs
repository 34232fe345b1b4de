//! Showing an error with its causes on one line, the one way every crate of the workspace and
//! the CLI do it.
//!
//! Each error's `Display` says only its own layer and reaches its cause through
//! [`source`](std::error::Error::source), as tonic's and std's errors do, so a report that walks
//! the chain (anyhow's, eyre's, this one) shows each cause once. [`Chain`] is that walk for a
//! message that must fit on one line: `outer: inner: innermost`.
//!
//! ```
//! use cluster_spec::__private::error_chain::Chain;
//!
//! #[derive(Debug, thiserror::Error)]
//! #[error("cannot read tasks.json")]
//! struct Read(#[source] std::io::Error);
//!
//! let err = Read(std::io::Error::other("permission denied"));
//! assert_eq!(err.to_string(), "cannot read tasks.json");
//! assert_eq!(Chain(&err).to_string(), "cannot read tasks.json: permission denied");
//! ```

use std::error::Error;
use std::fmt;

/// `error` and its causes as `outer: inner: innermost`.
///
/// A cause whose text the line already shows is left out: transport errors often repeat their
/// cause in their own message (hyper's and tonic's do, in part), and some only name a category
/// (hyper's `client error (Connect)`) whose cause, e.g. `Connection refused`, is the story.
#[derive(Clone, Copy)]
pub struct Chain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut line = self.0.to_string();
        let mut cause = self.0.source();
        while let Some(e) = cause {
            let text = e.to_string();
            if !line.contains(&text) {
                line.push_str(": ");
                line.push_str(&text);
            }
            cause = e.source();
        }
        f.write_str(&line)
    }
}

impl fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Layer(&'static str, Option<Box<Layer>>);

    impl fmt::Display for Layer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(self.0)
        }
    }

    impl Error for Layer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    fn chain(layers: &[&'static str]) -> Layer {
        let mut error = None;
        for text in layers.iter().rev() {
            error = Some(Layer(text, error.map(Box::new)));
        }
        error.expect("one layer at least")
    }

    #[test]
    fn joins_every_cause() {
        let e = chain(&["cannot connect", "transport error", "Connection refused"]);
        assert_eq!(
            Chain(&e).to_string(),
            "cannot connect: transport error: Connection refused"
        );
    }

    #[test]
    fn leaves_out_a_cause_already_shown() {
        // tonic's `Status` from a transport error repeats its cause; hyper's connect error
        // names only its category.
        let e = chain(&[
            "GET /x failed",
            "client error (Connect)",
            "tcp connect error",
            "tcp connect error",
            "Connection refused",
        ]);
        assert_eq!(
            Chain(&e).to_string(),
            "GET /x failed: client error (Connect): tcp connect error: Connection refused"
        );
    }

    #[test]
    fn one_layer_is_its_own_text() {
        assert_eq!(Chain(&chain(&["bad"])).to_string(), "bad");
    }
}

//! The check behind every crate's `messages` test: no error message grows with its input.

use std::fmt::Display;

/// Longest message allowed, whatever the size of the input it quotes.
pub const MAX_MESSAGE_BYTES: usize = 512;

/// Checks that `err`'s message is shorter than [`MAX_MESSAGE_BYTES`] and still shows each of
/// `needles` (the part of the input that says where the problem is).
///
/// # Panics
///
/// If the message is too long (showing its start) or lacks a needle.
pub fn assert_bounded(err: impl Display, needles: &[&str]) {
    let message = err.to_string();
    assert!(
        message.len() < MAX_MESSAGE_BYTES,
        "{} bytes: {}",
        message.len(),
        message.chars().take(700).collect::<String>()
    );
    for needle in needles {
        assert!(message.contains(needle), "{needle:?} not in {message}");
    }
}

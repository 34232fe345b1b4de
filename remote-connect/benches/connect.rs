//! Placeholder, replaced by the connect bench.
fn main() {}

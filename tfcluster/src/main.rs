//! tfcluster command-line tool.
fn main() {}

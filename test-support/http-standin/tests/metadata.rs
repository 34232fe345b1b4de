//! The metadata stand-ins against their clouds' documentation, each rule exercised with raw
//! HTTP/1.1 requests written by hand, and the server features they are built on.

// The inline module makes `mod x;` resolve to `tests/metadata/x.rs` without `#[path]`
// attributes.
mod metadata {
    mod azure;
    mod ec2;
    mod gce;
    mod raw;
    mod server;
}

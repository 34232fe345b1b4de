//! Installing Prometheus from Debian's package (`prometheus`, 2.42 in bookworm) when the
//! program is missing: the `--metrics` test (`tfcluster/tests/tfcluster/metrics.rs`) has a
//! real Prometheus scrape a job and asks its HTTP API.
//!
//! Debian's package also installs a service that its postinst starts (a Prometheus on
//! :9090 run as user prometheus); the test starts its own, so one the install started is
//! killed before the tests run ([`crate::daemon_package`]).

/// Installs `prometheus` with apt-get unless it is already there, then kills any Prometheus
/// the install started. apt's output goes to `target/prometheus/apt-*`, shown only when it
/// fails. Needs root, as CI and the development machines run.
pub(crate) fn ensure_installed() -> Result<(), String> {
    crate::daemon_package::ensure_installed(
        &["prometheus"],
        &["prometheus"],
        "prometheus",
        "prometheus",
    )
}

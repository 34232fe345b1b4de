//! Installing etcd from Debian's packages (`etcd-server` for `etcd`, `etcd-client` for
//! `etcdctl`, both 3.4) when either program is missing: the etcd rendezvous tests run real
//! three-member clusters of it (the `etcd-cluster` crate starts them).
//!
//! Debian's `etcd-server` also installs a service: its postinst starts `/etc/init.d/etcd` (a
//! daemon on localhost:2379 and 2380, run as user etcd) wherever no `policy-rc.d` forbids it,
//! and enables the systemd unit. The tests start their own members, so an etcd the install
//! started is killed before the tests run ([`crate::daemon_package`]).

/// The programs the tests run.
const PROGRAMS: [&str; 2] = ["etcd", "etcdctl"];

/// Debian's packages that provide [`PROGRAMS`].
const PACKAGES: [&str; 2] = ["etcd-server", "etcd-client"];

/// Installs [`PACKAGES`] with apt-get unless `etcd` and `etcdctl` are already there, then kills
/// any etcd the install started.
///
/// Quiet when nothing is missing. apt's output goes to `target/etcd/apt-*` and is shown only
/// when it fails. Needs root, as CI and the development machines run.
pub(crate) fn ensure_installed() -> Result<(), String> {
    crate::daemon_package::ensure_installed(&PROGRAMS, &PACKAGES, "etcd", "etcd")
}

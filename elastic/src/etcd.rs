//! The etcd backend (feature `etcd`): [`EtcdOptions`] (where the jobs are kept, TLS, the
//! timings a job gets), and [`EtcdStore`], a [`Store`](crate::rendezvous::Store) keeping each
//! job as a record in etcd, run in every agent's own process by
//! [`RendezvousClient::etcd`](crate::RendezvousClient::etcd). Its records are prost messages
//! (`proto::StoredJob`, ...), converted to and from the registry in
//! `rendezvous/registry/stored.rs`.

mod joins;
mod options;
mod store;

pub use options::{DEFAULT_PREFIX, ETCD_PORT, EtcdOptions, EtcdTls};
pub(crate) use store::EtcdStore;

//! [`ReservedPorts`]: free TCP ports for a cluster's tasks, held until the tasks start. Every
//! launcher that gives tasks their ports (`run --local`, the elastic agent, the test etcd
//! clusters) takes them here.

use std::io;
use std::net::{IpAddr, SocketAddr};

use socket2::{Domain, Socket, Type};

/// Distinct free ports of one address, each held by a bound socket until this is dropped.
///
/// The sockets never listen: a peer that connects meanwhile is refused by the kernel, so
/// holding ports opens no service (nothing to accept, nothing a client can make us hold).
/// Without `SO_REUSEADDR` on them, no other socket can bind the ports while they are held.
/// Bound together, so the kernel cannot hand the same port out twice (picking ports one at a
/// time, closing each, can). Drop it just before the tasks start: TensorFlow binds its own
/// server socket and cannot take one over, so another program could take a port in that
/// moment, and the task that wanted it then fails to start its server (its launcher names it).
///
/// ```
/// use std::net::Ipv4Addr;
///
/// let reserved = launcher::ReservedPorts::bind(Ipv4Addr::LOCALHOST.into(), 3)?;
/// let mut ports = reserved.ports();
/// ports.sort_unstable();
/// ports.dedup();
/// assert_eq!(ports.len(), 3);
/// // Held: no other socket can bind the port, and nothing listens on it.
/// assert!(std::net::TcpListener::bind(("127.0.0.1", ports[0])).is_err());
/// assert!(std::net::TcpStream::connect(("127.0.0.1", ports[0])).is_err());
/// drop(reserved);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct ReservedPorts(Vec<Socket>);

impl ReservedPorts {
    /// `count` free ports of `ip` (the unspecified address for every interface, as
    /// TensorFlow's servers bind).
    ///
    /// # Errors
    ///
    /// The operating system's error when a port cannot be bound (no free port, no such
    /// address, the open-file limit).
    pub fn bind(ip: IpAddr, count: usize) -> io::Result<Self> {
        let addr = SocketAddr::new(ip, 0);
        (0..count)
            .map(|_| {
                let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
                socket.bind(&addr.into())?;
                Ok(socket)
            })
            .collect::<io::Result<Vec<_>>>()
            .map(Self)
    }

    /// Holds `ports` of `ip` again, which tasks that just died had: their restarts, in place,
    /// need the same addresses, and this keeps another program from taking one meanwhile.
    /// With `SO_REUSEADDR`, since the dead task's connections may linger in `TIME_WAIT` on
    /// the port (TensorFlow's server, gRPC, binds with it too, for the same reason); that
    /// still keeps off a program that binds without it, and the kernel's choice of a port
    /// for an outgoing connection.
    ///
    /// # Errors
    ///
    /// The operating system's error when a port cannot be bound (something else took it).
    pub fn hold(ip: IpAddr, ports: &[u16]) -> io::Result<Self> {
        ports
            .iter()
            .map(|&port| {
                let addr = SocketAddr::new(ip, port);
                let socket = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
                socket.set_reuse_address(true)?;
                socket.bind(&addr.into())?;
                Ok(socket)
            })
            .collect::<io::Result<Vec<_>>>()
            .map(Self)
    }

    /// The ports, in the order they were bound.
    pub fn ports(&self) -> Vec<u16> {
        self.0
            .iter()
            .map(|s| {
                s.local_addr()
                    .ok()
                    .and_then(|a| a.as_socket())
                    .map_or(0, |a| a.port())
            })
            .collect()
    }
}

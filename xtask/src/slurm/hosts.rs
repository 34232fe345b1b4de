//! The local cluster's hosts: the controller and the three nodes, with their names,
//! addresses and slurmd ports, which the configuration, the network and the cluster all use.

use crate::host_network;

/// The nodes, each a `slurmd -N <name>` in its own network namespace (see `host_network.rs`),
/// listening on its own port (DESIGN.md's 6821-6823).
pub(crate) const NODES: [(&str, u16); 3] = [("node1", 6821), ("node2", 6822), ("node3", 6823)];

/// One host of the network (see `host_network.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Host {
    /// Its name: `ctl`, or the node name, which `/etc/hosts` maps to its address.
    pub(crate) name: &'static str,
    /// Its address.
    pub(crate) address: &'static str,
}

/// The controller's host: slurmctld, and srun and sinfo.
pub(crate) const CONTROLLER: Host = Host {
    name: "ctl",
    address: "192.0.2.10",
};

/// The nodes' hosts, in the order of [`NODES`].
pub(crate) const NODE_HOSTS: [Host; 3] = [
    Host {
        name: NODES[0].0,
        address: "192.0.2.11",
    },
    Host {
        name: NODES[1].0,
        address: "192.0.2.12",
    },
    Host {
        name: NODES[2].0,
        address: "192.0.2.13",
    },
];

/// The hosts' network: the controller reached by address, each node by its name.
pub(crate) fn network_plan() -> host_network::Plan {
    let host = |host: Host, names: &[&str]| host_network::Host {
        name: host.name.to_owned(),
        address: host.address.to_owned(),
        names: names.iter().map(|&name| name.to_owned()).collect(),
    };
    let nodes = NODE_HOSTS.into_iter().map(|node| host(node, &[node.name]));
    host_network::Plan {
        bridge: "tfcluster-br",
        mark: "# tfcluster xtask slurm",
        hosts: std::iter::once(host(CONTROLLER, &[]))
            .chain(nodes)
            .collect(),
    }
}

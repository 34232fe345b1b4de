//! No test sends a packet off the machine: while the tests run, a netfilter table in the
//! root network namespace rejects and counts every packet it sends to the addresses tests
//! use for hosts that must not exist (the documentation ranges 192.0.2.0/24,
//! 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32) and to link-local addresses (169.254.0.0/16:
//! the clouds' metadata services, where nothing may go on any port). The test hosts'
//! namespaces have tables of their own, so their 192.0.2.0/24 traffic is not seen here;
//! addresses of this machine (its own interface may be in those ranges) pass.
//!
//! HTTP and HTTPS (TCP 80 and 443) to the documentation ranges pass: machines like CI's
//! have their gateway and package-registry proxy there (seen: apt, pip and cargo fetching
//! from 203.0.113.80, the gateway at 192.0.2.1), and the suites install from the registries.
//! No test serves or dials those ports off loopback.
//!
//! A scan of the sources could not tell an address a test dials from one it only parses or
//! compares; the kernel sees only what is sent. A rejected packet fails the run at its end,
//! with the count, as a check beside the tests; the reject also means none ever leaves.

use std::process::Command;

use crate::{apt, workspace};

/// The table's name: `tfct` first, as every network object the tests make.
const TABLE: &str = "tfct_offmachine";

/// The table: local destinations accepted, link-local rejected and counted, the
/// documentation ranges too but for HTTP(S).
const RULES: &str = "table inet tfct_offmachine {
  chain output {
    type filter hook output priority 0; policy accept;
    fib daddr type local accept
    ip daddr 169.254.0.0/16 counter log prefix \"tfct-offmachine: \" reject
    ip daddr { 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 } tcp dport { 80, 443 } accept
    ip daddr { 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 } counter log prefix \"tfct-offmachine: \" reject
    ip6 daddr 2001:db8::/32 counter log prefix \"tfct-offmachine: \" reject
  }
}
";

/// The table, in place until [`Guard::finish`] (or removed by the next run's [`Guard::install`]
/// when this one was killed).
#[derive(Debug)]
pub(crate) struct Guard;

impl Guard {
    /// Installs nftables if missing, then the table (replacing one a killed run left).
    pub(crate) fn install() -> Result<Self, String> {
        let scratch = workspace::root().join("target/nftables");
        apt::ensure(&["nft"], &["nftables"], &scratch)?;
        remove();
        let rules = scratch.join("offmachine.nft");
        std::fs::create_dir_all(&scratch)
            .and_then(|()| std::fs::write(&rules, RULES))
            .map_err(|e| format!("cannot write {}: {e}", rules.display()))?;
        workspace::stdout(Command::new("nft").arg("-f").arg(&rules))?;
        Ok(Self)
    }

    /// Removes the table; an error when it rejected any packet, with the count.
    pub(crate) fn finish(self) -> Result<(), String> {
        let listed =
            workspace::json(Command::new("nft").args(["-j", "list", "table", "inet", TABLE]));
        remove();
        let rejected = packets(&listed?);
        if rejected == 0 {
            Ok(())
        } else {
            let kernel_log = workspace::stdout(&mut Command::new("dmesg")).unwrap_or_default();
            Err(format!(
                "{rejected} packet(s) sent from the root network namespace to a documentation or \
                 link-local address (rejected, never left the machine): a test dials an address \
                 outside loopback and its own namespaces; the kernel logged: {}",
                destinations(&kernel_log)
            ))
        }
    }
}

/// Removes the table if it is there.
fn remove() {
    // Absent is the usual case: nothing to report.
    let _ = Command::new("nft")
        .args(["delete", "table", "inet", TABLE])
        .stderr(std::process::Stdio::null())
        .status();
}

/// The destinations the table's log lines in `kernel_log` name (`DST=ADDR PROTO=P DPT=PORT`),
/// each with its count, the most frequent first (at most eight).
fn destinations(kernel_log: &str) -> String {
    let mut seen: std::collections::BTreeMap<String, usize> = Default::default();
    for line in kernel_log
        .lines()
        .filter(|l| l.contains("tfct-offmachine: "))
    {
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name))
                .unwrap_or("?")
                .to_owned()
        };
        let to = format!("{}:{} {}", field("DST="), field("DPT="), field("PROTO="));
        *seen.entry(to).or_default() += 1;
    }
    let mut seen: Vec<(String, usize)> = seen.into_iter().collect();
    seen.sort_by_key(|(_, n)| std::cmp::Reverse(*n));
    let listed: Vec<String> = seen
        .iter()
        .take(8)
        .map(|(to, n)| format!("{to} ({n})"))
        .collect();
    match listed.is_empty() {
        true => "nothing (no kernel log to read)".to_owned(),
        false => listed.join(", "),
    }
}

/// The packets counted by every rule of an `nft -j list` document.
fn packets(listed: &serde_json::Value) -> u64 {
    listed["nftables"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item["rule"]["expr"].as_array())
        .flatten()
        .filter_map(|expr| expr["counter"]["packets"].as_u64())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::{destinations, packets};

    #[test]
    fn names_the_destinations_the_kernel_logged() {
        let log = "[1.0] tfct-offmachine: IN= OUT=eth0 SRC=192.0.2.2 DST=192.0.2.1 LEN=60 PROTO=UDP SPT=5 DPT=53\n\
                   [1.1] other line DST=10.0.0.1\n\
                   [1.2] tfct-offmachine: IN= OUT=eth0 SRC=192.0.2.2 DST=192.0.2.1 LEN=60 PROTO=UDP SPT=6 DPT=53\n\
                   [1.3] tfct-offmachine: IN= OUT=eth0 DST=169.254.169.254 PROTO=TCP DPT=80\n";
        assert_eq!(
            destinations(log),
            "192.0.2.1:53 UDP (2), 169.254.169.254:80 TCP (1)"
        );
        assert_eq!(destinations(""), "nothing (no kernel log to read)");
    }

    #[test]
    fn counts_every_rules_packets() {
        let listed = serde_json::json!({"nftables": [
            {"table": {"name": "tfct_offmachine"}},
            {"rule": {"expr": [{"match": {}}, {"accept": null}]}},
            {"rule": {"expr": [{"match": {}}, {"counter": {"packets": 2, "bytes": 120}}, {"reject": {}}]}},
            {"rule": {"expr": [{"counter": {"packets": 1, "bytes": 80}}, {"reject": {}}]}},
        ]});
        assert_eq!(packets(&listed), 3);
        assert_eq!(packets(&serde_json::json!({})), 0);
    }
}

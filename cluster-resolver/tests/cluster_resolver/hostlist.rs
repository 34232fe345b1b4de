//! `hostlist`: properties of expand / compress / HostList / tasks-per-node, and (in
//! `slurm_oracle`) the differential test against Slurm's own `scontrol`.

mod slurm_oracle;

use cluster_resolver::hostlist::{
    HostList, MAX_HOSTS, ParseError, ParseErrorKind, compress, expand, expand_tasks_per_node,
};
use proptest::prelude::*;

/// Host names as Slurm sees them: text, then maybe a number with any zero padding, then maybe
/// more text (which makes the number part of the text).
fn hostname() -> impl Strategy<Value = String> {
    let prefix = prop_oneof![
        Just(String::new()),
        "[a-z]{1,3}",
        "[a-z]{1,3}[0-9]{1,2}-",
        "[a-zA-Z0-9._é-]{1,6}",
    ];
    let number = prop_oneof![
        Just(None),
        (0u64..1200, 0usize..6).prop_map(|(v, w)| Some(format!("{v:0w$}"))),
        (0u64..6).prop_map(|d| Some((u64::MAX - d).to_string())),
        Just(Some("18446744073709551616".to_owned())),
    ];
    let suffix = prop_oneof![4 => Just(String::new()), 1 => "[a-z.]{1,3}"];
    (prefix, number, suffix)
        .prop_map(|(p, n, s)| format!("{p}{}{s}", n.unwrap_or_default()))
        .prop_filter("a host name is not empty", |h| !h.is_empty())
}

/// Lists with the structure `compress` looks for: runs of consecutive numbers sharing a prefix
/// and padding, interleaved with arbitrary names, duplicates and reorderings.
fn host_sequence() -> impl Strategy<Value = Vec<String>> {
    let run = (
        "[a-c]{1,2}-?",
        0u64..130,
        1u64..15,
        0usize..4,
        any::<bool>(),
    )
        .prop_map(|(prefix, start, len, width, reverse)| {
            let mut names: Vec<String> = (start..start + len)
                .map(|v| format!("{prefix}{v:0width$}"))
                .collect();
            if reverse {
                names.reverse();
            }
            names
        });
    let piece = prop_oneof![3 => run, 1 => proptest::collection::vec(hostname(), 1..4)];
    (proptest::collection::vec(piece, 0..8), any::<u64>()).prop_map(|(pieces, seed)| {
        let mut hosts: Vec<String> = pieces.into_iter().flatten().collect();
        // Duplicate a few names in place, driven by the seed so shrinking stays deterministic.
        if !hosts.is_empty() && seed % 3 == 0 {
            let i = (seed / 3) as usize % hosts.len();
            let copy = hosts[i].clone();
            hosts.insert((seed / 7) as usize % (hosts.len() + 1), copy);
        }
        hosts
    })
}

/// Hostlists within the grammar: patterns of literals and groups, with any separators.
fn hostlist_text() -> impl Strategy<Value = String> {
    let range = (
        0u64..200,
        0usize..3,
        proptest::option::of((0u64..12, 0usize..3)),
    )
        .prop_map(|(lo, lo_pad, hi)| {
            let lo_w = lo.to_string().len() + lo_pad;
            match hi {
                None => format!("{lo:0lo_w$}"),
                Some((extra, hi_pad)) => {
                    let hi = lo + extra;
                    let hi_w = hi.to_string().len() + hi_pad;
                    format!("{lo:0lo_w$}-{hi:0hi_w$}")
                }
            }
        });
    let group = proptest::collection::vec(range, 1..4).prop_map(|r| format!("[{}]", r.join(",")));
    let literal = "[a-z0-9.-]{0,3}";
    let pattern =
        (literal, proptest::collection::vec((group, literal), 0..4)).prop_map(|(head, tail)| {
            let mut s = head;
            for (g, lit) in tail {
                s.push_str(&g);
                s.push_str(&lit);
            }
            s
        });
    let sep = prop_oneof![
        Just(","),
        Just(" "),
        Just(",,"),
        Just("\t"),
        Just(" , "),
        Just("\n")
    ];
    proptest::collection::vec((pattern, sep), 0..5).prop_map(|items| {
        items.into_iter().fold(String::new(), |mut s, (p, sep)| {
            s.push_str(&p);
            s.push_str(sep);
            s
        })
    })
}

/// Everything the lazy form offers agrees with the eager expansion.
fn assert_lazy_agrees(s: &str, hosts: &[String]) {
    let list = HostList::parse(s).expect("parse accepts what expand accepts");
    assert_eq!(list.len(), hosts.len(), "{s:?}");
    assert_eq!(list.is_empty(), hosts.is_empty());
    assert_eq!(list.to_vec(), hosts, "{s:?}");
    assert_eq!(list.iter().collect::<Vec<_>>(), hosts, "{s:?}");
    let mut cursor = list.cursor();
    for host in hosts {
        assert_eq!(cursor.next_name(), Some(host.as_str()), "{s:?}");
    }
    assert_eq!(cursor.next_name(), None);
    for (i, host) in hosts.iter().enumerate() {
        assert_eq!(list.get(i).as_ref(), Some(host), "{s:?} [{i}]");
    }
    assert_eq!(list.get(hosts.len()), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn compress_then_expand_is_identity(hosts in host_sequence()) {
        let list = compress(&hosts);
        prop_assert_eq!(expand(&list).unwrap(), hosts, "via {:?}", list);
    }

    #[test]
    fn compress_of_single_names_is_identity(hosts in proptest::collection::vec(hostname(), 0..12)) {
        let list = compress(&hosts);
        prop_assert_eq!(expand(&list).unwrap(), hosts, "via {:?}", list);
    }

    #[test]
    fn padding_follows_the_low_endpoint(
        prefix in "[a-z]{0,3}-?",
        lo in 0u64..5000,
        len in 1u64..40,
        lo_pad in 0usize..4,
        hi_pad in 0usize..4,
    ) {
        let hi = lo + len - 1;
        let w = lo.to_string().len() + lo_pad;
        let hi_w = hi.to_string().len() + hi_pad;
        let hosts = expand(&format!("{prefix}[{lo:0w$}-{hi:0hi_w$}]")).unwrap();
        let want: Vec<String> = (lo..=hi).map(|v| format!("{prefix}{v:0w$}")).collect();
        prop_assert_eq!(hosts, want);
    }

    #[test]
    fn lazy_form_agrees_with_expand(s in hostlist_text()) {
        let hosts = expand(&s).unwrap();
        assert_lazy_agrees(&s, &hosts);
    }

    #[test]
    fn compressed_text_reexpands_to_the_expansion(s in hostlist_text()) {
        let hosts = expand(&s).unwrap();
        prop_assert_eq!(expand(&compress(&hosts)).unwrap(), hosts);
    }

    #[test]
    fn expand_never_panics_on_any_string(s in any::<String>()) {
        check_total(&s);
    }

    #[test]
    fn expand_never_panics_on_hostlist_like_strings(s in "[a-c0-9\\[\\],\\- \t.é+]{0,40}") {
        check_total(&s);
    }

    #[test]
    fn tasks_per_node_never_panics(s in "[0-9(x),é ]{0,24}") {
        match expand_tasks_per_node(&s) {
            Ok(counts) => prop_assert!(counts.len() <= MAX_HOSTS),
            Err(e) => prop_assert!(e.to_string().starts_with("invalid tasks-per-node list \"")),
        }
    }

    #[test]
    fn tasks_per_node_never_panics_on_any_string(s in any::<String>()) {
        let _ = expand_tasks_per_node(&s).map_err(|e| e.to_string());
    }

    #[test]
    fn tasks_per_node_round_trip(items in proptest::collection::vec((0u32..100, proptest::option::of(0u32..6)), 1..8)) {
        let text: Vec<String> = items
            .iter()
            .map(|(n, r)| match r {
                Some(r) => format!("{n}(x{r})"),
                None => n.to_string(),
            })
            .collect();
        let want: Vec<u32> = items
            .iter()
            .flat_map(|&(n, r)| std::iter::repeat_n(n, r.unwrap_or(1) as usize))
            .collect();
        prop_assert_eq!(expand_tasks_per_node(&text.join(",")).unwrap(), want);
    }
}

/// `expand` either succeeds, and everything else agrees with it, or fails with an error that
/// quotes the input and names a byte inside it.
fn check_total(s: &str) {
    match expand(s) {
        Ok(hosts) => assert_lazy_agrees(s, &hosts),
        Err(e) => {
            let msg = e.to_string();
            assert!(msg.starts_with("invalid hostlist \""), "{msg}");
            // Every failure of `expand` is a `ParseError`, so every one names a byte.
            let ParseError { pos, .. } = e;
            assert!(pos < s.len(), "byte {pos} outside {s:?}");
        }
    }
}

#[test]
fn huge_lists_are_counted_not_expanded() {
    let list = HostList::parse("rack[000-999]-node[0000-4095]").unwrap();
    assert_eq!(list.len(), 4_096_000);
    assert_eq!(list.get(4_095_999).as_deref(), Some("rack999-node4095"));
    let err = expand("n[0-99999999999]").unwrap_err();
    assert!(
        matches!(
            err,
            ParseError {
                pos: 1,
                kind: ParseErrorKind::TooManyHosts { max: MAX_HOSTS },
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn bugs_other_projects_had() {
    // Lightning-AI/pytorch-lightning#14896, #5160.
    assert_eq!(expand("linux[1,2]").unwrap(), ["linux1", "linux2"]);
    assert_eq!(
        expand("alpha,beta,gamma").unwrap(),
        ["alpha", "beta", "gamma"]
    );
    // submitit PR #4, tensorflow#49956: leading zeros.
    assert_eq!(expand("n[009-011]").unwrap(), ["n009", "n010", "n011"]);
    // parallelly#140: padding per endpoint, not the widest.
    assert_eq!(expand("b04-[09-10]").unwrap(), ["b04-09", "b04-10"]);
    // clustershell#442, #524: mixed padding survives a round trip.
    let mixed = ["listserv01", "listserv3", "listserv02", "listserv4"];
    assert_eq!(compress(mixed), "listserv[01,3,02,4]");
    assert_eq!(expand(&compress(mixed)).unwrap(), mixed);
    // mpich#2786: prefix ending in '-'; scoop#26/#81: lists and single nodes.
    assert_eq!(expand("host-[001-002]").unwrap(), ["host-001", "host-002"]);
    assert_eq!(expand("nodes[006,011]").unwrap(), ["nodes006", "nodes011"]);
    assert_eq!(expand("nodes006").unwrap(), ["nodes006"]);
    assert_eq!(expand("nodes[006]").unwrap(), ["nodes006"]);
}

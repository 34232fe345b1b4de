//! `SlurmClusterResolver`: layouts, GPUs, options and errors on fixed environments; properties
//! of the layout over generated steps; and (in `tensorflow`) the differential test against
//! TensorFlow 2.21's own resolver.

mod tensorflow;

use std::collections::{BTreeMap, HashSet};

use cluster_resolver::{ClusterResolver, Env, Error, SlurmClusterResolver, TasksPerNode, slurm};
use proptest::prelude::*;

use super::runtime::block_on;

/// The variables of rank `rank` of a step, with `extra` on top (an empty value removes one).
fn step_env(
    rank: u32,
    nodelist: &str,
    tasks_per_node: &str,
    num_tasks: u32,
    extra: &[(&str, &str)],
) -> Env {
    let mut vars: BTreeMap<String, String> = [
        ("SLURM_PROCID", rank.to_string()),
        ("SLURM_STEP_NODELIST", nodelist.to_owned()),
        ("SLURM_STEP_TASKS_PER_NODE", tasks_per_node.to_owned()),
        ("SLURM_STEP_NUM_TASKS", num_tasks.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    for (k, v) in extra {
        vars.insert((*k).to_owned(), (*v).to_owned());
    }
    Env::from_iter(vars)
}

/// A resolver that never runs nvidia-smi: the node has `gpus` GPUs.
fn resolver(env: Env, gpus: u32) -> SlurmClusterResolver {
    SlurmClusterResolver::new(env).with_gpus_per_node(gpus)
}

/// `srun -N3 -n5` as observed on the local Slurm cluster: every rank computes the same spec and
/// its own address is on the node it runs on, with a port no other task of the node has.
#[test]
fn every_rank_of_a_real_step_agrees_and_runs_where_slurm_put_it() {
    for (distribution, placed) in [
        (None, ["node1", "node1", "node2", "node2", "node3"]),
        (Some("block"), ["node1", "node1", "node2", "node2", "node3"]),
        (
            Some("cyclic"),
            ["node1", "node2", "node3", "node1", "node2"],
        ),
    ] {
        let mut specs = Vec::new();
        let mut addresses = HashSet::new();
        for (rank, node) in placed.iter().enumerate() {
            let mut extra = vec![("SLURMD_NODENAME", *node)];
            if let Some(d) = distribution {
                extra.push(("SLURM_DISTRIBUTION", d));
            }
            let env = step_env(rank as u32, "node[1-3]", "2(x2),1", 5, &extra);
            let step = resolver(env, 0).resolve().unwrap();
            assert_eq!((step.task_type(), step.task_id()), ("worker", rank as u32));
            assert_eq!(step.node(), *node);
            assert_eq!(
                step.spec().task_address("worker", rank as u32).unwrap(),
                step.address()
            );
            assert!(addresses.insert(step.address()), "{distribution:?}");
            specs.push(step.into_spec());
        }
        assert!(specs.windows(2).all(|w| w[0] == w[1]), "{distribution:?}");
    }
}

#[test]
fn cyclic_layout_of_the_observed_step() {
    let env = step_env(
        0,
        "node[1-3]",
        "2(x2),1",
        5,
        &[("SLURM_DISTRIBUTION", "cyclic")],
    );
    let spec = resolver(env, 0).resolve().unwrap().into_spec();
    assert_eq!(
        spec.to_json(),
        r#"{"worker":["node1:8888","node2:8888","node3:8888","node1:8889","node2:8889"]}"#
    );
}

/// TensorFlow sorts hosts as strings (n10 before n9); Slurm's order is the nodelist's.
#[test]
fn nodelist_order_is_kept() {
    let env = step_env(0, "n[9-10]", "1(x2)", 2, &[("SLURMD_NODENAME", "n9")]);
    let step = resolver(env, 0).resolve().unwrap();
    assert_eq!(
        step.spec().to_json(),
        r#"{"worker":["n9:8888","n10:8888"]}"#
    );
    assert_eq!(step.address(), "n9:8888");
}

#[test]
fn unsupported_distributions_are_refused_by_name() {
    for value in [
        "plane",
        "arbitrary",
        "cyclic:block",
        "block:cyclic",
        "block,Pack",
    ] {
        let env = step_env(0, "n[1-2]", "1(x2)", 2, &[("SLURM_DISTRIBUTION", value)]);
        let e = resolver(env, 0).resolve().unwrap_err();
        assert!(
            matches!(&e, Error::Slurm(slurm::Error::UnsupportedDistribution { value: v }) if v == value),
            "{e:?}"
        );
        let message = e.to_string();
        assert!(message.contains(&format!("{value:?}")), "{message}");
        assert!(
            message.contains("block") && message.contains("cyclic"),
            "{message}"
        );
    }
}

#[test]
fn a_rank_computed_on_another_node_than_slurmd_nodename_is_an_error() {
    // Block says rank 1 runs on node1; this rank says node2 (as under cyclic).
    let env = step_env(
        1,
        "node[1-3]",
        "2(x2),1",
        5,
        &[("SLURMD_NODENAME", "node2")],
    );
    let e = resolver(env, 0).resolve().unwrap_err().to_string();
    assert!(
        e.contains("\"node1\"") && e.contains("SLURMD_NODENAME=\"node2\"") && e.contains("block"),
        "{e}"
    );
}

#[test]
fn zero_gpus_is_a_cpu_only_cluster() {
    let env = step_env(3, "node[1-3]", "2(x2),1", 5, &[]);
    let r = resolver(env, 0);
    let step = r.resolve().unwrap();
    assert_eq!(step.gpus_per_task(), 0);
    assert_eq!(r.cuda_visible_devices().unwrap().as_deref(), Some(""));
    assert!(block_on(r.num_accelerators(None, None)).unwrap().is_empty());

    // No nvidia-smi at all is zero GPUs too.
    let env = step_env(0, "n1", "1", 1, &[]);
    let r = SlurmClusterResolver::new(env).with_nvidia_smi(
        "/nonexistent/tfcluster/nvidia-smi",
        std::time::Duration::from_secs(1),
    );
    assert_eq!(r.resolve().unwrap().gpus_per_node(), 0);

    // And so is an empty CUDA_VISIBLE_DEVICES (TensorFlow counts one GPU).
    let env = step_env(0, "n1", "1", 1, &[("CUDA_VISIBLE_DEVICES", "")]);
    assert_eq!(
        SlurmClusterResolver::new(env)
            .resolve()
            .unwrap()
            .gpus_per_node(),
        0
    );
}

#[test]
fn each_task_gets_its_share_of_the_visible_gpus() {
    let visible = [("CUDA_VISIBLE_DEVICES", "4,5,6,7")];
    let got: Vec<Option<String>> = (0..5)
        .map(|rank| {
            let env = step_env(rank, "node[1-3]", "2(x2),1", 5, &visible);
            SlurmClusterResolver::new(env)
                .cuda_visible_devices()
                .unwrap()
        })
        .collect();
    let want = ["4,5", "6,7", "4,5", "6,7", "4,5"];
    assert_eq!(got, want.map(|s| Some(s.to_owned())));

    let env = step_env(1, "node[1-3]", "2(x2),1", 5, &visible);
    let r = SlurmClusterResolver::new(env.clone());
    assert_eq!(
        block_on(r.num_accelerators(None, None)).unwrap(),
        BTreeMap::from([("GPU".to_owned(), 2)])
    );
    let r = SlurmClusterResolver::new(env.clone()).with_gpus_per_task(1);
    assert_eq!(r.cuda_visible_devices().unwrap().as_deref(), Some("5"));
    let r = SlurmClusterResolver::new(env).with_auto_set_gpu(false);
    assert_eq!(r.cuda_visible_devices().unwrap(), None);
}

#[test]
fn trait_answers_come_from_the_environment_without_a_prior_cluster_spec_call() {
    let env = step_env(4, "node[1-3]", "2(x2),1", 5, &[]);
    let r = resolver(env, 0).with_jobs([("worker", 3), ("ps", 2)]);
    assert_eq!(r.task_type().as_deref(), Some("worker"));
    assert_eq!(r.task_id(), Some(2));
    assert_eq!(r.rpc_layer().as_deref(), Some("grpc"));
    assert_eq!(r.environment(), "");
    assert_eq!(r.task_info().unwrap(), ("worker".to_owned(), 2));
    assert_eq!(
        block_on(r.master(None, None, None)).unwrap(),
        "grpc://node3:8888"
    );
    assert_eq!(
        block_on(r.master(Some("ps"), Some(1), Some("grpc+verbs"))).unwrap(),
        "grpc+verbs://node1:8889"
    );
    // TensorFlow's `rpc_layer or self.rpc_layer`: an empty layer falls back to the resolver's.
    assert_eq!(
        block_on(r.master(Some("ps"), Some(0), Some(""))).unwrap(),
        "grpc://node1:8888"
    );
    // Only the id given: the job is this task's.
    assert_eq!(
        block_on(r.master(None, Some(0), None)).unwrap(),
        "grpc://node2:8888"
    );
    let r = r.with_rpc_layer("");
    assert_eq!(block_on(r.master(None, None, None)).unwrap(), "node3:8888");
    let e = block_on(r.master(Some("chief"), Some(0), None)).unwrap_err();
    assert!(e.to_string().contains("chief"), "{e}");

    let spec = block_on(r.cluster_spec()).unwrap();
    assert_eq!(spec.jobs(), ["ps", "worker"]);
    assert_eq!(
        spec.job_tasks("worker").unwrap(),
        [Some("node2:8888"), Some("node2:8889"), Some("node3:8888")]
    );

    // A broken environment: no task, and the error from every fallible call.
    let r = resolver(Env::from_iter([("SLURM_PROCID", "0")]), 0);
    assert_eq!(r.task_type(), None);
    assert_eq!(r.task_id(), None);
    assert!(block_on(r.cluster_spec()).is_err());
}

#[test]
fn options_port_base_jobs_and_tasks_per_node() {
    let env = step_env(2, "n[1-2]", "2(x2)", 4, &[]);
    let spec = resolver(env.clone(), 0)
        .with_port_base(2222)
        .with_jobs([("chief", 1), ("worker", 2), ("evaluator", 1)])
        .resolve()
        .unwrap()
        .into_spec();
    assert_eq!(
        spec.to_json(),
        r#"{"chief":["n1:2222"],"evaluator":["n1:2223"],"worker":["n2:2222","n2:2223"]}"#
    );

    // A uniform override reads the nodelist but not SLURM_STEP_TASKS_PER_NODE.
    let env = Env::from_iter([
        ("SLURM_PROCID", "0"),
        ("SLURM_STEP_NUM_TASKS", "6"),
        ("SLURM_STEP_NODELIST", "n[1-3]"),
    ]);
    let spec = resolver(env, 0)
        .with_tasks_per_node(2)
        .resolve()
        .unwrap()
        .into_spec();
    assert_eq!(spec.num_tasks("worker").unwrap(), 6);

    // A per-node override reads neither, and keeps its order.
    let env = Env::from_iter([("SLURM_PROCID", "1"), ("SLURM_STEP_NUM_TASKS", "3")]);
    let step = resolver(env, 0)
        .with_tasks_per_node(TasksPerNode::per_node([("n9", 1), ("n10", 2)]))
        .resolve()
        .unwrap();
    assert_eq!(
        step.spec().to_json(),
        r#"{"worker":["n9:8888","n10:8888","n10:8889"]}"#
    );
    assert_eq!(step.port(), 8888);

    // Jobs with no tasks are kept, as TensorFlow keeps them.
    let env = step_env(0, "n1", "1", 1, &[]);
    let spec = resolver(env, 0)
        .with_jobs([("worker", 1), ("ps", 0)])
        .resolve()
        .unwrap()
        .into_spec();
    assert_eq!(spec.to_json(), r#"{"ps":{},"worker":["n1:8888"]}"#);
}

/// Every error names the variable or option and its value; TensorFlow's wording leads where
/// TensorFlow has one.
#[test]
fn errors_name_what_is_wrong() {
    let mut cases: Vec<(SlurmClusterResolver, &str)> = vec![
        (
            resolver(Env::from_iter::<[(&str, &str); 0]>([]), 0),
            "SLURM_PROCID not found in environment. Not running inside a SLURM step?",
        ),
        (
            resolver(Env::from_iter([("SLURM_PROCID", "0")]), 0),
            "SLURM_STEP_NUM_TASKS not found in environment. Not running inside a SLURM step?",
        ),
        (
            resolver(Env::from_iter([("SLURM_PROCID", "0")]), 0).with_jobs([("worker", 1)]),
            "SLURM_STEP_NODELIST not found in environment. Not running inside a SLURM step?",
        ),
        (
            resolver(
                Env::from_iter([
                    ("SLURM_PROCID", "0"),
                    ("SLURM_STEP_NUM_TASKS", "1"),
                    ("SLURM_STEP_NODELIST", "n1"),
                ]),
                0,
            ),
            "SLURM_STEP_TASKS_PER_NODE not found in environment. Not running inside a SLURM step?",
        ),
        (
            resolver(step_env(0, "n1", "1", 1, &[("SLURM_PROCID", "one")]), 0),
            "environment variable SLURM_PROCID=\"one\" is invalid",
        ),
        (
            resolver(
                step_env(0, "n1", "1", 1, &[("SLURM_STEP_NUM_TASKS", "-1")]),
                0,
            ),
            "environment variable SLURM_STEP_NUM_TASKS=\"-1\" is invalid",
        ),
        (
            resolver(step_env(0, "n[1-", "1", 1, &[]), 0),
            "invalid hostlist \"n[1-\"",
        ),
        (
            resolver(step_env(0, "n1", "1x", 1, &[]), 0),
            "invalid tasks-per-node list \"1x\"",
        ),
        (
            resolver(step_env(0, "n[1-3]", "2(x2)", 4, &[]), 0),
            "SLURM_STEP_NODELIST=\"n[1-3]\" names 3 nodes but SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" gives task counts for 2",
        ),
        (
            resolver(step_env(0, "n1,n2,n1", "1(x3)", 3, &[]), 0),
            "node \"n1\" appears twice in SLURM_STEP_TASKS_PER_NODE=\"1(x3)\" on SLURM_STEP_NODELIST=\"n1,n2,n1\"",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 4, &[]), 4).with_gpus_per_task(3),
            "Requested more GPUs per node than available.",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 4, &[]), 3).with_gpus_per_task(2),
            "Requested more GPUs per node than available. (2 tasks on a node × 2 GPUs per task > 3 GPUs per node)",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 5, &[]), 0),
            "Requested 5 tasks but only 4 were assigned. (requested by SLURM_STEP_NUM_TASKS=5; assigned by SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" on SLURM_STEP_NODELIST=\"n[1-2]\")",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 4, &[]), 0)
                .with_jobs([("ps", 1), ("worker", 2)]),
            "Requested 3 tasks but only 4 were assigned. (requested by jobs {\"ps\": 1, \"worker\": 2}",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 3, &[]), 0).with_jobs([("worker", 4)]),
            "SLURM_STEP_NUM_TASKS=3 but SLURM_STEP_TASKS_PER_NODE=\"2(x2)\" on SLURM_STEP_NODELIST=\"n[1-2]\" holds 4 tasks",
        ),
        (
            resolver(step_env(0, "n1", "1", 1, &[]), 0).with_jobs([("w", 1), ("w", 0)]),
            "the jobs map names job 'w' twice",
        ),
        (
            resolver(step_env(4, "n[1-2]", "2(x2)", 4, &[]), 0),
            "SLURM_PROCID=4 is not a task of this step, which has 4 tasks",
        ),
        (
            resolver(step_env(0, "n[1-2]", "2(x2)", 4, &[]), 0).with_port_base(65535),
            "port_base 65535 + 2 tasks on node \"n1\" goes past port 65535",
        ),
        (
            resolver(
                step_env(0, "n1", "1", 1, &[("CUDA_VISIBLE_DEVICES", "0,1")]),
                0,
            )
            .with_gpus_per_node(3),
            "gpus_per_node 3 is more than the 2 GPUs CUDA_VISIBLE_DEVICES=\"0,1\" makes visible",
        ),
        (
            resolver(step_env(0, "n[1-2]", "4000000(x2)", 8_000_000, &[]), 0),
            "8000000 tasks (SLURM_STEP_TASKS_PER_NODE=\"4000000(x2)\" on SLURM_STEP_NODELIST=\"n[1-2]\") are more than the 4194304 a step may have",
        ),
        (
            resolver(step_env(0, "n:1", "1", 1, &[]), 0),
            "invalid address",
        ),
    ];
    let long = format!("{}[00-63]", "n".repeat(60));
    cases.push((
        resolver(step_env(0, &long, "65000(x64)", 64 * 65000, &[]), 0).with_port_base(0),
        "the 4160000 addresses of SLURM_STEP_TASKS_PER_NODE=\"65000(x64)\"",
    ));
    for (r, want) in cases {
        let e = r.resolve().unwrap_err().to_string();
        assert!(e.starts_with(want), "got:  {e}\nwant: {want}");
    }
}

/// Slurm's layout rules, in the test's own words: block fills nodes in order; cyclic gives
/// round `j` one task on every node holding more than `j`.
fn expected_nodes(counts: &[u32], cyclic: bool) -> Vec<usize> {
    let mut out = Vec::new();
    if cyclic {
        let rounds = counts.iter().copied().max().unwrap_or(0);
        for j in 0..rounds {
            out.extend((0..counts.len()).filter(|&n| counts[n] > j));
        }
    } else {
        for (n, &c) in counts.iter().enumerate() {
            out.extend(std::iter::repeat_n(n, c as usize));
        }
    }
    out
}

/// Slurm's compressed form of a tasks-per-node list: `2(x3),1`.
fn compress_counts(counts: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < counts.len() {
        let run = counts[i..].iter().take_while(|&&c| c == counts[i]).count();
        parts.push(if run > 1 {
            format!("{}(x{run})", counts[i])
        } else {
            counts[i].to_string()
        });
        i += run;
    }
    parts.join(",")
}

proptest! {
    /// Over generated steps: all ranks agree on the spec, each rank's address is on the node
    /// the layout rules put it, no two tasks share a node and port, and each rank's job and
    /// index follow the jobs map in name order.
    #[test]
    fn all_ranks_agree_on_one_layout(
        counts in proptest::collection::vec(1u32..5, 1..7),
        cyclic in any::<bool>(),
        width in 0usize..3,
        split in 0u32..20,
    ) {
        let names: Vec<String> = (0..counts.len()).map(|i| format!("c{:0width$}", i + 8)).collect();
        let nodelist = names.join(",");
        let tpn = compress_counts(&counts);
        let total: u32 = counts.iter().sum();
        let ps = split % (total + 1);
        let nodes = expected_nodes(&counts, cyclic);
        let mut spec = None;
        let mut seen = HashSet::new();
        for rank in 0..total {
            let node = &names[nodes[rank as usize]];
            let mut extra = vec![("SLURMD_NODENAME", node.as_str())];
            if cyclic {
                extra.push(("SLURM_DISTRIBUTION", "cyclic"));
            }
            let env = step_env(rank, &nodelist, &tpn, total, &extra);
            let step = resolver(env, 0)
                .with_jobs([("worker", total - ps), ("ps", ps)])
                .resolve()
                .unwrap();
            prop_assert_eq!(step.node(), node.as_str());
            prop_assert!(seen.insert(step.address()));
            let (job, id) = if rank < ps { ("ps", rank) } else { ("worker", rank - ps) };
            prop_assert_eq!((step.task_type(), step.task_id()), (job, id));
            prop_assert_eq!(step.spec().task_address(job, id).unwrap(), step.address());
            match &spec {
                None => spec = Some(step.into_spec()),
                Some(s) => prop_assert_eq!(s, step.spec()),
            }
        }
    }

    /// Nothing panics, whatever the variables hold.
    #[test]
    fn arbitrary_variables_do_not_panic(
        rank in "[0-9]{0,3}|.{0,4}",
        nodelist in "[a-c\\[\\]0-9,-]{0,12}",
        tpn in "[0-9(x),]{0,10}",
        num in "[0-9]{0,3}",
        distribution in proptest::option::of("block|cyclic|plane|.{0,3}"),
        nodename in proptest::option::of("[a-c0-9]{0,3}"),
        gpus in proptest::option::of(0u32..5),
        visible in proptest::option::of("[0-9,]{0,6}"),
    ) {
        let mut vars = vec![
            ("SLURM_PROCID", rank),
            ("SLURM_STEP_NODELIST", nodelist),
            ("SLURM_STEP_TASKS_PER_NODE", tpn),
            ("SLURM_STEP_NUM_TASKS", num),
        ];
        if let Some(d) = distribution { vars.push(("SLURM_DISTRIBUTION", d)); }
        if let Some(n) = nodename { vars.push(("SLURMD_NODENAME", n)); }
        if let Some(v) = visible { vars.push(("CUDA_VISIBLE_DEVICES", v)); }
        let mut r = SlurmClusterResolver::new(Env::from_iter(vars))
            .with_nvidia_smi("/nonexistent/tfcluster/nvidia-smi", std::time::Duration::from_secs(1));
        if let Some(g) = gpus { r = r.with_gpus_per_node(g); }
        let _ = r.resolve();
        let _ = r.cuda_visible_devices();
    }
}

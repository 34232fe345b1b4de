//! The Indexed Job resolver: the bad inputs the issue names, JobSets, and properties over
//! generated jobs (every pod's environment gives one cluster and each pod its own task).

use proptest::prelude::*;

use super::*;

fn pod(vars: &[(&str, &str)]) -> KubernetesIndexedJobClusterResolver {
    KubernetesIndexedJobClusterResolver::new(Env::from_iter(vars.iter().copied()))
}

const POD: [(&str, &str); 4] = [
    (JOB_COMPLETION_INDEX, "2"),
    (HOSTNAME, "train-2"),
    (COMPLETIONS, "3"),
    (SUBDOMAIN, "svc"),
];

/// `POD` with `var` set to `value`, or removed when `value` is `None`.
fn pod_with(var: &str, value: Option<&str>) -> KubernetesIndexedJobClusterResolver {
    let mut vars: Vec<(&str, &str)> = POD.iter().copied().filter(|(k, _)| *k != var).collect();
    vars.extend(value.map(|v| (var, v)));
    pod(&vars)
}

fn error(r: &KubernetesIndexedJobClusterResolver) -> String {
    r.tf_config()
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn an_indexed_job_is_its_pods_by_index() {
    let config = pod(&POD).tf_config().unwrap();
    assert_eq!(
        config.to_json(),
        r#"{"cluster":{"worker":["train-0.svc:2222","train-1.svc:2222","train-2.svc:2222"]},"task":{"type":"worker","index":2},"rpc_layer":"grpc"}"#
    );
    let mut vars = POD.to_vec();
    vars.extend([
        (NAMESPACE, "ml"),
        (PORT, "9000"),
        (HOSTNAME, "train-2.svc.ml.svc.cluster.local"),
    ]);
    let spec = pod(&vars).tf_config().unwrap().cluster;
    assert_eq!(
        spec.task_address("worker", 0).unwrap(),
        "train-0.svc.ml.svc:9000"
    );
    let r = pod(&vars).with_port(7000).with_layout("chief=1");
    let config = r.tf_config().unwrap();
    assert_eq!(
        config.cluster.task_address("chief", 0).unwrap(),
        "train-0.svc.ml.svc:7000"
    );
    assert_eq!(
        (config.task_type.as_deref(), config.task_id),
        (Some("worker"), Some(1))
    );
}

#[test]
fn bad_inputs_name_the_variable_value_and_object() {
    for (var, value, says) in [
        (
            JOB_COMPLETION_INDEX,
            None,
            "environment variable JOB_COMPLETION_INDEX is not set: run the pods as an Indexed \
             Job (spec.completionMode: Indexed)",
        ),
        (
            JOB_COMPLETION_INDEX,
            Some("two"),
            "environment variable JOB_COMPLETION_INDEX=\"two\" is invalid: not a non-negative \
             integer; run the pods as an Indexed Job",
        ),
        (
            JOB_COMPLETION_INDEX,
            Some("+2"),
            "JOB_COMPLETION_INDEX=\"+2\" is invalid: not a non-negative integer",
        ),
        (
            COMPLETIONS,
            Some("2"),
            "JOB_COMPLETION_INDEX=\"2\" is invalid: TFCLUSTER_K8S_COMPLETIONS is 2, so indices \
             run from 0 to 1; set TFCLUSTER_K8S_COMPLETIONS to the Job's spec.completions",
        ),
        (
            COMPLETIONS,
            None,
            "TFCLUSTER_K8S_COMPLETIONS is not set: set it in the pod template's env to the \
             Job's spec.completions",
        ),
        (
            COMPLETIONS,
            Some("0"),
            "TFCLUSTER_K8S_COMPLETIONS=\"0\" is invalid: not a number of pods from 1 to 100000",
        ),
        (
            COMPLETIONS,
            Some("100001"),
            "TFCLUSTER_K8S_COMPLETIONS=\"100001\" is invalid",
        ),
        (
            HOSTNAME,
            Some("train-2-x7k2p"),
            "HOSTNAME=\"train-2-x7k2p\" is invalid: it is not <job>-2 (<job>-<JOB_COMPLETION_INDEX>), \
             the host name of an Indexed Job's pod; Kubernetes names an Indexed Job's pods \
             <job>-<index>; do not set the pod template's hostname",
        ),
        (
            HOSTNAME,
            Some("-2"),
            "HOSTNAME=\"-2\" is invalid: it is not <job>-2",
        ),
        (
            HOSTNAME,
            Some("train-12"),
            "HOSTNAME=\"train-12\" is invalid",
        ),
        (
            HOSTNAME,
            Some("Train_x-2"),
            "HOSTNAME=\"Train_x-2\" is invalid: it is not <job>-2",
        ),
        (
            SUBDOMAIN,
            None,
            "environment variable TFCLUSTER_K8S_SUBDOMAIN is not set: set it in the pod \
             template's env to the pod template's spec.subdomain, the name of a headless \
             Service (clusterIP: None)",
        ),
        (
            SUBDOMAIN,
            Some("My.Svc"),
            "TFCLUSTER_K8S_SUBDOMAIN=\"My.Svc\" is invalid: not a Kubernetes name",
        ),
        (
            PORT,
            Some("0"),
            "TFCLUSTER_K8S_PORT=\"0\" is invalid: not a port (1-65535)",
        ),
        (
            PORT,
            Some("65536"),
            "TFCLUSTER_K8S_PORT=\"65536\" is invalid",
        ),
        (
            NAMESPACE,
            Some(""),
            "TFCLUSTER_K8S_NAMESPACE=\"\" is invalid",
        ),
        (
            LAYOUT,
            Some("chief=1,ps=3"),
            "TFCLUSTER_K8S_LAYOUT=\"chief=1,ps=3\" is invalid: it places 4 tasks, more than \
             the 3 pods of TFCLUSTER_K8S_COMPLETIONS",
        ),
        (
            LAYOUT,
            Some("worker=1"),
            "TFCLUSTER_K8S_LAYOUT=\"worker=1\" is invalid: worker at byte 0",
        ),
        (
            LAYOUT,
            Some("chief"),
            "TFCLUSTER_K8S_LAYOUT=\"chief\" is invalid: expected JOB=COUNT",
        ),
    ] {
        let message = error(&pod_with(var, value));
        assert!(message.contains(says), "{var}={value:?}: {message}");
    }
}

#[test]
fn a_layout_of_every_pod_leaves_no_workers() {
    let config = pod_with(LAYOUT, Some("chief=1,ps=2")).tf_config().unwrap();
    assert_eq!(config.cluster.jobs(), ["chief", "ps"]);
    assert_eq!(
        (config.task_type.as_deref(), config.task_id),
        (Some("ps"), Some(1))
    );
}

const JOB_SET: [(&str, &str); 3] = [
    (JOB_COMPLETION_INDEX, "0"),
    (HOSTNAME, "my-tf-ps-1-0"),
    (REPLICATED_JOBS, "chief=1,ps=2,worker=3"),
];

#[tokio::test]
async fn a_job_set_is_its_replicated_jobs() {
    let r = pod(&JOB_SET);
    let spec = r.cluster_spec().await.unwrap();
    assert_eq!(
        spec.to_json(),
        r#"{"chief":["my-tf-chief-0-0.my-tf:2222"],"ps":["my-tf-ps-0-0.my-tf:2222","my-tf-ps-1-0.my-tf:2222"],"worker":["my-tf-worker-0-0.my-tf:2222","my-tf-worker-1-0.my-tf:2222","my-tf-worker-2-0.my-tf:2222"]}"#
    );
    assert_eq!(
        (r.task_type().as_deref(), r.task_id()),
        (Some("ps"), Some(1))
    );
    let mut vars = JOB_SET.to_vec();
    vars.extend([(SUBDOMAIN, "net"), (NAMESPACE, "ml")]);
    let spec = pod(&vars).cluster_spec().await.unwrap();
    assert_eq!(
        spec.task_address("chief", 0).unwrap(),
        "my-tf-chief-0-0.net.ml.svc:2222"
    );
}

#[test]
fn a_job_set_pod_must_be_one_of_its_jobs() {
    for (var, value, says) in [
        (
            HOSTNAME,
            "my-tf-ps-2-0",
            "HOSTNAME=\"my-tf-ps-2-0\" is invalid: its job index \"2\" is not below the 2 replicas of ps",
        ),
        (
            HOSTNAME,
            "my-tf-master-0-0",
            "its replicated job \"master\" is not one of TFCLUSTER_K8S_REPLICATED_JOBS",
        ),
        (
            HOSTNAME,
            "ps-1-0",
            "HOSTNAME=\"ps-1-0\" is invalid: it is not <jobset>-<replicatedjob>-<jobindex>-0",
        ),
        (
            JOB_COMPLETION_INDEX,
            "1",
            "HOSTNAME=\"my-tf-ps-1-0\" is invalid: it is not <jobset>-<replicatedjob>-<jobindex>-1",
        ),
        (
            REPLICATED_JOBS,
            "",
            "TFCLUSTER_K8S_REPLICATED_JOBS=\"\" is invalid: it names no replicated job",
        ),
        (
            REPLICATED_JOBS,
            "Ps=2",
            "Ps at byte 0 is no Kubernetes name",
        ),
        (
            REPLICATED_JOBS,
            "ps=99999,worker=2",
            "it counts 100001 pods",
        ),
    ] {
        let mut vars: Vec<(&str, &str)> =
            JOB_SET.iter().copied().filter(|(k, _)| *k != var).collect();
        vars.push((var, value));
        let message = error(&pod(&vars));
        assert!(message.contains(says), "{var}={value:?}: {message}");
    }
    let vars = [
        (JOB_COMPLETION_INDEX, "1"),
        (HOSTNAME, "my-tf-ps-1-1"),
        JOB_SET[2],
    ];
    assert!(error(&pod(&vars)).contains("each child Job holds one pod"));
}

#[tokio::test]
async fn overrides_take_the_place_of_the_index() {
    let r = pod(&POD)
        .with_task_type("chief")
        .with_task_id(0)
        .with_rpc_layer("");
    assert_eq!(
        (r.task_type().as_deref(), r.task_id()),
        (Some("chief"), Some(0))
    );
    assert_eq!(r.rpc_layer().as_deref(), Some(""));
    assert_eq!(
        r.master(Some("worker"), Some(1), None).await.unwrap(),
        "train-1.svc:2222"
    );
}

/// A generated Indexed Job: name, completions, layout (chief, ps) and namespace.
fn job() -> impl Strategy<Value = (String, u32, u32, u32, Option<String>)> {
    (
        "[a-z][a-z0-9]{0,8}(-[a-z0-9]{1,4}){0,2}",
        1u32..40,
        0u32..2,
        0u32..4,
        proptest::option::of("[a-z][a-z0-9-]{0,6}[a-z0-9]"),
    )
        .prop_filter("the layout fits", |(_, n, chief, ps, _)| chief + ps <= *n)
}

proptest! {
    #[test]
    fn every_pod_sees_one_cluster_and_its_own_task((name, n, chief, ps, ns) in job()) {
        let mut layout = Vec::new();
        if chief > 0 { layout.push(format!("chief={chief}")); }
        if ps > 0 { layout.push(format!("ps={ps}")); }
        let layout = layout.join(",");
        let configs: Vec<TfConfig> = (0..n).map(|i| {
            let (index, host, completions) = (i.to_string(), format!("{name}-{i}"), n.to_string());
            let mut vars = vec![
                (JOB_COMPLETION_INDEX, index.as_str()),
                (HOSTNAME, host.as_str()),
                (COMPLETIONS, completions.as_str()),
                (SUBDOMAIN, "svc"),
                (LAYOUT, layout.as_str()),
            ];
            vars.extend(ns.as_deref().map(|ns| (NAMESPACE, ns)));
            pod(&vars).tf_config().unwrap()
        }).collect();
        let mut tasks: Vec<(String, u32)> = Vec::new();
        for config in &configs {
            prop_assert_eq!(&config.cluster, &configs[0].cluster);
            let (Some(job), Some(id)) = (config.task_type.clone(), config.task_id) else {
                panic!("a pod without a task");
            };
            // Each pod's own address is its own host name.
            let address = config.cluster.task_address(&job, id).unwrap();
            let own = format!("{name}-{}.svc", tasks.len());
            prop_assert!(address.starts_with(&own), "{} is not {}", address, own);
            tasks.push((job, id));
        }
        tasks.sort();
        tasks.dedup();
        prop_assert_eq!(tasks.len() as u32, n);
        prop_assert_eq!(configs[0].cluster.num_tasks("chief").unwrap_or(0) as u32, chief);
        prop_assert_eq!(configs[0].cluster.num_tasks("ps").unwrap_or(0) as u32, ps);
        prop_assert_eq!(configs[0].cluster.num_tasks("worker").unwrap_or(0) as u32, n - chief - ps);
    }

    #[test]
    fn every_job_set_pod_sees_one_cluster(
        name in "[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,3}){0,2}",
        chief in 0u32..2, ps in 0u32..3, workers in 1u32..6,
    ) {
        let jobs: Vec<(&str, u32)> =
            [("chief", chief), ("ps", ps), ("worker", workers)].into_iter().filter(|(_, n)| *n > 0).collect();
        let text = jobs.iter().map(|(j, n)| format!("{j}={n}")).collect::<Vec<_>>().join(",");
        let mut first = None;
        for (job, n) in &jobs {
            for j in 0..*n {
                let host = format!("{name}-{job}-{j}-0");
                let config = pod(&[(JOB_COMPLETION_INDEX, "0"), (HOSTNAME, &host), (REPLICATED_JOBS, &text)])
                    .tf_config().unwrap();
                prop_assert_eq!((config.task_type.as_deref(), config.task_id), (Some(*job), Some(j)));
                prop_assert_eq!(config.cluster.task_address(job, j).unwrap(), format!("{host}.{name}:2222"));
                let first = first.get_or_insert_with(|| config.cluster.clone());
                prop_assert_eq!(&config.cluster, first);
            }
        }
    }

    #[test]
    fn arbitrary_values_never_panic(
        values in proptest::collection::vec(proptest::option::of(".{0,12}|[0-9]{1,7}|[a-z]{1,3}-[0-9]{1,2}"), 8),
    ) {
        let names = [JOB_COMPLETION_INDEX, HOSTNAME, COMPLETIONS, SUBDOMAIN, NAMESPACE, PORT, LAYOUT, REPLICATED_JOBS];
        let vars: Vec<(&str, &str)> = names.iter().zip(&values)
            .filter_map(|(k, v)| v.as_deref().map(|v| (*k, v))).collect();
        let r = pod(&vars);
        let _ = r.tf_config();
        let _ = (r.task_type(), r.task_id());
    }
}

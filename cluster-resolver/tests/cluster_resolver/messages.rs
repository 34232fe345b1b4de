//! Issue 13: no error message grows with its input. Every message that shows an environment
//! value, a node, a job or task type or a spec, fed a 1 MB value, stays under 512 bytes and
//! still shows where the problem is.

use cluster_resolver::hostlist::ParseErrorKind;
use cluster_resolver::{
    Env, Error, SlurmClusterResolver, TfConfigClusterResolver, multi_worker, slurm,
};
use cluster_spec::ClusterSpec;
use tf_oracle::assert_bounded;

/// The size of the values fed in.
const BIG: usize = 1 << 20;

/// A name of `BIG` bytes starting with `start`, valid as a job name and a host name.
fn big(start: &str) -> String {
    format!("{start}{}", "x".repeat(BIG))
}

/// The variables of rank 0 of a step, with `extra` on top.
fn step(nodelist: &str, tasks_per_node: &str, num_tasks: u32, extra: &[(&str, &str)]) -> Env {
    let mut vars = vec![
        ("SLURM_PROCID".to_owned(), "0".to_owned()),
        ("SLURM_STEP_NODELIST".to_owned(), nodelist.to_owned()),
        (
            "SLURM_STEP_TASKS_PER_NODE".to_owned(),
            tasks_per_node.to_owned(),
        ),
        ("SLURM_STEP_NUM_TASKS".to_owned(), num_tasks.to_string()),
    ];
    vars.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    Env::from_iter(vars)
}

fn slurm_error(resolver: SlurmClusterResolver) -> Error {
    resolver.with_gpus_per_node(0).resolve().unwrap_err()
}

#[test]
fn messages_stay_short_whatever_the_input() {
    let node = big("nodestart");
    let job = big("jobstart");

    // Slurm: SLURMD_NODENAME, a node named twice, a long node past the ports, a job named
    // twice, a distribution, a job map that does not match the step.
    let nodename = big("namestart");
    let e = slurm_error(SlurmClusterResolver::new(step(
        "n1",
        "1",
        1,
        &[("SLURMD_NODENAME", &nodename)],
    )));
    assert!(
        matches!(e, Error::Slurm(slurm::Error::WrongNode { .. })),
        "{e:?}"
    );
    assert_bounded(&e, &["\"namestart"]);
    let e = slurm_error(SlurmClusterResolver::new(step(
        &format!("{node},{node}"),
        "1(x2)",
        2,
        &[],
    )));
    assert!(
        matches!(e, Error::Slurm(slurm::Error::DuplicateNode { .. })),
        "{e:?}"
    );
    assert_bounded(&e, &["node \"nodestart"]);
    let e = slurm_error(SlurmClusterResolver::new(step(&node, "2", 2, &[])).with_port_base(65535));
    assert!(
        matches!(e, Error::Slurm(slurm::Error::PortOverflow { .. })),
        "{e:?}"
    );
    assert_bounded(&e, &["node \"nodestart"]);
    let e = slurm_error(
        SlurmClusterResolver::new(step("n1", "2", 2, &[])).with_jobs([(&job, 1), (&job, 1)]),
    );
    assert!(
        matches!(e, Error::Slurm(slurm::Error::DuplicateJob { .. })),
        "{e:?}"
    );
    assert_bounded(&e, &["jobstart"]);
    let value = big("diststart");
    let e = slurm_error(SlurmClusterResolver::new(step(
        "n1",
        "1",
        1,
        &[("SLURM_DISTRIBUTION", &value)],
    )));
    assert!(
        matches!(
            e,
            Error::Slurm(slurm::Error::UnsupportedDistribution { .. })
        ),
        "{e:?}"
    );
    assert_bounded(&e, &["\"diststart"]);
    let e = slurm_error(SlurmClusterResolver::new(step("n1", "2", 2, &[])).with_jobs([(&job, 5)]));
    assert!(
        matches!(e, Error::Slurm(slurm::Error::TaskCountMismatch { .. })),
        "{e:?}"
    );
    assert_bounded(&e, &["jobstart"]);

    // Hostlists: a range as written.
    let list = format!("n[{}5-3]", "0".repeat(BIG));
    let e = cluster_resolver::hostlist::expand(&list).unwrap_err();
    assert!(
        matches!(e.kind, ParseErrorKind::DescendingRange { .. }),
        "{e:?}"
    );
    assert_bounded(&e, &["n[000"]);

    // TF_CONFIG: serde_json quotes a string of the wrong type whole.
    let text = format!("{{\"cluster\": \"{}\"}}", big("jsonstart"));
    let env = Env::from_iter([("TF_CONFIG".to_owned(), text)]);
    let e = TfConfigClusterResolver::new(env).tf_config().unwrap_err();
    assert!(matches!(e, Error::InvalidJsonVariable { .. }), "{e:?}");
    assert_bounded(&e, &["jsonstart"]);

    // Multi-worker rules: task types and specs as TensorFlow prints them.
    let spec = ClusterSpec::builder()
        .job("worker", ["h:1"])
        .build()
        .unwrap();
    let task_type = big("typestart");
    let e = multi_worker::is_chief(&spec, task_type.as_str(), 0).unwrap_err();
    assert_bounded(&e, &["typestart"]);
    let e = multi_worker::worker_count(&spec, task_type.as_str()).unwrap_err();
    assert_bounded(&e, &["typestart"]);
}

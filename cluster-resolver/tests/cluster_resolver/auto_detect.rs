//! `auto_detect` / `detect`: each source is found from a complete environment, never from a
//! partial one (jax-ml/jax#30073), in order, and the resolver built answers as that source's.

use cluster_resolver::{ClusterSource, Env, Error, auto_detect, detect};

use crate::cluster_resolver::runtime::block_on;

fn env(vars: &[(&str, &str)]) -> Env {
    Env::from_iter(vars.iter().copied())
}

/// What `srun -N2 -n4` gives rank 2 (no GPUs, so nvidia-smi is never asked).
const SLURM_STEP: &[(&str, &str)] = &[
    ("SLURM_PROCID", "2"),
    ("SLURM_STEP_NUM_TASKS", "4"),
    ("SLURM_STEP_NODELIST", "node[1-2]"),
    ("SLURM_STEP_TASKS_PER_NODE", "2(x2)"),
    ("SLURMD_NODENAME", "node2"),
    ("CUDA_VISIBLE_DEVICES", ""),
];

#[test]
fn nothing_set_lists_every_source() {
    let e = detect(&env(&[])).unwrap_err();
    let Error::NoClusterFound { checked } = &e else {
        panic!("{e:?}")
    };
    let sources: Vec<ClusterSource> = checked.iter().map(|(s, _)| *s).collect();
    assert_eq!(sources, ClusterSource::ALL);
    let message = e.to_string();
    assert!(
        message.starts_with(
            "no cluster found: TF_CONFIG: not set; Slurm: SLURM_PROCID, SLURM_STEP_NUM_TASKS, \
             SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE not set; SageMaker: SM_HOSTS, \
             SM_CURRENT_HOST not set; Open MPI: OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_RANK, \
             OMPI_COMM_WORLD_LOCAL_SIZE not set; Kubernetes Indexed Job: JOB_COMPLETION_INDEX \
             not set; Kubernetes: "
        ),
        "{message}"
    );
}

/// jax-ml/jax#30073: a shell on an allocated node has SLURM_JOB_ID and friends but no step.
#[test]
fn a_partial_slurm_environment_is_not_a_cluster() {
    let e = detect(&env(&[
        ("SLURM_JOB_ID", "42"),
        ("SLURM_PROCID", "0"),
        ("SLURM_NODELIST", "node[1-2]"),
    ]))
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "Slurm: SLURM_STEP_NUM_TASKS, SLURM_STEP_NODELIST, SLURM_STEP_TASKS_PER_NODE not set"
        ),
        "{e}"
    );
}

#[test]
fn a_slurm_step_resolves_through_the_slurm_resolver() {
    assert_eq!(detect(&env(SLURM_STEP)).unwrap(), ClusterSource::Slurm);
    let r = block_on(auto_detect(&env(SLURM_STEP))).unwrap();
    let spec = block_on(r.cluster_spec()).unwrap();
    assert_eq!(
        spec.to_json(),
        r#"{"worker":["node1:8888","node1:8889","node2:8888","node2:8889"]}"#
    );
    assert_eq!(
        (r.task_type().as_deref(), r.task_id()),
        (Some("worker"), Some(2))
    );
}

#[test]
fn tf_config_comes_first_unless_empty() {
    let mut vars = SLURM_STEP.to_vec();
    vars.push(("TF_CONFIG", ""));
    assert_eq!(detect(&env(&vars)).unwrap(), ClusterSource::Slurm);
    vars.push((
        "TF_CONFIG",
        r#"{"cluster": {"ps": ["p:1", "q:1"]}, "task": {"type": "ps", "index": 1}}"#,
    ));
    let r = block_on(auto_detect(&env(&vars))).unwrap();
    assert_eq!(block_on(r.master(None, None, None)).unwrap(), "q:1");
}

#[test]
fn sagemaker_and_open_mpi() {
    let sm = env(&[
        ("SM_HOSTS", r#"["algo-2","algo-1"]"#),
        ("SM_CURRENT_HOST", "algo-2"),
    ]);
    let r = block_on(auto_detect(&sm)).unwrap();
    assert_eq!(block_on(r.master(None, None, None)).unwrap(), "algo-2:2223");

    let one_node = env(&[
        ("OMPI_COMM_WORLD_SIZE", "3"),
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "3"),
    ]);
    assert_eq!(detect(&one_node).unwrap(), ClusterSource::OpenMpi);
    let r = block_on(auto_detect(&one_node)).unwrap();
    assert_eq!(
        block_on(r.cluster_spec())
            .unwrap()
            .num_tasks("worker")
            .unwrap(),
        3
    );
    assert_eq!(r.rpc_layer().as_deref(), Some("grpc"));

    let two_nodes = env(&[
        ("OMPI_COMM_WORLD_SIZE", "4"),
        ("OMPI_COMM_WORLD_RANK", "0"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "2"),
    ]);
    let e = detect(&two_nodes).unwrap_err().to_string();
    assert!(
        e.contains("Open MPI: ranks span several nodes (OMPI_COMM_WORLD_LOCAL_SIZE=2 of OMPI_COMM_WORLD_SIZE=4)"),
        "{e}"
    );
}

/// `mpirun` inside an allocation: the ranks inherit the step of Open MPI's daemons (here 2
/// daemons for 8 ranks, every rank of node 1 seeing SLURM_PROCID=1), which must not be used.
#[test]
fn mpirun_under_slurm_is_not_read_as_the_slurm_step() {
    let vars = [
        ("SLURM_PROCID", "1"),
        ("SLURM_STEP_NUM_TASKS", "2"),
        ("SLURM_STEP_NODELIST", "node[1-2]"),
        ("SLURM_STEP_TASKS_PER_NODE", "1(x2)"),
        ("OMPI_COMM_WORLD_SIZE", "8"),
        ("OMPI_COMM_WORLD_RANK", "5"),
        ("OMPI_COMM_WORLD_LOCAL_SIZE", "4"),
    ];
    let e = detect(&env(&vars)).unwrap_err().to_string();
    assert!(
        e.contains("Slurm: SLURM_STEP_NUM_TASKS=\"2\" but OMPI_COMM_WORLD_SIZE=\"8\""),
        "{e}"
    );
}

#[test]
fn a_broken_source_is_reported_not_skipped() {
    let mut vars = SLURM_STEP.to_vec();
    vars.push(("TF_CONFIG", r#"{"cluster": {"worker": ["no-port"]}}"#));
    let Err(e) = block_on(auto_detect(&env(&vars))) else {
        panic!("a broken TF_CONFIG")
    };
    assert!(
        e.to_string()
            .contains(r#"invalid address "no-port" for task 0 of job 'worker'"#),
        "{e}"
    );
}

/// Issue 13: a TF_CONFIG that is not UTF-8 counted as unset, so SageMaker was resolved instead
/// (exit 0). Set but unreadable is a complete, invalid source: an error naming the variable.
#[cfg(unix)]
#[test]
fn a_tf_config_that_is_not_utf8_is_an_error_not_absence() {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;

    let vars: Vec<(&str, OsString)> = vec![
        (
            "TF_CONFIG",
            OsString::from_vec(b"{\"cluster\": \xff}".to_vec()),
        ),
        ("SM_HOSTS", r#"["algo-1"]"#.into()),
        ("SM_CURRENT_HOST", "algo-1".into()),
    ];
    let env = Env::from_iter(vars);
    assert_eq!(detect(&env).unwrap(), ClusterSource::TfConfig);
    let e = block_on(auto_detect(&env)).err().expect("an error");
    assert!(
        matches!(&e, cluster_resolver::Error::NotUnicode { variable } if variable == "TF_CONFIG"),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "environment variable TF_CONFIG is set but is not valid UTF-8"
    );
}

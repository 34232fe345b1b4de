//! The crate's single error type.

mod python;

use std::fmt::Write as _;

use cluster_spec::quote::{excerpt, quote};

use crate::cluster_source::ClusterSource;

/// Everything that can go wrong in this crate.
///
/// Every variant quotes the offending input (shortened around the problem when it is long) and,
/// where a position is meaningful, the byte offset into that input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    // ---- Shared by every resolver ----
    /// A cluster spec built from the source is invalid, or a lookup in it failed.
    #[error(transparent)]
    Spec(#[from] cluster_spec::Error),
    /// A required environment variable is not set.
    #[error("environment variable {name} is not set")]
    MissingVariable {
        /// The variable.
        name: String,
    },
    /// An environment variable is set, but its value is not UTF-8.
    #[error("environment variable {variable} is set but is not valid UTF-8")]
    NotUnicode {
        /// The variable.
        variable: String,
    },
    /// An environment variable holds a value the resolver cannot use.
    #[error(
        "environment variable {name}={} is invalid: {reason}",
        quote(.value, 0)
    )]
    InvalidVariable {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    // ---- TF_CONFIG and SageMaker (`TfConfigClusterResolver`, `SageMakerClusterResolver`) ----
    /// An environment variable holding JSON (`TF_CONFIG`, `SM_HOSTS`) is not valid JSON, or a
    /// key in it has a value of the wrong type or range.
    #[error(
        "environment variable {name} is invalid at line {line}, column {column}: {message}: {}",
        quote(.value, *.pos)
    )]
    InvalidJsonVariable {
        /// The variable.
        name: String,
        /// Its value.
        value: String,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column (in bytes) of the problem.
        column: usize,
        /// Byte offset of the problem in `value`.
        pos: usize,
        /// What is wrong, naming the key and the value found.
        message: String,
    },
    /// `master()` needs a task, but neither the caller nor TF_CONFIG gives its type or index.
    #[error("master() needs a task: no {field} was given and TF_CONFIG has none")]
    TfConfigNoTask {
        /// The missing key, `task.type` or `task.index`.
        field: &'static str,
    },

    // ---- Union (`UnionClusterResolver`) ----
    /// A union was given no resolvers (TensorFlow's wording).
    #[error("At least one ClusterResolver is required.")]
    NoResolvers,
    /// Two resolvers of a union give the same task index of a job merged by index
    /// (TensorFlow's wording, then the job).
    #[error(
        "Duplicate keys detected when merging two ClusterSpecs: {} (job '{}')",
        excerpt(&python::python_set(.tasks), 0),
        excerpt(.job, 0)
    )]
    UnionDuplicateTasks {
        /// The job.
        job: String,
        /// The task indices given twice, ascending.
        tasks: Vec<u32>,
    },

    // ---- Chief / evaluator rules (`multi_worker`), TensorFlow's wording first ----
    /// The cluster has a job other than chief, worker, evaluator and ps.
    #[error(
        "Disallowed task type found in cluster spec. Allowed types are {} and the cluster spec \
         is {spec}. (job '{}')",
        python::ALLOWED_REPR,
        excerpt(.job, 0)
    )]
    DisallowedJob {
        /// The first such job.
        job: String,
        /// The spec, as TensorFlow prints it.
        spec: String,
    },
    /// The task type is not chief, worker, evaluator or ps.
    #[error(
        "Unrecognized task_type: {}, valid task types are: {}",
        excerpt(.task_type, 0),
        python::ALLOWED_REPR
    )]
    UnrecognizedTaskType {
        /// The task type.
        task_type: String,
    },
    /// The task type is not a job of the cluster (and is not `evaluator`).
    #[error("`task_type` '{}' not found in cluster_spec.", excerpt(.task_type, 0))]
    TaskTypeNotInCluster {
        /// The task type.
        task_type: String,
    },
    /// The cluster has more than one chief task.
    #[error("There must be at most one 'chief' job. (job 'chief' has {count} tasks)")]
    TooManyChiefs {
        /// The number of chief tasks.
        count: usize,
    },
    /// The cluster has more than one evaluator task.
    #[error("There must be at most one 'evaluator' job. (job 'evaluator' has {count} tasks)")]
    TooManyEvaluators {
        /// The number of evaluator tasks.
        count: usize,
    },
    /// The task id is not below the number of tasks of its job.
    #[error(
        "The `task_id` {task_id} exceeds the maximum id of {}. (it has {num_tasks} tasks)",
        excerpt(.task_type, 0)
    )]
    TaskIdOutOfRange {
        /// The task type.
        task_type: String,
        /// The task id.
        task_id: u32,
        /// The number of tasks of the job.
        num_tasks: usize,
    },
    /// A rule needs the task id and none was given (a `TypeError` in TensorFlow).
    #[error("no `task_id` given for task_type '{}'", excerpt(.task_type, 0))]
    MissingTaskId {
        /// The task type.
        task_type: String,
    },
    /// `worker_count` of a task type other than chief, worker and evaluator.
    #[error(
        "Unexpected `task_type` {}",
        excerpt(&python::python_repr(.task_type.as_deref()), 0)
    )]
    UnexpectedTaskType {
        /// The task type, if any.
        task_type: Option<String>,
    },
    /// `id_in_cluster` of a task type other than chief, worker and evaluator.
    #[error(
        "There is no id for task_type {}",
        excerpt(&python::python_repr(.task_type.as_deref()), 0)
    )]
    NoIdForTaskType {
        /// The task type, if any.
        task_type: Option<String>,
    },
    /// The cluster has none of the jobs that could lead (an `AssertionError` in TensorFlow).
    #[error("cluster spec {spec} has no {candidates} job to lead {what}")]
    NoLeader {
        /// What is led: `collective ops` or `the coordination service`.
        what: &'static str,
        /// The jobs that could, e.g. `'chief' or 'worker'`.
        candidates: &'static str,
        /// The spec, as TensorFlow prints it.
        spec: String,
    },

    // ---- Auto-detection (`auto_detect`) ----
    /// No source of cluster information is complete; says what each one lacks.
    #[error("no cluster found: {}", describe_checked(.checked))]
    NoClusterFound {
        /// Each source checked, in order, and what it lacks.
        checked: Vec<(ClusterSource, String)>,
    },

    // ---- Slurm hostlists (`hostlist::expand`, `hostlist::HostList::parse`) ----
    /// A `[` in a hostlist has no matching `]`.
    #[error("invalid hostlist {}: unclosed '[' at byte {pos}", quote(.input, *.pos))]
    HostlistUnclosedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the `[`.
        pos: usize,
    },
    /// A `]` in a hostlist has no matching `[`.
    #[error("invalid hostlist {}: unmatched ']' at byte {pos}", quote(.input, *.pos))]
    HostlistUnmatchedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the `]`.
        pos: usize,
    },
    /// A `[` inside a bracket group; groups do not nest.
    #[error("invalid hostlist {}: nested '[' at byte {pos}", quote(.input, *.pos))]
    HostlistNestedBracket {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the inner `[`.
        pos: usize,
    },
    /// An empty element in a bracket group, as in `n[]`, `n[1,]` or `n[,1]`.
    #[error("invalid hostlist {}: empty range at byte {pos}", quote(.input, *.pos))]
    HostlistEmptyRange {
        /// The whole hostlist.
        input: String,
        /// Byte offset where the missing range should start.
        pos: usize,
    },
    /// A character that the bracket grammar does not allow at that point (`n[a]`, `n[1-2-3]`).
    #[error(
        "invalid hostlist {}: expected {expected} at byte {pos}, found {found:?}",
        quote(.input, *.pos)
    )]
    HostlistUnexpectedChar {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the unexpected character.
        pos: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead.
        found: char,
    },
    /// A number in a bracket group does not fit in 64 bits.
    #[error(
        "invalid hostlist {}: number at byte {pos} does not fit in 64 bits",
        quote(.input, *.pos)
    )]
    HostlistNumberOverflow {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the number's first digit.
        pos: usize,
    },
    /// A range whose upper bound is below its lower bound (`n[5-3]`); Slurm rejects these too.
    #[error(
        "invalid hostlist {}: descending range '{}' at byte {pos}",
        quote(.input, *.pos),
        excerpt(.range, 0)
    )]
    HostlistDescendingRange {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the range's first digit.
        pos: usize,
        /// The range as written, e.g. `5-3`.
        range: String,
    },
    /// The hostlist names more hosts than `hostlist::MAX_HOSTS`.
    #[error(
        "invalid hostlist {}: expands to more than {max} hosts (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    HostlistTooManyHosts {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the name or bracket group that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },
    /// The host names of the hostlist add up to more than `hostlist::MAX_BYTES` bytes.
    #[error(
        "invalid hostlist {}: expands to more than {max} bytes of host names (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    HostlistTooLarge {
        /// The whole hostlist.
        input: String,
        /// Byte offset of the name or bracket group that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_BYTES`.
        max: usize,
    },

    // ---- SLURM_STEP_TASKS_PER_NODE (`hostlist::expand_tasks_per_node`) ----
    /// A tasks-per-node list that does not follow `N` / `N(xK)`, comma separated.
    #[error(
        "invalid tasks-per-node list {}: expected {expected} at byte {pos}, found {}",
        quote(.input, *.pos),
        describe(*.found)
    )]
    TasksPerNodeSyntax {
        /// The whole list.
        input: String,
        /// Byte offset of the problem.
        pos: usize,
        /// What the grammar allows there.
        expected: &'static str,
        /// The character found instead; `None` at the end of the input.
        found: Option<char>,
    },
    /// A count in a tasks-per-node list does not fit in 32 bits.
    #[error(
        "invalid tasks-per-node list {}: number at byte {pos} does not fit in 32 bits",
        quote(.input, *.pos)
    )]
    TasksPerNodeOverflow {
        /// The whole list.
        input: String,
        /// Byte offset of the number's first digit.
        pos: usize,
    },
    /// A tasks-per-node list that names more nodes than `hostlist::MAX_HOSTS`.
    #[error(
        "invalid tasks-per-node list {}: expands to more than {max} nodes (limit passed at byte {pos})",
        quote(.input, *.pos)
    )]
    TasksPerNodeTooMany {
        /// The whole list.
        input: String,
        /// Byte offset of the element that passed the limit.
        pos: usize,
        /// The limit, `hostlist::MAX_HOSTS`.
        max: usize,
    },

    // ---- Slurm resolver (`SlurmClusterResolver`) ----
    /// A variable Slurm sets in every step is missing (TensorFlow's wording).
    #[error("{name} not found in environment. Not running inside a SLURM step?")]
    SlurmVariableMissing {
        /// The variable, e.g. `SLURM_PROCID`.
        name: String,
    },
    /// `SLURM_STEP_NODELIST` and `SLURM_STEP_TASKS_PER_NODE` name different numbers of nodes.
    #[error(
        "SLURM_STEP_NODELIST={} names {nodes} nodes but \
         SLURM_STEP_TASKS_PER_NODE={} gives task counts for {counts}",
        quote(.nodelist, 0),
        quote(.tasks_per_node, 0)
    )]
    SlurmNodeCountMismatch {
        /// `SLURM_STEP_NODELIST`.
        nodelist: String,
        /// Its number of nodes.
        nodes: usize,
        /// `SLURM_STEP_TASKS_PER_NODE`.
        tasks_per_node: String,
        /// Its number of counts.
        counts: usize,
    },
    /// A node is named twice in the step's node list (or the `tasks_per_node` option).
    #[error("node {} appears twice in {origin}", quote(.node, 0))]
    SlurmDuplicateNode {
        /// The node.
        node: String,
        /// Where the nodes came from, with its value.
        origin: String,
    },
    /// The jobs map names a job twice.
    #[error("the jobs map names job '{}' twice", excerpt(.job, 0))]
    SlurmDuplicateJob {
        /// The job.
        job: String,
    },
    /// The step has more tasks than `slurm::MAX_TASKS`.
    #[error("{tasks} tasks ({origin}) are more than the {max} a step may have")]
    SlurmTooManyTasks {
        /// The number of tasks.
        tasks: u64,
        /// Where the counts came from, with its value.
        origin: String,
        /// The limit, `slurm::MAX_TASKS`.
        max: usize,
    },
    /// The busiest node has fewer GPUs than its tasks ask for (TensorFlow's wording first).
    #[error(
        "Requested more GPUs per node than available. ({tasks_per_node} tasks on a node × \
         {gpus_per_task} GPUs per task > {gpus_per_node} GPUs per node)"
    )]
    SlurmNotEnoughGpus {
        /// GPUs of a node.
        gpus_per_node: u32,
        /// The most tasks on one node.
        tasks_per_node: u32,
        /// GPUs asked for each task.
        gpus_per_task: u32,
    },
    /// `gpus_per_node` is more than `CUDA_VISIBLE_DEVICES` makes visible.
    #[error(
        "gpus_per_node {gpus_per_node} is more than the {count} GPUs \
         CUDA_VISIBLE_DEVICES={} makes visible",
        quote(.visible, 0)
    )]
    SlurmGpusNotVisible {
        /// The `gpus_per_node` option.
        gpus_per_node: u32,
        /// `CUDA_VISIBLE_DEVICES`.
        visible: String,
        /// The number of devices it lists.
        count: usize,
    },
    /// `gpus_per_node` or `nvidia-smi` gives a node more than `slurm::MAX_GPUS_PER_NODE` GPUs.
    #[error("{origin} gives {count} GPUs per node, more than the {max} a node may have")]
    SlurmTooManyGpus {
        /// The number of GPUs.
        count: u32,
        /// Where it came from: `gpus_per_node` or `nvidia-smi --list-gpus`.
        origin: String,
        /// The limit, `slurm::MAX_GPUS_PER_NODE`.
        max: u32,
    },
    /// The jobs map (or `SLURM_STEP_NUM_TASKS`) asks for another number of tasks than the
    /// nodes hold (TensorFlow's wording first).
    #[error("Requested {requested} tasks but only {assigned} were assigned. ({detail})")]
    SlurmTaskCountMismatch {
        /// Tasks the jobs map asks for.
        requested: u64,
        /// Tasks the nodes hold.
        assigned: u64,
        /// Where both numbers came from.
        detail: String,
    },
    /// `SLURM_STEP_NUM_TASKS` disagrees with the tasks per node (checked when a jobs map is
    /// given, where TensorFlow does not read it).
    #[error("SLURM_STEP_NUM_TASKS={num_tasks} but {origin} holds {assigned} tasks")]
    SlurmNumTasksMismatch {
        /// `SLURM_STEP_NUM_TASKS`.
        num_tasks: u32,
        /// The tasks the nodes hold.
        assigned: u64,
        /// Where the counts came from, with its value.
        origin: String,
    },
    /// `SLURM_PROCID` is not a rank of the step.
    #[error("SLURM_PROCID={rank} is not a task of this step, which has {num_tasks} tasks")]
    SlurmRankOutOfRange {
        /// `SLURM_PROCID`.
        rank: u32,
        /// The step's tasks.
        num_tasks: u64,
    },
    /// `SLURM_DISTRIBUTION` names a layout this resolver cannot reproduce.
    #[error(
        "SLURM_DISTRIBUTION={} is not supported: only block (or unset) and cyclic task \
         distributions can be reproduced from the step's variables",
        quote(.value, 0)
    )]
    SlurmUnsupportedDistribution {
        /// `SLURM_DISTRIBUTION`.
        value: String,
    },
    /// `port_base` plus the tasks of a node goes past port 65535.
    #[error(
        "port_base {port_base} + {tasks} tasks on node {} goes past port 65535",
        quote(.node, 0)
    )]
    SlurmPortOverflow {
        /// The `port_base` option.
        port_base: u16,
        /// Tasks on the busiest node.
        tasks: u32,
        /// That node.
        node: String,
    },
    /// This rank was computed to run on another node than `SLURMD_NODENAME` says.
    #[error(
        "rank {rank} (SLURM_PROCID) runs on node {} by the {distribution} layout of \
         {origin}, but SLURMD_NODENAME={}: the cluster would give this task another \
         node's address",
        quote(.computed, 0),
        quote(.nodename, 0)
    )]
    SlurmWrongNode {
        /// `SLURM_PROCID`.
        rank: u32,
        /// The node the layout gives it.
        computed: String,
        /// `SLURMD_NODENAME`.
        nodename: String,
        /// The distribution used, `block` or `cyclic`.
        distribution: &'static str,
        /// Where the nodes and counts came from, with their values.
        origin: String,
    },
    /// `nvidia-smi` could not be started (other than not being installed).
    #[error(
        "cannot run {} --list-gpus to count GPUs: {source}",
        excerpt(.program, 0)
    )]
    SlurmNvidiaSmiStart {
        /// The program.
        program: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// `nvidia-smi --list-gpus` failed (TensorFlow's wording).
    #[error(
        "Could not get number of GPUs from nvidia-smi. Maybe it is missing?\nOutput: {} ({status})",
        excerpt(.output, 0)
    )]
    SlurmNvidiaSmiFailed {
        /// Its exit status.
        status: String,
        /// What it printed.
        output: String,
    },
    /// `nvidia-smi --list-gpus` ran past its deadline and was killed.
    #[error(
        "{} --list-gpus did not answer within {timeout:?}; set gpus_per_node or \
         CUDA_VISIBLE_DEVICES to not ask it",
        excerpt(.program, 0)
    )]
    SlurmNvidiaSmiTimeout {
        /// The program.
        program: String,
        /// The deadline.
        timeout: std::time::Duration,
    },
    /// The step's addresses would add up to more than `slurm::MAX_SPEC_BYTES` bytes.
    #[error(
        "the {tasks} addresses of {origin} add up to {bytes} bytes, more than the {max} a \
         cluster may have"
    )]
    SlurmSpecTooLarge {
        /// The number of tasks.
        tasks: usize,
        /// Where the nodes and counts came from, with their values.
        origin: String,
        /// The bytes the addresses would take.
        bytes: u64,
        /// The limit, `slurm::MAX_SPEC_BYTES`.
        max: usize,
    },

    // ---- Network resolvers (Kubernetes, GCE, TPU) ----
    /// A call to a cluster API did not finish within its deadline.
    #[error("{operation} timed out after {timeout:?}")]
    Timeout {
        /// What was called, e.g. `GET https://…/instances/vm-1` or `listing pods in namespace "ml"`.
        operation: String,
        /// The deadline that passed.
        timeout: std::time::Duration,
    },
    /// A call to a cluster API failed before an answer arrived (connection, TLS, protocol, or
    /// an error reported by the API client). The message carries the source's causes too.
    #[error("{operation} failed: {}", error_chain(&**.source))]
    Request {
        /// What was called.
        operation: String,
        /// Why it failed: the client's own error (`kube::Error`, hyper's, ...), with its causes.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// An HTTP API answered with an error status.
    #[error("{operation} returned HTTP {status}: {}", excerpt(.message, 0))]
    HttpStatus {
        /// What was called.
        operation: String,
        /// The HTTP status code.
        status: u16,
        /// The API's error message (Google's `error.message`), else the start of the body.
        message: String,
    },
    /// An API answered with a document the resolver cannot use.
    #[error("{operation} returned an invalid response: {reason}")]
    InvalidResponse {
        /// What was called.
        operation: String,
        /// What is wrong with the answer.
        reason: String,
    },
    /// Several independent calls failed; every failure is listed, not only the first.
    #[error("{} calls failed: {}", .errors.len(), join_errors(.errors))]
    Multiple {
        /// Each failure.
        errors: Vec<Error>,
    },

    // ---- Kubernetes (`KubernetesClusterResolver`) ----
    /// Neither an in-cluster nor a kubeconfig client configuration could be loaded. Both causes
    /// are kept; the kubeconfig's, tried last, is the [`source`](std::error::Error::source).
    #[cfg(feature = "kubernetes")]
    #[cfg_attr(docsrs, doc(cfg(feature = "kubernetes")))]
    #[error(
        "cannot configure a Kubernetes client: in-cluster config: {in_cluster}; kubeconfig: {kubeconfig}"
    )]
    KubernetesConfig {
        /// Why the in-cluster configuration (service account) failed.
        in_cluster: kube::config::InClusterError,
        /// Why the kubeconfig failed.
        #[source]
        kubeconfig: kube::config::KubeconfigError,
    },
    /// Selected pods are not in phase `Running`. With one pod the message is TensorFlow's
    /// (`Pod "p" is not running; phase: "Pending"`); every such pod is listed.
    #[error("{}", pods_not_running(.namespace, .pods, .waited))]
    PodsNotRunning {
        /// The namespace listed.
        namespace: String,
        /// Each pod that is not running and its phase (`"None"` when the pod reports none, as TF).
        pods: Vec<(String, String)>,
        /// How long the resolver waited for them, if it was asked to wait.
        waited: Option<std::time::Duration>,
    },
    /// A running pod does not report the IP the resolver uses.
    #[error(
        "Pod \"{}\" in namespace \"{}\" is running but has no {field}",
        excerpt(.pod, 0),
        excerpt(.namespace, 0)
    )]
    PodWithoutAddress {
        /// The namespace of the pod.
        namespace: String,
        /// The pod.
        pod: String,
        /// The missing field, `status.podIP` or `status.hostIP`.
        field: &'static str,
    },
    /// One pod is matched by two label selectors, which would make it two tasks.
    #[error(
        "Pod \"{}\" in namespace \"{}\" is selected twice: by {} and by {}",
        excerpt(.pod, 0),
        excerpt(.namespace, 0),
        quote(.first, 0),
        quote(.second, 0)
    )]
    PodSelectedTwice {
        /// The namespace of the pod.
        namespace: String,
        /// The pod.
        pod: String,
        /// The first selector that matched it, with its job (`job 'worker': app=tf`).
        first: String,
        /// The second.
        second: String,
    },

    // ---- Google Compute Engine (`GceClusterResolver`) ----
    /// An instance of the group has no first network interface with an IP.
    #[error(
        "instance \"{}\" of instance group \"{}\" has no networkInterfaces[0].networkIP",
        excerpt(.instance, 0),
        excerpt(.group, 0)
    )]
    InstanceWithoutIp {
        /// The instance group.
        group: String,
        /// The instance.
        instance: String,
    },

    // ---- Cloud TPU (`TpuClusterResolver`) ----
    /// No TPU was named and neither `KUBE_GOOGLE_CLOUD_TPU_ENDPOINTS` nor `TPU_NAME` is set
    /// (TensorFlow's wording).
    #[error("Please provide a TPU Name to connect to.")]
    TpuNameMissing,
    /// The Cloud TPU API lookup of a node failed (TensorFlow's wording).
    #[error(
        "Could not lookup TPU metadata from name '{}'. Please doublecheck the tpu argument in the TPUClusterResolver constructor. Exception: {source}",
        excerpt(.tpu, 0)
    )]
    TpuLookup {
        /// The TPU name.
        tpu: String,
        /// Why the lookup failed.
        #[source]
        source: Box<Error>,
    },
    /// The TPU node is not in state `READY` (TensorFlow's wording).
    #[error(
        "TPU \"{}\" is not yet ready; state: \"{}\"",
        excerpt(.tpu, 0),
        excerpt(.state, 0)
    )]
    TpuNotReady {
        /// The TPU name.
        tpu: String,
        /// Its state, e.g. `CREATING`, `PREEMPTED`.
        state: String,
    },
    /// The TPU node is not `HEALTHY`, and the resolver was asked to require health.
    #[error(
        "TPU \"{}\" is not healthy; health: \"{}\"",
        excerpt(.tpu, 0),
        excerpt(.health, 0)
    )]
    TpuUnhealthy {
        /// The TPU name.
        tpu: String,
        /// Its health, e.g. `UNHEALTHY_MAINTENANCE` (`HEALTH_UNSPECIFIED` when absent).
        health: String,
    },
    /// The TPU job has no task to be the master (TensorFlow's wording, plus the job).
    #[error(
        "No TPUs with the specified names exist. (job '{}' has no tasks)",
        excerpt(.job, 0)
    )]
    NoTpus {
        /// The job that has no tasks.
        job: String,
    },
    /// A TPU node's `acceleratorType` gives no per-host core count.
    #[error(
        "TPU \"{}\" has accelerator type {}: {reason}",
        excerpt(.tpu, 0),
        quote(.accelerator_type, 0)
    )]
    TpuAcceleratorType {
        /// The TPU name.
        tpu: String,
        /// The accelerator type, e.g. `v3-8`.
        accelerator_type: String,
        /// Why no core count follows from it.
        reason: String,
    },
}

/// `'c'` for a character, `end of input` for none.
fn describe(found: Option<char>) -> String {
    match found {
        Some(c) => format!("{c:?}"),
        None => "end of input".to_owned(),
    }
}

/// `error` and its sources as one line, `outer: inner: innermost`, skipping a source whose
/// text the previous one already shows. For wrapped transport errors whose own message is
/// only a category (hyper's `client error (Connect)`), so the cause, e.g. `Connection refused`,
/// is in the message.
pub(crate) fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut last = out.clone();
    let mut source = error.source();
    while let Some(e) = source {
        let text = e.to_string();
        if !last.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        last = text;
        source = e.source();
    }
    out
}

/// `TF_CONFIG: not set; Slurm: ...`, for [`Error::NoClusterFound`].
fn describe_checked(checked: &[(ClusterSource, String)]) -> String {
    let parts: Vec<String> = checked
        .iter()
        .map(|(source, reason)| format!("{source}: {reason}"))
        .collect();
    parts.join("; ")
}

/// `a; b; c` for the errors of [`Error::Multiple`].
fn join_errors(errors: &[Error]) -> String {
    let mut out = String::new();
    for (i, e) in errors.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        // Writing to a String cannot fail.
        let _ = write!(out, "{e}");
    }
    out
}

/// [`Error::PodsNotRunning`]'s message: TensorFlow's sentence per pod, then the namespace and
/// how long the resolver waited.
fn pods_not_running(
    namespace: &str,
    pods: &[(String, String)],
    waited: &Option<std::time::Duration>,
) -> String {
    let mut out = String::new();
    for (i, (pod, phase)) in pods.iter().enumerate() {
        if i > 0 {
            out.push_str("; ");
        }
        let _ = write!(
            out,
            "Pod \"{}\" is not running; phase: \"{}\"",
            excerpt(pod, 0),
            excerpt(phase, 0)
        );
    }
    let _ = write!(out, " (namespace \"{}\"", excerpt(namespace, 0));
    if let Some(waited) = waited {
        let _ = write!(out, ", after waiting {waited:?}");
    }
    out.push(')');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_names_input_and_byte() {
        let e = Error::HostlistUnclosedBracket {
            input: "n[1-".to_owned(),
            pos: 1,
        };
        assert_eq!(
            e.to_string(),
            "invalid hostlist \"n[1-\": unclosed '[' at byte 1"
        );
        let e = Error::TasksPerNodeSyntax {
            input: "2(x3".to_owned(),
            pos: 4,
            expected: "')'",
            found: None,
        };
        assert_eq!(
            e.to_string(),
            "invalid tasks-per-node list \"2(x3\": expected ')' at byte 4, found end of input"
        );
    }
}

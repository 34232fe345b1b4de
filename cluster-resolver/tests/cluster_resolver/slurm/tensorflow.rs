//! Differential test against TensorFlow 2.21's `SlurmClusterResolver`, run for every case in
//! one Python process (`tf_oracle::run`).
//!
//! For each Slurm environment (hand-picked, then generated: zero-padded and unpadded node
//! names, several nodes and ranges, tasks-per-node patterns, jobs maps, port bases, GPUs) both
//! resolvers answer: the spec, this rank's job and index, `master()` with and without
//! arguments, `num_accelerators()` and the `CUDA_VISIBLE_DEVICES` of the rank.
//!
//! The rule checked on every case where TensorFlow resolves: **TensorFlow's answer is ours for
//! the same step with its nodes sorted by name and laid out in blocks**, with TensorFlow's GPU
//! ordinals standing for the node's visible devices. So where names sort in Slurm's order and
//! the distribution is block the answers are equal, and otherwise they differ exactly by the
//! documented difference. Cases where one side fails are hand-picked, each with what each side
//! must say.

use std::collections::BTreeMap;
use std::time::Duration;

use cluster_resolver::hostlist::expand;
use cluster_resolver::{ClusterResolver, Env, SlurmClusterResolver, TasksPerNode};
use serde_json::{Value, json};

use super::block_on;

/// TensorFlow's side: one JSON case per stdin line, one JSON answer per stdout line.
const SCRIPT: &str = r#"
import json, os, sys
from tensorflow.python.distribute.cluster_resolver.slurm_cluster_resolver import SlurmClusterResolver

empty_dir = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'tfcluster-no-nvidia-smi')
os.makedirs(empty_dir, exist_ok=True)
base_path = os.environ.get('PATH', '')
for line in sys.stdin:
    case = json.loads(line)
    for k in list(os.environ):
        if k.startswith('SLURM') or k == 'CUDA_VISIBLE_DEVICES':
            del os.environ[k]
    os.environ.update(case['env'])
    # 'no_nvidia_smi': PATH without nvidia-smi, so TF's fallback finds none.
    os.environ['PATH'] = empty_dir if case.get('no_nvidia_smi') else base_path
    kwargs = dict(case['kwargs'])
    try:
        r = SlurmClusterResolver(**kwargs)
        # Before cluster_spec(): TF knows no task yet.
        before = [r.master(), r.task_type, r.task_id]
        spec = r.cluster_spec()
        out = {
            'before': before,
            'spec': spec.as_dict(),
            'task_type': r.task_type,
            'task_id': r.task_id,
            'cvd': os.environ.get('CUDA_VISIBLE_DEVICES'),
            'acc': dict(r.num_accelerators()),
            'master': r.master(),
            'masters': [r.master(t, i, l) for t, i, l in case['masters']],
        }
    except Exception as e:
        out = {'error': type(e).__name__, 'message': str(e)}
    print(json.dumps(out), flush=True)
"#;

/// One Slurm environment and the resolver's options.
#[derive(Debug, Clone, Default)]
struct Case {
    name: String,
    env: BTreeMap<String, String>,
    jobs: Option<Vec<(String, u32)>>,
    port_base: Option<u16>,
    gpus_per_node: Option<u32>,
    gpus_per_task: Option<u32>,
    tasks_per_node: Option<TasksPerNode>,
    auto_set_gpu: Option<bool>,
    /// `(task_type, task_id, rpc_layer)` arguments of extra `master` calls.
    masters: Vec<(String, u32, Option<String>)>,
    /// No `nvidia-smi` for either side.
    no_nvidia_smi: bool,
}

impl Case {
    fn new(name: &str, vars: &[(&str, &str)]) -> Self {
        Self {
            name: name.to_owned(),
            env: vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Self::default()
        }
    }

    /// A step of `nodelist` with `tpn` tasks per node, seen by `rank`.
    fn step(name: &str, rank: u32, nodelist: &str, tpn: &str) -> Self {
        let total: u32 = cluster_resolver::hostlist::expand_tasks_per_node(tpn)
            .map(|c| c.iter().sum())
            .unwrap_or(0);
        Self::new(
            name,
            &[
                ("SLURM_PROCID", &rank.to_string()),
                ("SLURM_STEP_NUM_TASKS", &total.to_string()),
                ("SLURM_STEP_NODELIST", nodelist),
                ("SLURM_STEP_TASKS_PER_NODE", tpn),
            ],
        )
    }

    fn set(mut self, key: &str, value: &str) -> Self {
        self.env.insert(key.to_owned(), value.to_owned());
        self
    }

    fn gpus(mut self, per_node: u32) -> Self {
        self.gpus_per_node = Some(per_node);
        self
    }

    fn per_task(mut self, gpus: u32) -> Self {
        self.gpus_per_task = Some(gpus);
        self
    }

    fn jobs(mut self, jobs: &[(&str, u32)]) -> Self {
        self.jobs = Some(jobs.iter().map(|(j, n)| ((*j).to_owned(), *n)).collect());
        self
    }

    /// The case as the Python script reads it.
    fn to_json(&self) -> String {
        let mut kwargs = serde_json::Map::new();
        if let Some(jobs) = &self.jobs {
            kwargs.insert(
                "jobs".into(),
                json!(jobs.iter().cloned().collect::<BTreeMap<_, _>>()),
            );
        }
        if let Some(p) = self.port_base {
            kwargs.insert("port_base".into(), json!(p));
        }
        if let Some(g) = self.gpus_per_node {
            kwargs.insert("gpus_per_node".into(), json!(g));
        }
        if let Some(g) = self.gpus_per_task {
            kwargs.insert("gpus_per_task".into(), json!(g));
        }
        match &self.tasks_per_node {
            Some(TasksPerNode::Uniform(n)) => {
                kwargs.insert("tasks_per_node".into(), json!(n));
            }
            Some(TasksPerNode::PerNode(list)) => {
                let map: serde_json::Map<String, Value> =
                    list.iter().map(|(h, n)| (h.clone(), json!(n))).collect();
                kwargs.insert("tasks_per_node".into(), Value::Object(map));
            }
            None => {}
        }
        if let Some(a) = self.auto_set_gpu {
            kwargs.insert("auto_set_gpu".into(), json!(a));
        }
        let masters: Vec<Value> = self
            .masters
            .iter()
            .map(|(t, i, l)| json!([t, i, l]))
            .collect();
        json!({
            "env": self.env,
            "kwargs": kwargs,
            "masters": masters,
            "no_nvidia_smi": self.no_nvidia_smi,
        })
        .to_string()
    }

    /// Our resolver for this case, in an environment of its variables only.
    fn resolver(&self) -> SlurmClusterResolver {
        let mut r = SlurmClusterResolver::new(Env::from_iter(self.env.clone()));
        if let Some(jobs) = &self.jobs {
            r = r.with_jobs(jobs.clone());
        }
        if let Some(p) = self.port_base {
            r = r.with_port_base(p);
        }
        if let Some(g) = self.gpus_per_node {
            r = r.with_gpus_per_node(g);
        }
        if let Some(g) = self.gpus_per_task {
            r = r.with_gpus_per_task(g);
        }
        if let Some(t) = &self.tasks_per_node {
            r = r.with_tasks_per_node(t.clone());
        }
        if let Some(a) = self.auto_set_gpu {
            r = r.with_auto_set_gpu(a);
        }
        if self.no_nvidia_smi {
            r = r.with_nvidia_smi("/nonexistent/tfcluster/nvidia-smi", Duration::from_secs(1));
        }
        r
    }

    /// Our answer, in the shape of TensorFlow's.
    fn ours(&self) -> Outcome {
        // A fresh resolver answers `master()` at once (TensorFlow's says `''` until its
        // `cluster_spec()` ran).
        let fresh = block_on(self.resolver().master(None, None, None));
        let r = self.resolver();
        let step = match r.resolve() {
            Ok(step) => step,
            Err(e) => return Outcome::Error(e.to_string()),
        };
        let masters = self
            .masters
            .iter()
            .map(|(t, i, l)| block_on(r.master(Some(t), Some(*i), l.as_deref())))
            .collect::<Result<Vec<_>, _>>();
        let Ok(masters) = masters else {
            return Outcome::Error(format!("{masters:?}"));
        };
        let acc = block_on(r.num_accelerators(None, None)).expect("resolved above");
        let master = block_on(r.master(None, None, None)).expect("resolved above");
        if fresh.as_ref().ok() != Some(&master) {
            return Outcome::Error(format!("a fresh master() gave {fresh:?}, later {master}"));
        }
        Outcome::Resolved(Answer {
            spec: serde_json::from_str(&step.spec().to_json()).expect("to_json is JSON"),
            task_type: Some(step.task_type().to_owned()),
            task_id: Some(step.task_id()),
            cvd: step.cuda_visible_devices().map(str::to_owned),
            acc,
            master,
            masters,
        })
    }

    /// The step TensorFlow resolves, in our terms: this case with its nodes sorted by name
    /// (a node named twice keeps its last count, as a Python dict does), laid out in blocks,
    /// and without what TensorFlow does not read (`SLURMD_NODENAME`, `SLURM_DISTRIBUTION`;
    /// `SLURM_STEP_NUM_TASKS` when there is a jobs map; `CUDA_VISIBLE_DEVICES` when
    /// `gpus_per_node` is given) or reads leniently (`SLURM_PROCID="+0"`). `None` if the case
    /// has no nodes to sort.
    fn sorted(&self) -> Option<Case> {
        let mut sorted = self.clone();
        sorted.env.remove("SLURM_DISTRIBUTION");
        sorted.env.remove("SLURMD_NODENAME");
        if self.jobs.is_some() {
            sorted.env.remove("SLURM_STEP_NUM_TASKS");
        }
        if self.gpus_per_node.is_some() {
            sorted.env.remove("CUDA_VISIBLE_DEVICES");
        }
        if let Some(rank) = self.env.get("SLURM_PROCID")
            && let Ok(n) = rank.trim().trim_start_matches('+').parse::<u32>()
        {
            sorted.env.insert("SLURM_PROCID".into(), n.to_string());
        }
        if let Some(TasksPerNode::PerNode(list)) = &mut sorted.tasks_per_node {
            list.sort();
            return Some(sorted);
        }
        let names = expand(self.env.get("SLURM_STEP_NODELIST")?).ok()?;
        let counts: Vec<u32> = match &self.tasks_per_node {
            Some(TasksPerNode::Uniform(n)) => vec![*n; names.len()],
            _ => cluster_resolver::hostlist::expand_tasks_per_node(
                self.env.get("SLURM_STEP_TASKS_PER_NODE")?,
            )
            .ok()?,
        };
        // TensorFlow's `dict(zip(hosts, counts))`, then `sorted(...)`.
        let nodes: BTreeMap<String, u32> = names.into_iter().zip(counts).collect();
        let join = |f: &dyn Fn((&String, &u32)) -> String| {
            nodes.iter().map(f).collect::<Vec<_>>().join(",")
        };
        sorted
            .env
            .insert("SLURM_STEP_NODELIST".into(), join(&|(h, _)| h.clone()));
        if self.tasks_per_node.is_none() {
            sorted.env.insert(
                "SLURM_STEP_TASKS_PER_NODE".into(),
                join(&|(_, n)| n.to_string()),
            );
        }
        Some(sorted)
    }
}

/// What a resolver answered for one case.
#[derive(Debug, Clone, PartialEq)]
enum Outcome {
    Resolved(Answer),
    Error(String),
}

#[derive(Debug, Clone, PartialEq)]
struct Answer {
    spec: Value,
    task_type: Option<String>,
    task_id: Option<u32>,
    cvd: Option<String>,
    acc: BTreeMap<String, u32>,
    master: String,
    masters: Vec<String>,
}

/// TensorFlow's answer line, as an [`Outcome`] (errors as `Type: message`), and whether
/// TensorFlow knew no task before `cluster_spec()` ran (`master() == ''`, no type, no id).
fn tf_outcome(line: &str) -> (Outcome, bool) {
    let v: Value = serde_json::from_str(line).expect("the script prints JSON");
    let stateful = v["before"] == json!(["", null, null]);
    (tf_answer(&v), stateful)
}

fn tf_answer(v: &Value) -> Outcome {
    if let Some(kind) = v.get("error") {
        return Outcome::Error(format!(
            "{}: {}",
            kind.as_str().unwrap_or_default(),
            v["message"].as_str().unwrap_or_default()
        ));
    }
    Outcome::Resolved(Answer {
        spec: v["spec"].clone(),
        task_type: v["task_type"].as_str().map(str::to_owned),
        task_id: v["task_id"].as_u64().map(|i| i as u32),
        cvd: v["cvd"].as_str().map(str::to_owned),
        acc: serde_json::from_value(v["acc"].clone()).expect("a map of counts"),
        master: v["master"].as_str().unwrap_or_default().to_owned(),
        masters: serde_json::from_value(v["masters"].clone()).expect("strings"),
    })
}

/// What TensorFlow must answer, relative to us.
#[derive(Debug, Clone)]
enum Expect {
    /// TensorFlow's answer is ours for the nodes sorted and laid out in blocks (the general
    /// rule; equal to ours when that changes nothing).
    SortedBlock,
    /// TensorFlow resolves to the sorted-block answer, but we refuse with this message start.
    WeRefuse(&'static str),
    /// TensorFlow resolves to a spec whose JSON contains the second string (an address no
    /// server can use); we refuse with the first.
    WeRefuseTfWrites(&'static str, &'static str),
    /// TensorFlow fails with this `Type: message` start; we resolve.
    TfFails(&'static str),
    /// Both fail: TensorFlow with this `Type: message`, we with this message start.
    BothFail(&'static str, &'static str),
    /// TensorFlow resolves to something else than the sorted-block rule (GPU differences);
    /// the check gets both answers.
    Differ(fn(&Answer, &Answer) -> Result<(), String>),
}

/// Hand-picked cases: each documented difference, each TensorFlow error, and agreements on
/// the real step (`node[1-3]`, `2(x2),1`) and its options.
fn hand_picked() -> Vec<(Case, Expect)> {
    use Expect::*;
    let real = |rank| Case::step("srun -N3 -n5", rank, "node[1-3]", "2(x2),1").gpus(2);
    let mut cases = vec![];
    for rank in 0..5 {
        let mut c = real(rank);
        c.masters = vec![
            ("worker".into(), 4, None),
            ("worker".into(), 0, Some("".into())),
        ];
        cases.push((c, SortedBlock));
    }
    cases.extend([
        (real(3).jobs(&[("worker", 3), ("ps", 2)]), SortedBlock),
        (real(1).jobs(&[("worker", 2), ("ps", 2), ("chief", 1), ("evaluator", 0)]), SortedBlock),
        ({ let mut c = real(2); c.port_base = Some(2222); c.gpus_per_task = Some(1); c }, SortedBlock),
        ({ let mut c = real(2); c.auto_set_gpu = Some(false); c }, SortedBlock),
        ({ let mut c = real(4); c.masters = vec![("worker".into(), 1, Some("grpc+verbs".into()))]; c }, SortedBlock),
        // Zero padding (tensorflow#49956, fixed in 2.21): same hosts.
        (Case::step("zero padded", 3, "n[009-011]", "2,1,1").gpus(2), SortedBlock),
        // Lexicographic vs Slurm order: TF puts ranks 0,1 on n10.
        (Case::step("n[9-10]", 0, "n[9-10]", "2(x2)").gpus(2), SortedBlock),
        (Case::step("n[8-12]", 6, "n[8-12]", "2,1(x3),3").gpus(3), SortedBlock),
        (Case::step("b before a", 1, "b1,a1", "1(x2)").gpus(1), SortedBlock),
        // Cyclic: TF ignores SLURM_DISTRIBUTION and lays out blocks.
        (Case::step("cyclic", 3, "node[1-3]", "2(x2),1").gpus(2).set("SLURM_DISTRIBUTION", "cyclic"), SortedBlock),
        (Case::step("cyclic, nodename", 3, "node[1-3]", "2(x2),1").gpus(2)
            .set("SLURM_DISTRIBUTION", "cyclic").set("SLURMD_NODENAME", "node1"), SortedBlock),
        // Overrides.
        ({ let mut c = Case::step("uniform", 3, "n[1-2]", "1(x2)").gpus(2).set("SLURM_STEP_NUM_TASKS", "4");
           c.tasks_per_node = Some(TasksPerNode::Uniform(2)); c }, SortedBlock),
        ({ let mut c = Case::new("per node", &[("SLURM_PROCID", "2"), ("SLURM_STEP_NUM_TASKS", "3")]).gpus(2);
           c.tasks_per_node = Some(TasksPerNode::per_node([("a", 2), ("b", 1)])); c }, SortedBlock),
        ({ let mut c = Case::new("per node, unsorted", &[("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "3")]).gpus(2);
           c.tasks_per_node = Some(TasksPerNode::per_node([("n9", 2), ("n10", 1)])); c }, SortedBlock),
        // TensorFlow's errors, same wording.
        (Case::new("no rank", &[]), BothFail(
            "RuntimeError: SLURM_PROCID not found in environment. Not running inside a SLURM step?",
            "SLURM_PROCID not found in environment. Not running inside a SLURM step?")),
        (Case::new("no num tasks", &[("SLURM_PROCID", "0")]), BothFail(
            "RuntimeError: SLURM_STEP_NUM_TASKS not found in environment. Not running inside a SLURM step?",
            "SLURM_STEP_NUM_TASKS not found in environment. Not running inside a SLURM step?")),
        (Case::new("no nodelist", &[("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "1")]), BothFail(
            "RuntimeError: SLURM_STEP_NODELIST not found in environment. Not running inside a SLURM step?",
            "SLURM_STEP_NODELIST not found in environment. Not running inside a SLURM step?")),
        (Case::new("no tasks per node", &[("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "1"), ("SLURM_STEP_NODELIST", "n1")]), BothFail(
            "RuntimeError: SLURM_STEP_TASKS_PER_NODE not found in environment. Not running inside a SLURM step?",
            "SLURM_STEP_TASKS_PER_NODE not found in environment. Not running inside a SLURM step?")),
        (Case::step("too few gpus", 0, "n[1-2]", "2(x2)").gpus(3).set("SLURM_STEP_NUM_TASKS", "4")
            .per_task(2), BothFail(
            "RuntimeError: Requested more GPUs per node than available.",
            "Requested more GPUs per node than available. (2 tasks on a node × 2 GPUs per task > 3 GPUs per node)")),
        (Case::step("num tasks above", 0, "n[1-2]", "2(x2)").gpus(2).set("SLURM_STEP_NUM_TASKS", "6"), BothFail(
            "RuntimeError: Requested 6 tasks but only 4 were assigned.",
            "Requested 6 tasks but only 4 were assigned. (requested by SLURM_STEP_NUM_TASKS=6;")),
        (Case::step("jobs below", 0, "n[1-2]", "2(x2)").gpus(2).jobs(&[("worker", 2), ("ps", 1)]), BothFail(
            "RuntimeError: Requested 3 tasks but only 4 were assigned.",
            "Requested 3 tasks but only 4 were assigned. (requested by jobs {\"ps\": 1, \"worker\": 2};")),
        (Case::step("bad hostlist", 0, "n[1-", "1").gpus(1), BothFail(
            "ValueError: Invalid hostlist format \"n[1-\"", "invalid hostlist \"n[1-\": unclosed '['")),
        (Case::step("bad rank", 0, "n1", "1").gpus(1).set("SLURM_PROCID", "x"), BothFail(
            "ValueError: invalid literal for int() with base 10: 'x'",
            "environment variable SLURM_PROCID=\"x\" is invalid")),
        // Zero GPUs: a CPU-only cluster here (tensorflow#56894).
        (Case::step("zero gpus", 1, "n[1-2]", "1(x2)").gpus(0), TfFails("ValueError: range() arg 3 must not be zero")),
        ({ let mut c = Case::step("zero gpus per task", 1, "n[1-2]", "1(x2)").gpus(4); c.gpus_per_task = Some(0); c },
            TfFails("ValueError: range() arg 3 must not be zero")),
        ({ let mut c = Case::step("no nvidia-smi", 0, "n[1-2]", "1(x2)"); c.no_nvidia_smi = true; c },
            TfFails("FileNotFoundError:")),
        // CUDA_VISIBLE_DEVICES="" hides every GPU: TF counts it as one and hands out GPU 0.
        (Case::step("empty visible devices", 1, "n[1-2]", "1(x2)").set("CUDA_VISIBLE_DEVICES", ""),
            Differ(|tf, ours| {
                expect_eq(&tf.cvd, &Some("0".to_owned()), "TF's CUDA_VISIBLE_DEVICES")?;
                expect_eq(&ours.cvd, &Some(String::new()), "our CUDA_VISIBLE_DEVICES")?;
                expect_eq(&tf.spec, &ours.spec, "spec")
            })),
        // The node's visible GPUs are 4..7 (jax#23452): TF hands out ordinals 0..3.
        (Case::step("visible 4-7", 3, "node[1-3]", "2(x2),1").set("CUDA_VISIBLE_DEVICES", "4,5,6,7"),
            Differ(|tf, ours| {
                expect_eq(&tf.cvd, &Some("2,3".to_owned()), "TF's CUDA_VISIBLE_DEVICES")?;
                expect_eq(&ours.cvd, &Some("6,7".to_owned()), "our CUDA_VISIBLE_DEVICES")?;
                expect_eq(&tf.spec, &ours.spec, "spec")?;
                expect_eq(&tf.acc, &ours.acc, "num_accelerators")
            })),
        // Our checks where TensorFlow builds a wrong cluster or none.
        (Case::step("rank past the step", 4, "n[1-2]", "2(x2)").gpus(2), BothFail(
            "IndexError: list index out of range", "SLURM_PROCID=4 is not a task of this step, which has 4 tasks")),
        (Case::step("plane", 0, "n[1-2]", "2(x2)").gpus(2).set("SLURM_DISTRIBUTION", "plane"),
            WeRefuse("SLURM_DISTRIBUTION=\"plane\" is not supported")),
        (Case::step("cyclic:block", 0, "n[1-2]", "2(x2)").gpus(2).set("SLURM_DISTRIBUTION", "cyclic:block"),
            WeRefuse("SLURM_DISTRIBUTION=\"cyclic:block\" is not supported")),
        (Case::step("wrong node", 1, "node[1-3]", "2(x2),1").gpus(2).set("SLURMD_NODENAME", "node2"),
            WeRefuse("rank 1 (SLURM_PROCID) runs on node \"node1\"")),
        (Case::step("more counts than nodes", 0, "n[1-2]", "1(x3)").gpus(1).set("SLURM_STEP_NUM_TASKS", "2"),
            WeRefuse("SLURM_STEP_NODELIST=\"n[1-2]\" names 2 nodes but SLURM_STEP_TASKS_PER_NODE=\"1(x3)\" gives task counts for 3")),
        (Case::step("duplicate node", 0, "n1,n2,n1", "1(x3)").gpus(1).set("SLURM_STEP_NUM_TASKS", "2"),
            WeRefuse("node \"n1\" appears twice")),
        ({ let mut c = Case::step("port overflow", 0, "n[1-2]", "2(x2)").gpus(2); c.port_base = Some(65535); c },
            WeRefuseTfWrites("port_base 65535 + 2 tasks on node \"n1\" goes past port 65535", "n1:65536")),
        (Case::step("num tasks vs jobs", 0, "n[1-2]", "2(x2)").gpus(2).set("SLURM_STEP_NUM_TASKS", "3").jobs(&[("worker", 4)]),
            WeRefuse("SLURM_STEP_NUM_TASKS=3 but SLURM_STEP_TASKS_PER_NODE=\"2(x2)\"")),
        (Case::step("plus rank", 0, "n1", "1").gpus(1).set("SLURM_PROCID", "+0"),
            WeRefuse("environment variable SLURM_PROCID=\"+0\" is invalid")),
        ({ let mut c = Case::step("gpus not visible", 0, "n1", "1").set("CUDA_VISIBLE_DEVICES", "0,1"); c.gpus_per_node = Some(4); c },
            WeRefuse("gpus_per_node 4 is more than the 2 GPUs CUDA_VISIBLE_DEVICES=\"0,1\" makes visible")),
    ]);
    cases
}

fn expect_eq<T: PartialEq + std::fmt::Debug>(got: &T, want: &T, what: &str) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what}: got {got:?}, want {want:?}"))
    }
}

/// A deterministic generator (splitmix64), so a failure names a case that stays the same.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }
}

/// Generated steps within TensorFlow's hostlist grammar (one bracket group at the end of a
/// name) and with enough GPUs for TensorFlow: node names with and without zero padding,
/// crossing digit counts (so that some sort differently from Slurm's order), one or two
/// prefixes, several ranges per group, varied tasks per node, jobs maps, port bases, GPUs
/// given or from `CUDA_VISIBLE_DEVICES` as `0..n`, block or cyclic.
fn generated(count: usize) -> Vec<(Case, Expect)> {
    let mut rng = Rng(0x5eed_51e4);
    let mut cases = Vec::with_capacity(count);
    for k in 0..count {
        // The nodelist: 1..3 patterns, each a prefix with one group of 1..3 ranges.
        let mut patterns = Vec::new();
        let prefixes = ["n", "node", "gpu-", "rack01-node", "c", "b04-"];
        let mut used = std::collections::HashSet::new();
        for _ in 0..=rng.below(2) {
            let prefix = *rng.pick(&prefixes);
            if !used.insert(prefix) {
                continue;
            }
            let width = rng.below(4) as usize;
            let mut next = rng.below(14);
            let mut ranges = Vec::new();
            for _ in 0..=rng.below(2) {
                let lo = next;
                let hi = lo + rng.below(4);
                ranges.push(if hi == lo {
                    format!("{lo:0width$}")
                } else {
                    format!("{lo:0width$}-{hi:0width$}")
                });
                next = hi + 1 + rng.below(3);
            }
            patterns.push(
                if rng.below(5) == 0 && ranges.len() == 1 && !ranges[0].contains('-') {
                    format!("{prefix}{}", ranges[0])
                } else {
                    format!("{prefix}[{}]", ranges.join(","))
                },
            );
        }
        let nodelist = patterns.join(",");
        let names = expand(&nodelist).expect("generated hostlists are valid");
        let uniform = rng.below(3) == 0;
        let base = 1 + rng.below(3) as u32;
        let counts: Vec<u32> = names
            .iter()
            .map(|_| {
                if uniform {
                    base
                } else {
                    1 + rng.below(4) as u32
                }
            })
            .collect();
        let total: u32 = counts.iter().sum();
        let max = *counts.iter().max().expect("at least one node");
        let rank = rng.below(u64::from(total)) as u32;
        let mut case = Case::step(
            &format!("generated {k}"),
            rank,
            &nodelist,
            &super::compress_counts(&counts),
        );
        case.name = format!(
            "generated {k}: {nodelist} {}",
            super::compress_counts(&counts)
        );
        if rng.below(4) == 0 {
            case = case.set("SLURM_DISTRIBUTION", "cyclic");
        } else if rng.below(6) == 0 {
            case = case.set("SLURM_DISTRIBUTION", "block");
        }
        // GPUs: enough for TensorFlow (at least one per task).
        let per_task = 1 + rng.below(2) as u32;
        let per_node = max * per_task + rng.below(2) as u32;
        match rng.below(3) {
            0 => case.gpus_per_node = Some(per_node),
            1 => {
                let ids: Vec<String> = (0..per_node).map(|i| i.to_string()).collect();
                case = case.set("CUDA_VISIBLE_DEVICES", &ids.join(","));
            }
            _ => {
                case.gpus_per_node = Some(per_node);
                case.gpus_per_task = Some(per_task);
            }
        }
        if rng.below(3) == 0 {
            case.port_base = Some(1024 + rng.below(60_000) as u16);
        }
        if rng.below(3) == 0 {
            // Split the tasks over 2..3 jobs, given in any order.
            let names = ["worker", "ps", "chief", "evaluator"];
            let mut jobs = Vec::new();
            let mut left = total;
            for (i, name) in names.iter().enumerate().take(2 + rng.below(2) as usize) {
                let n = if i == 0 {
                    0
                } else {
                    rng.below(u64::from(left) + 1) as u32
                };
                jobs.push(((*name).to_owned(), n));
                left -= n;
            }
            jobs[0].1 = left;
            case.jobs = Some(jobs);
        }
        if rng.below(2) == 0 {
            let (job, n) = case
                .jobs
                .as_ref()
                .and_then(|j| j.iter().find(|(_, n)| *n > 0).cloned())
                .unwrap_or(("worker".to_owned(), total));
            let layer = rng
                .pick(&[None, Some(""), Some("grpc+verbs")])
                .map(str::to_owned);
            case.masters
                .push((job, rng.below(u64::from(n)) as u32, layer));
        }
        // Where Slurm put this rank, as the real step would say.
        if rng.below(2) == 0 {
            let ours = case.resolver().resolve().expect("generated steps resolve");
            case = case.set("SLURMD_NODENAME", ours.node());
        }
        cases.push((case, Expect::SortedBlock));
    }
    cases
}

/// Tallies of the outcomes, printed at the end (run with `--nocapture` to see them).
#[derive(Debug, Default)]
struct Tally {
    equal: usize,
    differ_as_documented: usize,
    both_fail: usize,
    tf_fails: usize,
    we_refuse: usize,
    gpu_differences: usize,
    /// Resolved cases where TensorFlow's `master()` was `''` before `cluster_spec()`.
    tf_master_empty_before_cluster_spec: usize,
}

/// Checks one case; `Ok` carries which tally it adds to.
fn check(case: &Case, expect: &Expect, tf: &Outcome, tally: &mut Tally) -> Result<(), String> {
    let ours = case.ours();
    let sorted_block = || {
        case.sorted()
            .map(|c| c.ours())
            .ok_or_else(|| "the case has no nodelist to sort".to_owned())
    };
    match expect {
        Expect::SortedBlock => {
            let want = sorted_block()?;
            expect_eq(
                tf,
                &want,
                "TensorFlow vs ours on the sorted, block-laid-out step",
            )?;
            if matches!(ours, Outcome::Error(_)) {
                return Err(format!("we failed: {ours:?}"));
            }
            if ours == *tf {
                tally.equal += 1;
            } else {
                tally.differ_as_documented += 1;
            }
        }
        Expect::WeRefuse(start) => {
            let want = sorted_block()?;
            expect_eq(
                tf,
                &want,
                "TensorFlow vs ours on the sorted, block-laid-out step",
            )?;
            match &ours {
                Outcome::Error(e) if e.starts_with(start) => tally.we_refuse += 1,
                other => return Err(format!("we should refuse with {start:?}, got {other:?}")),
            }
        }
        Expect::WeRefuseTfWrites(start, garbage) => {
            match tf {
                Outcome::Resolved(a) if a.spec.to_string().contains(garbage) => {}
                other => {
                    return Err(format!(
                        "TensorFlow should write {garbage:?}, got {other:?}"
                    ));
                }
            }
            match &ours {
                Outcome::Error(e) if e.starts_with(start) => tally.we_refuse += 1,
                other => return Err(format!("we should refuse with {start:?}, got {other:?}")),
            }
        }
        Expect::TfFails(start) => {
            match tf {
                Outcome::Error(e) if e.starts_with(start) => {}
                other => {
                    return Err(format!(
                        "TensorFlow should fail with {start:?}, got {other:?}"
                    ));
                }
            }
            match &ours {
                Outcome::Resolved(a) if a.cvd.as_deref() == Some("") && a.acc.is_empty() => {
                    tally.tf_fails += 1
                }
                other => {
                    return Err(format!(
                        "we should resolve a CPU-only cluster, got {other:?}"
                    ));
                }
            }
        }
        Expect::BothFail(tf_start, our_start) => {
            match tf {
                Outcome::Error(e) if e.starts_with(tf_start) => {}
                other => {
                    return Err(format!(
                        "TensorFlow should fail with {tf_start:?}, got {other:?}"
                    ));
                }
            }
            match &ours {
                Outcome::Error(e) if e.starts_with(our_start) => tally.both_fail += 1,
                other => return Err(format!("we should fail with {our_start:?}, got {other:?}")),
            }
        }
        Expect::Differ(f) => match (tf, &ours) {
            (Outcome::Resolved(t), Outcome::Resolved(o)) => {
                f(t, o)?;
                tally.gpu_differences += 1;
            }
            other => return Err(format!("both should resolve: {other:?}")),
        },
    }
    Ok(())
}

#[test]
fn tensorflow_agrees_up_to_the_documented_differences() {
    let mut cases = hand_picked();
    let hand = cases.len();
    cases.extend(generated(400));
    let input: String = cases.iter().map(|(c, _)| c.to_json() + "\n").collect();
    let output = tf_oracle::run(SCRIPT, &input);
    let answers: Vec<&str> = output.lines().collect();
    assert_eq!(answers.len(), cases.len(), "one answer per case:\n{output}");

    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for ((case, expect), line) in cases.iter().zip(&answers) {
        let (tf, stateful) = tf_outcome(line);
        if matches!(tf, Outcome::Resolved(_)) {
            if stateful {
                tally.tf_master_empty_before_cluster_spec += 1;
            } else {
                failures.push(format!(
                    "{}: TF knew its task before cluster_spec(): {line}",
                    case.name
                ));
            }
        }
        if let Err(e) = check(case, expect, &tf, &mut tally) {
            failures.push(format!(
                "{}: {e}\n  case: {}\n  TF:   {line}",
                case.name,
                case.to_json()
            ));
        }
    }
    eprintln!(
        "slurm vs TensorFlow 2.21: {} cases ({hand} hand-picked, {} generated): {tally:?}",
        cases.len(),
        cases.len() - hand
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    // The generated cases must exercise both sides of the rule.
    assert!(
        tally.equal > 50 && tally.differ_as_documented > 50,
        "{tally:?}"
    );
}

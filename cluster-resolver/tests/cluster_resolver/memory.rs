//! Issue 13: what a hostile input costs. Every parser's peak heap, counted per thread by
//! `memory_meter`, stays under the factor its docs state, on inputs of a few MB shaped the way
//! that used to cost the most per byte.

use cluster_resolver::gpus;
use cluster_resolver::hostlist::{
    HostList, MAX_HOSTS, PARSE_MEMORY_FACTOR, expand, expand_tasks_per_node,
};
use cluster_resolver::slurm::MAX_GPUS_PER_NODE;
use cluster_resolver::{Env, Error, SlurmClusterResolver};

/// Allocations of a few hundred bytes that every call may make whatever its input.
const SLACK: usize = 4096;

/// Runs `f` and checks that it held at most `factor` bytes per byte of `input` (plus `SLACK`).
fn assert_peak<R>(what: &str, input: &str, factor: usize, f: impl FnOnce() -> R) -> R {
    let (result, peak) = memory_meter::peak(f);
    let limit = factor * input.len() + SLACK;
    eprintln!(
        "{what}: {peak} bytes for {} bytes ({:.2}x)",
        input.len(),
        peak as f64 / input.len() as f64
    );
    assert!(
        peak <= limit,
        "{what}: {peak} bytes for {} bytes of input ({:.1}x), more than {factor}x",
        input.len(),
        peak as f64 / input.len() as f64,
    );
    result
}

/// Hostlists shaped for the most parsed state per byte, about 3 MB each.
fn hostile_hostlists() -> Vec<(&'static str, String)> {
    vec![
        // The case: one name of a million bracket groups.
        ("n[1][1]…", format!("n{}", "[1]".repeat(1_000_000))),
        // The host limit exactly, in 4-byte patterns.
        ("[1],[1],…", "[1],".repeat(MAX_HOSTS / 4)),
        ("a,a,…", "a,".repeat(1_500_000)),
        ("n[1,1,…]", format!("n[1{}]", ",1".repeat(1_500_000))),
        // Invalid: the arrays are sized before the error is found.
        ("[[[…", "[".repeat(3_000_000)),
        ("[1[1…", "[1".repeat(1_500_000)),
        ("a,…,a]", format!("{}]", "a,".repeat(1_500_000))),
    ]
}

#[test]
fn hostlist_parse_holds_at_most_its_stated_factor() {
    for (what, input) in hostile_hostlists() {
        let _ = assert_peak(what, &input, PARSE_MEMORY_FACTOR, || {
            HostList::parse(&input)
        });
    }
}

#[test]
fn hostlist_expand_holds_at_most_48_bytes_per_input_byte_without_ranges() {
    for (what, input) in hostile_hostlists() {
        let _ = assert_peak(what, &input, 48, || expand(&input));
    }
}

#[test]
fn tasks_per_node_holds_its_result_once() {
    // Plain counts: 4 bytes of result per 2 bytes of text, allocated once.
    let input = "1,".repeat(MAX_HOSTS / 2 - 1) + "1";
    let counts = assert_peak("1,1,…", &input, 3, || expand_tasks_per_node(&input));
    assert_eq!(counts.unwrap().len(), MAX_HOSTS / 2);
    // Repeats: the result is bounded by MAX_HOSTS, not by the text, and sized once.
    let (counts, peak) = memory_meter::peak(|| expand_tasks_per_node("7(x4194304)"));
    assert_eq!(counts.unwrap().len(), MAX_HOSTS);
    assert!(peak <= 4 * MAX_HOSTS + SLACK, "{peak}");
    // Over the limit: refused before the result is allocated.
    let (counts, peak) = memory_meter::peak(|| expand_tasks_per_node("7(x4194304),1"));
    assert!(counts.is_err());
    assert!(peak <= SLACK, "{peak}");
}

/// The Slurm resolver on a step of many nodes (few tasks each): the nodelist is parsed and its
/// names kept once, in one buffer, and the counts of the tasks-per-node list once.
#[test]
fn slurm_resolver_on_a_huge_nodelist_holds_a_bounded_multiple_of_it() {
    let nodelist: Vec<String> = (0..400_000).map(|i| format!("n{i}")).collect();
    let nodelist = nodelist.join(",");
    let env = Env::from_iter([
        ("SLURM_PROCID", "0".to_owned()),
        ("SLURM_STEP_NODELIST", nodelist.clone()),
        ("SLURM_STEP_TASKS_PER_NODE", "1(x400000)".to_owned()),
        ("SLURM_STEP_NUM_TASKS", "400000".to_owned()),
    ]);
    let resolver = SlurmClusterResolver::new(env).with_gpus_per_node(0);
    let step = assert_peak("SLURM_STEP_NODELIST", &nodelist, 40, || resolver.resolve());
    // Not `unwrap`: an error's Debug form holds the whole nodelist.
    assert_eq!(step.map(|s| s.spec().total_tasks()).ok(), Some(400_000));
}

#[test]
fn gpus_per_node_is_bounded_before_any_ordinal_is_written() {
    let env = Env::from_iter([
        ("SLURM_PROCID", "0"),
        ("SLURM_STEP_NODELIST", "n1"),
        ("SLURM_STEP_TASKS_PER_NODE", "1"),
        ("SLURM_STEP_NUM_TASKS", "1"),
    ]);
    // Issue 13: this aborted the process (`memory allocation of 103079215080 bytes failed`).
    let (result, peak) = memory_meter::peak(|| {
        SlurmClusterResolver::new(env.clone())
            .with_gpus_per_node(u32::MAX)
            .resolve()
    });
    assert!(
        matches!(
            result,
            Err(Error::Gpus(gpus::Error::TooManyGpus {
                count: u32::MAX,
                ..
            }))
        ),
        "{result:?}"
    );
    assert!(peak <= SLACK, "{peak}");
    let step = SlurmClusterResolver::new(env)
        .with_gpus_per_node(MAX_GPUS_PER_NODE)
        .resolve()
        .unwrap();
    let visible = step.cuda_visible_devices().unwrap();
    assert!(visible.starts_with("0,1,2,") && visible.ends_with(",65535"));
}

#[test]
fn cuda_visible_devices_costs_its_own_text_not_a_string_per_gpu() {
    // Issue 13: 100 MB took 3 GB; here 4 MB of entries, every one handed to the one task.
    let visible = "0,".repeat(2_000_000);
    let env = Env::from_iter([
        ("SLURM_PROCID", "0".to_owned()),
        ("SLURM_STEP_NODELIST", "n1".to_owned()),
        ("SLURM_STEP_TASKS_PER_NODE", "1".to_owned()),
        ("SLURM_STEP_NUM_TASKS", "1".to_owned()),
        ("CUDA_VISIBLE_DEVICES", visible.clone()),
    ]);
    let resolver = SlurmClusterResolver::new(env);
    // The variable's copy, and the task's share written once (a string that doubles as it
    // grows holds up to three times its length while it is copied).
    let step = assert_peak("CUDA_VISIBLE_DEVICES", &visible, 5, || resolver.resolve()).unwrap();
    assert_eq!(step.gpus_per_node(), 2_000_000);
}

#[test]
fn messages_quote_a_window_of_long_values() {
    // Issue 13: SM_HOSTS, SLURM_* values and CUDA_VISIBLE_DEVICES were copied whole.
    let hosts: Vec<String> = (0..100_000).map(|i| format!("\"algo-{i}\"")).collect();
    let env = Env::from_iter([
        ("SM_HOSTS", format!("[{}]", hosts.join(","))),
        ("SM_CURRENT_HOST", "algo-x".to_owned()),
    ]);
    let e = cluster_resolver::SageMakerClusterResolver::new(env)
        .tf_config()
        .unwrap_err()
        .to_string();
    assert!(
        e.len() < 500 && e.contains("not one of the hosts of SM_HOSTS"),
        "{e}"
    );
    let nodelist = "n1,".repeat(100_000) + "n1";
    let env = Env::from_iter([
        ("SLURM_PROCID", "0".to_owned()),
        ("SLURM_STEP_NODELIST", nodelist),
        ("SLURM_STEP_TASKS_PER_NODE", "1".to_owned()),
        ("SLURM_STEP_NUM_TASKS", "1".to_owned()),
    ]);
    let e = SlurmClusterResolver::new(env)
        .with_gpus_per_node(0)
        .resolve()
        .unwrap_err()
        .to_string();
    assert!(e.len() < 600 && e.contains("(300002 bytes)"), "{e}");
}

//! The self-check `cargo xtask slurm` runs: where srun places five ranks on three nodes, block
//! and cyclic, as each rank's own Slurm environment tells it.
//!
//! A [`Scenario`] is srun's arguments, a program and a check of the ranks' output. The shell
//! scenarios here record what srun does; the resolver scenarios (`resolver.rs`) run the
//! Rust resolver's example on the same steps and hold it to these placements.

use super::srun::RankOutput;

/// Checks every rank's output (in rank order); the error says which rank is wrong and how.
pub(crate) type Check<'a> = Box<dyn Fn(&[RankOutput]) -> Result<(), String> + 'a>;

/// One srun run and what its ranks must print.
pub(crate) struct Scenario<'a> {
    /// Its name in messages and timings.
    pub(crate) name: &'a str,
    /// srun's options, such as `-N3 -n5`.
    pub(crate) srun_args: &'a [&'a str],
    /// The program each rank runs.
    pub(crate) program: &'a [&'a str],
    /// Checks the ranks' output.
    pub(crate) check: Check<'a>,
}

/// Prints the variables the placement check reads, one line per rank.
const ECHO_PLACEMENT: [&str; 3] = [
    "sh",
    "-c",
    "echo \"$SLURM_PROCID $SLURMD_NODENAME $SLURM_STEP_NODELIST $SLURM_STEP_TASKS_PER_NODE \
     $SLURM_STEP_NUM_TASKS ${SLURM_DISTRIBUTION:-unset}\"",
];

/// Prints every `SLURM*` variable a rank sees, sorted.
pub(crate) const PRINT_SLURM_ENV: [&str; 3] = ["sh", "-c", "env | grep '^SLURM' | sort"];

/// srun's default (block) and cyclic distribution of `-N3 -n5`, checked with the shell program.
pub(crate) fn shell_scenarios() -> Vec<Scenario<'static>> {
    vec![
        Scenario {
            name: "block",
            srun_args: &["-N3", "-n5"],
            program: &ECHO_PLACEMENT,
            check: Box::new(|ranks| {
                check_echo(
                    ranks,
                    &["node1", "node1", "node2", "node2", "node3"],
                    "unset",
                )
            }),
        },
        Scenario {
            name: "cyclic",
            srun_args: &["-N3", "-n5", "--distribution=cyclic"],
            program: &ECHO_PLACEMENT,
            check: Box::new(|ranks| {
                check_echo(
                    ranks,
                    &["node1", "node2", "node3", "node1", "node2"],
                    "cyclic",
                )
            }),
        },
    ]
}

/// Checks the [`ECHO_PLACEMENT`] lines: rank `i` on `nodes[i]`, the step spanning node[1-3]
/// with 2,2,1 tasks, and `SLURM_DISTRIBUTION` as `distribution` (`unset` when absent).
fn check_echo(ranks: &[RankOutput], nodes: &[&str], distribution: &str) -> Result<(), String> {
    if ranks.len() != nodes.len() {
        return Err(format!(
            "expected {} ranks, got {}: {ranks:?}",
            nodes.len(),
            ranks.len()
        ));
    }
    let num_tasks = nodes.len().to_string();
    let mut wrong = Vec::new();
    for (rank, node) in ranks.iter().zip(nodes) {
        let procid = rank.rank.to_string();
        let expected = [
            procid.as_str(),
            node,
            "node[1-3]",
            "2(x2),1",
            num_tasks.as_str(),
            distribution,
        ];
        let got: Vec<&str> = rank.stdout.split_whitespace().collect();
        if got != expected {
            wrong.push(format!(
                "rank {}: expected `{}`, got `{}`",
                rank.rank,
                expected.join(" "),
                rank.stdout.trim()
            ));
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "(fields: SLURM_PROCID SLURMD_NODENAME SLURM_STEP_NODELIST SLURM_STEP_TASKS_PER_NODE \
             SLURM_STEP_NUM_TASKS SLURM_DISTRIBUTION)\n{}",
            wrong.join("\n")
        ))
    }
}

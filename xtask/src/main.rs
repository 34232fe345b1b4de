//! Developer tasks for the tfcluster workspace, run as `cargo xtask <task>`.
//!
//! `codegen [--check]` regenerates (or checks) `cluster-proto/src/generated/` and
//! `elastic/src/generated/`; `public-api [--check]` lists (or checks) each library crate's
//! public items; `test` runs every check CI runs; `fuzz` runs the fuzz targets. Each
//! task lives in its own module; this file only dispatches.

mod agent_log;
mod apt;
mod bench_elastic;
mod bench_goodput;
mod bench_vs_tf;
mod benches;
mod beside;
mod child;
mod codegen;
mod daemon_package;
mod doc_links;
mod docs_section;
mod etcd;
mod feature_superset;
mod features;
mod fuzz;
mod guide;
mod guide_rust;
mod host_jobs;
mod host_network;
mod image;
mod interop;
mod kubernetes;
mod machine;
mod off_machine;
mod op_signatures;
mod package;
mod proc_stat;
mod prometheus;
mod protoc_standin;
mod public_api;
mod python;
mod release_workflow;
mod signal;
mod slurm;
mod soak;
mod static_cli;
mod stats;
mod stress;
mod table;
mod tally;
mod test;
mod test_build;
mod tf_venv;
mod timings;
mod venv;
mod wall_clock;
mod workspace;

use std::process::ExitCode;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  bench-elastic [--only built-in|etcd]
                     the elastic launch on its built-in rendezvous and on a local three-member
                     etcd (Debian's etcd-server, installed when missing), beside torchrun on
                     loopback, one after the other: the rendezvous of 8 and 64 agents (the
                     last agent's start to every task started), restarts of 8 and 64 (a task's
                     SIGKILL to every task of the next round started), the agents' resident
                     memory; torch goes into its own venv at target/torch-venv (several GB
                     from PyPI when PyTorch's CPU index is out of reach); prints medians and
                     ratios and writes its section of docs/benchmarks.md (release build; ~8
                     minutes). --only measures one of ours alone and writes nothing. Not part
                     of `test`
  bench-goodput [--quick] [--pss] [--minutes N]
                     what a failure costs TensorFlow 2.21 MultiWorkerMirroredStrategy training
                     under `run --rdzv` on three network-namespace hosts (root, iproute2; the
                     venv at target/tf-venv), today's launcher beside the new behaviours: for a
                     task SIGKILLed, a task SIGSTOPped, a host's link set down and a host's
                     agent and tasks killed, the time from the fault to the first step after
                     the restart and where it goes (detection, stop, round formed, process
                     start, TensorFlow ready, restore), steps redone; goodput over N minutes
                     (default 10) with a task killed every 60 s; the agents' and warm
                     interpreters' memory. Prints medians and writes its section of
                     docs/benchmarks.md (release build; ~40 minutes). Then ParameterServerStrategy
                     (chief, 2 parameter servers, 6 workers on 3 hosts): a worker killed every
                     30 s for 5 minutes, whole rounds restarted beside the worker alone in place
                     (steps lost, chief and ps restarts, kill to serving again, goodput), and
                     a crash loop's wall time with the rule and without; --pss runs that part
                     alone (~20 minutes). --quick: each fault once, 2 minutes of goodput,
                     writes nothing. Not part of `test`
  bench-vs-tf        the same work in TensorFlow 2.21 and tfcluster, one after the other (a
                     10,000-task spec, a 100,000-host hostlist, connecting 16 tasks both ways,
                     a task server process, our connect at 16 to 1,024 tasks); prints medians
                     and ratios and writes its section of docs/benchmarks.md (release builds;
                     ~10 minutes)
  codegen [--check]  regenerate cluster-proto/src/generated/ and elastic/src/generated/ from each
                     crate's proto/ with protox, etcd-client's protoc stand-in, the guide page's
                     crate and xtask/feature-superset/Cargo.toml (every dependency with the
                     workspace's features, from nightly cargo's plan: needs nightly); --check
                     fails if the committed files differ from what would be generated
  guide [FILTER]     run every shell example of README.md and docs/guide/ in the scene its
                     `<!-- example: ... -->` annotation names (this machine, network-namespace
                     hosts named in /etc/hosts, etcd members on them; the Slurm ones run in the
                     slurm suite), each a test; part of `test`. FILTER: only the examples
                     whose FILE:LINE holds it
  links              check every relative link of the Markdown docs (root *.md, docs/, each
                     directory's README.md): the file exists, the anchor names a heading
                     (as GitHub makes heading ids); part of `test`
  package            package every published crate as `cargo publish` would and check them from
                     their packages alone (the .crate files unpacked into a workspace of their
                     own, one `cargo check --all-features`), and check the rest are
                     publish = false; part of `test`; publishes nothing
  public-api [--check]
                     list each library crate's public items (nightly rustdoc's JSON) in
                     <crate>/public-api.txt, one a line, so an API change shows in review;
                     --check fails naming each crate whose listing differs
  release-workflow   the release automation (.github/workflows/) checked with actionlint
                     (PyPI, in target/actionlint-venv) and Debian's shellcheck on its scripts
                     (installed when missing), and that the release runs the test command
                     and builds with Cargo.toml's rust-version; part of `test`
  stress [--loops N] -- COMMAND...
                     COMMAND (e.g. `cargo test -p CRATE --all-features NAME`, or `cargo
                     xtask test`) run beside N busy loops (default 2), as on a loaded CI
                     machine: how a flaky test is tried before it is called fixed
  test               everything CI runs: removes the network namespaces of killed test runs,
                     installs what the tests need when missing (the TensorFlow 2.21 venv
                     under target/tf-venv, Debian's slurm-wlm and munge, etcd-server and
                     etcd-client), then fmt --check, clippy -D warnings (all features, as
                     the tests' build through clippy-driver; then each crate with no
                     features and each feature alone), codegen --check,
                     public-api --check,
                     doc -D warnings (and as docs.rs builds it, on nightly); then every test
                     suite, all run even when one fails: cargo test --workspace
                     --all-features, the tests of what a missing feature changes, interop,
                     the Python package (python), the Kubernetes manifests (kubernetes) and
                     the real Slurm checks (slurm). Ends with
                     a table of the suites (each test binary's seconds), a table of where the
                     time went (each install step, check and suite) and one line, `xtask: N
                     passed, N failed`; each suite's count must equal its figure in
                     xtask/test-floors.txt, and a skip that file does not list fails. One
                     suite alone: its own task (guide, links, package, python, interop,
                     image, ...); one crate's or one test's: `cargo test -p CRATE
                     --all-features [--test NAME] [FILTER]` (see CONTRIBUTING.md)
  image              the Dockerfile built with buildah (Debian's buildah and musl-tools, and
                     rustup's musl target, installed when missing): tfcluster built
                     statically for musl stands in for the `build` stage (no image registry
                     is reachable), then the `tfcluster` stage FROM scratch and the
                     `tensorflow` stage on a stand-in base, `tfcluster --version` and an
                     Indexed Job pod's `resolve` run in them; part of `test`
  interop            remote-connect against real TensorFlow 2.21 on loopback: our Context to
                     tf.distribute.Servers, TensorFlow's client to our TaskServers (alone and
                     mixed with a TF worker), the filtered device lists of both clients, and
                     ops run on TF workers from Rust (values, remote chains, device filters
                     enforced by the workers, results equal to Python's)
  op-signatures      regenerate remote-connect/src/op/signatures.txt from TensorFlow 2.21's
                     op registry (the output dtypes of ops run remotely)
  python [--all-pythons [--with-tensorflow]]
                     the Python package (python/): its wheel built in the dev profile through
                     its PEP 517 backend (maturin's, plus the tfcluster CLI in the wheel's
                     scripts, built static for musl as the image's is: musl-tools and
                     rustup's target installed when missing; maturin, pytest, hypothesis and
                     mypy pip-installed into the
                     TensorFlow venv), installed into that venv, and python/tests run there
                     with pytest (TensorFlow parity, mypy's stubtest). --all-pythons: the
                     wheel built once and the module and CLI tests run on every CPython 3.9+
                     of the machine (python3.X), each in a venv of its own under
                     target/py-venvs (--with-tensorflow: TensorFlow 2.21 there too where it
                     has a wheel, and every test but stubtest); not part of `test`
  slurm [--env]      start a local 3-node Slurm cluster, each node a network namespace of its
                     own at 192.0.2.11-13 (installing slurm-wlm, munge and iproute2 with
                     apt-get if missing), check srun's task placement on it, that the Slurm
                     resolver (example slurm_rank) computes it on every rank, and that
                     `tfcluster run --from slurm` trains MultiWorkerMirroredStrategy across the
                     nodes (TensorFlow's venv: TFCLUSTER_PYTHON or target/tf-venv), stop it;
                     --env also prints every rank's SLURM* variables
  kubernetes         deploy/kubernetes/'s manifests checked: every object against the official
                     Kubernetes Python client's models (pip, into the TensorFlow venv) and
                     JobSet's CRD schema; every pod's environment resolved by `tfcluster
                     resolve --from k8s-indexed` and TensorFlow's TFConfigClusterResolver;
                     the Indexed Job's command training MultiWorkerMirroredStrategy on three
                     network-namespace hosts named as its pods, and the elastic job's agents
                     forming a round there (root, iproute2)
  fuzz [--seconds N] [TARGET...]
                     every cargo-fuzz target of fuzz/ (or the named ones) for N seconds each
                     (default 60) on its corpus under the memory cap (1 MiB inputs, 64 MiB
                     allocations, 160 MiB RSS, 10 s per input; see xtask/src/fuzz.rs); fails
                     on any crash, hang or out-of-memory, naming the input each left.
                     Needs nightly and cargo-fuzz (cargo install cargo-fuzz)
  soak [CYCLES]      the long robustness run kept out of `test`: CYCLES (10,000) connect/close
                     cycles against in-process task servers (release build); fails if a context
                     is left behind or resident memory grows over the second half
  wheel              the release abi3 wheel (maturin build --release, the release CLI in its
                     scripts) in target/wheels/release, installed into the TensorFlow venv;
                     prints its size and `import tfcluster`'s time and writes them to
                     docs/benchmarks.md. Not part of `test` (release builds take long)
  tf-venv            create target/tf-venv with tensorflow-cpu 2.21.0 (and ml_dtypes 0.6.0, whose
                     import is 2 s faster than 0.7.0's) if missing; print its python
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["bench-elastic", rest @ ..] => bench_elastic::run(rest),
        ["bench-goodput", rest @ ..] => bench_goodput::run(rest),
        ["bench-vs-tf"] => bench_vs_tf::run(),
        ["codegen"] => codegen::run(false),
        ["codegen", "--check"] => codegen::run(true),
        ["links"] => doc_links::run(),
        ["guide"] => guide::run(None),
        ["guide", filter] => guide::run(Some(filter)),
        ["package"] => package::run(),
        ["public-api"] => public_api::run(false),
        ["public-api", "--check"] => public_api::run(true),
        ["release-workflow"] => release_workflow::run(),
        ["test"] => test::run(),
        ["image"] => image::run(),
        ["interop"] => interop::run(),
        ["op-signatures"] => op_signatures::run(),
        ["python"] => python::run(),
        ["python", "--all-pythons"] => python::all_pythons(false),
        ["python", "--all-pythons", "--with-tensorflow"] => python::all_pythons(true),
        ["wheel"] => python::release(),
        ["kubernetes"] => kubernetes::task(),
        ["slurm"] => slurm::task(false),
        ["slurm", "--env"] => slurm::task(true),
        ["fuzz", rest @ ..] => fuzz::run(rest),
        ["stress", rest @ ..] => stress::run(rest),
        ["soak"] => soak::run(None),
        ["soak", cycles] => soak::run(Some(cycles)),
        ["tf-venv"] => tf_venv::ensure().map(|python| println!("{}", python.display())),
        ["help" | "--help" | "-h"] => {
            print!("{USAGE}");
            Ok(())
        }
        _ => Err(format!("unknown task {args:?}\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The tasks that count tests have said why in their closing line, which stays last.
        Err(message) if message.is_empty() => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

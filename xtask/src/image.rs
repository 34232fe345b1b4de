//! `cargo xtask image`: the repository's `Dockerfile` built with buildah and its image run.
//!
//! No image registry is reachable from these machines, so the `build` stage's base image
//! (Rust's) cannot be pulled; the binary it would make is made here instead: `tfcluster`
//! built statically for musl, handed to buildah as the build context named `build`, which
//! replaces that stage. What is checked is everything after it: the `tfcluster` stage builds
//! `FROM scratch`, its binary runs in an image with nothing else (no libc, no shell, no
//! `/etc`), its entrypoint is the binary, it resolves an Indexed Job pod's cluster from the
//! environment alone, and the `tensorflow` stage adds the binary to a base image given as
//! `TENSORFLOW_IMAGE`. Containers run with buildah's chroot isolation (the machine's
//! container runtime cannot set rlimits here), in a storage of the suite's own under
//! `target/image`, removed after. Part of the test command.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::slurm::deadline;
use crate::tally::{self, Suite};
use crate::{apt, static_cli, workspace};

/// The suite's name in the tally and the floors file.
const SUITE: &str = "image: the Dockerfile";

/// Building an image from a 100 MB binary, or running one command in it.
const STEP: Duration = Duration::from_secs(5 * 60);

/// The image of the `tfcluster` stage, in the suite's own storage.
const IMAGE: &str = "localhost/tfcluster:test";

/// The stand-in for a TensorFlow image: any base the `tensorflow` stage adds the binary to.
const BASE: &str = "localhost/tensorflow-base:test";

/// A label only [`BASE`] has, so the `tensorflow` stage is seen to be built on it.
const BASE_LABEL: &str = "org.tfcluster.test.base";

/// The checks, counted: each is skipped as failed when an earlier one it needs failed.
pub(crate) fn suite() -> Suite {
    let mut suite = Suite::new(SUITE);
    let scratch = workspace::root().join("target/image");
    // A storage an earlier, killed run left: its layers are stale.
    let _ = fs::remove_dir_all(&scratch);
    let buildah = Buildah::new(&scratch);
    let binary = install().and_then(|()| static_binary(&scratch));
    let built = binary
        .clone()
        .and_then(|context| buildah.build(&context, &["--target", "tfcluster", "--tag", IMAGE]));
    suite.record("the tfcluster stage builds FROM scratch", built.clone());
    suite.record(
        "the image runs `tfcluster --version` as a non-root user, its entrypoint the binary",
        built
            .clone()
            .and_then(|()| version_and_entrypoint(&buildah)),
    );
    suite.record(
        "the image resolves an Indexed Job pod's cluster from its environment alone",
        built.and_then(|()| indexed_job_pod(&buildah)),
    );
    suite.record(
        "the tensorflow stage adds tfcluster to TENSORFLOW_IMAGE, run as a non-root user",
        binary.and_then(|context| tensorflow_stage(&buildah, &context)),
    );
    buildah.remove_all();
    let _ = fs::remove_dir_all(&scratch);
    suite
}

/// `cargo xtask image`: the suite alone.
pub(crate) fn run() -> Result<(), String> {
    tally::alone([suite()])
}

/// Installs buildah with apt when missing, and what [`static_cli`] builds with. The test
/// command does it with its other installs, before anything runs beside the tests (apt runs
/// one at a time).
pub(crate) fn install() -> Result<(), String> {
    let scratch = workspace::target_dir().join("image-install");
    fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    apt::ensure(&["buildah"], &["buildah"], &scratch)?;
    static_cli::install()
}

/// Builds `tfcluster` statically for musl and lays it out as the `build` stage leaves it
/// (`/out/tfcluster`); returns that directory, the build context that replaces the stage.
/// A debug build: the image's checks are of the image, and a release build's LTO would add
/// minutes to the test command.
fn static_binary(scratch: &Path) -> Result<PathBuf, String> {
    let built = static_cli::build()?;
    let context = scratch.join("build");
    let out = context.join("out");
    fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
    // Stripped, as the release profile's binary is small: copying 100 MB of debug lines
    // into each layer is most of a build's time.
    step(
        Command::new("strip")
            .arg("-o")
            .arg(out.join("tfcluster"))
            .arg(&built),
        scratch,
        "strip",
    )?;
    Ok(context)
}

/// Checks the image's binary runs with nothing beside it and that the image runs it.
fn version_and_entrypoint(buildah: &Buildah) -> Result<(), String> {
    let printed = buildah.run_in(IMAGE, &[], &["/usr/local/bin/tfcluster", "--version"])?;
    let expected = format!("tfcluster {}", env!("CARGO_PKG_VERSION"));
    if printed.trim() != expected {
        return Err(format!(
            "`tfcluster --version` in the image printed {printed:?}, not {expected:?}"
        ));
    }
    let config = buildah.inspect(IMAGE)?;
    let entrypoint = &config["OCIv1"]["config"]["Entrypoint"];
    if entrypoint != &serde_json::json!(["/usr/local/bin/tfcluster"]) {
        return Err(format!(
            "the image's entrypoint is {entrypoint}, not the binary"
        ));
    }
    not_root(&config, "65532:65532")
}

/// The image's `config` names user `user`, not root.
fn not_root(config: &Value, user: &str) -> Result<(), String> {
    match &config["OCIv1"]["config"]["User"] {
        found if found == user => Ok(()),
        found => Err(format!("the image runs as user {found}, not {user}")),
    }
}

/// Runs `resolve --from k8s-indexed` in the image as pod 1 of a three-pod Indexed Job.
fn indexed_job_pod(buildah: &Buildah) -> Result<(), String> {
    let env = [
        "JOB_COMPLETION_INDEX=1",
        "HOSTNAME=train-1",
        "TFCLUSTER_K8S_COMPLETIONS=3",
        "TFCLUSTER_K8S_SUBDOMAIN=train",
    ];
    let printed = buildah.run_in(
        IMAGE,
        &env,
        &[
            "/usr/local/bin/tfcluster",
            "resolve",
            "--from",
            "k8s-indexed",
            "--format",
            "json",
        ],
    )?;
    let resolved: Value = serde_json::from_str(&printed)
        .map_err(|e| format!("`resolve` in the image printed no JSON ({e}): {printed}"))?;
    let workers = serde_json::json!([
        "train-0.train:2222",
        "train-1.train:2222",
        "train-2.train:2222"
    ]);
    let got = (
        &resolved["cluster"]["worker"],
        &resolved["task_type"],
        &resolved["task_id"],
    );
    if got
        != (
            &workers,
            &serde_json::json!("worker"),
            &serde_json::json!(1),
        )
    {
        return Err(format!(
            "`resolve --from k8s-indexed` in the image gave {resolved}, not worker 1 of {workers}"
        ));
    }
    Ok(())
}

/// Builds the `tensorflow` stage on a labelled stand-in base and runs the binary in it.
fn tensorflow_stage(buildah: &Buildah, context: &Path) -> Result<(), String> {
    buildah.base_image()?;
    let image = "localhost/tf-train:test";
    buildah.build(
        context,
        &[
            "--target",
            "tensorflow",
            "--build-arg",
            &format!("TENSORFLOW_IMAGE={BASE}"),
            "--tag",
            image,
        ],
    )?;
    let config = buildah.inspect(image)?;
    let labels = &config["OCIv1"]["config"]["Labels"];
    if labels[BASE_LABEL] != "yes" {
        return Err(format!(
            "the tensorflow stage's image is not built on TENSORFLOW_IMAGE (labels {labels})"
        ));
    }
    not_root(&config, "1000:1000")?;
    let printed = buildah.run_in(image, &[], &["/usr/local/bin/tfcluster", "--version"])?;
    if !printed.starts_with("tfcluster ") {
        return Err(format!("`tfcluster --version` in it printed {printed:?}"));
    }
    Ok(())
}

/// buildah with the suite's own storage (vfs: no overlay mounts needed).
struct Buildah {
    scratch: PathBuf,
}

impl Buildah {
    fn new(scratch: &Path) -> Buildah {
        Buildah {
            scratch: scratch.to_path_buf(),
        }
    }

    fn command(&self) -> Command {
        let mut command = Command::new("buildah");
        command
            .arg("--root")
            .arg(self.scratch.join("storage"))
            .arg("--runroot")
            .arg(self.scratch.join("run"))
            .args(["--storage-driver", "vfs"]);
        command
    }

    /// `buildah build` of the repository's Dockerfile with `build` replaced by `context`,
    /// never pulling: a base image missing here fails rather than reaching for a registry.
    fn build(&self, context: &Path, args: &[&str]) -> Result<(), String> {
        let root = workspace::root();
        let mut command = self.command();
        command
            .args(["build", "--pull=never", "--layers=false", "--build-context"])
            .arg(format!("build={}", context.display()))
            .arg("--file")
            .arg(root.join("Dockerfile"))
            .args(args)
            .arg(&root);
        step(&mut command, &self.scratch, "build").map(drop)
    }

    /// Runs `argv` in a container of `image` with only `env` added to the image's
    /// environment; returns what it printed.
    fn run_in(&self, image: &str, env: &[&str], argv: &[&str]) -> Result<String, String> {
        let container = step(
            self.command().args(["from", "--pull=never", image]),
            &self.scratch,
            "from",
        )?;
        let container = container.trim();
        let mut command = self.command();
        command.args(["run", "--isolation", "chroot"]);
        for pair in env {
            command.args(["--env", pair]);
        }
        command.arg(container).arg("--").args(argv);
        let printed = step(&mut command, &self.scratch, "run");
        let _ = step(self.command().args(["rm", container]), &self.scratch, "rm");
        printed
    }

    /// The image's configuration as `buildah inspect` shows it.
    fn inspect(&self, image: &str) -> Result<Value, String> {
        let printed = step(
            self.command().args(["inspect", "--type", "image", image]),
            &self.scratch,
            "inspect",
        )?;
        serde_json::from_str(&printed).map_err(|e| format!("buildah inspect printed no JSON: {e}"))
    }

    /// [`BASE`]: an image with only a label, made without a registry.
    fn base_image(&self) -> Result<(), String> {
        let container = step(
            self.command().args(["from", "scratch"]),
            &self.scratch,
            "from",
        )?;
        let container = container.trim();
        step(
            self.command()
                .args(["config", "--label", &format!("{BASE_LABEL}=yes"), container]),
            &self.scratch,
            "config",
        )?;
        step(
            self.command().args(["commit", container, BASE]),
            &self.scratch,
            "commit",
        )?;
        step(self.command().args(["rm", container]), &self.scratch, "rm").map(drop)
    }

    /// Removes every container and image of the suite's storage (its files are removed after).
    fn remove_all(&self) {
        let _ = step(self.command().args(["rm", "--all"]), &self.scratch, "rm");
        let _ = step(
            self.command().args(["rmi", "--all", "--force"]),
            &self.scratch,
            "rmi",
        );
    }
}

/// Runs `command` within [`STEP`], its output kept under `scratch` as `NAME.out`/`.err`;
/// returns its stdout, or an error with the tails of both.
fn step(command: &mut Command, scratch: &Path, name: &str) -> Result<String, String> {
    let shown = deadline::show(command);
    let finished = deadline::run(command, &scratch.join(name), STEP)?.success(&shown)?;
    Ok(finished.stdout)
}

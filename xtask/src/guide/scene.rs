//! The working directory an example runs in, holding the files the guide's examples name (and
//! `tf_server.py`, a task for the jobs the watching examples watch, and `kube_apiserver.py`,
//! a stand-in Kubernetes API server), and
//! the `PATH` that puts the debug `tfcluster` and TensorFlow's `python` first.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use test_pki::TestCa;

/// The guide's `train.py`: prints its task and checks TensorFlow resolves the same cluster.
const TRAIN_PY: &str = include_str!("train.py");

/// A TensorFlow task that serves until stopped: the running job the watching examples watch.
const TF_SERVER_PY: &str = include_str!("tf_server.py");

/// A stand-in Kubernetes API server: the pods the `--from kubernetes` example resolves.
const KUBE_APISERVER_PY: &str = include_str!("kube_apiserver.py");

/// The token every example's token files hold (`tfcluster rendezvous token`'s form).
pub(crate) const TOKEN: &str = "5f0c3e5ad2b4a8e1c7d9f3b6a2e4c8d0b1f3a5c7e9d2b4f6a8c0e2d4f6b8a0c2";

/// The cluster of `cluster.json`: one worker, which the examples serve and connect to.
const CLUSTER_JSON: &str = r#"{"worker": ["localhost:2222"]}"#;

/// Directories made so far, so each gets a name of its own.
static MADE: AtomicU32 = AtomicU32::new(0);

/// The programs an example finds first on its `PATH`.
#[derive(Debug)]
pub(crate) struct Tools {
    path: String,
}

impl Tools {
    /// `tfcluster` and `python` (the TensorFlow venv's) first, then the `PATH` this runs with.
    pub(crate) fn new(tfcluster: &Path, python: &Path) -> Result<Tools, String> {
        let dir = |file: &Path| {
            file.parent()
                .map(Path::to_path_buf)
                .ok_or_else(|| format!("{} has no directory", file.display()))
        };
        let mut dirs = vec![dir(tfcluster)?, dir(python)?];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let path = std::env::join_paths(dirs)
            .map_err(|e| format!("cannot make a PATH: {e}"))?
            .into_string()
            .map_err(|p| format!("the PATH {p:?} is not UTF-8"))?;
        Ok(Tools { path })
    }

    /// The `PATH` an example runs with.
    pub(crate) fn path(&self) -> &str {
        &self.path
    }
}

/// A fresh directory, removed on drop.
#[derive(Debug)]
pub(crate) struct Dir {
    path: PathBuf,
}

impl Dir {
    /// A new empty directory for the example at `place`.
    pub(crate) fn new(place: &str) -> Result<Dir, String> {
        let name: String = place
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let path = std::env::temp_dir().join(format!(
            "tfcluster-guide-{}-{}-{name}",
            std::process::id(),
            MADE.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot make {}: {e}", path.display()))?;
        Ok(Dir { path })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the files the examples name: the scripts (the tests' own from `root`), the
    /// cluster file, token files and every certificate of the TLS examples, from one CA.
    pub(crate) fn fill(&self, root: &Path) -> Result<(), String> {
        let scripts = root.join("tfcluster/tests/scripts");
        let mut files: Vec<(String, String)> = vec![
            ("train.py".into(), TRAIN_PY.into()),
            ("tf_server.py".into(), TF_SERVER_PY.into()),
            ("kube_apiserver.py".into(), KUBE_APISERVER_PY.into()),
            ("cluster.json".into(), CLUSTER_JSON.into()),
            ("job.token".into(), TOKEN.into()),
            ("rdzv.token".into(), TOKEN.into()),
        ];
        for script in ["mwms_train.py", "pss_train.py"] {
            let from = scripts.join(script);
            let text = std::fs::read_to_string(&from)
                .map_err(|e| format!("cannot read {}: {e}", from.display()))?;
            files.push((script.into(), text));
        }
        let ca = std::panic::catch_unwind(|| {
            let ca = TestCa::new("tfcluster guide");
            let names = [
                "localhost",
                "127.0.0.1",
                "rdzv-host",
                "node0",
                "node1",
                "etcd0",
            ];
            let mut pems = vec![("ca.pem".to_owned(), ca.cert_pem())];
            pems.push(("ca.crt".into(), ca.cert_pem()));
            // Each peer's certificate and key, as the examples name them.
            for (cert, key) in [
                ("rdzv.pem", "rdzv-key.pem"),
                ("me.pem", "me-key.pem"),
                ("agent.pem", "agent-key.pem"),
                ("worker0.crt", "worker0.key"),
                ("client.crt", "client.key"),
            ] {
                let issued = ca.issue(&names);
                pems.push((cert.into(), issued.cert));
                pems.push((key.into(), issued.key));
            }
            pems
        })
        .map_err(|_| "test-pki could not make the examples' certificates".to_owned())?;
        files.extend(ca);
        for (name, text) in files {
            let path = self.path.join(&name);
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

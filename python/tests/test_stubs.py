"""The hand-written stubs (`_native.pyi` of the Rust extension, `tf.pyi`; the package's other
modules are typed inline) checked against the installed package by mypy's stubtest, as
typeshed checks its stubs: a name, a parameter, a default or a property that differs between
stub and module fails here."""

import subprocess
import sys
import tempfile
from pathlib import Path

import tfcluster

# The package's mypy settings (TensorFlow has no stubs).
CONFIG = Path(__file__).resolve().parents[1] / "pyproject.toml"

# What a wheel built without the `kubernetes` feature lacks, which the stubs declare.
WITHOUT_KUBERNETES = """\
tfcluster.__all__
tfcluster._native.__all__
tfcluster._native.KubernetesClusterResolver
tfcluster.tf.__all__
tfcluster.tf.KubernetesClusterResolver
"""


def test_stubtest_finds_the_stubs_equal_to_the_module(tmp_path):
    allowlist = []
    if not tfcluster.HAS_KUBERNETES:
        (tmp_path / "allowlist.txt").write_text(WITHOUT_KUBERNETES)
        allowlist = ["--allowlist", str(tmp_path / "allowlist.txt")]
    out = subprocess.run(
        # The package, its submodules with it: tfcluster._native, tfcluster.tf, ... PEP 800's
        # @disjoint_base (PyO3's classes are disjoint bases) is newer than the type checkers
        # users run: not asked of the stubs.
        [sys.executable, "-m", "mypy.stubtest", "--mypy-config-file", str(CONFIG),
         "--ignore-disjoint-bases", *allowlist, "tfcluster"],
        capture_output=True, text=True, timeout=600,
        # Away from the repository, whose venv under target/ mypy would find a second time.
        cwd=tempfile.gettempdir(),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Success" in out.stdout, out.stdout

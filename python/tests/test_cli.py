"""The `tfcluster` binary the wheel installs: on the venv's PATH, the real CLI."""

import os
import shutil
import subprocess

import pytest
import sys

from conftest import SCRIPTS, VENV_BIN


def venv_env():
    """This environment with the venv's scripts first on PATH, as an activated venv has it."""
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}{os.pathsep}{env.get('PATH', '')}"
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    env.pop("TF_CONFIG", None)
    return env


def test_the_binary_is_on_the_venvs_path():
    found = shutil.which("tfcluster", path=venv_env()["PATH"])
    assert found == str(VENV_BIN / "tfcluster")
    # The native program itself, not a Python launcher script.
    with open(found, "rb") as binary:
        assert binary.read(4) == b"\x7fELF"


def test_version():
    out = subprocess.run(["tfcluster", "--version"], env=venv_env(), capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "tfcluster 0.1.0"


def test_every_command_is_there():
    out = subprocess.run(["tfcluster", "--help"], env=venv_env(), capture_output=True,
                         text=True, check=True)
    for command in ("up", "run", "serve", "connect", "resolve", "spec", "hostlist", "rendezvous"):
        assert f"  {command}" in out.stdout, out.stdout
    out = subprocess.run(["tfcluster", "hostlist", "expand", "n[09-11]"], env=venv_env(),
                         capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["n09", "n10", "n11"]


def test_a_failure_is_the_clis_status_and_message(env):
    out = subprocess.run(["tfcluster", "run", "--from", "slurm", "--", "true"], env=venv_env(),
                         capture_output=True, text=True)
    # 1, an error of ours; a usage error would be 2, a crash or a signal another status.
    assert out.returncode == 1, out.stderr
    assert out.stderr == ("tfcluster: error: SLURM_PROCID not found in environment. "
                          "Not running inside a SLURM step?\n"), out.stderr
    assert out.stdout == ""


def run_local(script, *args):
    return subprocess.run(
        ["tfcluster", "run", "--local", "worker=2", "--", "python", str(SCRIPTS / script), *args],
        env=venv_env(), capture_output=True, text=True, timeout=300,
    )


@pytest.mark.tensorflow
def test_run_local_trains_mwms_from_the_venv():
    out = run_local("mwms_train.py")
    assert out.returncode == 0, out.stdout + out.stderr
    for task in (0, 1):
        assert f"[worker:{task}] mwms ok worker:{task} replicas=2 " in out.stdout, out.stdout


@pytest.mark.tensorflow
def test_run_local_trains_with_tfcluster_tf_config_resolver():
    # MultiWorkerMirroredStrategy(cluster_resolver=tfcluster.tf.TFConfigClusterResolver()).
    out = run_local("mwms_train_resolver.py", "tf_config")
    assert out.returncode == 0, out.stdout + out.stderr
    for task in (0, 1):
        assert f"[worker:{task}] mwms ok worker:{task} replicas=2 " in out.stdout, out.stdout
    assert "tfcluster.tf.TFConfigClusterResolver" in out.stdout

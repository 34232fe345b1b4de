"""Shared fixtures: a clean process environment for the resolvers, Slurm step variables, and
where the venv's scripts and the repository's training scripts are.

The suite runs in the TensorFlow 2.21 venv the wheel is installed into (`cargo xtask python`);
a test that needs TensorFlow imports it and fails, loudly, where it is missing.
"""

import os
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "tfcluster" / "tests" / "scripts"
VENV_BIN = Path(sys.executable).parent

# Every variable a resolver or auto-detection reads.
_PREFIXES = ("SLURM", "SM_", "OMPI_", "KUBERNETES_", "TFCLUSTER_K8S_")
_NAMES = ("TF_CONFIG", "CUDA_VISIBLE_DEVICES", "JOB_COMPLETION_INDEX")


@pytest.fixture
def env(monkeypatch):
    """The process environment without any cluster source; `env.set(**vars)` adds some."""
    for name in list(os.environ):
        if name.startswith(_PREFIXES) or name in _NAMES:
            monkeypatch.delenv(name)

    class Env:
        def set(self, **variables):
            for name, value in variables.items():
                monkeypatch.setenv(name, str(value))

    return Env()


def slurm_step(env, nodelist, tasks_per_node, nodes, rank, distribution=None):
    """Sets a Slurm step's variables for `rank`, which runs on `nodes[rank]` (the node Slurm
    placed it on, from `srun`'s layout)."""
    variables = dict(
        SLURM_PROCID=rank,
        SLURM_STEP_NUM_TASKS=len(nodes),
        SLURM_STEP_NODELIST=nodelist,
        SLURM_STEP_TASKS_PER_NODE=tasks_per_node,
        SLURMD_NODENAME=nodes[rank],
        SLURM_JOB_ID=42,
        SLURM_STEP_ID=0,
    )
    if distribution:
        variables["SLURM_DISTRIBUTION"] = distribution
    env.set(**variables)

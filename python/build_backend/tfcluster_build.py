"""The PEP 517 backend of the tfcluster distribution: maturin's, plus the CLI binary.

maturin packs one Rust artifact per wheel: the PyO3 extension module (``bindings = "pyo3"``)
or binaries (``bindings = "bin"``), not both (PyO3/maturin#368). What it does pack besides is
the wheel's data directory (``[tool.maturin] data``), whose ``scripts/`` installers put on the
environment's PATH. So before maturin builds the module, this backend builds the workspace's
``tfcluster`` binary with cargo, in the same profile and target directory (the two share every
compiled dependency), and copies it, stripped, to ``tfcluster.data/scripts/tfcluster``.

The CLI is thus the real native program (every command, its own signal handling, no Python
interpreter started), and ``pip install ./python`` from a checkout needs only a Rust
toolchain. Every other hook is maturin's own.

``TFCLUSTER_CLI_TARGET``, when set, is the Rust target the CLI is built for (the module is
always the interpreter's): ``x86_64-unknown-linux-musl`` makes it a static binary that runs on
any Linux, as the container image's is (rustup's target and musl-gcc needed). The test
command builds the image's binary and the wheel's so, once.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import maturin
from maturin import (  # noqa: F401  (PEP 517 hooks re-exported as they are)
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
)

PACKAGE = Path(__file__).resolve().parent.parent
WORKSPACE = PACKAGE.parent
SCRIPTS = PACKAGE / "tfcluster.data" / "scripts"


def _profile(args, editable):
    """The cargo profile maturin builds in: --profile, else release (dev for editable)."""
    for i, arg in enumerate(args):
        if arg == "--profile" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
        if arg in ("--release", "-r"):
            return "release"
    return "dev" if editable else "release"


def build_cli(profile):
    """Builds the tfcluster binary in `profile` and copies it into the wheel's scripts."""
    cargo = os.environ.get("CARGO", "cargo")
    command = [
        cargo,
        "build",
        "--manifest-path",
        str(WORKSPACE / "Cargo.toml"),
        "--package",
        "tfcluster",
        "--bin",
        "tfcluster",
        "--profile",
        profile,
        "--message-format=json-render-diagnostics",
    ]
    target = os.environ.get("TFCLUSTER_CLI_TARGET")
    if target:
        command += ["--target", target]
    print("tfcluster_build: " + " ".join(command), file=sys.stderr, flush=True)
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed with status {done.returncode}")
    executable = None
    for line in done.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if message.get("reason") == "compiler-artifact" and message["target"]["name"] == "tfcluster":
            executable = message.get("executable") or executable
    if not executable:
        raise RuntimeError(f"{' '.join(command)} reported no tfcluster executable")
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    target = SCRIPTS / "tfcluster"
    shutil.copyfile(executable, target)
    os.chmod(target, 0o755)
    # The binary's symbols and line tables are of no use in a wheel (a dev build's are most of
    # its size); maturin strips the module the same way (`strip = true`).
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, str(target)], check=True)
    return target


def build_sdist(sdist_directory, config_settings=None):
    # maturin's sdist holds this crate and its path dependencies, not the tfcluster CLI crate
    # the wheel's scripts are built from: a wheel built from it would lack the CLI.
    raise RuntimeError(
        "tfcluster publishes no sdist: build a wheel from a checkout of the repository "
        "(`pip install ./python`, `pip wheel ./python`, `python -m build --wheel python`)"
    )


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    build_cli(_profile(maturin.get_maturin_pep517_args(config_settings), editable=False))
    return maturin.build_wheel(wheel_directory, config_settings, metadata_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    build_cli(_profile(maturin.get_maturin_pep517_args(config_settings), editable=True))
    return maturin.build_editable(wheel_directory, config_settings, metadata_directory)


# maturin checks that the data directory exists when it writes the metadata, before any build.
def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    return maturin.prepare_metadata_for_build_wheel(metadata_directory, config_settings)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    SCRIPTS.mkdir(parents=True, exist_ok=True)
    return maturin.prepare_metadata_for_build_editable(metadata_directory, config_settings)


if __name__ == "__main__":
    # `python build_backend/tfcluster_build.py [PROFILE]`: the CLI alone, before a direct
    # `maturin build --profile PROFILE` (default release), which packs what is there.
    print(build_cli(sys.argv[1] if len(sys.argv) > 1 else "release"))

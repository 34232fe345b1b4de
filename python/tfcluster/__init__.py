"""tfcluster: TensorFlow's cluster model, done in Rust, for Python.

- ``ClusterSpec``: a cluster validated when it is made (job names, ``host:port`` addresses,
  task indices), with TensorFlow's ``as_dict()`` and ``ClusterDef`` bytes.
- ``hostlist.expand`` / ``hostlist.compress``: Slurm's hostlist grammar as Slurm expands it.
- The resolvers: ``SlurmClusterResolver``, ``TFConfigClusterResolver``,
  ``SageMakerClusterResolver``, ``KubernetesIndexedJobClusterResolver`` (an Indexed Job's
  pods, from their environment), ``KubernetesClusterResolver`` (in the default wheel; not in
  one built with ``--no-default-features``) and ``auto_detect()``, with TensorFlow's methods.
- ``tfcluster.tf``: the same resolvers as ``tf.distribute.cluster_resolver.ClusterResolver``
  subclasses, for TensorFlow's strategies (TensorFlow is imported there, and only there).
- ``progress()``: the beacon of a quiet task for ``tfcluster run --watchdog`` (it touches
  ``$TFCLUSTER_PROGRESS_FILE``; a no-op outside tfcluster).
- ``preemption_deadline()`` and ``preemption_watcher()``: the cloud's notice that this host
  goes, as ``tfcluster run --rdzv`` shows it (``$TFCLUSTER_NOTICE_FILE``), for a
  ParameterServerStrategy coordinator's loop and TensorFlow's ``TerminationConfig``.
- The ``tfcluster`` command-line tool, installed on the environment's PATH.

Invalid input raises ``ValueError``; an environment that does not resolve to a cluster raises
``RuntimeError``; both carry the Rust error's whole message. Everything here is the Rust
implementation (``tfcluster._native``); this package only names it, but for ``progress()``, a
file touched in pure Python, and the preemption helpers, a file read.
"""

from tfcluster import hostlist
from tfcluster._preemption import preemption_deadline, preemption_watcher
from tfcluster._progress import progress
from tfcluster._native import (
    HAS_KUBERNETES,
    ClusterResolver,
    ClusterSpec,
    KubernetesIndexedJobClusterResolver,
    SageMakerClusterResolver,
    SlurmClusterResolver,
    TFConfigClusterResolver,
    __version__,
    auto_detect,
)

__all__ = [
    "ClusterResolver",
    "ClusterSpec",
    "HAS_KUBERNETES",
    "KubernetesIndexedJobClusterResolver",
    "SageMakerClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "__version__",
    "auto_detect",
    "hostlist",
    "preemption_deadline",
    "preemption_watcher",
    "progress",
]

if HAS_KUBERNETES:
    from tfcluster._native import KubernetesClusterResolver  # noqa: F401

    __all__.append("KubernetesClusterResolver")

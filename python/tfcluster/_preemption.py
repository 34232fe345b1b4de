"""``tfcluster.preemption_deadline()`` and ``tfcluster.preemption_watcher()``: the cloud's
notice that this host goes, as ``tfcluster run --rdzv`` (``--preemption-notices``) shows it
to its tasks: a JSON file named by ``$TFCLUSTER_NOTICE_FILE``, written while a notice
stands. Pure Python, a file read: the task itself must ask, as with ``progress()``.
"""

import json
import os
import time
from typing import Callable, Optional

__all__ = ["preemption_deadline", "preemption_watcher"]

#: The variable ``tfcluster run --rdzv`` gives each task: the path of the notice file.
NOTICE_FILE = "TFCLUSTER_NOTICE_FILE"


def _notice() -> Optional[dict]:
    path = os.environ.get(NOTICE_FILE)
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as file:
            notice = json.load(file)
    except (OSError, ValueError):
        return None
    return notice if isinstance(notice, dict) else None


def preemption_deadline() -> Optional[float]:
    """When this host goes, in seconds since the epoch, while the cloud's notice stands.

    ``None`` without a notice, outside ``tfcluster run --rdzv``, or for a notice with no
    deadline (EC2's rebalance recommendation). A ``ClusterCoordinator`` loop of
    ParameterServerStrategy, which TensorFlow's ``PreemptionCheckpointHandler`` does not
    support, can poll it between steps and save once it is set. Never raises.

    >>> import tfcluster
    >>> tfcluster.preemption_deadline() is None  # outside tfcluster
    True
    """
    notice = _notice()
    deadline = notice.get("deadline") if notice else None
    return float(deadline) if isinstance(deadline, (int, float)) else None


def preemption_watcher() -> Callable[[], bool]:
    """A ``termination_watcher_fn`` for TensorFlow's ``TerminationConfig``.

    It returns True once the agent acts on the cloud's notice (the deadline less
    ``--preemption-lead``), when the agent also sends the tasks SIGTERM. Give it where
    TensorFlow's own watcher replaces the SIGTERM handler (GCE GPU VMs), so the handler still
    saves at one step on every worker::

        handler = tf.distribute.experimental.PreemptionCheckpointHandler(
            resolver, checkpoint_manager,
            termination_config=tf.distribute.experimental.TerminationConfig(
                termination_watcher_fn=tfcluster.preemption_watcher()))
    """

    def watch() -> bool:
        notice = _notice()
        act_at = notice.get("act_at") if notice else None
        return isinstance(act_at, (int, float)) and time.time() >= act_at

    return watch

"""tfcluster's resolvers as TensorFlow ``ClusterResolver`` subclasses, for tf.distribute.

Pass one to a strategy where TensorFlow's own would go::

    import tensorflow as tf
    import tfcluster.tf

    strategy = tf.distribute.MultiWorkerMirroredStrategy(
        cluster_resolver=tfcluster.tf.SlurmClusterResolver())

Each class takes the constructor arguments of TensorFlow's resolver of the same name and
answers ``cluster_spec()`` (a ``tf.train.ClusterSpec``), ``master()``, ``task_type``,
``task_id``, ``rpc_layer``, ``environment`` and ``num_accelerators()`` as TensorFlow's do,
from the Rust resolvers of ``tfcluster``: the same values and types (``environment`` is the
constructor's argument, ``None`` when not given, where TensorFlow's class takes one, else
``""``), and ``task_type``, ``task_id`` and ``rpc_layer`` may be set as on TensorFlow's
(``master()`` then uses what was set). This module imports TensorFlow; ``import tfcluster``
does not.

Differences from TensorFlow 2.21, each because TensorFlow is wrong (``tests/test_tensorflow.py``
asserts each):

- ``SlurmClusterResolver`` places ranks on the nodes Slurm ran them on (TensorFlow sorts host
  names as strings and assumes block distribution), keeps hostlists' zero padding and every
  form Slurm takes, counts an empty ``CUDA_VISIBLE_DEVICES`` as no GPU, knows ``task_type``
  and ``task_id`` before ``cluster_spec()`` is called, and keeps what is set on them;
- an environment that is no cluster (a ``TF_CONFIG`` that is not JSON or has a ``task.index``
  of ``1.9``, a SageMaker host missing from ``SM_HOSTS``) raises ``RuntimeError`` naming the
  value, where TensorFlow builds a cluster its runtime rejects later;
- ``KubernetesClusterResolver`` lists pods through the API with no ``kubernetes`` Python
  client, at the pod IP by default (``address="host_ip"`` for TensorFlow's node IP).
"""

from __future__ import annotations

import tensorflow as tf

import tfcluster

__all__ = [
    "ClusterResolver",
    "SageMakerClusterResolver",
    "KubernetesIndexedJobClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "auto_detect",
]

_Base = tf.distribute.cluster_resolver.ClusterResolver


class ClusterResolver(_Base):
    """A ``tf.distribute.cluster_resolver.ClusterResolver`` over a tfcluster resolver.

    ``ClusterResolver(native)`` wraps any resolver of the ``tfcluster`` module (what
    ``tfcluster.auto_detect()`` returns, for one). The named subclasses below build theirs from
    TensorFlow's constructor arguments.
    """

    # Whether the source knows the tasks' accelerators (Slurm's GPUs per task); otherwise
    # num_accelerators() counts this process's devices, as TensorFlow's base class does.
    _accelerators_from_source = False

    # How TensorFlow's class of the same name treats None: setting task_type, task_id or
    # rpc_layer to None means the source's own value again, and master() takes an
    # rpc_layer argument that is not None (its TF_CONFIG and SageMaker resolvers); or None
    # is None, and master() takes `rpc_layer or self.rpc_layer` (its others). The native
    # resolver gets none of the three: this object holds them.
    _none_reads_the_source = False

    def __init__(self, native):
        self._native = native
        # What was set on this object (task_type, task_id, rpc_layer), over the native's;
        # and the environment argument of a class whose TensorFlow twin takes one (its value,
        # None when not given, is what TensorFlow's answers).
        self._set = {}

    @property
    def native(self):
        """The ``tfcluster`` resolver this one answers from."""
        return self._native

    def cluster_spec(self):
        """The cluster as a ``tf.train.ClusterSpec``, read from the environment again."""
        return tf.train.ClusterSpec(self._native.cluster_spec().as_dict())

    def master(self, task_type=None, task_id=None, rpc_layer=None):
        """``"<rpc_layer>://host:port"`` of the task (this one's by default), or ``""``, by
        the rules of TensorFlow's class of the same name, with what is set on this object."""
        if self._none_reads_the_source:
            layer = self.rpc_layer if rpc_layer is None else rpc_layer
        else:
            layer = rpc_layer or self.rpc_layer
        return self._native.master(
            self.task_type if task_type is None else task_type,
            self.task_id if task_id is None else task_id,
            layer,
        )

    def _get(self, name):
        return self._set[name] if name in self._set else getattr(self._native, name)

    def _assign(self, name, value):
        if value is None and self._none_reads_the_source:
            self._set.pop(name, None)
        else:
            self._set[name] = value

    def _take(self, task_type, task_id, rpc_layer, environment):
        # The arguments of a class whose TensorFlow twin keeps them on the object, overriding
        # its source until set to None, and answers its environment argument as given.
        self.task_type, self.task_id, self.rpc_layer = task_type, task_id, rpc_layer
        self._set["environment"] = environment

    @property
    def task_type(self):
        """This task's job, or ``None``; settable, as TensorFlow's."""
        task_type = self._get("task_type")
        return None if task_type is None else str(task_type)

    @task_type.setter
    def task_type(self, task_type):
        self._assign("task_type", task_type)

    @property
    def task_id(self):
        """This task's index in its job, or ``None``; settable, as TensorFlow's."""
        task_id = self._get("task_id")
        return None if task_id is None else int(task_id)

    @task_id.setter
    def task_id(self, task_id):
        self._assign("task_id", task_id)

    @property
    def rpc_layer(self):
        """The RPC layer, e.g. ``"grpc"``, or ``None``; settable, as TensorFlow's."""
        return self._get("rpc_layer")

    @rpc_layer.setter
    def rpc_layer(self, rpc_layer):
        self._assign("rpc_layer", rpc_layer)

    @property
    def environment(self):
        """The environment the cluster runs in: the constructor's argument where
        TensorFlow's class takes one (``None`` when not given), else ``""`` as TensorFlow's
        base class says (or what the source says)."""
        return self._get("environment")

    def num_accelerators(self, task_type=None, task_id=None, config_proto=None):
        """Accelerators per device type, e.g. ``{"GPU": 2}``: the source's count where it has
        one (Slurm), else this process's devices, as TensorFlow's base class counts them."""
        if self._accelerators_from_source:
            return self._native.num_accelerators(task_type, task_id)
        return super().num_accelerators(task_type, task_id, config_proto)

    def __repr__(self):
        return f"tfcluster.tf.{type(self).__name__}({self._native!r})"


class SlurmClusterResolver(ClusterResolver):
    """The cluster of the Slurm job step this process runs in, as Slurm placed its ranks.

    ``SlurmClusterResolver(jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
    tasks_per_node=None, auto_set_gpu=True, rpc_layer="grpc")``: TensorFlow's arguments and
    defaults. Every task is a ``worker`` unless ``jobs`` (e.g. ``{"ps": 1, "worker": 3}``)
    says otherwise; a node's i-th task listens on ``port_base + i``; the node's GPUs are
    counted (``CUDA_VISIBLE_DEVICES``, else the driver) and shared evenly, and with
    ``auto_set_gpu`` ``cluster_spec()`` sets this process's ``CUDA_VISIBLE_DEVICES`` to its
    task's GPUs, as TensorFlow's does.

    Where it differs from TensorFlow's ``SlurmClusterResolver`` (which it replaces in a
    strategy, ``MultiWorkerMirroredStrategy(cluster_resolver=SlurmClusterResolver())``):

    - tasks are listed in rank order on the nodes Slurm ran them on (the step's node order and
      ``SLURM_DISTRIBUTION``, block or cyclic, checked against ``SLURMD_NODENAME``);
      TensorFlow sorts host names as strings (``n10`` before ``n9``) and assumes block
      distribution, so ranks get addresses of other nodes;
    - hostlists keep zero padding and take every form Slurm does (``rack[1-2]-n[01-04]``);
    - an empty ``CUDA_VISIBLE_DEVICES`` is no GPU (TensorFlow counts one), so CPU-only nodes
      may run several tasks;
    - ``task_type`` and ``task_id`` are known before ``cluster_spec()`` is called, and what is
      set on them stays set (TensorFlow's ``cluster_spec()`` puts the rank's back);
    - a step that cannot be a cluster raises ``RuntimeError`` with the Rust message.
    """

    _accelerators_from_source = True

    def __init__(self, jobs=None, port_base=8888, gpus_per_node=None, gpus_per_task=None,
                 tasks_per_node=None, auto_set_gpu=True, rpc_layer="grpc"):
        super().__init__(tfcluster.SlurmClusterResolver(
            jobs=None if jobs is None else list(jobs.items()),
            port_base=port_base,
            gpus_per_node=gpus_per_node,
            gpus_per_task=gpus_per_task,
            tasks_per_node=tasks_per_node,
            auto_set_gpu=auto_set_gpu,
            rpc_layer=None,
        ))
        self.rpc_layer = rpc_layer

    def get_task_info(self):
        """This task's ``(task_type, task_id)``."""
        return self._native.get_task_info()


class TFConfigClusterResolver(ClusterResolver):
    """The cluster of the ``TF_CONFIG`` environment variable, read again at every call.

    ``TFConfigClusterResolver(task_type=None, task_id=None, rpc_layer=None,
    environment=None)``: the arguments override the document's task and RPC layer (a
    ``task_id`` of 0 included). Unlike TensorFlow's, an invalid document (not JSON, a
    ``task.index`` of 1.9, an invalid address) raises ``RuntimeError`` naming the line,
    column and value, rather than building a cluster TensorFlow's runtime rejects later.
    """

    _none_reads_the_source = True

    def __init__(self, task_type=None, task_id=None, rpc_layer=None, environment=None):
        super().__init__(tfcluster.TFConfigClusterResolver(environment=environment))
        self._take(task_type, task_id, rpc_layer, environment)


class SageMakerClusterResolver(ClusterResolver):
    """The cluster of an Amazon SageMaker training job (``SM_HOSTS``, ``SM_CURRENT_HOST``).

    ``SageMakerClusterResolver(port=2223, task_type=None, task_id=None, rpc_layer=None,
    environment=None)``: every host a ``worker`` on ``port``, this host's task its index in
    ``SM_HOSTS``. Unlike TensorFlow's, a current host missing from ``SM_HOSTS`` (or a host
    listed twice) raises ``RuntimeError`` instead of giving a wrong cluster.
    """

    _none_reads_the_source = True

    def __init__(self, port=2223, task_type=None, task_id=None, rpc_layer=None,
                 environment=None):
        super().__init__(tfcluster.SageMakerClusterResolver(port=port, environment=environment))
        self._take(task_type, task_id, rpc_layer, environment)


class KubernetesIndexedJobClusterResolver(ClusterResolver):
    """The cluster of a Kubernetes Indexed Job (or JobSet), from the pod's environment alone.

    ``KubernetesIndexedJobClusterResolver(port=None, layout=None, task_type=None,
    task_id=None, rpc_layer=None)``: task ``i`` is ``<job>-<i>.<subdomain>:<port>`` from
    ``JOB_COMPLETION_INDEX``, ``HOSTNAME`` and the variables the manifest passes down
    (``TFCLUSTER_K8S_COMPLETIONS``, ``TFCLUSTER_K8S_SUBDOMAIN``, ...); ``port`` (else
    ``TFCLUSTER_K8S_PORT``, else 2222) and ``layout`` (``"chief=1,ps=2"``, else
    ``TFCLUSTER_K8S_LAYOUT``) take the place of their variables. No API access or role is
    needed. TensorFlow has no such resolver.
    """

    def __init__(self, port=None, layout=None, task_type=None, task_id=None, rpc_layer=None):
        super().__init__(tfcluster.KubernetesIndexedJobClusterResolver(
            port=port, layout=layout, task_type=task_type, task_id=task_id,
            rpc_layer=rpc_layer))


if tfcluster.HAS_KUBERNETES:
    class KubernetesClusterResolver(ClusterResolver):
        """The cluster of the Kubernetes pods selected by labels.

        ``KubernetesClusterResolver(job_to_label_mapping=None, tf_server_port=8470,
        rpc_layer="grpc", namespace=None, address="pod_ip")``. Unlike TensorFlow's, tasks are
        at the pod IP (``address="host_ip"`` for TensorFlow's node IP), pods are listed in one
        namespace, and no ``kubernetes`` Python client is needed.
        """

        def __init__(self, job_to_label_mapping=None, tf_server_port=8470, rpc_layer="grpc",
                     namespace=None, address="pod_ip"):
            super().__init__(tfcluster.KubernetesClusterResolver(
                job_to_label_mapping=job_to_label_mapping, tf_server_port=tf_server_port,
                rpc_layer=None, namespace=namespace, address=address))
            self.rpc_layer = rpc_layer

    __all__.append("KubernetesClusterResolver")


def auto_detect():
    """The resolver of whichever source launched this process, as a TensorFlow
    ``ClusterResolver``: a ``SlurmClusterResolver`` with TensorFlow's defaults in a Slurm step,
    else ``tfcluster.auto_detect()``'s resolver wrapped. ``RuntimeError`` saying what each
    source lacks when none describes this process."""
    native = tfcluster.auto_detect()
    if native.source == "Slurm":
        return SlurmClusterResolver()
    return ClusterResolver(native)

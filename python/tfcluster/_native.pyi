"""Type stubs of tfcluster._native, the Rust module the tfcluster package re-exports."""

from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union, final

__all__ = [
    "__version__",
    "ClusterSpec",
    "hostlist_expand",
    "hostlist_compress",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "SageMakerClusterResolver",
    "KubernetesIndexedJobClusterResolver",
    "KubernetesClusterResolver",
    "ClusterResolver",
    "HAS_KUBERNETES",
    "auto_detect",
]

__version__: str
HAS_KUBERNETES: bool

_Tasks = Union[Sequence[str], Mapping[int, str]]

@final
class ClusterSpec:
    """A TensorFlow cluster, validated when it is made."""

    def __new__(cls, cluster: Union[Mapping[str, _Tasks], str, "ClusterSpec", Any]) -> "ClusterSpec": ...
    @staticmethod
    def from_cluster_def(data: bytes) -> "ClusterSpec": ...
    def as_dict(self) -> Dict[str, Union[List[str], Dict[int, str]]]: ...
    def to_json(self) -> str: ...
    def as_cluster_def(self) -> bytes: ...
    @property
    def jobs(self) -> List[str]: ...
    def num_tasks(self, job: str) -> int: ...
    def task_indices(self, job: str) -> List[int]: ...
    def task_address(self, job: str, task_index: int) -> str: ...
    def job_tasks(self, job: str) -> List[Optional[str]]: ...
    def __bool__(self) -> bool: ...
    def __eq__(self, value: object, /) -> bool: ...

def hostlist_expand(hostlist: str) -> List[str]: ...
def hostlist_compress(hosts: Iterable[str]) -> str: ...

class _Resolver:
    def cluster_spec(self) -> ClusterSpec: ...
    def master(
        self,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
    ) -> str: ...
    @property
    def task_type(self) -> Optional[str]: ...
    @property
    def task_id(self) -> Optional[int]: ...
    @property
    def rpc_layer(self) -> Optional[str]: ...
    @property
    def environment(self) -> str: ...
    def num_accelerators(
        self, task_type: Optional[str] = None, task_id: Optional[int] = None
    ) -> Dict[str, int]: ...

@final
class SlurmClusterResolver(_Resolver):
    """The cluster of the Slurm job step this process runs in, as Slurm placed its ranks."""

    def __new__(
        cls,
        jobs: Optional[Sequence[Tuple[str, int]]] = None,
        port_base: int = 8888,
        gpus_per_node: Optional[int] = None,
        gpus_per_task: Optional[int] = None,
        tasks_per_node: Union[None, int, Mapping[str, int]] = None,
        auto_set_gpu: bool = True,
        rpc_layer: Optional[str] = "grpc",
    ) -> "SlurmClusterResolver": ...
    def get_task_info(self) -> Tuple[str, int]: ...
    def cuda_visible_devices(self) -> Optional[str]: ...

@final
class TFConfigClusterResolver(_Resolver):
    """The cluster of the TF_CONFIG environment variable."""

    def __new__(
        cls,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
        environment: Optional[str] = None,
    ) -> "TFConfigClusterResolver": ...

@final
class SageMakerClusterResolver(_Resolver):
    """The cluster of an Amazon SageMaker training job."""

    def __new__(
        cls,
        port: int = 2223,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
        environment: Optional[str] = None,
    ) -> "SageMakerClusterResolver": ...

@final
class KubernetesIndexedJobClusterResolver(_Resolver):
    """The cluster of a Kubernetes Indexed Job (or JobSet), from the pod's environment."""

    def __new__(
        cls,
        port: Optional[int] = None,
        layout: Optional[str] = None,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
    ) -> "KubernetesIndexedJobClusterResolver": ...

@final
class KubernetesClusterResolver(_Resolver):
    """The cluster of Kubernetes pods selected by labels (wheels built with `kubernetes`)."""

    def __new__(
        cls,
        job_to_label_mapping: Optional[Mapping[str, Sequence[str]]] = None,
        tf_server_port: int = 8470,
        rpc_layer: Optional[str] = "grpc",
        namespace: Optional[str] = None,
        address: str = "pod_ip",
    ) -> "KubernetesClusterResolver": ...

@final
class ClusterResolver(_Resolver):
    """The resolver auto_detect() found; `source` names it."""

    @property
    def source(self) -> str: ...

def auto_detect() -> ClusterResolver: ...

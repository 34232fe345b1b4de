"""Type stubs of tfcluster.tf: tfcluster's resolvers as TensorFlow ClusterResolvers."""

import abc
from typing import Dict, Mapping, Optional, Sequence, Tuple, Union

import tensorflow as tf

from tfcluster import _native

__all__ = [
    "ClusterResolver",
    "SageMakerClusterResolver",
    "SlurmClusterResolver",
    "TFConfigClusterResolver",
    "auto_detect",
    "KubernetesIndexedJobClusterResolver",
    "KubernetesClusterResolver",
]

# TensorFlow's ClusterResolver is an abc.ABC (TensorFlow has no stubs: mypy sees Any).
class ClusterResolver(tf.distribute.cluster_resolver.ClusterResolver, metaclass=abc.ABCMeta):
    def __init__(self, native: _native._Resolver) -> None: ...
    @property
    def native(self) -> _native._Resolver: ...
    def cluster_spec(self) -> tf.train.ClusterSpec: ...
    def master(
        self,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
    ) -> str: ...
    @property
    def task_type(self) -> Optional[str]: ...
    @task_type.setter
    def task_type(self, task_type: Optional[str]) -> None: ...
    @property
    def task_id(self) -> Optional[int]: ...
    @task_id.setter
    def task_id(self, task_id: Optional[int]) -> None: ...
    @property
    def rpc_layer(self) -> Optional[str]: ...
    @rpc_layer.setter
    def rpc_layer(self, rpc_layer: Optional[str]) -> None: ...
    @property
    def environment(self) -> Optional[str]: ...
    def num_accelerators(
        self,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        config_proto: object = None,
    ) -> Dict[str, int]: ...

class SlurmClusterResolver(ClusterResolver):
    def __init__(
        self,
        jobs: Optional[Mapping[str, int]] = None,
        port_base: int = 8888,
        gpus_per_node: Optional[int] = None,
        gpus_per_task: Optional[int] = None,
        tasks_per_node: Union[None, int, Mapping[str, int]] = None,
        auto_set_gpu: bool = True,
        rpc_layer: Optional[str] = "grpc",
    ) -> None: ...
    def get_task_info(self) -> Tuple[str, int]: ...

class TFConfigClusterResolver(ClusterResolver):
    def __init__(
        self,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
        environment: Optional[str] = None,
    ) -> None: ...

class SageMakerClusterResolver(ClusterResolver):
    def __init__(
        self,
        port: int = 2223,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
        environment: Optional[str] = None,
    ) -> None: ...

class KubernetesIndexedJobClusterResolver(ClusterResolver):
    def __init__(
        self,
        port: Optional[int] = None,
        layout: Optional[str] = None,
        task_type: Optional[str] = None,
        task_id: Optional[int] = None,
        rpc_layer: Optional[str] = None,
    ) -> None: ...

class KubernetesClusterResolver(ClusterResolver):
    def __init__(
        self,
        job_to_label_mapping: Optional[Mapping[str, Sequence[str]]] = None,
        tf_server_port: int = 8470,
        rpc_layer: Optional[str] = "grpc",
        namespace: Optional[str] = None,
        address: str = "pod_ip",
    ) -> None: ...

def auto_detect() -> ClusterResolver: ...

"""A client for the kubelet's PodResources API (podresources/v1) over its unix socket.

The kubelet serves `v1.PodResourcesLister` on `/var/lib/kubelet/pod-resources/kubelet.sock`
(gRPC, no TLS: access is guarded by the socket's file permissions). `List` returns, per
running pod and container, the exclusive CPUs (`cpu_ids`), the memory and hugepages with
their NUMA nodes and the devices; `GetAllocatableResources` what the node can hand out.
Messages come from the committed stubs (`podresources/api_pb2*.py`, generated from the
upstream api.proto by `generate_stubs.py`).

Plain values out (`PodResourcesSnapshot`); every failure is one `PodResourcesError` line:
a missing socket, a socket nobody answers on, one that accepts and never answers (both calls
share one deadline, `timeout` seconds from the first), an RPC error with its gRPC status.
"""
from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass, field

DEFAULT_SOCKET = "/var/lib/kubelet/pod-resources/kubelet.sock"
DEFAULT_TIMEOUT = 10.0


class PodResourcesError(RuntimeError):
    """The PodResources API could not be read; the message is one line for the user."""


@dataclass(frozen=True)
class MemoryAssignment:
    memory_type: str                  # "memory" or "hugepages-<size>"
    size: int                         # bytes
    numa_nodes: tuple[int, ...]


@dataclass(frozen=True)
class ContainerAssignment:
    name: str
    cpu_ids: frozenset[int]
    memory: tuple[MemoryAssignment, ...] = ()
    devices: tuple[tuple[str, tuple[str, ...], tuple[int, ...]], ...] = ()   # (resource, ids, NUMA nodes)


@dataclass(frozen=True)
class PodAssignment:
    namespace: str
    name: str
    containers: tuple[ContainerAssignment, ...]


@dataclass(frozen=True)
class PodResourcesSnapshot:
    pods: tuple[PodAssignment, ...]
    allocatable_cpus: frozenset[int] = frozenset()
    allocatable_memory: tuple[MemoryAssignment, ...] = ()
    problems: tuple[str, ...] = field(default=())      # a call that failed while the other answered


def _memory(items) -> tuple[MemoryAssignment, ...]:
    return tuple(MemoryAssignment(m.memory_type, int(m.size), tuple(int(n.ID) for n in m.topology.nodes))
                 for m in items)


def _container(c) -> ContainerAssignment:
    devices = tuple((d.resource_name, tuple(d.device_ids), tuple(int(n.ID) for n in d.topology.nodes))
                    for d in c.devices)
    return ContainerAssignment(c.name, frozenset(int(i) for i in c.cpu_ids), _memory(c.memory), devices)


def snapshot_from_messages(listed, allocatable=None, problems: tuple[str, ...] = ()) -> PodResourcesSnapshot:
    """Plain values from a ListPodResourcesResponse (and an AllocatableResourcesResponse)."""
    pods = tuple(PodAssignment(p.namespace, p.name, tuple(_container(c) for c in p.containers))
                 for p in (listed.pod_resources if listed is not None else ()))
    if allocatable is None:
        return PodResourcesSnapshot(pods, problems=problems)
    return PodResourcesSnapshot(pods, frozenset(int(i) for i in allocatable.cpu_ids), _memory(allocatable.memory),
                                problems)


def _describe(exc, socket_path: str, call: str, timeout: float) -> str:
    import grpc

    code = exc.code() if isinstance(exc, grpc.RpcError) and hasattr(exc, "code") else None
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"kubelet PodResources socket {socket_path}: nobody answers ({call}: connection refused or kubelet down)"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return (f"kubelet PodResources socket {socket_path}: {call} got no answer within {timeout:g} s "
                "(the kubelet is hung, or something else listens there; --timeout)")
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return f"kubelet PodResources API at {socket_path} does not implement {call} (kubelet too old?)"
    details = exc.details() if hasattr(exc, "details") else str(exc)
    return f"kubelet PodResources API at {socket_path}: {call} failed: {code.name if code else 'error'}: {details}"


class PodResourcesConnection:
    """One gRPC channel to the kubelet's socket, kept for many reads (the node agent asks at
    every scrape; a channel reconnects by itself when the kubelet restarts)."""

    def __init__(self, socket_path: str = DEFAULT_SOCKET, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.socket_path, self.timeout = socket_path, timeout
        self._channel = self._stub = None

    def read(self, allocatable: bool = True) -> PodResourcesSnapshot:
        """Call `List` (and `GetAllocatableResources`). Raises PodResourcesError when nothing
        could be read; when only `GetAllocatableResources` fails the snapshot says so in
        `problems`."""
        import grpc

        from numaguard.lint.node.podresources import api_pb2

        self._check_socket()
        deadline = time.monotonic() + self.timeout
        stub = self._connect()
        try:
            listed = stub.List(api_pb2.ListPodResourcesRequest(), timeout=self.timeout)
        except grpc.RpcError as exc:
            # a channel whose kubelet went away waits out gRPC's growing reconnect backoff (up to
            # 120 s) before it tries again; a fresh one at the next read connects at once
            self.close()
            raise PodResourcesError(_describe(exc, self.socket_path, "List", self.timeout)) from None
        if not allocatable:
            return snapshot_from_messages(listed)
        try:
            answer = stub.GetAllocatableResources(api_pb2.AllocatableResourcesRequest(),
                                                  timeout=max(deadline - time.monotonic(), 0.001))
        except grpc.RpcError as exc:
            return snapshot_from_messages(listed, None, (_describe(exc, self.socket_path, "GetAllocatableResources",
                                                                   self.timeout),))
        return snapshot_from_messages(listed, answer)

    def _check_socket(self) -> None:
        try:
            mode = os.stat(self.socket_path).st_mode
        except FileNotFoundError:
            raise PodResourcesError(f"kubelet PodResources socket {self.socket_path} not found (is this a node? "
                                    "mount /var/lib/kubelet into the pod)") from None
        except OSError as exc:
            raise PodResourcesError(f"kubelet PodResources socket {self.socket_path}: {exc.strerror or exc}") from None
        if not stat.S_ISSOCK(mode):
            raise PodResourcesError(f"kubelet PodResources socket {self.socket_path} is not a unix socket")

    def _connect(self):
        if self._stub is None:
            import grpc

            from numaguard.lint.node.podresources import api_pb2_grpc

            self._channel = grpc.insecure_channel(f"unix://{os.path.abspath(self.socket_path)}")
            self._stub = api_pb2_grpc.PodResourcesListerStub(self._channel)
        return self._stub

    def close(self) -> None:
        if self._channel is not None:
            self._channel.close()
        self._channel = self._stub = None


def read_pod_resources(socket_path: str = DEFAULT_SOCKET, timeout: float = DEFAULT_TIMEOUT) -> PodResourcesSnapshot:
    """`List` and `GetAllocatableResources` once (see PodResourcesConnection.read)."""
    connection = PodResourcesConnection(socket_path, timeout)
    try:
        return connection.read()
    finally:
        connection.close()

"""AdmissionReviews shaped as the API server sends them.

Shapes follow the Kubernetes documentation ("Dynamic Admission Control", request example;
kube-apiserver Admission (v1) reference) and `k8s.io/api/admission/v1/types.go`: `kind`,
`resource`, `requestKind`, `requestResource`, `userInfo`, `options` (CreateOptions /
UpdateOptions / DeleteOptions), `dryRun`; objects as stored, with `managedFields`, pods of a
ReplicaSet with `generateName` and no `name`, `ownerReferences`; `oldObject` on UPDATE; `object`
null on DELETE.
"""
from __future__ import annotations

import copy
import itertools
import json
import uuid

from numaguard.lint.carriers import CARRIER_RESOURCES as RESOURCES

SERVICE = "numaguard-webhook"
NAMESPACE = "numaguard"
SERVICE_DNS = f"{SERVICE}.{NAMESPACE}.svc"

_RESOURCES = {"Pod": ("", "pods"), "Deployment": ("apps", "deployments"), "ConfigMap": ("", "configmaps"),
              "ReplicaSet": ("apps", "replicasets"), "CronJob": ("batch", "cronjobs"),
              "StatefulSet": ("apps", "statefulsets"), "DaemonSet": ("apps", "daemonsets"), "Job": ("batch", "jobs"),
              "ReplicationController": ("", "replicationcontrollers")}
_OPTIONS = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
_counter = itertools.count(1)


def managed_fields(manager: str = "kubectl-client-side-apply") -> list[dict]:
    return [{"manager": manager, "operation": "Update", "apiVersion": "v1",
             "time": "2026-12-02T10:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}}}]


# The managed pool the test servers declare (conftest.CONFIG): pods target it by its label
# and tolerate its taint, as the deploy/ config expects.
POOL_LABEL = "node.example.com/pool"
POOL_CONFIG = """\
pool:
  nodeLabels: {node.example.com/pool: numa}
  taint: {key: node.example.com/pool, value: numa, effect: NoSchedule}
"""


def managed_pod(cpu: str = "8", image: str = "registry.example/matcher:1.4", namespace: str = "default") -> dict:
    """A realistic managed pod: it targets the managed pool (nodeSelector and toleration),
    pod-level resources, an exclusive app container, a sidecar and a log shipper sharing the
    pod's pool."""
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "order-matcher", "namespace": namespace, "uid": str(uuid.uuid4()),
                     "creationTimestamp": None, "labels": {"app": "order-matcher"},
                     "managedFields": managed_fields()},
        "spec": {
            "resources": {"requests": {"cpu": cpu, "memory": "8Gi"}, "limits": {"cpu": cpu, "memory": "8Gi"}},
            "containers": [
                {"name": "app", "image": image, "resources": {"requests": {"cpu": "4", "memory": "4Gi"},
                                                              "limits": {"cpu": "4", "memory": "4Gi"}},
                 "terminationMessagePath": "/dev/termination-log", "imagePullPolicy": "IfNotPresent"},
                {"name": "proxy", "image": "registry.example/proxy:2.1",
                 "resources": {"requests": {"cpu": "500m", "memory": "256Mi"}}},
                {"name": "logs", "image": "registry.example/log-shipper:3"},
            ],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "schedulerName": "default-scheduler",
            "terminationGracePeriodSeconds": 30,
            "nodeSelector": {POOL_LABEL: "numa"},
            "tolerations": [{"key": POOL_LABEL, "operator": "Equal", "value": "numa", "effect": "NoSchedule"}],
        },
        "status": {},
    }


def burstable_pod(namespace: str = "default") -> dict:
    """Pod-level limits only and a container request: the API server defaults the pod request
    from the container's, so the pod is Burstable (NG103)."""
    pod = managed_pod(namespace=namespace)
    pod["metadata"]["name"] = "burstable"
    pod["spec"]["resources"] = {"limits": {"cpu": "4", "memory": "4Gi"}}
    pod["spec"]["containers"] = [{"name": "app", "image": "registry.example/app:1",
                                  "resources": {"requests": {"cpu": "1"}}}]
    return pod


def replica_pod(template_pod: dict, owner_kind: str = "ReplicaSet") -> dict:
    """A pod as a ReplicaSet controller creates it: generateName, no name, ownerReferences."""
    pod = copy.deepcopy(template_pod)
    meta = pod["metadata"]
    del meta["name"]
    meta["generateName"] = "order-matcher-7d9f8b6c5-"
    meta["labels"]["pod-template-hash"] = "7d9f8b6c5"
    meta["managedFields"] = managed_fields("kube-controller-manager")
    meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner_kind, "name": "order-matcher-7d9f8b6c5",
                                "uid": str(uuid.uuid4()), "controller": True, "blockOwnerDeletion": True}]
    return pod


def deployment(pod: dict, replicas: int = 3) -> dict:
    template = {"metadata": {"labels": dict(pod["metadata"].get("labels", {}))}, "spec": copy.deepcopy(pod["spec"])}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": pod["metadata"].get("name", "web"), "namespace": pod["metadata"]["namespace"],
                     "uid": str(uuid.uuid4()), "generation": 1, "managedFields": managed_fields(),
                     "annotations": {"deployment.kubernetes.io/revision": "1"}},
        "spec": {"replicas": replicas, "selector": {"matchLabels": template["metadata"]["labels"]},
                 "template": template, "strategy": {"type": "RollingUpdate"}},
        "status": {},
    }


def review(obj: dict | None, operation: str = "CREATE", *, kind: str | None = None, old: dict | None = None,
           dry_run: bool = False, namespace: str | None = None, name: str | None = None) -> dict:
    kind = kind or (obj or old)["kind"]
    group, version, resource = _routed_as(kind, obj or old)
    gvk = {"group": group, "version": version, "kind": kind}
    gvr = {"group": group, "version": version, "resource": resource}
    meta = (obj or old or {}).get("metadata", {})
    request = {
        "uid": f"{uuid.uuid4()}", "kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
        "namespace": namespace or meta.get("namespace", "default"), "operation": operation,
        "userInfo": {"username": "admin", "uid": "014fbff9a07c", "groups": ["system:authenticated", "my-admin-group"]},
        "object": obj, "oldObject": old, "dryRun": dry_run,
        "options": {"apiVersion": "meta.k8s.io/v1", "kind": _OPTIONS.get(operation, "CreateOptions"),
                    **({"fieldManager": "kubectl-client-side-apply"} if operation != "DELETE" else {})},
    }
    if name or meta.get("name"):
        request["name"] = name or meta["name"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def _routed_as(kind: str, obj: dict | None) -> tuple[str, str, str]:
    """The group, version and resource the API server names: the object's apiVersion and the
    plural the webhook's rules give its kind (every judged kind, the workload CRDs too), else
    the built-in kind's."""
    if isinstance(obj, dict) and obj.get("kind") == kind and isinstance(obj.get("apiVersion"), str):
        group, _, version = obj["apiVersion"].rpartition("/")
        if (group, kind) in RESOURCES:
            return group, version, RESOURCES[(group, kind)][0]
    group, resource = _RESOURCES[kind]
    return group, "v1", resource


def body(payload: dict) -> bytes:
    return json.dumps(payload).encode()

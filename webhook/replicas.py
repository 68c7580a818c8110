"""Replicas of judged workloads: objects a built-in workload controller writes for an owner the
webhook judged when it was written.

A Deployment admitted before the policy existed (or whose error an UPDATE kept) is scaled,
rolled out and drained by its controllers, which create new ReplicaSets and pods from the
template the webhook already judged. Denying them would not fix the template: it would only
leave the workload short of pods. So an object is a *replica* when

* the request comes from the controller that writes that kind for that owner kind: its
  service account in kube-system (the kube-controller-manager's controllers each run under
  their own, `--use-service-account-credentials`; the names are those of the bootstrap RBAC
  policy, plugin/pkg/auth/authorizer/rbac/bootstrappolicy/controller_policy.go), or the
  kube-controller-manager's own identity when it runs without per-controller credentials;
* and the object's controller ownerReference (`controller: true`; the API server allows one)
  names that owner kind and API group.

A pod whose ownerReference was written by anyone else is judged as usual: an ownerReference
is a field the creator chooses, the request's user is the API server's word.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from numaguard.lint.objects import api_group
from numaguard.webhook.review import AdmissionRequest

SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:kube-system:"
# The kube-controller-manager's user when its controllers share its credentials (the name
# kubeadm and the Kubernetes docs give its client certificate).
CONTROLLER_MANAGER = "system:kube-controller-manager"
GroupKind = tuple[str, str]
# controller (its service account) -> (what it creates, the owner kind that object names).
# The same rule one level up: the deployment controller creates a Deployment's ReplicaSets, the
# cronjob controller a CronJob's Jobs; their pods then come from the level below.
REPLICA_WRITERS: dict[str, tuple[GroupKind, GroupKind]] = {
    "replicaset-controller": (("", "Pod"), ("apps", "ReplicaSet")),
    "replication-controller": (("", "Pod"), ("", "ReplicationController")),
    "statefulset-controller": (("", "Pod"), ("apps", "StatefulSet")),
    "daemon-set-controller": (("", "Pod"), ("apps", "DaemonSet")),
    "job-controller": (("", "Pod"), ("batch", "Job")),
    "deployment-controller": (("apps", "ReplicaSet"), ("apps", "Deployment")),
    "cronjob-controller": (("batch", "Job"), ("batch", "CronJob")),
}
# The kinds whose pods (or ReplicaSets, Jobs) a built-in controller writes: their replicas.
REPLICATED_KINDS: frozenset[GroupKind] = frozenset(owner for _, owner in REPLICA_WRITERS.values())


@dataclass(frozen=True)
class Replica:
    controller: str        # e.g. replicaset-controller
    owner_kind: str        # e.g. ReplicaSet
    owner_name: str

    @property
    def owner(self) -> str:
        return f"{self.owner_kind}/{self.owner_name}"


def replica_of(request: AdmissionRequest) -> Replica | None:
    """The owner when a built-in controller writes the object for an owner of the kind it
    manages; None otherwise."""
    user = request.user
    if user == CONTROLLER_MANAGER:
        writers = list(REPLICA_WRITERS.items())
    elif user.startswith(SERVICE_ACCOUNT_PREFIX) and user[len(SERVICE_ACCOUNT_PREFIX):] in REPLICA_WRITERS:
        name = user[len(SERVICE_ACCOUNT_PREFIX):]
        writers = [(name, REPLICA_WRITERS[name])]
    else:
        return None
    owner = _controller_reference(request.object)
    if owner is None:
        return None
    owner_kind = (api_group(owner.get("apiVersion") if isinstance(owner.get("apiVersion"), str) else ""),
                  owner.get("kind"))
    for controller, (writes, owned_by) in writers:
        if writes == (request.group, request.kind) and owned_by == owner_kind:
            name = owner.get("name")
            return Replica(controller, owned_by[1], name if isinstance(name, str) else "")
    return None


def _controller_reference(obj: Any) -> dict | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    owners = meta.get("ownerReferences") if isinstance(meta, dict) else None
    if not isinstance(owners, list):
        return None
    return next((o for o in owners if isinstance(o, dict) and o.get("controller") is True), None)

"""NG410-NG411: what a live Pod's status says the kubelet did with it (`numaguard audit`).

These rules look at a whole Pod object as the API server returns it (`status` included), for
every Pod, managed or not: a rejection is a fact about the node, whatever the pod asked for.
Files linted from a repository rarely carry a status, so the rules stay silent there.

Where the facts come from (kubernetes/kubernetes):
- `pkg/kubelet/kubelet.go` rejectPod: a pod the kubelet refuses at admission is set to
  `status.phase: Failed` with `status.reason` = the admit handler's reason and
  `status.message` = "Pod was rejected: <message>".
- `pkg/kubelet/cm/admission/errors.go` GetPodAdmitResult: the resource managers' reasons are
  TopologyAffinityError (`topologymanager`), SMTAlignmentError (`cpumanager`), and, for any
  other allocation error, UnexpectedAdmissionError; KEP-5526 adds EmptyPodSharedPoolError, and
  the PodLevelResources admit handler PodLevelResourcesNotSupported.
- `pkg/kubelet/lifecycle/predicate.go`: the predicate admit handler's reasons are
  "OutOf<resource>" (OutOfcpu, OutOfmemory, OutOfpods, OutOfhugepages-1Gi...), NodeAffinity,
  NodeName, NodePorts, Taint (TaintToleration), InitContainerRestartPolicyForbidden and
  UnexpectedAdmissionError.
"""
from __future__ import annotations

from typing import Iterator

from numaguard.lint.model import Violation
from numaguard.lint.rules.base import LintContext, rule

RESOURCE_MANAGER_REASONS = ("TopologyAffinityError", "SMTAlignmentError", "UnexpectedAdmissionError",
                            "EmptyPodSharedPoolError", "PodLevelResourcesNotSupported")
PREDICATE_REASONS = ("NodeAffinity", "NodeName", "NodePorts", "Taint", "TaintToleration",
                     "InitContainerRestartPolicyForbidden", "NodeLost")


def rejection(pod: dict) -> tuple[str, str] | None:
    """(reason, message) when the pod is Failed with a kubelet admission reason, else None."""
    status = pod.get("status")
    if not isinstance(status, dict) or status.get("phase") != "Failed":
        return None
    reason = status.get("reason")
    if not isinstance(reason, str) or not reason:
        return None
    message = status.get("message") if isinstance(status.get("message"), str) else ""
    return reason, message


def owner_text(pod: dict) -> str:
    """The pod's controller, and the Deployment behind a ReplicaSet when its name says so.

    A ReplicaSet made by a Deployment is named `<deployment>-<pod-template-hash>` and its pods
    carry the `pod-template-hash` label (pkg/controller/deployment/sync.go); we read the
    Deployment's name from that instead of asking the API server for the ReplicaSet."""
    meta = pod.get("metadata") if isinstance(pod.get("metadata"), dict) else {}
    refs = meta.get("ownerReferences") if isinstance(meta.get("ownerReferences"), list) else []
    owners = [r for r in refs if isinstance(r, dict)]
    controller = next((r for r in owners if r.get("controller")), owners[0] if owners else None)
    if controller is None:
        return "no owner (a bare pod)"
    text = f"{controller.get('kind')}/{controller.get('name')}"
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    template_hash = labels.get("pod-template-hash")
    name = str(controller.get("name") or "")
    if (controller.get("kind") == "ReplicaSet" and isinstance(template_hash, str) and template_hash
            and name.endswith("-" + template_hash)):
        text += f" of Deployment/{name[:-len(template_hash) - 1]}"
    return text


def _node(pod: dict) -> str:
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    return str(spec.get("nodeName") or "no node")


@rule(id="NG410", name="pod-rejected-numa", severity="error", target="status",
      title="The kubelet's resource managers rejected a pod at admission",
      rationale="""The scheduler does not see NUMA nodes: it placed the pod on a node whose
      kubelet then refused it (TopologyAffinityError: no NUMA placement satisfies the Topology
      Manager policy; SMTAlignmentError: full-pcpus-only and a CPU count that is not whole cores;
      EmptyPodSharedPoolError: the exclusive containers take the whole pod budget;
      UnexpectedAdmissionError: another allocation failure). The pod stays Failed and is not
      rescheduled; its controller creates a replacement, which can fail the same way, so one
      Deployment can leave hundreds of failed pods behind.""",
      remediation="""Run `numaguard simulate` with the node's description and the pod to see
      why, size the pod to fit what one NUMA node of the pool has free, or add capacity; delete
      the failed pods once fixed.""")
def pod_rejected_numa(pod: dict, ctx: LintContext) -> Iterator[Violation]:
    found = rejection(pod)
    if found and found[0] in RESOURCE_MANAGER_REASONS:
        reason, message = found
        yield Violation(path=("status", "reason"),
                        message=f"rejected by the kubelet on {_node(pod)}: {reason}"
                                f"{': ' + message if message else ''} (owner: {owner_text(pod)})")


@rule(id="NG411", name="pod-rejected-admission", severity="warning", target="status",
      title="The kubelet rejected a pod at admission for a reason the scheduler should have seen",
      rationale="""The kubelet's predicate admit handler re-checks resources, node affinity,
      taints and ports when a pod arrives (pkg/kubelet/lifecycle/predicate.go). A rejection
      there (OutOfcpu, OutOfmemory, OutOfpods, NodeAffinity, Taint...) means the scheduler and
      the kubelet disagree: typically pods that bypass the scheduler (spec.nodeName set
      directly), a race with static pods, or node allocatable changing under the pods (a
      kubelet restarted with larger reservations).""",
      remediation="""Check the node's allocatable against what its pods request (`kubectl
      describe node`), let the scheduler place the pod instead of setting spec.nodeName, and
      delete the failed pods once the cause is fixed.""")
def pod_rejected_admission(pod: dict, ctx: LintContext) -> Iterator[Violation]:
    found = rejection(pod)
    if found and (found[0].startswith("OutOf") or found[0] in PREDICATE_REASONS):
        reason, message = found
        yield Violation(path=("status", "reason"),
                        message=f"rejected by the kubelet on {_node(pod)}: {reason}"
                                f"{': ' + message if message else ''} (owner: {owner_text(pod)})")

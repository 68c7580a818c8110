"""Where pod templates live: one table of (API group, kind) -> the paths of their pod templates.

A *carrier* is a kind whose objects hold pod templates: the Pod itself, the built-in workload
controllers, and the workload CRDs that latency-sensitive and ML workloads keep their pods in
(`BUILTIN_CARRIERS`). Users add their own in `.numaguard.yaml` (`podTemplates:`); those are
parsed into the same values (`PodCarrier`) and looked up in the same table (`PodCarriers`).

A template path is written as dotted field names (`spec.template`), with two wildcards:
`[*]` after a field for every item of that list (`spec.replicatedJobs[*].template.spec.template`)
and a `*` step for every value of a map (`spec.pytorchReplicaSpecs.*.template`: Kubeflow keeps a
map of replica type -> ReplicaSpec). A field is required unless marked optional with `?`: a
required field that is missing is NG002 at the nearest field that is there (the CRD's own
validation refuses the object, or the workload it makes); a missing optional one
(`spec.leaderWorkerTemplate.leaderTemplate?`, `spec.workerGroupSpecs?[*].template`) means
there is no template there, and nothing is reported. An empty list or map holds no template.
The path ends at the template (metadata + spec); its `spec` is the pod spec the pod rules read.

Three more step kinds serve the built-in carriers whose pod specs are shaped otherwise
(`TemplatePath`): a path may end at the pod spec itself (`inline`: KServe's and
LLMInferenceService's components inline a PodSpec, with the pod's annotations in a sibling
`annotations` field), a pod spec may take one more container from a field beside its
`containers` (KServe's `model`, placed first as KServe places it), and a `Guard` step keeps only
embedded objects of one kind (an AppWrapper's components: `spec.components[*].template`
holds any object, and each kind keeps its pod templates where its own entry says).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum

from numaguard.lint.model import Path


class Each(str, Enum):
    """A wildcard step: every item of a list, or every value of a map."""

    LIST_ITEM = "[*]"
    MAP_VALUE = "*"


@dataclass(frozen=True)
class Field:
    """A step to a named field; `optional`: its absence means no template there."""

    name: str
    optional: bool = False


@dataclass(frozen=True)
class Guard:
    """A step that keeps an embedded object only when it is of this API group and kind (any
    version): an AppWrapper component's template."""

    group: str
    kind: str


Step = Field | Each | Guard

# One dotted segment: a field name with an optional `?`, or the map wildcard `*`; either may be
# followed by `[*]` (every item of a list, repeated for a list of lists).
_SEGMENT = r"(?:[A-Za-z_][A-Za-z0-9_-]*\??|\*)(?:\[\*\])*"
PATH_PATTERN = re.compile(rf"^{_SEGMENT}(?:\.{_SEGMENT})*$")
PATH_SYNTAX = ("a template path: field names separated by dots, `[*]` after a list field for "
               "each of its items, `*` for each value of a map, `?` after a field that may be "
               "absent, e.g. spec.workers[*].template or spec.roles?.*.template")


class TemplatePathError(ValueError):
    pass


@dataclass(frozen=True)
class TemplatePath:
    """Where a carrier keeps one kind of pod template. `text` is the path as written ("" for
    the object itself: a Pod); `unless`: a field whose presence means the object has no
    template of its own (an Argo Rollout with `spec.workloadRef` takes its pods from another
    workload, which is judged where it is written)."""

    text: str
    steps: tuple[Step, ...]
    unless: Path = ()
    # the path ends at the pod spec itself, not at a template; its pod's annotations are in the
    # field `annotations` of the mapping holding it (KServe, LLMInferenceService)
    inline: bool = False
    # fields of the pod spec holding one more container, the first present placed first
    # (KServe's model or framework spec: "kserve-container")
    containers: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str, *, unless: str = "", inline: bool = False,
              containers: tuple[str, ...] = ()) -> TemplatePath:
        return cls(text, _parse_steps(text) if text else (),
                   tuple(step.name for step in _parse_steps(unless) if isinstance(step, Field)) if unless else (),
                   inline, containers)

    @classmethod
    def guarded(cls, prefix: str, group: str, kind: str, rest: str) -> TemplatePath:
        """`prefix` (ending at an embedded object), kept for objects of group/kind, then `rest`
        (that kind's own path; "" when the object is itself the template, a Pod)."""
        steps = _parse_steps(prefix) + (Guard(group, kind),) + (_parse_steps(rest) if rest else ())
        shown = f"{prefix}<{group + '/' if group else ''}{kind}>" + (f".{rest}" if rest else "")
        return cls(shown, steps)


def _parse_steps(text: str) -> tuple[Step, ...]:
    if not PATH_PATTERN.match(text):
        raise TemplatePathError(f"{text!r} is not {PATH_SYNTAX}")
    steps: list[Step] = []
    for segment in text.split("."):
        head, *lists = segment.split("[")
        if head == "*":
            steps.append(Each.MAP_VALUE)
        else:
            steps.append(Field(head.rstrip("?"), optional=head.endswith("?")))
        steps.extend(Each.LIST_ITEM for _ in lists)
    return tuple(steps)


@dataclass(frozen=True)
class PodCarrier:
    """A kind whose objects hold pod templates, and where.

    `versions`: the API versions whose types the paths were checked against (the API server
    serves no other); () for every version (a config entry given by `group:`).
    `refused_pod_fields`: pod spec fields the carrier's own validation refuses in its
    templates, each with why (Knative Serving accepts only part of a PodSpec).
    `origin`: where the entry comes from (the CRD's Go types, or the config file).
    `resource`: the resource name (plural) the API server serves the kind under, as a config
    entry gives it (`numaguard webhook manifests` routes the kind to the webhook by it).
    `refused_when`: (annotation, values): the refused fields apply only to an object whose
    annotation has one of the values (a KServe InferenceService in Knative mode); () always.
    `none_when`: (annotation, values): such an object has no pod template of its own (a KServe
    InferenceService in ModelMesh mode runs in ModelMesh's pods).
    `builder`: "module:function" under numaguard.lint completing the templates from other
    objects of the run (KServe's runtimes, an AppWrapper's declared pod sets)."""

    group: str
    kind: str
    paths: tuple[TemplatePath, ...]
    versions: tuple[str, ...] = ()
    refused_pod_fields: tuple[tuple[str, str], ...] = ()
    origin: str = ""
    resource: str = ""
    refused_when: tuple = ()
    none_when: tuple = ()
    builder: str = ""

    def serves(self, version: str) -> bool:
        return not self.versions or version in self.versions


# The resource names and scopes of the built-in carriers (BUILTIN_CARRIERS below), as
# the API server serves them: k8s.io/api for the built-in kinds, and each CRD's
# spec.names.plural and scope (config/crd/bases/<group>_<plural>.yaml in the repository the
# carrier table cites). tests/webhook/test_manifests.py checks that it covers exactly the table. `numaguard webhook
# manifests` and `numaguard export admission-policy` route the kinds to numaguard by it.
NAMESPACED, CLUSTER, ANY_SCOPE = "Namespaced", "Cluster", "*"
CARRIER_RESOURCES: dict[tuple[str, str], tuple[str, str]] = {
    ("", "Pod"): ("pods", NAMESPACED),
    ("", "PodTemplate"): ("podtemplates", NAMESPACED),
    ("", "ReplicationController"): ("replicationcontrollers", NAMESPACED),
    ("apps", "Deployment"): ("deployments", NAMESPACED),
    ("apps", "ReplicaSet"): ("replicasets", NAMESPACED),
    ("apps", "StatefulSet"): ("statefulsets", NAMESPACED),
    ("apps", "DaemonSet"): ("daemonsets", NAMESPACED),
    ("batch", "Job"): ("jobs", NAMESPACED),
    ("batch", "CronJob"): ("cronjobs", NAMESPACED),
    ("argoproj.io", "Rollout"): ("rollouts", NAMESPACED),
    ("apps.kruise.io", "CloneSet"): ("clonesets", NAMESPACED),
    ("apps.kruise.io", "StatefulSet"): ("statefulsets", NAMESPACED),
    ("apps.kruise.io", "DaemonSet"): ("daemonsets", NAMESPACED),
    ("apps.kruise.io", "BroadcastJob"): ("broadcastjobs", NAMESPACED),
    ("apps.kruise.io", "AdvancedCronJob"): ("advancedcronjobs", NAMESPACED),
    ("apps.kruise.io", "UnitedDeployment"): ("uniteddeployments", NAMESPACED),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): ("leaderworkersets", NAMESPACED),
    ("disaggregatedset.x-k8s.io", "DisaggregatedSet"): ("disaggregatedsets", NAMESPACED),
    ("jobset.x-k8s.io", "JobSet"): ("jobsets", NAMESPACED),
    ("kubeflow.org", "PyTorchJob"): ("pytorchjobs", NAMESPACED),
    ("kubeflow.org", "TFJob"): ("tfjobs", NAMESPACED),
    ("kubeflow.org", "XGBoostJob"): ("xgboostjobs", NAMESPACED),
    ("kubeflow.org", "PaddleJob"): ("paddlejobs", NAMESPACED),
    ("kubeflow.org", "JAXJob"): ("jaxjobs", NAMESPACED),
    ("kubeflow.org", "MPIJob"): ("mpijobs", NAMESPACED),
    ("trainer.kubeflow.org", "TrainingRuntime"): ("trainingruntimes", NAMESPACED),
    ("trainer.kubeflow.org", "ClusterTrainingRuntime"): ("clustertrainingruntimes", CLUSTER),
    ("ray.io", "RayCluster"): ("rayclusters", NAMESPACED),
    ("ray.io", "RayJob"): ("rayjobs", NAMESPACED),
    ("ray.io", "RayService"): ("rayservices", NAMESPACED),
    ("ray.io", "RayCronJob"): ("raycronjobs", NAMESPACED),
    ("batch.volcano.sh", "Job"): ("jobs", NAMESPACED),
    ("batch.volcano.sh", "CronJob"): ("cronjobs", NAMESPACED),
    ("serving.knative.dev", "Service"): ("services", NAMESPACED),
    ("serving.knative.dev", "Configuration"): ("configurations", NAMESPACED),
    ("serving.kserve.io", "InferenceService"): ("inferenceservices", NAMESPACED),
    ("serving.kserve.io", "LLMInferenceService"): ("llminferenceservices", NAMESPACED),
    ("workload.codeflare.dev", "AppWrapper"): ("appwrappers", NAMESPACED),
}


class UnknownResource(ValueError):
    """A config carrier kind whose resource name is needed (admission rules route by resource)
    but not given."""


@dataclass(frozen=True)
class PodCarriers:
    """The carrier table: looked up by (group, kind) and then by version. Earlier entries win,
    so a config entry placed before the built-in ones replaces the built-in entry for the
    versions it names."""

    carriers: tuple[PodCarrier, ...]
    _index: dict[tuple[str, str], tuple[PodCarrier, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[tuple[str, str], tuple[PodCarrier, ...]] = {}
        for carrier in self.carriers:
            key = (carrier.group, carrier.kind)
            index[key] = index.get(key, ()) + (carrier,)
        object.__setattr__(self, "_index", index)

    def find(self, group: str, version: str, kind: str) -> PodCarrier | None:
        """The carrier for an object of this group, version and kind; None when it is none."""
        for carrier in self._index.get((group, kind), ()):
            if carrier.serves(version):
                return carrier
        return None

    def kinds(self) -> dict[tuple[str, str], tuple[str, ...]]:
        """(group, kind) -> the versions served (() for every version), over every entry."""
        out: dict[tuple[str, str], tuple[str, ...]] = {}
        for (group, kind), entries in self._index.items():
            versions = () if any(not c.versions for c in entries) else \
                tuple(dict.fromkeys(v for c in entries for v in c.versions))
            out[(group, kind)] = versions
        return out

    def resource_of(self, group: str, kind: str) -> tuple[str, str]:
        """The resource name and scope the API server serves a carrier kind under: the
        built-in table's (`CARRIER_RESOURCES`), else its config entry's `resource:` (any scope:
        the config does not say). UnknownResource when neither gives it: a plural guessed from
        the kind would silently route nothing when the CRD names it otherwise."""
        if (group, kind) in CARRIER_RESOURCES:
            return CARRIER_RESOURCES[(group, kind)]
        entries = self._index.get((group, kind), ())
        named = next((c.resource for c in entries if c.resource), "")
        if not named:
            origin = entries[0].origin if entries else "podTemplates"
            raise UnknownResource(f"{origin}: give `resource:` for {kind} ({group}): the name its CRD serves it "
                                  f"under (spec.names.plural, e.g. {kind.lower()}s), which admission rules "
                                  f"route by")
        return named, ANY_SCOPE

    def with_first(self, extra: tuple[PodCarrier, ...]) -> PodCarriers:
        return PodCarriers(extra + self.carriers) if extra else self

    def with_last(self, extra: tuple[PodCarrier, ...]) -> PodCarriers:
        return PodCarriers(self.carriers + extra)


def _carrier(group: str, kind: str, versions: tuple[str, ...], *paths: str, origin: str,
             unless: str = "", refused: tuple[tuple[str, str], ...] = ()) -> PodCarrier:
    return PodCarrier(group, kind, tuple(TemplatePath.parse(p, unless=unless) for p in paths),
                      versions, refused, origin)


def _inline(group: str, kind: str, versions: tuple[str, ...], *paths: tuple[str, tuple[str, ...]], origin: str,
            refused: tuple[tuple[str, str], ...] = (), refused_when: tuple = (), none_when: tuple = (),
            builder: str = "") -> PodCarrier:
    """A carrier whose components inline their pod spec: (path, container fields) each."""
    return PodCarrier(group, kind, tuple(TemplatePath.parse(p, inline=True, containers=c) for p, c in paths),
                      versions, refused, origin, refused_when=refused_when, none_when=none_when, builder=builder)


def _replica_specs(kind: str, field_name: str, versions: tuple[str, ...] = ("v1",),
                   origin: str = "") -> PodCarrier:
    return _carrier("kubeflow.org", kind, versions, f"spec.{field_name}.*.template", origin=origin or (
        "kubeflow/training-operator@078ec30 (release-1.9) pkg/apis/kubeflow.org/v1/"
        f"{_TRAINING_OPERATOR_FILES[kind]}, ReplicaSpec in common_types.go"))


_TRAINING_OPERATOR_FILES = {"PyTorchJob": "pytorch_types.go", "TFJob": "tensorflow_types.go",
                            "XGBoostJob": "xgboost_types.go", "PaddleJob": "paddlepaddle_types.go",
                            "JAXJob": "jax_types.go"}

_RAY_CLUSTER = ("headGroupSpec.template", "workerGroupSpecs?[*].template")
# KServe: kserve/kserve@aaac4e2 pkg/apis/serving/v1beta1/predictor.go: a PredictorSpec inlines a
# PodSpec (podspec.go, with pod-level `resources`) and holds the model in `model` or a framework
# field, each a Container; components/predictor.go buildPodSpec puts it first, named
# kserve-container (constants.InferenceServiceContainerName).
KSERVE_MODEL_FIELDS = ("model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface",
                       "pmml", "lightgbm", "paddle")
KSERVE_MODE = "serving.kserve.io/deploymentMode"
# utils.go GetDeploymentMode: Knative (legacy Serverless) runs the pods as a Knative revision;
# ModelMesh runs them in ModelMesh's own pods
KSERVE_KNATIVE = (KSERVE_MODE, ("Knative", "Serverless"))
KSERVE_MODELMESH = (KSERVE_MODE, ("ModelMesh",))
# project-codeflare/appwrapper@b47a99e pkg/utils/utils.go: InferPodSets (batch Job, JobSet,
# PyTorchJob, RayCluster, RayJob) and templatesForGVK (Pod, Deployment, StatefulSet), and the
# LeaderWorkerSet of samples/wrapped-leader-worker-set.yaml
APPWRAPPER_WRAPPED = frozenset({("", "Pod"), ("apps", "Deployment"), ("apps", "StatefulSet"), ("batch", "Job"),
                                ("jobset.x-k8s.io", "JobSet"), ("kubeflow.org", "PyTorchJob"), ("ray.io", "RayCluster"),
                                ("ray.io", "RayJob"), ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")})
_KSERVE_KNATIVE_REFUSES = (("resources", "in Knative mode (serving.kserve.io/deploymentMode: Knative or Serverless) "
                            "KServe runs the component as a Knative revision, and Knative Serving refuses pod-level "
                            "resources (knative/serving pkg/apis/serving/fieldmask.go PodSpecMask: `must not set the "
                            "field(s)`); run it with serving.kserve.io/deploymentMode: Standard (RawDeployment)"),)

_JOBSET_TEMPLATES = "replicatedJobs?[*].template.spec.template"
_KNATIVE_REFUSES = (("resources", "Knative Serving accepts only the pod fields in its PodSpecMask "
                     "(knative/serving pkg/apis/serving/fieldmask.go) and refuses pod-level "
                     "resources (`must not set the field(s)`); its pods cannot have a pod budget"),)

# The built-in carriers. Each path was checked against the kind's own Go types in its
# repository (file and commit beside each entry), and whether a missing part is an error
# follows what the kind's validation (its CRD schema, admission webhook or controller) does.
BUILTIN_CARRIERS = PodCarriers((
    # kubernetes/kubernetes staging/src/k8s.io/api: core/v1 (Pod, PodTemplate,
    # ReplicationController), apps/v1 and batch/v1 types.go. The apps and batch betas were
    # removed (1.16, 1.25): a 1.37 API server serves only v1.
    _carrier("", "Pod", ("v1",), "", origin="k8s.io/api core/v1 types.go"),
    _carrier("", "PodTemplate", ("v1",), "template", origin="k8s.io/api core/v1 types.go"),
    _carrier("", "ReplicationController", ("v1",), "spec.template", origin="k8s.io/api core/v1 types.go"),
    *(_carrier("apps", kind, ("v1",), "spec.template", origin="k8s.io/api apps/v1 types.go")
      for kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet")),
    _carrier("batch", "Job", ("v1",), "spec.template", origin="k8s.io/api batch/v1 types.go"),
    _carrier("batch", "CronJob", ("v1",), "spec.jobTemplate.spec.template", origin="k8s.io/api batch/v1 types.go"),

    # Argo Rollouts: argoproj/argo-rollouts@9f8d111 pkg/apis/rollouts/v1alpha1/types.go
    # (RolloutSpec.Template, RolloutSpec.WorkloadRef). ValidateRolloutSpec
    # (pkg/apis/rollouts/validation/validation.go) validates the template as a ReplicaSet's
    # unless workloadRef is set, and then requires the template to be empty: such a Rollout
    # runs the pods of the workload it names, so it has nothing of its own to judge.
    _carrier("argoproj.io", "Rollout", ("v1alpha1",), "spec.template", unless="spec.workloadRef",
             origin="argoproj/argo-rollouts@9f8d111 pkg/apis/rollouts/v1alpha1/types.go"),

    # OpenKruise: openkruise/kruise@07169cf apis/apps/{v1alpha1,v1beta1}/
    # {cloneset,statefulset,daemonset,broadcastjob}_types.go, `template` required in both
    # versions (v1beta1 stored); the webhooks (pkg/webhook/*/validating) validate it as a
    # core PodTemplateSpec. AdvancedCronJob (advancedcronjob_types.go) holds one of a Job
    # template or a BroadcastJob template.
    *(_carrier("apps.kruise.io", kind, ("v1alpha1", "v1beta1"), "spec.template",
               origin=f"openkruise/kruise@07169cf apis/apps/v1beta1/{kind.lower()}_types.go")
      for kind in ("CloneSet", "StatefulSet", "DaemonSet", "BroadcastJob")),
    _carrier("apps.kruise.io", "AdvancedCronJob", ("v1alpha1", "v1beta1"),
             "spec.template.jobTemplate?.spec.template", "spec.template.broadcastJobTemplate?.spec.template",
             origin="openkruise/kruise@07169cf apis/apps/v1beta1/advancedcronjob_types.go"),
    # UnitedDeployment (uniteddeployment_types.go): one optional workload template of four
    # kinds; its subsets may patch the template further, which numaguard does not apply.
    _carrier("apps.kruise.io", "UnitedDeployment", ("v1alpha1", "v1beta1"),
             *(f"spec.template?.{which}Template?.spec.template"
               for which in ("statefulSet", "advancedStatefulSet", "cloneSet", "deployment")),
             origin="openkruise/kruise@07169cf apis/apps/v1beta1/uniteddeployment_types.go"),

    # LeaderWorkerSet: kubernetes-sigs/lws@060ab4d api/leaderworkerset/v1/leaderworkerset_types.go:
    # workerTemplate is required; leaderTemplate is optional (the leader then uses the
    # worker template).
    _carrier("leaderworkerset.x-k8s.io", "LeaderWorkerSet", ("v1",),
             "spec.leaderWorkerTemplate.leaderTemplate?", "spec.leaderWorkerTemplate.workerTemplate",
             origin="kubernetes-sigs/lws@060ab4d api/leaderworkerset/v1/leaderworkerset_types.go"),
    # DisaggregatedSet (api/disaggregatedset/v1/disaggregatedset_types.go): required roles, each
    # inlining a LeaderWorkerSet template (metadata + LeaderWorkerSetSpec).
    _carrier("disaggregatedset.x-k8s.io", "DisaggregatedSet", ("v1",),
             "spec.roles[*].spec.leaderWorkerTemplate.leaderTemplate?",
             "spec.roles[*].spec.leaderWorkerTemplate.workerTemplate",
             origin="kubernetes-sigs/lws@060ab4d api/disaggregatedset/v1/disaggregatedset_types.go"),

    # JobSet: kubernetes-sigs/jobset@08dfbdf api/jobset/v1alpha2/jobset_types.go: the spec and
    # its replicatedJobs are optional (config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml
    # requires neither); each ReplicatedJob's template is a batch/v1 JobTemplateSpec, whose
    # Job the API server refuses without a pod template.
    _carrier("jobset.x-k8s.io", "JobSet", ("v1alpha2",), f"spec?.{_JOBSET_TEMPLATES}",
             origin="kubernetes-sigs/jobset@08dfbdf api/jobset/v1alpha2/jobset_types.go"),

    # Kubeflow training-operator v1 (kubeflow.org/v1): a map of replica type -> ReplicaSpec,
    # whose `template` is a PodTemplateSpec; the webhooks (pkg/webhooks/*) require the map and
    # containers in every replica's template.
    *(_replica_specs(kind, name) for kind, name in (
        ("PyTorchJob", "pytorchReplicaSpecs"), ("TFJob", "tfReplicaSpecs"),
        ("XGBoostJob", "xgbReplicaSpecs"), ("PaddleJob", "paddleReplicaSpecs"),
        ("JAXJob", "jaxReplicaSpecs"))),
    # MPIJob: v1 in training-operator (pkg/apis/kubeflow.org/v1/mpi_types.go) and v2beta1 in
    # kubeflow/mpi-operator@caa3c47 (pkg/apis/kubeflow/v2beta1/types.go): the same
    # mpiReplicaSpecs map; pkg/apis/kubeflow/validation/validation.go requires it.
    _replica_specs("MPIJob", "mpiReplicaSpecs", ("v1", "v2beta1"), origin=(
        "kubeflow/training-operator@078ec30 pkg/apis/kubeflow.org/v1/mpi_types.go; "
        "kubeflow/mpi-operator@caa3c47 pkg/apis/kubeflow/v2beta1/types.go")),
    # Kubeflow Trainer: kubeflow/trainer@8c0f505 pkg/apis/trainer/v1alpha1/trainingruntime_types.go:
    # a (Cluster)TrainingRuntime holds an optional JobSet template. A TrainJob
    # (trainjob_types.go) holds no pod template, only a runtime reference, trainer settings
    # and patches of a few pod fields, so it is not a carrier.
    *(_carrier("trainer.kubeflow.org", kind, ("v1alpha1",), f"spec.template?.spec?.{_JOBSET_TEMPLATES}",
               origin="kubeflow/trainer@8c0f505 pkg/apis/trainer/v1alpha1/trainingruntime_types.go")
      for kind in ("TrainingRuntime", "ClusterTrainingRuntime")),

    # KubeRay: ray-project/kuberay@feeaf72 ray-operator/apis/ray/v1/raycluster_types.go: the
    # head group and its template are required, worker groups optional, each with a required
    # template (controllers/ray/utils/validation.go ValidateRayClusterSpec). RayJob
    # (rayjob_types.go) may name an existing cluster instead of `rayClusterSpec`, and has an
    # optional submitter pod; RayService (rayservice_types.go) requires `rayClusterConfig`;
    # RayCronJob (raycronjob_types.go) holds a RayJob spec. v1alpha1 (deprecated) is the same.
    *(_carrier("ray.io", kind, versions, *(f"{prefix}.{p}" for p in _RAY_CLUSTER), *extra,
               origin=f"ray-project/kuberay@feeaf72 ray-operator/apis/ray/v1/{kind.lower()}_types.go")
      for kind, versions, prefix, extra in (
          ("RayCluster", ("v1", "v1alpha1"), "spec", ()),
          ("RayJob", ("v1", "v1alpha1"), "spec.rayClusterSpec?", ("spec.submitterPodTemplate?",)),
          ("RayService", ("v1", "v1alpha1"), "spec.rayClusterConfig", ()),
          ("RayCronJob", ("v1",), "spec.jobTemplate.rayClusterSpec?", ("spec.jobTemplate.submitterPodTemplate?",)))),

    # Volcano: volcano-sh/volcano@ed72c7c staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go
    # (TaskSpec.Template is a PodTemplateSpec); the job webhook
    # (pkg/webhooks/admission/jobs/validate/admit_job.go) requires tasks and validates each
    # template as a core PodTemplateSpec.
    # A Volcano CronJob (same file) holds a Job template (`spec.jobTemplate`, required).
    *(_carrier("batch.volcano.sh", kind, ("v1alpha1",), f"spec.{prefix}tasks[*].template",
               origin="volcano-sh/volcano@ed72c7c staging/src/volcano.sh/apis/pkg/apis/batch/v1alpha1/job.go")
      for kind, prefix in (("Job", ""), ("CronJob", "jobTemplate.spec."))),

    # Knative Serving: knative/serving@98e5ef9 pkg/apis/serving/v1/{service,configuration}_types.go:
    # `spec.template` is a RevisionTemplateSpec whose spec is a RevisionSpec (PodSpec fields
    # inline, plus containerConcurrency and timeouts), validated by ValidatePodSpec
    # (pkg/apis/serving/k8s_validation.go). A Revision is not listed: Knative makes it from its
    # Configuration's template, which is judged where it is written.
    *(_carrier("serving.knative.dev", kind, ("v1",), "spec.template", refused=_KNATIVE_REFUSES,
               origin=f"knative/serving@98e5ef9 pkg/apis/serving/v1/{kind.lower()}_types.go")
      for kind in ("Service", "Configuration")),

    # KServe InferenceService (v1beta1): the predictor, its multi-node workers, the transformer
    # and the explainer each inline a PodSpec (predictor.go, transformer.go, explainer.go). In
    # Knative mode the pods are a Knative revision's, which refuses pod-level resources; in
    # ModelMesh mode they are ModelMesh's. The ServingRuntime (or ClusterServingRuntime) a model
    # runs on is merged in as KServe merges it when the run holds it (`builder`).
    _inline("serving.kserve.io", "InferenceService", ("v1beta1",),
            ("spec.predictor", KSERVE_MODEL_FIELDS), ("spec.predictor.workerSpec?", ()),
            ("spec.transformer?", ()), ("spec.explainer?", ("art",)),
            refused=_KSERVE_KNATIVE_REFUSES, refused_when=KSERVE_KNATIVE, none_when=KSERVE_MODELMESH,
            origin="kserve/kserve@aaac4e2 pkg/apis/serving/v1beta1/{predictor,transformer,explainer,podspec}.go",
            builder="workloads:inference_service_pods"),
    # LLMInferenceService (v1alpha1, v1alpha2 stored): pkg/apis/serving/v1alpha2: the decode
    # workload's `template` and multi-node `worker`, the prefill workload's, and the router's
    # scheduler (corev1.PodSpec each, optional), merged over the LLMInferenceServiceConfigs
    # of `baseRefs` the run holds (`builder`, controller/v1alpha2/llmisvc/config_merge.go).
    _inline("serving.kserve.io", "LLMInferenceService", ("v1alpha1", "v1alpha2"),
            ("spec.template?", ()), ("spec.worker?", ()), ("spec.prefill?.template?", ()),
            ("spec.prefill?.worker?", ()), ("spec.router?.scheduler?.template?", ()),
            origin="kserve/kserve@aaac4e2 pkg/apis/serving/v1alpha2/llm_inference_service_types.go",
            builder="workloads:llm_inference_service_pods"),

))


def _wrapped(carriers: PodCarriers) -> PodCarrier:
    """AppWrapper (workload.codeflare.dev/v1beta2, Kueue's wrapper: project-codeflare/appwrapper
    @b47a99e api/v1beta2/appwrapper_types.go): `spec.components[*].template` holds an object of
    any kind, and its pods are where that kind keeps them (pkg/utils/utils.go InferPodSets and
    templatesForGVK read them at the kind's own paths: `template.spec.template` of a
    Deployment, `template` of a Pod). The kinds AppWrapper infers pod sets for, and
    LeaderWorkerSet (AppWrapper's own samples wrap one), are read at their own paths; a
    component of another kind through its declared `podSets[*].path` (`builder`), which
    AppWrapper requires for those (ValidatePodSets). Each kind read here is one more walk in
    the exported admission policy, so the list stays the wrapped kinds users run."""
    paths = []
    for carrier in carriers.carriers:
        if (carrier.group, carrier.kind) not in APPWRAPPER_WRAPPED:
            continue
        for path in carrier.paths:
            if not path.inline and not path.unless:
                paths.append(TemplatePath.guarded("spec.components[*].template", carrier.group, carrier.kind, path.text))
    return PodCarrier("workload.codeflare.dev", "AppWrapper", tuple(dict.fromkeys(paths)), ("v1beta2",),
                      origin="project-codeflare/appwrapper@b47a99e api/v1beta2/appwrapper_types.go, pkg/utils/utils.go",
                      builder="workloads:appwrapper_declared")


BUILTIN_CARRIERS = BUILTIN_CARRIERS.with_last((_wrapped(BUILTIN_CARRIERS),))


def carrier_from_config(entry: dict, where: str) -> PodCarrier:
    """A `podTemplates:` entry (already checked against the config schema) as a carrier;
    raises TemplatePathError naming the entry's key for what the schema cannot say."""
    api_version, group = entry.get("apiVersion"), entry.get("group")
    if api_version is not None and group is not None:
        raise TemplatePathError(f"{where}: give apiVersion (one version) or group (every version), not both")
    if api_version is None and group is None:
        raise TemplatePathError(f"{where}: apiVersion (group/version) or group (every version) is required")
    if api_version is not None:
        group, _, version = api_version.rpartition("/")
        versions: tuple[str, ...] = (version,)
    else:
        versions = ()
    paths = []
    for i, text in enumerate(entry["paths"]):
        try:
            paths.append(TemplatePath.parse(text))
        except TemplatePathError as err:
            raise TemplatePathError(f"{where}.paths.{i}: {err}") from None
    return PodCarrier(group, entry["kind"], tuple(paths), versions, origin=where, resource=entry.get("resource", ""))

"""`numaguard webhook manifests --config FILE`: what the API server needs to call the webhook for
exactly what that config judges.

Two documents, made from one config file so they cannot disagree:

* the ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1): the rules (every kind of
  the run's carrier table, lint/carriers.py: the built-in kinds and the config's `podTemplates`,
  in the API versions each serves, by its resource name), and `matchConditions` derived from the
  config, so the API server calls numaguard only for objects that can get a finding;
* the ConfigMap holding the config file itself (the file's text as written), which the
  webhook's Deployment mounts: a pool changed in one and not the other would send the
  webhook pods it does not judge, or keep from it pods it must judge.

The conditions (CEL, evaluated by the API server before it calls the webhook; all must be
true): for each judged kind, "not this kind, or one of its pod templates may be in scope". The
template paths are walked as the engine walks them (lint/objects.py `pod_templates`): `[*]` with
`list.exists(x, ...)`, a map's `*` with `map.exists(k, ... map[k] ...)`, a field marked optional
(`?`) only when it is there. A pod template may be in scope (`pod_scope` in lint/rules/pods.py)
when

* it, or a mapping it sits in that the engine takes its annotations from (the workload, a Job
  template between a JobSet and its pods), is annotated `numaguard.io/scope: managed`;
* it has pod-level `spec.resources` (any: an assumed or a validity pod, NG102-NG114);
* it targets one of the configured pools (`pools:`, or `pool:`: the one named default): a
  `nodeSelector` entry with one of that pool's labels, a required node-affinity expression on
  one of its label keys, or a toleration of its taint key; one test per pool, or-ed (NG101
  needs these: such a pod may have no `spec.resources` at all).

and an object whose template, or a required field on the way to it, is missing or of the wrong
type is sent too (the webhook reports the shape, NG002). These over-approximate the engine's
decisions (an opt-out annotation, a selector asking for another value, a toleration with
another effect are still sent): the webhook judges them and finds nothing. With `scope: all`
every pod is in scope and there are no conditions.

Limits of the API server, and how the output keeps inside them:

* every step is guarded (`has()`, `type(...) == map`), so a condition never errors: the API
  server treats an error as the webhook's failure (failurePolicy `Ignore` would skip the
  webhook, `Fail` would refuse the request; k8s.io/apiserver pkg/admission/plugin/webhook/
  matchconditions);
* at most 64 conditions with qualified names (pkg/apis/admissionregistration/validation/
  validation.go): one per judged kind, and past 64 kinds the kinds' conditions are joined with
  `&&` into 64 (all must hold either way);
* CEL's parser takes at most 100,000 code points and 250 levels of nesting per expression
  (cel-go parser defaults, which the API server keeps): a kind's condition is a few KB, nested
  about ten levels per wildcard; the tests compile every condition with the CEL C++ runtime,
  which has the same limits;
* the runtime cost budget (k8s.io/apiserver pkg/apis/cel/config.go: 1,000,000 per expression,
  RuntimeCELCostBudgetMatchConditions 2,500,000 for all of a webhook's conditions per request):
  a condition for another kind stops at the kind test; the one for the object's kind reads each
  field on a template path once and walks each list and map the paths name, and each template's
  tolerations and required node-affinity terms once per pool, a few cost units per element.
  With a handful of pools, staying within the budget takes fewer than about 100,000 such
  elements, which a request the API server stores (etcd's 1.5 MiB) cannot hold.

Keys and values are CEL string literals, so label keys with dots and slashes need no escaping.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from numaguard.lint.carriers import Each, Field, Guard, PodCarrier, PodCarriers, Step, TemplatePath, UnknownResource
from numaguard.lint.config import Config
from numaguard.lint.model import PoolSettings
from numaguard.webhook.decide import judged_kinds

WEBHOOK_NAME = "validate.numaguard.io"
SCOPE_ANNOTATION = "numaguard.io/scope"
MAX_CONDITIONS = 64                     # validateMatchConditions
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# CEL's reserved words, which Kubernetes' CEL would need escaped (`__namespace__`) in a selection.
_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while", "in", "true",
                       "false", "null"})

class ManifestError(ValueError):
    """The config cannot be turned into manifests (a `podTemplates` kind without `resource`)."""


@dataclass(frozen=True)
class Target:
    """Where the API server finds the webhook."""

    service: str = "numaguard-webhook"
    namespace: str = "numaguard"
    path: str = "/validate"
    port: int = 443


# -- CEL -----------------------------------------------------------------------------------------
def cel_string(text: str) -> str:
    """A CEL string literal: JSON's escapes are CEL's (\\" \\\\ \\n \\t \\uXXXX ...); other
    characters stay as they are (CEL source is UTF-8)."""
    return json.dumps(text, ensure_ascii=False)


def _select(base: str, name: str) -> str:
    return f"{base}.{name}" if _IDENTIFIER.match(name) and name not in _RESERVED else f"{base}[{cel_string(name)}]"


def _has(base: str, name: str) -> str:
    return f"has({base}.{name})" if _IDENTIFIER.match(name) and name not in _RESERVED \
        else f"{cel_string(name)} in {base}"


def _is(value: str, cel_type: str) -> str:
    return f"type({value}) == {cel_type}"


def _present(base: str, name: str) -> str:
    """`base` (a map) has `name`, and not as null (the engine reads a null field as absent)."""
    return f"{_has(base, name)} && type({_select(base, name)}) != null_type"


def _all(parts: list[str]) -> str:
    return " && ".join(f"({p})" if " || " in p and not p.startswith("(") else p for p in parts)


def _any(parts: list[str], indent: str = "") -> str:
    """`(a || b ...)`, one alternative a line (CEL ignores the line breaks; `kubectl get -o yaml`
    readers do not)."""
    parts = [p if " && " not in p or p.startswith("(") else f"({p})" for p in parts if p]
    if not parts:
        return "false"
    if len(parts) == 1:
        return parts[0]
    inner = indent + "  "
    return "(\n" + " ||\n".join(inner + p for p in parts) + "\n" + indent + ")"


@dataclass(frozen=True)
class _PoolTarget:
    """What marks a pod spec as meant for one pool (lint/rules/pods.py `targeted_pools`): a
    nodeSelector entry with one of its labels, a required node-affinity expression on one of
    its label keys, or a toleration of its taint key."""

    labels: tuple[tuple[str, str], ...]       # (key, value), sorted
    taint_key: str

    def in_spec(self, spec: str) -> str:
        parts = []
        if self.labels:
            selector = _select(spec, "nodeSelector")
            parts.append(_all([_has(spec, "nodeSelector"), _is(selector, "map"), _any(
                [f"({cel_string(k)} in {selector} && {selector}[{cel_string(k)}] == {cel_string(v)})"
                 for k, v in self.labels])]))
            keys = "[" + ", ".join(cel_string(k) for k, _ in self.labels) + "]"
            required = "requiredDuringSchedulingIgnoredDuringExecution"
            parts.append(f"has({spec}.affinity) && [{spec}.affinity].exists(a, type(a) == map && "
                         f"has(a.nodeAffinity) && type(a.nodeAffinity) == map && has(a.nodeAffinity.{required}) && "
                         f"[a.nodeAffinity.{required}].exists(r, type(r) == map && has(r.nodeSelectorTerms) && "
                         "type(r.nodeSelectorTerms) == list && r.nodeSelectorTerms.exists(t, type(t) == map && "
                         "has(t.matchExpressions) && type(t.matchExpressions) == list && "
                         f"t.matchExpressions.exists(e, type(e) == map && has(e.key) && e.key in {keys}))))")
        if self.taint_key:
            tolerations = _select(spec, "tolerations")
            parts.append(_all([_has(spec, "tolerations"), _is(tolerations, "list"),
                               f"{tolerations}.exists(t, type(t) == map && has(t.key) && "
                               f"t.key == {cel_string(self.taint_key)})"]))
        return _wrap(_any(parts)) if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class _Targets:
    """The configured pools pods can target (`pools:`, or `pool:` as the one named default),
    one test each, or-ed: a pod spec that may be meant for any of them is sent."""

    pools: tuple[_PoolTarget, ...]

    @classmethod
    def of(cls, pools: tuple[PoolSettings, ...]) -> _Targets:
        out: list[_PoolTarget] = []
        for pool in pools:
            taint_key = pool.taint.get("key") if isinstance(pool.taint, dict) else None
            target = _PoolTarget(tuple(sorted(pool.node_labels.items())), taint_key or "")
            if (target.labels or target.taint_key) and target not in out:     # two pools alike: one test
                out.append(target)
        return cls(tuple(out))

    def in_spec(self, spec: str) -> list[str]:
        return [pool.in_spec(spec) for pool in self.pools]


def _annotated_managed(holder: str) -> str:
    """The mapping `holder` is annotated numaguard.io/scope: managed (its metadata named once)."""
    key = cel_string(SCOPE_ANNOTATION)
    return (f"has({holder}.metadata) && [{holder}.metadata].exists(m, type(m) == map && has(m.annotations) && "
            f'type(m.annotations) == map && {key} in m.annotations && m.annotations[{key}] == "managed")')


_TEMPLATE_SPEC = Field("spec")          # every template path ends at a template; its spec is required


def _reaches(node: str, steps: tuple[Step, ...], targets: _Targets, depth: int = 0, inline: bool = False) -> str:
    """CEL: walking `steps` from `node` (a value that is there, of any type) reaches a pod spec
    that may be in scope, or a part of the wrong shape (missing, not a list or mapping where
    one is needed: the engine reports NG002 there). Mirrors lint/objects.py `pod_templates`; a
    null field is taken as there (and so of the wrong shape: sent), which only ever sends more.
    `depth` keeps the comprehension variables apart."""
    if not steps:                                         # the pod spec, named once: `[spec].exists(s, ...)`
        spec = f"s{depth}" if not _IDENTIFIER.match(node) else node
        test = _any([f"!({_is(spec, 'map')})", f"has({spec}.resources)", *targets.in_spec(spec),
                     *([f"has({spec}.annotations)"] if inline else [])])
        return test if spec == node else f"[{node}].exists({spec}, {_wrap(test)})"
    step, rest = steps[0], steps[1:]
    if isinstance(step, Guard):
        return _reaches(node, rest, targets, depth, inline)   # any kind is sent: the engine tells them apart
    if step is Each.LIST_ITEM:
        item = f"x{depth}"
        return f"!({_is(node, 'list')}) || {node}.exists({item}, {_wrap(_reaches(item, rest, targets, depth + 1, inline))})"
    if step is Each.MAP_VALUE:
        key = f"k{depth}"
        inner = _reaches(f"{node}[{key}]", rest, targets, depth + 1, inline)
        return f"!({_is(node, 'map')}) || {node}.exists({key}, {_wrap(inner)})"
    below = _wrap(_reaches(_select(node, step.name), rest, targets, depth, inline))
    further = f"{_has(node, step.name)} && {below}" if step.optional else f"!{_has(node, step.name)} || {below}"
    if step.name != "spec" and node != "object":
        return f"!({_is(node, 'map')}) || {further}"
    # The object, or a mapping beside whose `spec` the engine reads `metadata` (a pod or Job
    # template): where Kubernetes types keep metadata (see `_reaches_holders`).
    return f"!({_is(node, 'map')}) || ({_annotated_managed(node)}) || {further}"


def _wrap(expression: str) -> str:
    return expression if expression.startswith("(") and expression.endswith(")") else f"({expression})"


def _unless(path: tuple[str, ...]) -> str:
    """CEL: the field at `path` (a TemplatePath's `unless`) is there and not null."""
    parts, here = [], "object"
    for i, name in enumerate(path):
        if i:
            parts.append(_is(here, "map"))
        parts.append(_present(here, name))
        here = _select(here, name)
    return _all(parts)


def template_in_scope(template_path: TemplatePath, targets: _Targets) -> str:
    """CEL: a pod template at `template_path` in `object` may be in scope (or is misshapen)."""
    if any(isinstance(step, Guard) for step in template_path.steps):
        # an AppWrapper's components may be of any kind: every AppWrapper is sent (the engine
        # tells the kinds apart; narrowing here would repeat the walk for each kind)
        return "true"
    # an inline pod spec (KServe) is its own spec; its pod's annotations are in `annotations`,
    # so one that has them is sent (the scope annotation may be there)
    steps = template_path.steps if template_path.inline else (*template_path.steps, _TEMPLATE_SPEC)
    reaches = _reaches("object", steps, targets, inline=template_path.inline)
    if template_path.unless:
        return f"!({_unless(template_path.unless)}) && ({reaches})"
    return reaches


def _carrier_condition(entries: list[PodCarrier], targets: _Targets) -> str:
    """The templates of a kind; where entries differ by version (a config entry replacing a
    built-in one for the versions it names), chosen by the request's version, as
    PodCarriers.find chooses."""
    def templates(carrier: PodCarrier) -> str:
        return _any([_wrap(template_in_scope(path, targets)) for path in carrier.paths], "  ")

    first = templates(entries[0])
    if all(entry.paths == entries[0].paths for entry in entries) or not entries[0].versions:
        return first
    versions = "[" + ", ".join(cel_string(v) for v in entries[0].versions) + "]"
    return f"(request.kind.version in {versions} ? {first} : {_carrier_condition(entries[1:], targets)})"


def match_conditions(config: Config) -> list[dict[str, str]]:
    """One condition per judged kind: not that kind, or a pod template of it may be in scope.
    None with `scope: all`."""
    if config.scope_all:
        return []
    targets = _Targets.of(config.pools)
    carriers = config.pod_carriers
    conditions = []
    for group, kind in carriers.kinds():
        entries = [c for c in carriers.carriers if (c.group, c.kind) == (group, kind)]
        is_kind = f"request.kind.group == {cel_string(group)} && request.kind.kind == {cel_string(kind)}"
        conditions.append({"name": _condition_name(group, kind),
                           "expression": f"!({is_kind}) ||\n{_wrap(_carrier_condition(entries, targets))}"})
    if len(conditions) > MAX_CONDITIONS:        # more kinds than the API server takes: joined
        share, extra = divmod(len(conditions), MAX_CONDITIONS)
        joined, start = [], 0
        for n in range(MAX_CONDITIONS):
            end = start + share + (n < extra)
            joined.append({"name": f"may-be-in-scope-{n + 1}",
                           "expression": " &&\n".join(f"({c['expression']})" for c in conditions[start:end])})
            start = end
        conditions = joined
    return conditions


def _condition_name(group: str, kind: str) -> str:
    """A qualified name: `pod-may-be-in-scope`, `jobset.x-k8s.io/jobset-may-be-in-scope`."""
    name = f"{kind.lower()}-may-be-in-scope"
    return f"{group}/{name}" if group else name


# -- documents -----------------------------------------------------------------------------------
def webhook_rules(carriers: PodCarriers) -> list[dict[str, Any]]:
    """The kinds, versions and operations the webhook judges (`decide.judged_kinds` of the
    carrier table), one rule per API group, versions, operations and scope, in the table's
    order. Raises ManifestError for a config kind whose resource name is not known."""
    rules: dict[tuple[str, tuple[str, ...], tuple[str, ...], str], list[str]] = {}
    for (group, kind), (operations, versions) in judged_kinds(carriers).items():
        resource, scope = _resource(carriers, group, kind)
        ops = tuple(op for op in ("CREATE", "UPDATE") if op in operations)
        rules.setdefault((group, versions or ("*",), ops, scope), []).append(resource)
    return [{"apiGroups": [group], "apiVersions": list(versions), "operations": list(ops), "resources": resources,
             "scope": scope} for (group, versions, ops, scope), resources in rules.items()]


def _resource(carriers: PodCarriers, group: str, kind: str) -> tuple[str, str]:
    """The resource name and scope of a judged kind (`PodCarriers.resource_of`); ManifestError
    for a `podTemplates` kind without `resource:`."""
    try:
        return carriers.resource_of(group, kind)
    except UnknownResource as e:
        raise ManifestError(str(e)) from None


def validating_webhook_configuration(config: Config, target: Target = Target(), *,
                                     failure_policy: str = "Ignore", timeout: int = 5) -> dict[str, Any]:
    webhook: dict[str, Any] = {
        "name": WEBHOOK_NAME,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "timeoutSeconds": timeout,
        "failurePolicy": failure_policy,
        "matchPolicy": "Equivalent",
        "clientConfig": {"service": {"name": target.service, "namespace": target.namespace,
                                     "path": target.path, "port": target.port}},
        # The webhook's own namespace and kube-system stay outside, so neither can ever be
        # blocked from repairing the webhook.
        "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                                                    "values": ["kube-system", target.namespace]}]},
        "rules": webhook_rules(config.pod_carriers),
    }
    conditions = match_conditions(config)
    if conditions:
        webhook["matchConditions"] = conditions
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "numaguard"}, "webhooks": [webhook]}


def config_map(config_text: str, target: Target = Target()) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": f"{target.service}-config", "namespace": target.namespace},
            "data": {"config.yaml": config_text}}


VWC_FILE, CONFIGMAP_FILE = "validatingwebhookconfiguration.yaml", "configmap.yaml"


def manifests(config: Config, config_text: str, config_name: str, target: Target = Target(), *,
              failure_policy: str = "Ignore", timeout: int = 5) -> dict[str, str]:
    """The two documents as YAML texts, by file name (VWC_FILE, CONFIGMAP_FILE), each with a
    header saying where it comes from."""
    made_by = f"# Written by `numaguard webhook manifests --config {config_name}`"
    vwc = validating_webhook_configuration(config, target, failure_policy=failure_policy, timeout=timeout)
    return {
        VWC_FILE: (f"{made_by}: matchConditions are derived\n# from the config in {CONFIGMAP_FILE}; "
                   "run it again after changing the config.\n"
                   "# caBundle: set by `numaguard webhook certs ... --patch` (or injected by cert-manager).\n"
                   + _yaml(vwc)),
        CONFIGMAP_FILE: (f"{made_by}: the config file the webhook\n# judges with (lint/README.md, "
                         "\"Configuration file\"), and the one its matchConditions were derived from.\n"
                         + _yaml(config_map(config_text, target))),
    }


def _yaml(doc: dict[str, Any]) -> str:
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        # the config file keeps its lines (and comments) as a block
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    return yaml.dump(doc, Dumper=Dumper, sort_keys=False, width=100)

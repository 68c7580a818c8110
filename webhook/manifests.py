"""`numaguard webhook manifests --config FILE`: what the API server needs to call the webhook for
exactly what that config judges.

Two documents, made from one config file so they cannot disagree:

* the ValidatingWebhookConfiguration (admissionregistration.k8s.io/v1): the rules (the kinds
  and operations `decide.JUDGED` judges), and `matchConditions` derived from the config, so
  the API server calls numaguard only for objects that can get a finding;
* the ConfigMap holding the config file itself (the file's text as written), which the
  webhook's Deployment mounts: a pool changed in one and not the other would send the
  webhook pods it does not judge, or keep from it pods it must judge.

The conditions (CEL, evaluated by the API server before it calls the webhook; all must be
true): for each judged kind, "not this kind, or one of its pod templates may be in scope". A
pod template may be in scope (`pod_scope` in lint/rules/pods.py) when

* it or its workload is annotated `numaguard.io/scope: managed`;
* it has pod-level `spec.resources` (any: an assumed or a validity pod, NG102-NG114);
* it targets a configured pool: a `nodeSelector` entry with one of the pool's labels, a
  required node-affinity expression on one of the pool's label keys, or a toleration of the
  pool's taint key (NG101 needs these: such a pod may have no `spec.resources` at all).

and an object whose template is missing or not a mapping is sent too (the webhook reports the
shape, NG002; the API server's own validation refuses such built-in objects before). These
over-approximate the engine's decisions (an opt-out annotation, a selector asking for another
value, a toleration with another effect are still sent): the webhook judges them and finds
nothing. With `scope: all` every pod is in scope and there are no conditions.

Every step is guarded (`has()`, `type(...) == map`) so a condition never errors: the API
server treats an error as the webhook's failure (failurePolicy `Ignore` would skip the webhook,
`Fail` would refuse the request; k8s.io/apiserver pkg/admission/plugin/webhook/matchconditions).
Limits kept (pkg/apis/admissionregistration/validation/validation.go): at most 64 conditions,
names that are qualified names; keys and values are CEL string literals, so label keys with
dots and slashes need no escaping. Each condition walks a few lists (tolerations, affinity
terms) once: linear in the object's size, far inside the 2,500,000 runtime cost budget for a
webhook's conditions (k8s.io/apiserver pkg/apis/cel/config.go RuntimeCELCostBudgetMatchConditions).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

from numaguard.lint.config import Config
from numaguard.lint.model import PoolSettings
from numaguard.lint.objects import POD_TEMPLATE_PATHS
from numaguard.webhook.decide import JUDGED

WEBHOOK_NAME = "validate.numaguard.io"
SCOPE_ANNOTATION = "numaguard.io/scope"
MAX_CONDITIONS = 64                     # validateMatchConditions
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# CEL's reserved words, which Kubernetes' CEL would need escaped (`__namespace__`) in a selection.
_RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                       "loop", "package", "namespace", "return", "var", "void", "while", "in", "true",
                       "false", "null"})


@dataclass(frozen=True)
class Target:
    """Where the API server finds the webhook."""

    service: str = "numaguard-webhook"
    namespace: str = "numaguard"
    path: str = "/validate"
    port: int = 443


def configured_pools(config: Config) -> tuple[PoolSettings, ...]:
    """The config's pools: `pools:` where the config has that list, else the one `pool:`."""
    pools = getattr(config, "pools", None)
    return tuple(pools) if pools is not None else (config.pool,)


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


def _walk(base: str, path: Iterable[str], last_type: str = "map") -> tuple[str, list[str]]:
    """The CEL for `base.path...` and the guards that make reading it safe: each step present,
    and a map (the last one `last_type`)."""
    guards, here = [], base
    steps = list(path)
    for i, name in enumerate(steps):
        guards.append(_has(here, name))
        here = _select(here, name)
        guards.append(f"type({here}) == {last_type if i == len(steps) - 1 else 'map'}")
    return here, guards


def _all(parts: list[str]) -> str:
    return " && ".join(parts)


def _any(parts: list[str], indent: str = "") -> str:
    """`(a || b ...)`, one alternative a line (CEL ignores the line breaks; `kubectl get -o yaml`
    readers do not)."""
    parts = [p if " && " not in p or p.startswith("(") else f"({p})" for p in parts if p]
    if not parts:
        return "false"
    if len(parts) == 1:
        return parts[0]
    inner = indent + "  "
    return "(\n" + f" ||\n".join(inner + p for p in parts) + "\n" + indent + ")"


def _annotated_managed(meta: str, meta_guards: list[str]) -> str:
    annotations, guards = _walk(meta, ["annotations"])
    return _all(meta_guards + guards + [f"{cel_string(SCOPE_ANNOTATION)} in {annotations}",
                                        f"{annotations}[{cel_string(SCOPE_ANNOTATION)}] == \"managed\""])


def _targets_pool(spec: str, pool: PoolSettings) -> list[str]:
    """A nodeSelector entry with a pool label, a required node affinity expression on a pool
    label key, or a toleration of the pool's taint key."""
    out = []
    if pool.node_labels:
        selector, guards = _walk(spec, ["nodeSelector"])
        out.append(_all(guards + [_any([f"({cel_string(k)} in {selector} && {selector}[{cel_string(k)}] == "
                                        f"{cel_string(v)})" for k, v in sorted(pool.node_labels.items())])]))
        terms, guards = _walk(spec, ["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                     "nodeSelectorTerms"], last_type="list")
        keys = "[" + ", ".join(cel_string(k) for k in sorted(pool.node_labels)) + "]"
        out.append(_all(guards + [f"{terms}.exists(t, type(t) == map && has(t.matchExpressions) && "
                                  f"type(t.matchExpressions) == list && t.matchExpressions.exists(e, "
                                  f"type(e) == map && has(e.key) && e.key in {keys}))"]))
    if pool.taint and pool.taint.get("key"):
        tolerations, guards = _walk(spec, ["tolerations"], last_type="list")
        out.append(_all(guards + [f"{tolerations}.exists(t, type(t) == map && has(t.key) && "
                                  f"t.key == {cel_string(pool.taint['key'])})"]))
    return out


def template_in_scope(template_path: tuple, pools: tuple[PoolSettings, ...]) -> str:
    """CEL: the pod template at `template_path` in `object` (() for a Pod) may be in scope."""
    template, template_guards = _walk("object", template_path) if template_path else ("object", [])
    spec, spec_guards = _walk(template, ["spec"])
    meta, meta_guards = _walk(template, ["metadata"])
    parts = [_annotated_managed(meta, template_guards + meta_guards)]
    if template_path:
        workload_meta, workload_guards = _walk("object", ["metadata"])
        parts.append(_annotated_managed(workload_meta, workload_guards))
    in_spec = [f"has({spec}.resources)"] + [p for pool in pools for p in _targets_pool(spec, pool)]
    # A template that is not where it should be is sent too: the webhook reports the shape (NG002).
    parts.append(f"!({_all(template_guards + spec_guards)})")
    parts.append(_any(in_spec, "  "))
    return _any(parts)


def match_conditions(config: Config) -> list[dict[str, str]]:
    """One condition per judged kind: not that kind, or a pod template of it may be in scope.
    None with `scope: all`."""
    if config.scope_all:
        return []
    pools = tuple(p for p in configured_pools(config) if p.node_labels or (p.taint and p.taint.get("key")))
    conditions = []
    for group, kind in JUDGED:
        is_kind = f"request.kind.group == {cel_string(group)} && request.kind.kind == {cel_string(kind)}"
        templates = _any([template_in_scope(path, pools) for path in POD_TEMPLATE_PATHS[(group, kind)]])
        conditions.append({"name": f"{kind.lower()}-may-be-in-scope", "expression": f"!({is_kind}) ||\n{templates}"})
    if len(conditions) > MAX_CONDITIONS:        # more kinds than the API server takes: one condition
        conditions = [{"name": "may-be-in-scope",
                       "expression": " && ".join(f"({c['expression']})" for c in conditions)}]
    return conditions


# -- documents -----------------------------------------------------------------------------------
def _resource(kind: str) -> str:
    """The resource name of a judged built-in kind (each is its kind, lower case, plus s)."""
    return kind.lower() + "s"


def webhook_rules() -> list[dict[str, Any]]:
    """The kinds and operations `decide.JUDGED` judges, one rule per API group and set of
    operations, in JUDGED's order."""
    rules: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for (group, kind), operations in JUDGED.items():
        ops = tuple(op for op in ("CREATE", "UPDATE") if op in operations)
        rules.setdefault((group, ops), []).append(_resource(kind))
    return [{"apiGroups": [group], "apiVersions": ["v1"], "operations": list(ops), "resources": resources,
             "scope": "Namespaced"} for (group, ops), resources in rules.items()]


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
        "rules": webhook_rules(),
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
        CONFIGMAP_FILE: (f"{made_by}: the config file the webhook\n# judges with (README, "
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

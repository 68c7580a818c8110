"""`numaguard export admission-policy`: the pod rules CEL can express, as ValidatingAdmissionPolicies
(admissionregistration.k8s.io/v1) and their bindings, for clusters that run no webhook.

The documents, for one config file:

* `numaguard-errors`: a validation per error rule (NG101, NG103-NG107, NG114 by default), and
  `numaguard-warnings`: the warning and info rules (NG111), the notice for templates beyond
  the policy's bounds and, when no pool pods can target is configured, the policy rules'
  findings on templates only assumed to be managed (the engine lowers those to warning, unless
  the config sets the rule's severity: that applies as written). Two
  policies because an action belongs to a binding, not to a validation: in `enforce` mode
  errors deny and warnings warn, as the webhook does;
* one binding per policy and mode: the config's mode (or `--mode`) for every namespace but
  kube-system and those `webhook.namespaces` gives another mode, which get a binding of
  their own. enforce: errors [Deny], warnings [Warn]; warn: both [Warn]; audit: both [Audit].

The pools are compiled into the policy: their labels and taints are CEL literals, in the
`may-be-in-scope` matchCondition (the API server skips the policy for objects with no template
numaguard could judge) and in the tier variable (which rules apply to a template). A paramKind
was not used: the pool would have to live in a custom resource installed beside the policy
(a ConfigMap's values are strings, and Kubernetes' CEL has no JSON decoding), one more object to
keep in step, and the tiers need the pool inside every validation anyway. Re-export after
changing the config, as for `numaguard webhook manifests`.

On UPDATE (workloads; pods are judged on CREATE only), a rule fails only for a template it
did not fail in the old object, so a workload with an old finding can still be scaled,
relabelled and rolled back, as the webhook allows it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from numaguard.lint.carriers import UnknownResource
from numaguard.lint.config import Config
from numaguard.lint.export.cel import record, string, strings
from numaguard.lint.export.pod_rules_cel import BOUNDS, PodRulesCel
from numaguard.lint.export.pod_templates_cel import (MAX_ITEMS, SCOPE_ANNOTATION, TemplateWalk, annotation,
                                                       carrier_conditions, object_annotation_in)
from numaguard.lint.model import Severity

MODES = ("enforce", "warn", "audit")
NAME = "numaguard"
EXCLUDED_NAMESPACES = ("kube-system",)
NAMESPACE_LABEL = "kubernetes.io/metadata.name"
_VARIABLE = re.compile(r"variables\.([A-Za-z_][A-Za-z0-9_]*)")


class ExportError(ValueError):
    """The config cannot be exported (a carrier path the policy cannot walk)."""


@dataclass(frozen=True)
class ExportedRule:
    id: str
    severity: Severity
    test: str                      # CEL over one `levels` record `p`
    message: str                   # CEL string over `p`
    capped: bool = False           # an error a template only assumed to be managed gets as a warning


class PolicyBuilder:
    """The variables and validations of the policies for one config."""

    def __init__(self, config: Config) -> None:
        from numaguard.lint.rules.pods import VALIDITY_RULES
        from numaguard.lint.rules.registry import all_rules

        self.config = config
        self.carriers = config.pod_carriers
        refused = "[]"
        for carrier, test in reversed(carrier_conditions(self.carriers)):
            if carrier.refused_pod_fields:
                if carrier.refused_when:      # a KServe InferenceService refuses them in Knative mode only
                    test = f"({test} && {object_annotation_in('object', carrier.refused_when)})"
                refused = f"{test} ? {strings(n for n, _ in carrier.refused_pod_fields)} : {refused}"
        self.cel = PodRulesCel(config.pools, config.scope_all, refused)
        # The engine takes a pod with pod-level cpu, memory or hugepages as meant for a managed
        # pool when no pool pods can target is configured, and lowers its policy findings'
        # default severity to warning (lint/stages/pods.py `_pod_cap`): those go to the warnings
        # policy. A severity the config sets for a rule applies as written, on every tier.
        assumed = not self.cel.pools and not config.scope_all
        severities = {r.id: config.severities.get(r.id, r.severity) for r in all_rules()}
        self.rules = [ExportedRule(rid, severities[rid], test, message,
                                   capped=assumed and severities[rid] is Severity.ERROR and rid not in VALIDITY_RULES
                                   and rid not in config.severities)
                      for rid, (test, message) in sorted(self.cel.rules().items()) if severities.get(rid) is not None]
        self.variables = self._variables()

    # -- variables -------------------------------------------------------------------------------
    def _variables(self) -> list[tuple[str, str]]:
        """The template walk's, the stages', then one list per rule of the templates it finds
        (in the object and, on UPDATE, the old object: `o`), and the templates it finds that
        the old object did not have (`...Added`)."""
        out = [*TemplateWalk().variables_for(self.carriers), *self.cel.stages()]
        for rule in self.rules:
            name = rule.id.lower()
            found = record(p="p.p", o="p.o", tier="p.tier", m=f'p.o ? "" : {rule.message}')
            source = "raw" if rule.id == "NG111" else "levels"      # NG111 needs no numbers
            out.append((name, f"variables.{source}.filter(p, ({rule.test}) && !p.ig.exists(x, x == \"ALL\" || "
                              f"x == {string(rule.id)})).map(p, {found})"))
            out.append((f"{name}Added", f"variables.{name}.filter(f, !f.o && !variables.{name}.exists(g, g.o && g.p == f.p))"))
            if rule.capped:
                out.append((f"{name}Denied", f'variables.{name}Added.filter(f, f.tier != "assumed")'))
                out.append((f"{name}Warned", f'variables.{name}Added.filter(f, f.tier == "assumed")'))
        out.append(("beyond", 'variables.tiered.filter(t, !t.o && t.tier == "bounds").map(t, t.p) + '
                              'variables.judged.filter(t, !t.o && t.state == "bounds").map(t, t.p)'))
        return out

    def _needed(self, expressions: list[str]) -> list[dict[str, str]]:
        """The variables these expressions use, and what those use, in definition order."""
        defined = dict(self.variables)
        wanted: set[str] = set()
        pending = [n for e in expressions for n in _VARIABLE.findall(e)]
        while pending:
            name = pending.pop()
            if name not in wanted:
                wanted.add(name)
                pending += _VARIABLE.findall(defined[name])
        return [{"name": n, "expression": e} for n, e in self.variables if n in wanted]

    # -- validations -----------------------------------------------------------------------------
    def validations(self, severe: bool) -> list[dict[str, str]]:
        """The errors' validations (`severe`), or the warnings' and infos' with the notice of
        templates beyond the policy's bounds; a capped rule has one in each, the errors' for
        managed templates, the warnings' for those only assumed to be managed."""
        out = []
        for rule in self.rules:
            if rule.capped:
                added = f"variables.{rule.id.lower()}{'Denied' if severe else 'Warned'}"
            elif (rule.severity is Severity.ERROR) == severe:
                added = f"variables.{rule.id.lower()}Added"
            else:
                continue
            out.append({
                "expression": f"size({added}) == 0",
                "messageExpression": (f'"{rule.id} " + {added}[0].m + (size({added}) > 1 ? " (and " + '
                                      f'string(size({added}) - 1) + " more pod templates)" : "")'),
                "reason": "Forbidden",
            })
        if not severe:
            b = BOUNDS
            limits = (f"at most {b.containers} init and {b.containers} app containers, {b.resources} names per "
                      f"requests or limits, {b.tolerations} tolerations, {b.terms} node affinity terms of {b.terms} "
                      f"expressions of {b.values} values, {MAX_ITEMS} templates per list, quantities below 2^52 units")
            out.append({
                "expression": "size(variables.beyond) == 0",
                "messageExpression": (f'"numaguard: " + variables.beyond.join(", ") + ": not judged by the admission '
                                      f'policy, which judges pod templates of {limits} to stay within the API '
                                      f'server\'s CEL cost limits; judge it with numaguard lint or the webhook"'),
                "reason": "Invalid",
            })
        return out

    def match_conditions(self) -> list[dict[str, str]]:
        """The pools' matchCondition: a Pod is judged only if it may be in scope (pod-level
        resources, a pool label key in its nodeSelector, node affinity or tolerations when a
        pool has labels or a taint, not annotated unmanaged; annotated managed). Pods are most
        of what a cluster admits; the API server skips the policy, variables and all, for the
        others (k8s.io/apiserver/pkg/admission/plugin/policy/validating/validator.go: no
        validation runs when a condition is false). An over-approximation without iteration
        (the tiers decide exactly); none under `scope: all`, where every pod is in scope."""
        if self.config.scope_all:
            return []
        pod = self.carriers.find("", "v1", "Pod")
        if pod is None:
            return []
        keys = sorted({k for p in self.cel.pools for k in p.node_labels})
        targets = []
        if keys:
            targets.append(f'("nodeSelector" in t.v && type(t.v.nodeSelector) == map && '
                           f'({" || ".join(f"{string(k)} in t.v.nodeSelector" for k in keys)}))')
            targets.append('"affinity" in t.v')
        if any(p.taint for p in self.cel.pools):
            targets.append('"tolerations" in t.v')
        may = " || ".join(['"resources" in t.v && t.v.resources != null', *targets])
        scope = annotation(SCOPE_ANNOTATION)
        walk = " + ".join(TemplateWalk(variables=False, old=False).path(p) for p in pod.paths)
        return [{"name": "pod-may-be-in-scope",
                 "expression": (f'!(request.kind.group == "" && request.kind.kind == "Pod") ||\n({walk}).exists(t, '
                                f'{scope} != "unmanaged" && ({scope} == "managed" || {may}))')}]

    # -- documents -------------------------------------------------------------------------------
    def resource_rules(self) -> list[dict[str, Any]]:
        """The kinds of the carrier table: Pods on CREATE, workloads on CREATE and UPDATE (their
        templates may change), by API group and versions, in the table's order."""
        rules: dict[tuple[str, tuple[str, ...], tuple[str, ...]], list[str]] = {}
        for (group, kind), versions in self.carriers.kinds().items():
            ops = ("CREATE",) if (group, kind) == ("", "Pod") else ("CREATE", "UPDATE")
            try:
                resource, _ = self.carriers.resource_of(group, kind)
            except UnknownResource as e:
                raise ExportError(str(e)) from None
            resources = rules.setdefault((group, versions or ("*",), ops), [])
            if resource not in resources:
                resources.append(resource)
        return [{"apiGroups": [group], "apiVersions": list(versions), "operations": list(ops),
                 "resources": resources, "scope": "*"} for (group, versions, ops), resources in rules.items()]

    def policy(self, name: str, severe: bool, failure_policy: str) -> dict[str, Any]:
        validations = self.validations(severe)
        expressions = [v[k] for v in validations for k in ("expression", "messageExpression")]
        spec: dict[str, Any] = {
            "failurePolicy": failure_policy,
            "matchConstraints": {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                                 "resourceRules": self.resource_rules()},
        }
        conditions = self.match_conditions()
        if conditions:
            spec["matchConditions"] = conditions
        spec["variables"] = self._needed(expressions)
        spec["validations"] = validations
        return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}}, "spec": spec}


def actions(mode: str, severe: bool) -> list[str]:
    """validationActions for a mode: enforce denies errors and warns the rest, as the webhook."""
    if mode == "audit":
        return ["Audit"]
    return ["Deny"] if mode == "enforce" and severe else ["Warn"]


def bindings(policy: str, severe: bool, mode: str, namespace_modes: dict[str, str]) -> list[dict[str, Any]]:
    """The default mode's binding (every namespace but kube-system and the overridden ones) and
    one binding per other mode of `webhook.namespaces`."""
    others: dict[str, list[str]] = {}
    for namespace, own in sorted(namespace_modes.items()):
        if own != mode:
            others.setdefault(own, []).append(namespace)
    excluded = sorted({*EXCLUDED_NAMESPACES, *(n for names in others.values() for n in names)})
    made = [_binding(policy, policy, actions(mode, severe), "NotIn", excluded)]
    for own, namespaces in sorted(others.items(), key=lambda item: MODES.index(item[0])):
        made.append(_binding(f"{policy}-{own}", policy, actions(own, severe), "In", namespaces))
    return made


def _binding(name: str, policy: str, validation_actions: list[str], operator: str,
             namespaces: list[str]) -> dict[str, Any]:
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": NAME}},
            "spec": {"policyName": policy, "validationActions": validation_actions,
                     "matchResources": {"matchPolicy": "Equivalent", "objectSelector": {},
                                        "namespaceSelector": {"matchExpressions": [
                                            {"key": NAMESPACE_LABEL, "operator": operator, "values": namespaces}]}}}}


def admission_policy(config: Config, mode: str | None = None, failure_policy: str = "Ignore") -> list[dict[str, Any]]:
    """The policies and bindings, in the order to apply them (each policy before its bindings)."""
    mode = mode or config.webhook_mode
    if mode not in MODES:
        raise ExportError(f"--mode {mode!r}: one of {', '.join(MODES)}")
    builder = PolicyBuilder(config)
    documents: list[dict[str, Any]] = []
    for severe, name in ((True, f"{NAME}-errors"), (False, f"{NAME}-warnings")):
        if severe and not any(r.severity is Severity.ERROR for r in builder.rules):
            continue
        documents.append(builder.policy(name, severe, failure_policy))
        documents += bindings(name, severe, mode, config.webhook_namespace_modes)
    return documents


def admission_policy_yaml(config: Config, *, mode: str | None = None, failure_policy: str = "Ignore",
                          config_name: str = "(defaults)") -> str:
    """The documents as one YAML stream, with a header saying where they come from."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, text)
    documents = admission_policy(config, mode, failure_policy)
    header = (f"# Written by `numaguard export admission-policy --config {config_name}`: the pod rules\n"
              "# CEL can express, judged by the API server (deploy/README.md, \"Admission policies without a webhook\").\n"
              "# Export again after changing the config.\n")
    return header + yaml.dump_all(documents, Dumper=Dumper, sort_keys=False, width=120, explicit_start=True)

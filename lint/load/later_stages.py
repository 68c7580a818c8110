"""Strings another program renders before Kubernetes, the kubelet or kubeadm reads them.

A repository's YAML is often not what is applied: a program fills it in first. numaguard judges
what is concrete and never judges the unrendered text, because no kubelet ever receives a
literal `{{ ds.meta_data.instance_id }}` or `${NODE_FEATURE_GATES}`. This module is the one list
of those later stages, what each one's expressions look like and who renders them; every place
that reads a string asks it:

* whole files that are not YAML until rendered (`numaguard.lint.load.skips`, skip reason
  `template`): Helm chart templates and files using Helm's objects; Go templates (the Machine
  Config Operator's `templates/`, a controller's manifests) and Jinja (Ansible, cloud-init,
  `.j2`) whose tags stand where YAML structure is; files whose parse stops on a printf verb
  (`%s`), a `%NAME%` placeholder, a `{name}` placeholder or a `<...>` placeholder (documentation
  samples a reader fills in);
* values inside an object that is judged (`value_stages`): `${NAME}` variables, which clusterctl
  (`generate cluster`), envsubst and Flux's `postBuild.substitute` fill in before anything is
  applied, and `{{ ... }}` template expressions; a platform carrier that knows its own later
  stages says so instead (Cluster API: cloud-init's Jinja, but only for `format: cloud-config`).

A value holding an expression of a stage that applies is not judged: the carriers set it aside
before reading it (a kubelet flag, an embedded kubelet patch) and the engine withholds any
finding on it; either way an NG003 info names the value, the stage and how to lint the result,
and the run's summary counts such values per stage.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class LaterStage:
    """A program that renders strings before they are used: its name (the summary's key), who
    renders and when (for messages), what its expressions look like, and how to lint the
    result."""

    name: str
    renders: str
    expression: re.Pattern[str]
    hint: str

    def find(self, text: str) -> str | None:
        match = self.expression.search(text)
        return match.group(0) if match else None


_ANY_TEMPLATE_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}", re.S)

# clusterctl's SimpleProcessor (cmd/clusterctl/client/yamlprocessor/simple_processor.go) substitutes
# `${NAME}`, `${NAME:=default}` and `${NAME:-default}` with drone/envsubst; Flux's
# kustomize-controller `postBuild.substitute` and envsubst take the same form. `$${NAME}` is
# clusterctl's escape: it leaves `${NAME}` for the machine's own envsubst (Ignition templates).
ENV_VARIABLE = LaterStage(
    "${VAR} substitution", "clusterctl generate cluster, envsubst or Flux's postBuild substitution fills it in "
    "before the object is applied", re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:[:+?=-][^}]*)?\}"),
    "lint what is applied: `clusterctl generate cluster NAME --from FILE | numaguard lint -`, "
    "`flux build kustomization NAME --path DIR | numaguard lint -`, or `envsubst < FILE | numaguard lint -`")

TEMPLATE_EXPRESSION = LaterStage(
    "template expression", "a Jinja or Go template engine renders it before the object is applied",
    _ANY_TEMPLATE_TAG, "lint what the template engine produces")

# Cluster API's kubeadm bootstrap provider starts the user data it writes with
# `## template: jinja` (bootstrap/kubeadm/pkg/cloudinit/cloudinit.go `cloudConfigHeader`), so
# cloud-init renders every string of a cloud-config KubeadmConfig (kubelet arguments, `files`
# contents) on the machine, from its instance data, before kubeadm runs. Ignition has no such
# step (bootstrap/kubeadm/pkg/ignition/clc/clc.go: "as a replacement for Jinja templates
# supported by cloud-init", use envsubst or sed in preKubeadmCommands).
CLOUD_INIT_JINJA = LaterStage(
    "cloud-init Jinja", "cloud-init renders it on the machine from its instance data (Cluster API's user data "
    "starts with `## template: jinja`) before kubeadm runs", _ANY_TEMPLATE_TAG,
    "cloud-init fills it in per machine: see its value there (`cloud-init query ds.meta_data`), or lint a copy "
    "with the value written out")

# Cluster API v1beta2 `File.contentFormat: Template`: "content is rendered as a Go
# text/template" by the bootstrap controller (api/bootstrap/kubeadm/v1beta2/kubeadmconfig_types.go).
CAPI_FILE_TEMPLATE = LaterStage(
    "Cluster API file template", "Cluster API's bootstrap controller renders it as a Go text/template "
    "(files[].contentFormat: Template) before cloud-init writes the file", _ANY_TEMPLATE_TAG,
    "lint the file as written on a machine")

VALUE_STAGES = (ENV_VARIABLE, TEMPLATE_EXPRESSION)


def value_stage(text: Any, stages: Iterable[LaterStage] = VALUE_STAGES) -> tuple[LaterStage, str] | None:
    """The first stage of `stages` whose expression `text` holds, with the expression."""
    if not isinstance(text, str) or ("$" not in text and "{" not in text):
        return None
    for stage in stages:
        found = stage.find(text)
        if found is not None:
            return stage, found
    return None


def not_judged(what: str, stage: LaterStage, expression: str) -> str:
    """NG003's message: which value, which stage, who renders it."""
    return f"{what} holds {_shown(expression)} ({stage.name}): {stage.renders}; not judged"


def _shown(expression: str) -> str:
    expression = " ".join(expression.split())
    return f"`{expression[:80]}{'...' if len(expression) > 80 else ''}`"


# --------------------------------------------------------------------------- whole files

HELM = LaterStage(
    "Helm", "Helm renders it from the chart's values", re.compile(
        r"\{\{-?\s*(?:[^}]*?\.(?:Values|Release|Chart|Capabilities|Files)\b|(?:include|template|tpl|toYaml)\b)"),
    "`helm template RELEASE CHART | numaguard lint -`")
# A Go template's actions start with a field (`{{.ClusterDNSIP}}`) or a keyword, or pass a field
# to a function (`{{indent 4 .CloudProviderConfig}}`); Jinja's name a variable (`{{ item }}`,
# `{{ ds.meta_data.x }}`) or use `{% %}`.
GO_TEMPLATE = LaterStage(
    "Go template", "the program that owns it renders it (the Machine Config Operator its templates/ into "
    "MachineConfigs, a provider its cluster templates)", re.compile(r"\{\{-?\s*(?:\.|\$|(?:if|range|with|end|else|define|block|printf)\b|[^}]*?[\s(]\.[A-Za-z_])"),
    "lint what its program renders (the Machine Config Operator's: `oc get machineconfig -o yaml | numaguard lint -`)")
JINJA = LaterStage(
    "Jinja", "a Jinja renderer (Ansible, cloud-init, j2) fills it in", _ANY_TEMPLATE_TAG,
    "lint the rendered file")
PRINTF = LaterStage(
    "printf", "a program fills it in with fmt.Sprintf or printf",
    # printf verbs (`%s`, `%d`, `%[2]v`, `%-10s`: Go's fmt, C, Python) and batch-style `%NAME%`
    re.compile(r"%(?:\[\d+\])?[-+# 0]*(?:\d+|\*)?(?:\.\d+)?[a-zA-Z]|%[A-Za-z_][A-Za-z0-9_]*%"),
    "lint the file the program writes")
# Documentation samples leave names for the reader: `image: {docker_username}/iris-classifier`
# (str.format style), `<See 20-componentconfig-gardenlet.yaml for more details>`.
PLACEHOLDER = LaterStage(
    "documentation placeholder", "the reader fills it in (a sample in documentation)",
    re.compile(r"\{[A-Za-z_][A-Za-z0-9_.-]*\}|<[A-Za-z][^<>\n]*>"),
    "fill in the placeholders, or exclude sample folders (`exclude:` in .numaguard.yaml)")
FILE_STAGES = (HELM, GO_TEMPLATE, JINJA, PRINTF, PLACEHOLDER)

# YAML has no plain scalar that starts with `%` (the directive indicator) or a mapping that may be
# followed by text (`{name}/x`), so an unquoted placeholder stops the parser right at it, on it or
# just after it; only then is the file taken for a template.
_PLACEHOLDER_STAGES = (PRINTF, PLACEHOLDER)
# A template tag where YAML structure is, not inside a quoted string: opening a line, a list
# item, or a mapping value (`{{- if .Values.x }}`, `- {{ item }}`, `replicas: {{ n }}`).
_UNQUOTED_TAG = re.compile(r"^[ \t]*(?:-[ \t]+)?(?:[^\s#'\"{][^#'\"{]*?:[ \t]+)?\{[{%#]", re.M)
_TEMPLATE_OPENERS = ("{{", "{%", "{#")


def template_stage(text: str, parse_failed: bool) -> LaterStage | None:
    """The stage a whole file is source of: one using Helm's own objects (`.Values`,
    `include`...), loading or not; or a file that does not load as YAML with a template tag where
    YAML structure is (a Go template or Jinja). Plain manifests carry Go templates in their
    strings (alert annotations, notifications), and a manifest that is broken is still reported
    as broken."""
    if not any(opener in text for opener in _TEMPLATE_OPENERS):
        return None
    if HELM.find(text) is not None:
        return HELM
    if not parse_failed or _UNQUOTED_TAG.search(text) is None:
        return None
    return GO_TEMPLATE if GO_TEMPLATE.find(text) is not None else JINJA


def placeholder_stage(text: str, *marks: tuple[int | None, int | None]) -> LaterStage | None:
    """The stage of the placeholder a parse error sits on: at, on or right after one of the
    1-based (line, column) marks (the parser's problem and context marks)."""
    lines = text.splitlines()
    for line, column in marks:
        if not line or not column or line > len(lines):
            continue
        at = column - 1
        for stage in _PLACEHOLDER_STAGES:
            for match in stage.expression.finditer(lines[line - 1]):
                if match.start() <= at <= match.end():
                    return stage
    return None


__all__ = ["LaterStage", "ENV_VARIABLE", "TEMPLATE_EXPRESSION", "CLOUD_INIT_JINJA", "CAPI_FILE_TEMPLATE",
           "VALUE_STAGES", "value_stage", "not_judged", "HELM", "GO_TEMPLATE", "JINJA", "PRINTF", "PLACEHOLDER",
           "FILE_STAGES", "template_stage", "placeholder_stage"]

"""Documentation generated from the code's own tables: the rule reference (lint/rules/README.md,
one section per rule from its metadata; `numaguard rules NG205` prints one section), the list of
the rules `numaguard fix` fixes and the table of the built-in pod template carriers
(lint/README.md), and the node agent's metric reference (deploy/README.md). A test fails when a
guide is stale: `python -m numaguard.lint.rules.docs --update-readme` rewrites them."""
from __future__ import annotations

import json

from numaguard.lint.agent_metrics import render_markdown as render_agent_metrics
from numaguard.lint.carriers import BUILTIN_CARRIERS, Guard, PodCarriers
from numaguard.lint.rules.base import Rule
from numaguard.lint.rules.registry import all_rules


def render_rules(fmt: str) -> str:
    rules = all_rules()
    if fmt == "json":
        return json.dumps([r.as_dict() for r in rules], indent=2) + "\n"
    if fmt == "markdown":
        lines = ["| ID | name | severity | what it checks |", "|---|---|---|---|"]
        lines += [f"| [{r.id}](#{section_anchor(r)}) | `{r.name}` | {r.severity.value} | {r.title}"
                  f"{' (needs a node description)' if r.needs_node else ''} |" for r in rules]
        lines.append("")
        for r in rules:
            lines.append(render_section(r))
        return "\n".join(lines)
    return "\n".join(render_text(r) for r in rules)


def render_text(r: Rule) -> str:
    """One rule as `numaguard rules` lists it."""
    return "\n".join([f"{r.id}  {r.name}  [{r.severity.value}]", f"    {r.title}",
                      f"    why: {r.rationale}", f"    fix: {r.remediation}", ""])


def render_section(r: Rule) -> str:
    """One rule's section of the rule reference (and of `numaguard rules ID`)."""
    lines = [section_heading(r), "", r.title + ".", "", f"*Judged:* {judged_tier(r)}", "",
             f"*Why:* {r.rationale}", "", f"*Fix:* {r.remediation}"]
    if r.fix:
        lines += ["", f"*`numaguard fix`:* {r.fix}."]
    return "\n".join(lines) + "\n"


def section_heading(r: Rule) -> str:
    return f"## {r.id} `{r.name}` ({r.severity.value})"


def section_anchor(r: Rule) -> str:
    """GitHub's anchor of the rule's section: lower case, spaces to hyphens, punctuation
    other than hyphens and underscores dropped."""
    return f"{r.id} {r.name} {r.severity.value}".lower().replace(" ", "-")


def judged_tier(r: Rule) -> str:
    """Which objects the rule judges and at which tier (lint/README.md, "Which pods are
    policy-checked (scope)" and "Which KubeletConfigurations are pool configurations"), from the
    rule's target and the validity sets the engine uses (numaguard.lint.stages)."""
    from numaguard.lint.rules.kubelet import VALIDITY_RULES as KUBELET_VALIDITY
    from numaguard.lint.rules.pods import VALIDITY_RULES as POD_VALIDITY

    node = " on a node description" if r.needs_node else ""
    if r.target == "pod" and r.id in POD_VALIDITY:
        return ("every pod with pod-level resources (validity tier: what the API server or the "
                "kubelet refuses whatever node the pod is for).")
    if r.target == "pod":
        kept = (" (a finding on a node description you named keeps its severity)" if r.needs_node else "")
        return (f"pods meant for a managed pool{node} (policy tier: declared by a pool they target, "
                f"the `numaguard.io/scope: managed` annotation or `scope: all`); a pod only assumed to "
                f"be meant for one gets it as a warning{kept}, unless the config sets the rule's severity.")
    if r.target == "kubelet" and r.id in KUBELET_VALIDITY:
        return f"every KubeletConfiguration{node} (validity tier: the kubelet refuses it at start-up)."
    if r.target == "kubelet":
        return (f"the KubeletConfigurations of a managed pool{node} (pool requirement: declared by a "
                "pool's `kubeletConfigs`, `scope: all` or the `PodLevelResourceManagers` gate turned on); "
                "one only assumed to be a pool's gets it as a warning unless the kubelet would refuse to "
                "start or the config sets the rule's severity.")
    return {"input": "every document read, whatever it is (before any tier).",
            "run": "once per run, across everything it read (the pools' members, their checkpoints).",
            "status": "`numaguard audit`: the live pods and what their kubelet did with them.",
            "node": "`numaguard node inspect` and the node agent: what a node's kubelet and kernel report.",
            }[r.target]


def find_rule(name: str) -> Rule | None:
    """The rule named by its id (`NG205`, any case) or its name (`topology-scope-not-pod`)."""
    wanted = name.strip().lower()
    return next((r for r in all_rules() if wanted in (r.id.lower(), r.name)), None)


def render_carriers(carriers: PodCarriers = BUILTIN_CARRIERS) -> str:
    """The carriers as a markdown table: apiVersions, kind, template paths, and the source the
    paths were checked against."""
    lines = ["| apiVersion | kind | pod templates | checked against |", "|---|---|---|---|"]
    for c in carriers.carriers:
        versions = (f"{c.group}/" if c.group else "") + ", ".join(c.versions)
        guarded = [p for p in c.paths if any(isinstance(step, Guard) for step in p.steps)]
        shown = [_shown(p) for p in c.paths if p not in guarded]
        if guarded:
            prefix = guarded[0].text.split("<", 1)[0]
            wrapped = dict.fromkeys(f"{step.group + '/' if step.group else ''}{step.kind}"
                                    for p in guarded for step in p.steps if isinstance(step, Guard))
            shown.append(f"`{prefix}`: a {', '.join(wrapped)} at that kind's paths above "
                         f"(`{guarded[0].text}`...)")
        paths = ", ".join(shown)
        unless = {".".join(p.unless) for p in c.paths if p.unless}
        if unless:
            paths += "".join(f" (none when `{u}` is set)" for u in sorted(unless))
        if c.none_when:
            paths += f" (none when `{c.none_when[0]}` is {' or '.join(c.none_when[1])})"
        for name, _why in c.refused_pod_fields:
            when = f" when `{c.refused_when[0]}` is {' or '.join(c.refused_when[1])}" if c.refused_when else ""
            paths += f"; refuses pod-level `{name}`{when}"
        if c.builder:
            paths += f"; {BUILDERS.get(c.builder, '')}"
        lines.append(f"| {versions} | {c.kind} | {paths} | {c.origin} |")
    return "\n".join(lines) + "\n"


# What each `PodCarrier.builder` adds, in the table's words.
BUILDERS = {"workloads:inference_service_pods": "a `model` predictor's pod over its ServingRuntime or "
                                                 "ClusterServingRuntime when the run holds it",
            "workloads:llm_inference_service_pods": "over the LLMInferenceServiceConfigs of `baseRefs` the run holds",
            "workloads:appwrapper_declared": "a component of another kind at its declared `podSets[*].path`"}


def _shown(path) -> str:
    if not path.text:
        return "the object itself"
    text = f"`{path.text}`"
    if path.inline:
        text += " (a pod spec" + (f"; `{path.containers[0]}` or a framework field is its first container"
                                  if len(path.containers) > 1 else f"; `{path.containers[0]}` is its first container"
                                  if path.containers else "") + ")"
    return text


def render_fixable() -> str:
    """lint/README.md's list of the rules `numaguard fix` fixes, from each rule's `fix` metadata."""
    return "\n".join(f"- **{r.id}** `{r.name}`: {r.fix}." for r in all_rules() if r.fix) + "\n"


# The generated sections of each guide, between `<!-- NAME:start -->` and `<!-- NAME:end -->`.
GUIDES = {"lint/rules/README.md": {"rules": lambda: render_rules("markdown")},
          "lint/README.md": {"carriers": render_carriers, "fixable": render_fixable},
          "deploy/README.md": {"agent-metrics": render_agent_metrics}}


def render_guide(text: str, sections: dict) -> str:
    """`text` with each of its generated `sections` rendered anew."""
    for name, render in sections.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        head, found, rest = text.partition(start)
        if found:
            _, _, tail = rest.partition(end)
            text = f"{head}{start}\n{render().strip()}\n{end}{tail}"
    return text


def update_guides(root: str = ".") -> list[str]:
    """Rewrite the guides' generated sections in place; the guides that changed."""
    import os

    changed = []
    for path, sections in GUIDES.items():
        full = os.path.join(root, path)
        with open(full, encoding="utf-8") as fh:
            text = fh.read()
        new = render_guide(text, sections)
        if new != text:
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(new)
            changed.append(path)
    return changed


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--update-readme"]:
        changed = update_guides()
        print(f"updated: {', '.join(changed)}" if changed else "the guides are already current")
    else:
        print(render_rules(sys.argv[1] if len(sys.argv) > 1 else "text"), end="")

"""Rule documentation, generated from the rules' own metadata (README's rule reference is the
markdown form, its list of the rules `numaguard fix` fixes comes from their `fix`; a test fails
when README is stale), README's table of the built-in pod template carriers, generated from
the carrier table, and the node agent's metric reference, from its metric table."""
from __future__ import annotations

import json

from numaguard.lint.agent_metrics import render_markdown as render_agent_metrics
from numaguard.lint.carriers import BUILTIN_CARRIERS, Guard, PodCarriers
from numaguard.lint.rules.registry import all_rules


def render_rules(fmt: str) -> str:
    rules = all_rules()
    if fmt == "json":
        return json.dumps([r.as_dict() for r in rules], indent=2) + "\n"
    if fmt == "markdown":
        lines = ["| ID | name | severity | what it checks |", "|---|---|---|---|"]
        lines += [f"| {r.id} | `{r.name}` | {r.severity.value} | {r.title}"
                  f"{' (needs a node description)' if r.needs_node else ''} |" for r in rules]
        lines.append("")
        for r in rules:
            lines += [f"### {r.id} `{r.name}` ({r.severity.value})", "", r.title + ".", "",
                      f"*Why:* {r.rationale}", "", f"*Fix:* {r.remediation}", ""]
        return "\n".join(lines)
    lines = []
    for r in rules:
        lines += [f"{r.id}  {r.name}  [{r.severity.value}]", f"    {r.title}",
                  f"    why: {r.rationale}", f"    fix: {r.remediation}", ""]
    return "\n".join(lines)


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
    """README's list of the rules `numaguard fix` fixes, from each rule's `fix` metadata."""
    return "\n".join(f"- **{r.id}** `{r.name}`: {r.fix}." for r in all_rules() if r.fix) + "\n"


README_SECTIONS = {"rules": lambda: render_rules("markdown"), "carriers": render_carriers,
                   "fixable": render_fixable, "agent-metrics": render_agent_metrics}


def update_readme(path: str = "README.md") -> bool:
    """Rewrite README's generated sections (rule reference, carrier table) in place; True when
    anything changed."""
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    new = text
    for name, render in README_SECTIONS.items():
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        head, found, rest = new.partition(start)
        if not found:
            continue
        _, _, tail = rest.partition(end)
        new = f"{head}{start}\n{render().strip()}\n{end}{tail}"
    if new != text:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(new)
    return new != text


if __name__ == "__main__":
    import sys

    if sys.argv[1:] == ["--update-readme"]:
        print("README.md updated" if update_readme() else "README.md already current")
    else:
        print(render_rules(sys.argv[1] if len(sys.argv) > 1 else "text"), end="")

"""Rule documentation, generated from the rules' own metadata (README's rule reference is the
markdown form; a test fails when README is stale)."""
from __future__ import annotations

import json

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


def update_readme(path: str = "README.md") -> bool:
    """Rewrite README's rule reference in place; True when it changed."""
    start, end = "<!-- rules:start -->", "<!-- rules:end -->"
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    head, _, rest = text.partition(start)
    _, _, tail = rest.partition(end)
    new = f"{head}{start}\n{render_rules('markdown').strip()}\n{end}{tail}"
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

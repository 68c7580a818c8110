"""The guides stay a manual: every relative link and #anchor resolves (as GitHub renders the
headings' anchors), the alerts' runbook links land on their runbooks, README stays a front page
(at most 500 lines, its two set-up commands exactly those CI and the tests rely on), no chapter
or paragraph is written in two places, and `numaguard rules ID` prints the rule's section of the
generated reference."""
from __future__ import annotations

import re
import unicodedata
from collections import defaultdict
from pathlib import Path

import pytest

from numaguard.lint.rules.docs import GUIDES as GENERATED, render_guide

from conftest import GUIDES, REPO, guide, run_cli

FENCE = re.compile(r"^```.*?^```[^\n]*$", re.M | re.S)
LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)\)")
BLOB = "https://github.com/numaguard/numaguard/blob/main/"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading (github-slugger): lower case; every character that is not a
    letter, a digit, `_`, `-` or a space dropped (backticks, parentheses, colons, dots, en
    dashes); each space a hyphen, runs kept."""
    kept = "".join(c for c in heading.strip().lower()
                   if c in "-_ " or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(text: str) -> list[str]:
    """The anchors of a Markdown file's headings, in order; a repeated one gets -1, -2, ..."""
    seen: dict[str, int] = defaultdict(int)
    found = []
    for line in FENCE.sub("", text).splitlines():
        m = re.match(r"#{1,6} (.+?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            found.append(f"{base}-{seen[base]}" if seen[base] else base)
            seen[base] += 1
    return found


def test_slug_follows_githubs_rules():
    assert slug("NG205 `topology-scope-not-pod` (error)") == "ng205-topology-scope-not-pod-error"
    assert slug("Pods and pod templates (NG101–NG114)") == "pods-and-pod-templates-ng101ng114"
    assert slug("Kubelet settings in platform objects: EKS, OpenShift, the Node Tuning Operator") == (
        "kubelet-settings-in-platform-objects-eks-openshift-the-node-tuning-operator")
    assert slug("Large repositories and --jobs") == "large-repositories-and---jobs"
    assert anchors("# A\n## Speed\n```\n# not a heading\n```\n### Speed\n") == ["a", "speed", "speed-1"]


def _links(path: str) -> list[str]:
    """The link targets of a guide, outside code blocks and inline code."""
    text = FENCE.sub("", guide(path))
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def _unresolved(source: Path, target: str) -> str | None:
    if re.match(r"[a-z]+:", target):
        return None                                   # an absolute URL
    file, _, anchor = target.partition("#")
    dest = (source.parent / file).resolve() if file else source
    if not dest.exists():
        return f"{target}: no file {dest.relative_to(REPO) if dest.is_relative_to(REPO) else dest}"
    if anchor and anchor not in anchors(dest.read_text(encoding="utf-8")):
        return f"{target}: no heading with anchor #{anchor} in {dest.relative_to(REPO)}"
    return None


@pytest.mark.parametrize("path", GUIDES)
def test_every_relative_link_and_anchor_resolves(path):
    problems = [p for t in _links(path) if (p := _unresolved(REPO / path, t))]
    assert problems == []


def test_the_link_check_finds_a_broken_file_and_a_broken_anchor():
    source = REPO / "README.md"
    assert _unresolved(source, "lint/README.md#configuration-file") is None
    assert _unresolved(source, "lint/README.md#configuration-files") == (
        "lint/README.md#configuration-files: no heading with anchor #configuration-files in lint/README.md")
    assert _unresolved(source, "lint/GUIDE.md") == "lint/GUIDE.md: no file lint/GUIDE.md"
    assert _unresolved(source, "#set-up") is None and _unresolved(source, "#setup") is not None


def test_every_guide_links_to_the_others_it_names_and_the_front_page_reaches_them_all():
    front = {t.partition("#")[0] for t in _links("README.md")}
    assert set(GUIDES) - {"README.md"} <= front


def test_runbook_urls_land_on_their_runbooks():
    """The alerts' runbook_url (and the promtool tests' expectations of it) point at a heading of
    the operator's guide named after the alert."""
    urls = []
    for f in sorted((REPO / "deploy" / "monitoring").glob("*.yaml")):
        urls += [(f.name, u) for u in re.findall(r"runbook_url: (\S+)", f.read_text())]
    assert len(urls) >= 40
    runbooks = anchors(guide("deploy/README.md"))
    for name, url in urls:
        assert url.startswith(BLOB + "deploy/README.md#"), (name, url)
        assert url.rsplit("#", 1)[1] in runbooks, (name, url)


SECTION_NAMED = re.compile(r"((?:(?:lint/rules|lint|deploy|webhook|tests)/)?README\.md)(?:'s)?,?:? \\?\"([^\"\\\n]+)")


def test_code_and_manifests_name_sections_their_guides_hold():
    """A comment, message or manifest that sends the reader to `GUIDE, "Section"` names a heading
    of that guide (the quote may continue on the next line: its start is matched)."""
    named = []
    for folder in ("lint", "webhook", "deploy"):
        for f in sorted((REPO / folder).rglob("*")):
            if f.is_file() and f.suffix in (".py", ".yaml", ".yml", "") and f.name != "README.md":
                named += [(f.relative_to(REPO), *m) for m in SECTION_NAMED.findall(f.read_text(errors="replace"))]
    assert len(named) >= 25
    headings = {path: [re.sub(r"^#+ ", "", h).replace("`", "") for h in re.findall(r"^#{1,6} .+$", FENCE.sub("", guide(path)), re.M)]
                for path in GUIDES}
    wrong = [(str(f), path, section) for f, path, section in named
             if not any(h.startswith(section.strip().replace("`", "")) for h in headings[path])]
    assert wrong == []


def test_readme_is_a_front_page():
    assert len(guide("README.md").splitlines()) <= 500


def test_readmes_two_setup_commands_are_exactly_the_ones_ci_and_the_tests_use():
    section = guide("README.md").split("## Set up\n", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.+?)\n```", section, re.S)
    assert commands == [
        "python3 -m venv .venv && . .venv/bin/activate && pip install -q . && "
        "numaguard lint --config deploy/examples/.numaguard.yaml deploy/examples",
        "bash .ci/run"]
    assert (REPO / ".ci" / "run").is_file()


def test_readmes_first_command_lints_the_examples_as_it_says():
    """The lint half of the first command, run as written: exit 1 (the examples hold errors on
    purpose), findings as `file:line:col  ID  severity  message`."""
    proc = run_cli("lint", "--config", "deploy/examples/.numaguard.yaml", "deploy/examples")
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"^  deploy/examples/workloads/order-matcher\.yaml:22:9  NG103  error  pod QoS is Burstable",
                     proc.stdout, re.M)


def _tour_block(heading: str) -> list[str]:
    chapter = guide("README.md").split(heading + "\n", 1)[1].split("\n### ", 1)[0]
    return re.search(r"```\n(.*?)\n```", chapter, re.S).group(1).splitlines()


def test_the_tours_lint_and_simulate_outputs_are_what_the_commands_print():
    lint = run_cli("lint", "--config", "deploy/examples/.numaguard.yaml", "deploy/examples").stdout.splitlines()
    shown = _tour_block("### Lint a repository, and on every commit")
    assert len(shown) == 2 and all(line in lint for line in shown)
    command, *printed = _tour_block("### Will it fit? `numaguard simulate`")
    assert command == "$ numaguard simulate --node builtin:dual-socket-ht tests/fixtures/simulate/fragmentation.yaml"
    real = run_cli(*command.split()[2:])
    assert real.returncode == 1                   # a pod is rejected
    lines = iter(real.stdout.splitlines())        # the lines shown, in order ("..." leaves some out)
    assert all(any(line == printed_line for line in lines) for printed_line in printed if printed_line != "...")
    assert printed.count("...") == 3 and printed[-1] == "4 pods: 3 admitted, 1 rejected"


def _chapters(path: str) -> list[tuple[str, str]]:
    """(heading, body) of each chapter: a heading and the text up to the next heading."""
    parts = re.split(r"^(#{1,6} .+)$", guide(path), flags=re.M)
    return [(parts[i], re.sub(r"\s+", " ", parts[i + 1]).strip()) for i in range(1, len(parts) - 1, 2)]


def _paragraphs(path: str) -> list[str]:
    """The prose paragraphs of a guide; the generated sections (where rules share a sentence) left out."""
    text = re.sub(r"<!-- ([a-z-]+):start -->.*?<!-- \1:end -->", "", FENCE.sub("", guide(path)), flags=re.S)
    return [re.sub(r"\s+", " ", p).strip() for p in re.split(r"\n\s*\n", text)
            if not p.lstrip().startswith(("#", "|", "<!--"))]


def test_no_chapter_or_paragraph_is_written_twice():
    chapters: dict[str, list[str]] = defaultdict(list)
    paragraphs: dict[str, list[str]] = defaultdict(list)
    for path in GUIDES:
        for heading, body in _chapters(path):
            if len(body) > 80:
                chapters[body].append(f"{path}: {heading}")
        for paragraph in _paragraphs(path):
            if len(paragraph) > 160:
                paragraphs[paragraph].append(path)
    twice = {text[:80]: places for found in (chapters, paragraphs) for text, places in found.items()
             if len(places) > 1}
    assert twice == {}


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_generated_sections_are_current(path):
    text = guide(path)
    for name in GENERATED[path]:
        assert text.count(f"<!-- {name}:start -->") == text.count(f"<!-- {name}:end -->") == 1, name
    assert render_guide(text, GENERATED[path]) == text, (
        f"{path} is stale: run `python -m numaguard.lint.rules.docs --update-readme`")


@pytest.mark.parametrize("path", sorted(GENERATED))
def test_every_generated_section_is_rendered_from_blank(path):
    """Emptied, each of a guide's generated sections comes back exactly as the guide holds it."""
    text = guide(path)
    blank = text
    for name in GENERATED[path]:
        start, end = f"<!-- {name}:start -->", f"<!-- {name}:end -->"
        blank = blank.split(start)[0] + start + end + blank.split(end)[1]
    assert blank != text and render_guide(blank, GENERATED[path]) == text


def test_rule_reference_has_one_section_per_rule_with_its_tier_why_and_fix():
    from numaguard.lint.rules.registry import all_rules

    text = guide("lint/rules/README.md")
    sections = re.findall(r"^## (NG\d+) ", text, re.M)
    assert sections == [r.id for r in all_rules()]
    ng205 = text.split("## NG205 ", 1)[1].split("\n## ", 1)[0]
    assert "\n*Judged:* the KubeletConfigurations of a managed pool (pool requirement: declared by" in ng205
    assert "\n*Why:* With the default `container` scope" in ng205 and "\n*Fix:* Set `topologyManagerScope: pod`." in ng205


NG205 = """\
## NG205 `topology-scope-not-pod` (error)

topologyManagerScope is not pod.

*Judged:* the KubeletConfigurations of a managed pool (pool requirement: declared by a pool's `kubeletConfigs`, `scope: all` or the `PodLevelResourceManagers` gate turned on); one only assumed to be a pool's gets it as a warning unless the kubelet would refuse to start or the config sets the rule's severity.

*Why:* With the default `container` scope the Topology Manager aligns each container on its own and ignores spec.resources: the pod-level budget is never placed as one NUMA "bubble", and a pod that sets only pod-level resources gets no exclusive CPUs at all.

*Fix:* Set `topologyManagerScope: pod`.

*`numaguard fix`:* sets topologyManagerScope: pod.
"""


def test_rules_id_prints_that_rules_section_of_the_reference():
    proc = run_cli("rules", "NG205")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, NG205, "")
    assert NG205 in guide("lint/rules/README.md")
    assert run_cli("rules", "ng205").stdout == run_cli("rules", "topology-scope-not-pod").stdout == NG205


def test_rules_id_in_the_other_formats():
    text = run_cli("rules", "NG104", "--format", "text")
    assert text.returncode == 0 and text.stdout.splitlines()[:2] == [
        "NG104  pod-cpu-not-whole  [error]", "    The pod-level CPU is not a whole number of CPUs"]
    assert text.stdout in run_cli("rules").stdout
    import json

    as_json = json.loads(run_cli("rules", "NG301", "--format", "json").stdout)
    assert (as_json["id"], as_json["target"], as_json["needsNode"]) == ("NG301", "pod", True)
    section = run_cli("rules", "NG301").stdout
    assert "*Judged:* pods meant for a managed pool on a node description (policy tier: declared by a pool " \
           "they target, the `numaguard.io/scope: managed` annotation or `scope: all`); a pod only assumed to " \
           "be meant for one gets it as a warning (a finding on a node description you named keeps its " \
           "severity), unless the config sets the rule's severity." in section


def test_rules_help_says_which_format_is_the_default():
    helptext = re.sub(r"\s+", " ", run_cli("rules", "--help").stdout)
    assert "Usage: numaguard rules [OPTIONS] [RULE]" in helptext
    assert ("--format [text|json|markdown] text (the default for the list), markdown (the default for one "
            "RULE: its section of lint/rules/README.md) or json.") in helptext


def test_rules_unknown_id_is_a_clear_error():
    proc = run_cli("rules", "NG999")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == ("Error: unknown rule 'NG999': give an id such as NG205 or a name such as "
                           "topology-scope-not-pod (`numaguard rules` lists them)\n")

"""The engine: parsed documents in, findings out. No files, no terminals, no HTTP.

`lint_documents` is what the CLI, the webhook and library users call; `Linter` is the same run
fed a batch at a time. Each document goes through the stages of `numaguard.lint.stages`, in
order: `classify` (what it is: pod carrier, KubeletConfiguration, platform object, checkpoint
file, node, or skipped), the judge of that kind of object (`pods`, `kubelets`,
`platform_kubelets`: the schema check, NG002, and when that passes every enabled rule), and
`run_checks` (an extract kept for the run-level rules); every finding goes through `findings`
(its line and column, severity overrides and suppressions, counts). `finish` judges the run.

Pools: the config's pools each have a rule context (their node description and empty node
state, built once by `rule_context`); a pod is judged with the context of the pool it targets
(`pod_placement`), a kubelet configuration with that of the pool it belongs to (its file named
by a pool's `kubeletConfigs`, or its platform object selecting the pool's nodes), anything
else with the run's default context.

Rules with a `RunCheck` (the pools' NG4xx, the checkpoints, NG409 on a saved PodResources
answer) judge the run as a whole: every
document, judged kubelet configuration and unreadable file is offered to their `RunCheck`s,
which keep a small extract of what they need; after the last document each check judges its
extracts once. Workers hand back extracts, never documents (`RunPart`), so memory stays flat
and `--jobs N` gives what one process gives. The engine knows no rule of that kind by name.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from numaguard.lint.config import Config
from numaguard.lint.load.documents import Document, LoadError, expand_lists
from numaguard.lint.model import Finding, Severity, Summary, Unread
from numaguard.lint.references import RunReferences
from numaguard.lint.rendered import RenderedFindings
from numaguard.lint.rules.base import LintContext, Rule
from numaguard.lint.stages.classify import Classifier, skip_reason
from numaguard.lint.stages.documents import at, line_of
from numaguard.lint.stages.state import RunState

if TYPE_CHECKING:                   # a run without --baseline never reads one
    from numaguard.lint.baseline import BaselineEntry


@dataclass(frozen=True)
class Selection:
    """Which rules run (`--select`/`--ignore`: ids or id prefixes such as NG2) and at what
    severity (config `rules:`; None = off)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severities: dict[str, Severity | None] = field(default_factory=dict)

    def enabled(self, rule: Rule) -> bool:
        if self.severities.get(rule.id, rule.severity) is None:
            return False
        if self.select and not any(rule.id.startswith(s) for s in self.select):
            return False
        return not any(rule.id.startswith(s) for s in self.ignore)


@dataclass
class LintResult:
    findings: list[Finding]
    summary: Summary
    fixed: list[BaselineEntry] = field(default_factory=list)   # baseline entries no longer found
    # Filled in by `numaguard audit` and `simulate --format html` for the pool reports: each
    # node's occupancy (numaguard.lint.numa.occupancy.NodeOccupancy) and, per file
    # (`pod/ns/name`), the workload that owns the pod.
    nodes: list[Any] = field(default_factory=list)
    workloads: dict[str, str] = field(default_factory=dict)
    # `numaguard audit`: what could not be read (the audit is incomplete when not empty).
    unread: list[Unread] = field(default_factory=list)

    @property
    def unread_nodes(self) -> dict[str, Unread]:
        """Node name -> what of it could not be read (its kubelet configuration)."""
        return {node: piece for piece in self.unread for node in piece.nodes}

    @property
    def active(self) -> list[Finding]:
        """What counts: not suppressed, and not already recorded in a baseline."""
        return [f for f in self.findings if not f.suppressed and f.baseline_state != "unchanged"]


def lint_documents(documents: Iterable[Document | dict], *, config: Config | None = None,
                   selection: Selection | None = None, node: Any = None,
                   load_errors: Iterable[LoadError] = (), context: LintContext | None = None,
                   pool_nodes: dict[str, Any] | None = None,
                   node_named_by: dict[str | None, str] | None = None) -> LintResult:
    """Lint parsed documents. Plain dicts are accepted (no positions, no file). `context`: a
    `rule_context(config, node, pool_nodes, node_named_by)` the caller keeps across calls (the
    webhook: one per worker). `node` is the default node description, `pool_nodes` each pool's
    by name; `node_named_by` says who named them (`rule_context`)."""
    linter = Linter(config=config, selection=selection, node=node, context=context, pool_nodes=pool_nodes,
                    node_named_by=node_named_by)
    linter.lint(documents, load_errors)
    return linter.finish()


def collect_references(references: RunReferences, docs: Iterable[Document]) -> None:
    """Add what these documents (and the items of their Lists) say for other objects of the run."""
    for doc in docs:
        if doc.skip is None and isinstance(doc.data, dict):
            for _, prefix in expand_lists(doc):
                references.collect(at(doc.data, prefix), doc.source, line_of(doc, prefix), (doc.index, prefix))


@dataclass
class RunPart:
    """What one batch of files leaves behind once its documents are dropped: findings, counts
    and the run checks' extracts (check name -> extracts in input order). Worker processes
    return one; `Linter.absorb` merges it."""

    findings: list[Finding]
    summary: Summary
    extracts: dict[str, list]
    rendered: RenderedFindings = field(default_factory=RenderedFindings)


class Linter:
    """One lint run fed a batch of documents at a time (the CLI: one file and its kubelet
    drop-ins), so that a caller can drop each file's documents before loading the next: memory
    then follows the findings, not the input. `finish` runs the run-level rules (NG4xx) over what
    every batch left behind and returns the findings in the reports' order. The stages each
    document goes through are in `numaguard.lint.stages`."""

    def __init__(self, *, config: Config | None = None, selection: Selection | None = None,
                 node: Any = None, context: LintContext | None = None,
                 pool_nodes: dict[str, Any] | None = None,
                 node_named_by: dict[str | None, str] | None = None,
                 references: RunReferences | None = None) -> None:
        config = config or Config()
        selection = selection or Selection(severities=config.severities)
        self._run = RunState.start(context or rule_context(config, node, pool_nodes, node_named_by), selection,
                                   config.pools_naming)
        self._classifier = Classifier(self._run)
        if references is not None:
            self._run.references.merge(references)

    def lint(self, documents: Iterable[Document | dict], load_errors: Iterable[LoadError] = ()) -> None:
        """Lint one batch. Kubelet drop-ins pair with their main file within a batch."""
        run, stage = self._run, self._classifier
        for error in load_errors:
            stage.add_load_error(error)
        docs = [doc if isinstance(doc, Document) else
                Document(source=None, index=i, data=doc, line=None, ignores=frozenset())
                for i, doc in enumerate(documents)]
        run.batch.collect_dropins(docs)
        run.batch.collect_companions(docs)
        collect_references(run.references, docs)   # a batch's own (stdin, the library, the webhook's object)
        for doc in docs:
            if doc.repeated_keys:
                stage.report_repeated_keys(doc)
            if stage.skipped(doc):
                continue
            for item, prefix in expand_lists(doc):
                stage.judge_document(item, prefix)
        run.batch.clear()            # keyed by id(): must not outlive the batch's documents
        run.log.rendered_seen.clear()

    def take(self) -> RunPart:
        """Hand over (and forget) what the batches so far left behind."""
        findings, summary, rendered = self._run.log.take()
        return RunPart(findings, summary, self._run.checks.take(), rendered)

    def absorb(self, part: RunPart) -> None:
        """Merge what another Linter (a worker's) left behind, in file order."""
        log = self._run.log
        log.findings.extend(part.findings)
        log.summary.add(part.summary)
        self._run.checks.absorb(part.extracts)
        log.rendered.merge(part.rendered)

    def finish(self) -> LintResult:
        """Judge the run checks and return every finding, sorted as the reports show them."""
        run = self._run
        run.checks.judge(run.log)
        for finding in run.log.rendered.release():      # a render's findings its profile lacks
            run.log.record(finding)
        sort_findings(run.log.findings)
        return LintResult(run.log.findings, run.log.summary)


def finding_order(f: Finding) -> tuple:
    """The order of findings in every report: file, line, column, rule."""
    return (f.file or "", f.line or 0, f.column or 0, f.rule)


def sort_findings(findings: list[Finding]) -> None:
    """Sort in place, stably: findings found file by file come out as one run gives them."""
    findings.sort(key=finding_order)


def rule_context(config: Config, node: Any = None, pool_nodes: dict[str, Any] | None = None,
                 node_named_by: dict[str | None, str] | None = None) -> LintContext:
    """What every check may consult besides its subject, built from the config and the node
    descriptions: `node` is the default one (pools without their own, subjects of no pool),
    `pool_nodes` each pool's by name. `node_named_by`: who named them, for the default (key
    None) and each pool's (`Config.node_namings`: "--node", "node", "poolNode"); a pod
    simulated on a node the user named is declared for it (`LintContext.node_named_by`). The
    webhook and `audit` name none. One empty node state per distinct node, built here once."""
    states: dict[int, Any] = {}
    named_by = node_named_by or {}

    def parts(node: Any, key: str | None) -> dict:
        if node is None:
            return {"node": None, "kubelet_config": None, "empty_node_state": None}
        kubelet_config = getattr(node, "kubelet_config", None)
        if id(node) not in states:
            # the simulator, only for a run with a node description (a run over pods has none)
            from numaguard.lint.numa.admission import empty_state_or_none

            states[id(node)] = empty_state_or_none(node.topology, kubelet_config,
                                                   name=getattr(node, "name", "node"))
        return {"node": node, "kubelet_config": kubelet_config, "empty_node_state": states[id(node)],
                "node_named_by": named_by.get(key)}

    common = {"kubernetes_version": config.kubernetes_version, "scope_all": config.scope_all,
              "carriers": config.pod_carriers}
    pools = tuple(LintContext(**common, pool=pool, **parts((pool_nodes or {}).get(pool.name, node), pool.name))
                  for pool in config.pools)
    return LintContext(**common, **parts(node, None), pools=pools)


__all__ = ["Selection", "LintResult", "lint_documents", "collect_references", "RunPart", "Linter",
           "finding_order", "sort_findings", "skip_reason", "rule_context"]

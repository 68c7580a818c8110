"""Baselines: today's findings recorded, so that later runs report and fail only on new ones.

A finding is identified by what survives unrelated edits of its file: the rule, the file, the
object (kind, namespace, name), the container and the field path. Not the line or column
(lines move when something is added above), not the message (it quotes values), not the
apiVersion (apps/v1beta2 -> apps/v1 is the same object). The same identity, hashed, is the
`partialFingerprints` of SARIF results, which code-scanning dashboards use to follow an alert
across commits. Identical findings (the same field of the same object, in one file) are
counted, so fixing one of two is seen.

The file (version 1) is JSON, written with `--write-baseline` and read with `--baseline`:

    {"version": 1, "tool": "numaguard",
     "entries": [{"fingerprint": "9f2c...", "rule": "NG103", "file": "apps/web.yaml",
                  "kind": "Deployment", "namespace": "default", "name": "web",
                  "container": null, "path": "spec.template.spec.resources", "count": 1}]}

Matching uses the fields; `fingerprint` is written for readers and other tools. Only the
engine's values are handled here: the CLI reads and writes the file.
"""
from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable

from numaguard.lint.model import Finding

BASELINE_VERSION = 1
FINGERPRINT_NAME = "numaguard/v1"       # the key under SARIF partialFingerprints
NEW, UNCHANGED, ABSENT = "new", "unchanged", "absent"     # SARIF 2.1.0 baselineState values


class BaselineError(ValueError):
    """A baseline file that cannot be used (one line, for exit code 2)."""


@dataclass(frozen=True, order=True)
class BaselineEntry:
    rule: str
    file: str
    kind: str
    namespace: str
    name: str
    container: str
    path: str

    @property
    def fingerprint(self) -> str:
        import hashlib      # OpenSSL: tens of ms to import, paid only by baselines and SARIF

        text = "\x1f".join((self.rule, self.file, self.kind, self.namespace, self.name,
                            self.container, self.path))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def as_dict(self, count: int | None = None) -> dict[str, Any]:
        out = {"fingerprint": self.fingerprint, "rule": self.rule, "file": self.file,
               "kind": self.kind or None, "namespace": self.namespace or None,
               "name": self.name or None, "container": self.container or None,
               "path": self.path}
        return out if count is None else out | {"count": count}


def normal_file(path: str | None) -> str:
    """`./apps/web.yaml`, `apps//web.yaml` and `apps\\web.yaml` are one file."""
    if not path:
        return ""
    return posixpath.normpath(path.replace("\\", "/"))


def entry_for(finding: Finding) -> BaselineEntry:
    ref = finding.object
    return BaselineEntry(rule=finding.rule, file=normal_file(finding.file),
                         kind=(ref.kind if ref else None) or "",
                         namespace=(ref.namespace if ref else None) or "",
                         name=(ref.name if ref else None) or "",
                         container=finding.container or "", path=finding.path or "")


def fingerprints(findings: Iterable[Finding]) -> list[str]:
    """The SARIF partial fingerprint of each finding: its entry's hash, and `:N` for the Nth
    identical finding of the run (N >= 2), so that every result's fingerprint is distinct."""
    seen: Counter[BaselineEntry] = Counter()
    out = []
    for finding in findings:
        entry = entry_for(finding)
        seen[entry] += 1
        out.append(entry.fingerprint + (f":{seen[entry]}" if seen[entry] > 1 else ""))
    return out


@dataclass
class Baseline:
    counts: Counter[BaselineEntry]

    @classmethod
    def from_findings(cls, findings: Iterable[Finding]) -> Baseline:
        """Record the findings that count today (suppressed ones are recorded elsewhere)."""
        return cls(Counter(entry_for(f) for f in findings if not f.suppressed))

    def to_json(self) -> dict[str, Any]:
        return {"version": BASELINE_VERSION, "tool": "numaguard",
                "entries": [entry.as_dict(self.counts[entry]) for entry in sorted(self.counts)]}

    @classmethod
    def from_json(cls, data: Any) -> Baseline:
        if not isinstance(data, dict) or data.get("tool") != "numaguard":
            raise BaselineError("not a numaguard baseline (no \"tool\": \"numaguard\")")
        if data.get("version") != BASELINE_VERSION:
            raise BaselineError(f"baseline version {data.get('version')!r} is not supported "
                                f"(this numaguard reads version {BASELINE_VERSION})")
        entries = data.get("entries")
        if not isinstance(entries, list):
            raise BaselineError("entries: expected a list")
        counts: Counter[BaselineEntry] = Counter()
        for i, item in enumerate(entries):
            if not isinstance(item, dict) or not isinstance(item.get("rule"), str):
                raise BaselineError(f"entries[{i}]: expected an object with a \"rule\"")
            count = item.get("count", 1)
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise BaselineError(f"entries[{i}].count: expected a positive integer")
            fields = {}
            for key in ("file", "kind", "namespace", "name", "container", "path"):
                value = item.get(key)
                if value is not None and not isinstance(value, str):
                    raise BaselineError(f"entries[{i}].{key}: expected a string or null")
                fields[key] = value or ""
            fields["file"] = normal_file(fields["file"])
            counts[BaselineEntry(rule=item["rule"], **fields)] += count
        return cls(counts)


def apply_baseline(result: Any, baseline: Baseline, *,
                   linted_files: Iterable[str] | None = None) -> None:
    """`result` is the engine's LintResult (not imported: the engine imports this module).

    Mark each counting finding `new` or `unchanged` (in report order: sort first), take the
    unchanged ones out of the severity counts, and list in `result.fixed` the baseline entries
    no longer found, one per missing occurrence. Only entries for `linted_files` can be fixed:
    a run over two files says nothing about the others."""
    left = Counter(baseline.counts)
    unchanged = 0
    for finding in result.findings:
        if finding.suppressed:
            continue
        entry = entry_for(finding)
        if left[entry] > 0:
            left[entry] -= 1
            finding.baseline_state = UNCHANGED
            result.summary.counts[finding.severity.value] -= 1
            unchanged += 1
        else:
            finding.baseline_state = NEW
    files = None if linted_files is None else {normal_file(f) for f in linted_files}
    result.fixed = [entry for entry in sorted(left) for _ in range(left[entry])
                    if files is None or entry.file in files]
    result.summary.baseline_unchanged = unchanged
    result.summary.baseline_fixed = len(result.fixed)

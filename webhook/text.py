"""What the API server is told, in words: the denial's message, warnings, audit annotations.

Warnings travel in HTTP `Warning` headers and kubectl prints each on its own line. The API
server's warning recorder (k8s.io/apiserver pkg/endpoints/filters/warning.go) passes warnings
whole while their total stays within 4,096 runes; past that it re-sends every warning cut to 256
runes and drops the rest once the total is reached again. So each warning fits in 256
characters (what survives the cut) and ours total at most 3,000 (room for other webhooks' and
the API server's own). Within a warning the rule ID and the fix are never cut: the message is
shortened first, then the path. (admission/v1 AdmissionResponse also asks for 120 characters
"if possible": a finding with its field and its fix runs longer.)
"""
from __future__ import annotations

import re

from numaguard.lint.model import Finding
from numaguard.webhook.review import AdmissionRequest

WARNING_MAX_CHARS = 256
WARNINGS_MAX_TOTAL = 3000
WARNINGS_MAX_COUNT = 12
MESSAGE_MAX_FINDINGS = 10
MESSAGE_LINE_MAX_CHARS = 600
AUDIT_VALUE_MAX_CHARS = 1000
ELLIPSIS = "..."
_SPACE = re.compile(r"\s+")


def one_line(text: str) -> str:
    """Printable ASCII on one line (warnings travel in HTTP headers)."""
    return _SPACE.sub(" ", text).strip().encode("ascii", "replace").decode("ascii")


def cut(text: str, limit: int) -> str:
    """`text`, or its start and "..." within `limit`, at a word's end when one is near."""
    if len(text) <= limit:
        return text
    start = text[: max(0, limit - len(ELLIPSIS))]
    space = start.rfind(" ")
    if space > len(start) - 20:
        start = start[:space]
    return start.rstrip(" ,;:") + ELLIPSIS


def finding_line(f: Finding, limit: int = WARNING_MAX_CHARS, note: str = "") -> str:
    """`RULE path: note message Fix: fix` on one line, within `limit` characters: the message
    is shortened (down to "..."), then the note, then the path is left out; the rule ID and the
    fix stay whole (a fix too long for `limit` on its own would be the one case over it, and no
    rule has one: tests/webhook/test_text.py)."""
    rule, path, note, message = f.rule, one_line(f.path or "(object)"), one_line(note), one_line(f.message)
    fix = one_line(f.remediation)
    tail = f" Fix: {fix}" if fix else ""
    note = f"{note} " if note else ""
    for head, shrinkable, rest in ((f"{rule} {path}: {note}", message, tail),
                                   (f"{rule} {path}: ", note.rstrip() or ELLIPSIS, tail),
                                   (f"{rule}: ", ELLIPSIS, tail)):
        room = limit - len(head) - len(rest)
        if len(shrinkable) <= room or room >= len(ELLIPSIS):
            return head + cut(shrinkable, room) + rest
    return f"{rule}:{tail}"


def deny_message(request: AdmissionRequest, errors: list[Finding]) -> str:
    what = f"{request.kind} {request.namespace + '/' if request.namespace else ''}{request.name or '(unnamed)'}"
    count = f"{len(errors)} error{'s' if len(errors) != 1 else ''}"
    lines = [f"numaguard: {what} has {count} (the kubelet would not give its pods their NUMA placement):"]
    lines += [finding_line(f, MESSAGE_LINE_MAX_CHARS) for f in errors[:MESSAGE_MAX_FINDINGS]]
    if len(errors) > MESSAGE_MAX_FINDINGS:
        lines.append(f"... and {len(errors) - MESSAGE_MAX_FINDINGS} more; run `numaguard lint` on the manifest")
    return "\n".join(lines)


def format_warnings(findings: list[Finding], kept: frozenset[int] = frozenset(), lead: list[str] = ()) -> list[str]:
    """`lead` lines first, then one line per finding, rule ID first; `kept`: the positions of
    findings the old object already had (an UPDATE), marked so. Capped in count and total."""
    out = [cut(one_line(text), WARNING_MAX_CHARS) for text in lead]
    total = sum(map(len, out))
    for i, f in enumerate(findings):
        text = finding_line(f, note="(unchanged by this update)" if i in kept else "")
        left = len(findings) - i
        if len(out) == WARNINGS_MAX_COUNT - 1 and left > 1 or total + len(text) > WARNINGS_MAX_TOTAL - 80:
            out.append(f"numaguard: {left} more finding{'s' if left != 1 else ''}; "
                       "run `numaguard lint` on the manifest")
            break
        out.append(text)
        total += len(text)
    return out


def kept_errors_lead(kind: str, count: int, replicated: bool) -> str:
    """The UPDATE's word on what happens next: the update is allowed because the errors were
    there before. `replicated`: the kind's pods (or ReplicaSets, Jobs) are written by a built-in
    controller, so they are admitted as replicas of a judged workload, errors and all, until
    the template is fixed; any other kind's controller (a JobSet's, a CloneSet's) writes
    objects that are judged as usual."""
    errors = f"{count} error{'s' if count != 1 else ''}"
    them = "them" if count != 1 else "it"
    if replicated:
        return (f"numaguard: allowed because this {kind} already had the {errors} below; the pods its "
                f"controllers create are admitted as replicas of a judged {kind} and keep {them}: fix the "
                "template to give them their NUMA placement")
    return (f"numaguard: allowed because this {kind} already had the {errors} below; what its controller "
            f"creates from the template is judged as usual, and denied in enforce mode while it keeps {them}: "
            "fix the template")


def audit_findings(findings: list[Finding]) -> str:
    """`RULE path (severity)` of each finding, `; `-separated, within AUDIT_VALUE_MAX_CHARS (then
    "and N more")."""
    entries = [one_line(f"{f.rule} {f.path or '(object)'} ({f.severity.value})") for f in findings]
    text = ""
    for i, entry in enumerate(entries):
        more = f"; and {len(entries) - i} more"
        if len(text) + 2 + len(entry) + (len(more) if i < len(entries) - 1 else 0) > AUDIT_VALUE_MAX_CHARS:
            return text + more
        text += ("; " if text else "") + entry
    return text

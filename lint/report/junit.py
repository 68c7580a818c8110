"""JUnit XML, for CI systems that show test reports: one test case per finding, failed for
errors (and warnings), skipped when suppressed; info findings pass with their message as output.
What an incomplete `numaguard audit` could not read is one test case per node (or list) in
error: it could not be checked, which is neither a pass nor a failure of a check."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from numaguard.lint.engine import LintResult


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    findings = [f for f in result.findings if (show_suppressed or not f.suppressed)
                and f.baseline_state != "unchanged"]
    failures = sum(1 for f in findings if not f.suppressed and f.severity.value != "info")
    unread = [(f"node/{node}" if piece.nodes else "audit", piece) for piece in result.unread
              for node in (piece.nodes or (None,))]
    suite = ET.Element("testsuite", name="numaguard", tests=str(len(findings) + len(unread)),
                       failures=str(failures), errors=str(len(unread)),
                       skipped=str(sum(1 for f in findings if f.suppressed)))
    for where, piece in unread:
        case = ET.SubElement(suite, "testcase", classname=where,
                             name=f"read {where if piece.nodes else piece.what}")
        ET.SubElement(case, "error", type="not-read", message=f"not read: {piece.what}").text = piece.why
    for f in findings:
        where = f"{f.file or '<input>'}:{f.line or 1}:{f.column or 1}"
        case = ET.SubElement(suite, "testcase", classname=f.file or "<input>",
                             name=f"{f.rule} {f.name} {f.object or ''} {where}".strip())
        text = f"{f.message}\nfix: {f.remediation}"
        if f.suppressed:
            ET.SubElement(case, "skipped", message=f.suppress_reason or "suppressed")
        elif f.severity.value == "info":
            ET.SubElement(case, "system-out").text = text
        else:
            ET.SubElement(case, "failure", type=f.severity.value, message=f.message).text = text
    return ET.tostring(ET.ElementTree(suite).getroot(), encoding="unicode", xml_declaration=True) + "\n"

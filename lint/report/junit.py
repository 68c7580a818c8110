"""JUnit XML, for CI systems that show test reports: one test case per finding, failed for
errors (and warnings), skipped when suppressed; info findings pass with their message as output."""
from __future__ import annotations

from xml.etree import ElementTree as ET

from numaguard.lint.engine import LintResult


def render(result: LintResult, *, show_suppressed: bool = False, color: bool = False) -> str:
    findings = [f for f in result.findings if (show_suppressed or not f.suppressed)
                and f.baseline_state != "unchanged"]
    failures = sum(1 for f in findings if not f.suppressed and f.severity.value != "info")
    suite = ET.Element("testsuite", name="numaguard", tests=str(len(findings)),
                       failures=str(failures), errors="0",
                       skipped=str(sum(1 for f in findings if f.suppressed)))
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

"""Quantities as Kubernetes reads them (lint/k8s/quantity.py), checked against the rules of
k8s.io/apimachinery/pkg/api/resource (quantity.go ParseQuantity and parseQuantityString,
suffix.go interpret, quantity_test.go), and absurd quantities anywhere in a manifest: an
NG002 finding at the field, never an exception.

The expected answers come from `go_parse` below, a step-by-step reading of the Go code (its
scanner loops, the fast int64 path and the big-number path with their conditions), written
apart from numaguard's parser, which reads the same grammar with one regular expression."""
from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from numaguard.lint.engine import lint_documents
from numaguard.lint.k8s.quantity import FORMAT_WRONG, MAX_INT64, QuantityError, parse_quantity
from numaguard.lint.load.documents import load_text

from conftest import run_cli

DIGITS = "0123456789"
WHY = {"format": "quantities must match the regular expression "
                 "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
       "suffix": "unable to parse quantity's suffix",
       "numeric": "unable to parse numeric part of quantity"}
TOO_LARGE = ("is larger than Kubernetes can use: the API server reads quantities as 64-bit "
             "integers (Quantity.Value(), MilliValue()), which cannot hold more than 9223372036854775807")


class Refused(Exception):
    """ParseQuantity returns an error: `str(exc)` is "format", "suffix" or "numeric"."""


# --------------------------------------------------------------------------- the Go rules

def _go_scan(s: str) -> tuple[bool, str, str, str, str]:
    """parseQuantityString: (positive, value, num, denom, suffix), or Refused("format")."""
    end, pos, positive = len(s), 0, True
    if s[:1] in ("-", "+"):
        positive, pos = s[0] == "+", 1
    while pos < end and s[pos] == "0":          # leading zeros
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    i = pos
    while i < end and s[i] in DIGITS:
        i += 1
    if i >= end:
        return positive, s, s[pos:], "", ""
    num, pos = s[pos:i] or "0", i
    denom = ""
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i] in DIGITS:
            i += 1
        if i >= end:
            return positive, s, num, s[pos:], ""
        denom, pos = s[pos:i], i
    value, start = s[:pos], pos
    while pos < end and s[pos] in "eEinumkKMGTP":
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos] in DIGITS:
        pos += 1
    if pos < end:
        raise Refused("format")
    return positive, value, num, denom, s[start:]


DECIMAL = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}


def _go_parse_int64(text: str) -> int:
    """strconv.ParseInt(text, 10, 64)."""
    body = text[1:] if text[:1] in "+-" else text
    if not body or any(c not in DIGITS for c in body):
        raise Refused("suffix")
    value = int(body) * (-1 if text[:1] == "-" else 1)
    if not -2**63 <= value < 2**63:
        raise Refused("suffix")
    return value


def go_parse(s: str) -> tuple[Fraction | str, int | None]:
    """What ParseQuantity makes of `s`: (value, exponent as written) where value is exact, or
    "huge" for a non-zero decimal value of 10^40 and more (never computed); Refused otherwise."""
    if s == "":
        raise Refused("format")
    positive, value, num, denom, suffix = _go_scan(s)
    written = None
    if suffix in DECIMAL:
        binary, exponent = False, DECIMAL[suffix]
    elif suffix in BINARY:
        binary, exponent = True, BINARY[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        binary, written = False, _go_parse_int64(suffix[1:])
        exponent = (written + 2**31) % 2**32 - 2**31          # int32(parsed)
    else:
        raise Refused("suffix")
    if binary:
        fast = exponent >= 0 and not denom and 15 - len(num) - int(exponent * 3 / 10) - 1 >= 0
    else:
        fast = 18 - (len(num) + len(denom)) >= 0 and exponent - len(denom) >= -9
    if not fast and not any(c in DIGITS for c in value):      # inf.Dec SetString needs a digit
        raise Refused("numeric")
    digits = int((num + denom).lstrip("0") or "0")
    sign = 1 if positive else -1
    if binary:
        amount = Fraction(digits * 2**exponent, 10**len(denom))
    else:
        scale = exponent - len(denom)
        if not digits:
            amount = Fraction(0)
        elif len(str(digits)) + scale > 40:
            return "huge", written
        elif len(str(digits)) + scale < -40:
            amount = Fraction(1, 10**40)                      # rounds to 1n below
        else:
            amount = Fraction(digits) * Fraction(10) ** scale
    nanos = amount * 10**9
    if nanos.denominator != 1:                                # round up, away from zero
        amount = Fraction(int(nanos) + 1, 10**9)
    if binary and amount > MAX_INT64:                         # the simple cap
        amount = Fraction(MAX_INT64)
    return sign * amount, written


def expect(s: str) -> tuple[str, object]:
    """("value", Fraction), ("refused", why), ("too large", None) or ("wrapped", None)."""
    try:
        value, written = go_parse(s)
    except Refused as refused:
        return "refused", str(refused)
    if written is not None and not -2**31 <= written < 2**31:
        return "wrapped", None
    if value == "huge" or abs(value) > MAX_INT64:
        return "too large", None
    return "value", value


def assert_agrees(text: str, *, trim: bool = False) -> None:
    outcome, detail = expect(text)
    try:
        got = parse_quantity(text, trim=trim)
    except QuantityError as exc:
        message = str(exc)
        if outcome == "refused":
            assert message == f"{text!r} is not a Kubernetes quantity (e.g. \"2\", \"500m\", \"4Gi\"): " \
                              f"{WHY[detail]}"
        elif outcome == "too large":
            assert message == f"{text!r} {TOO_LARGE}"
        else:
            assert outcome == "wrapped" and "keeps a quantity's exponent in 32 bits" in message, (outcome, message)
        return
    assert outcome == "value", (text, outcome, got)
    assert Fraction(got) == detail, (text, got, detail)


# --------------------------------------------------------------------------- the cases

@pytest.mark.parametrize("text, value", [
    # quantity_test.go TestQuantityParse: canonical, saturating and rounding, "trolls"
    ("0", 0), ("1Ki", 1024), ("3Ei", 3 * 2**60), ("50k", 50000), ("1E", 10**18), ("1E-3", Fraction(1, 1000)),
    ("100.035k", 100035), ("0.0005k", Fraction(1, 2)), ("1.3E+6", 1300000), ("3.001n", Fraction(4, 10**9)),
    ("1.1E-9", Fraction(2, 10**9)), ("0.9n", Fraction(1, 10**9)), ("0.00000012345", Fraction(124, 10**9)),
    ("9Ei", MAX_INT64), ("9223372036854775807Ki", MAX_INT64), ("100.035Ki", Fraction(10243584, 100)),
    ("0.000000000001Ki", Fraction(2, 10**9)), (".001", Fraction(1, 1000)), ("1.", 1), ("1.G", 10**9),
    # TestParseQuantityString: "." and "-." are numbers (zero); no digits at all is zero too
    (".", 0), ("-.", 0), ("+", 0), ("k", 0), ("Ti", 0), ("e5", 0),
    # TestParseQuantity: 19 digits and the int64 edge
    ("9223372036854775807", MAX_INT64), ("-9223372036854775807", -MAX_INT64), ("9e18", 9 * 10**18),
    ("1e-999999999", Fraction(1, 10**9)),
])
def test_values_as_parse_quantity_reads_them(text, value):
    assert Fraction(parse_quantity(text)) == value
    assert expect(text) == ("value", value)            # the oracle reads the Go rules alike


@pytest.mark.parametrize("text, why", [
    # quantity_test.go's invalid list, and the edges of the suffix
    ("1.1.M", "format"), ("1+1.0M", "format"), ("0.1mi", "suffix"), ("0.1am", "format"), ("aoeu", "format"),
    (".5i", "suffix"), ("1i", "suffix"), ("-3.01i", "suffix"), ("-3.01e-", "suffix"), (" 1", "format"),
    ("1 ", "format"), ("", "format"), ("1GB", "format"), ("1K", "suffix"), ("1e", "suffix"), ("1e+", "suffix"),
    ("1ee3", "suffix"), ("1e9223372036854775808", "suffix"), ("1e99999999999999999999", "suffix"),
    ("Pi", "numeric"), ("-Ei", "numeric"), ("e-10", "numeric"), (".e-10", "numeric"),
])
def test_what_parse_quantity_refuses_is_refused_with_its_message(text, why):
    assert expect(text) == ("refused", why)
    with pytest.raises(QuantityError) as raised:
        parse_quantity(text, trim=False)
    assert str(raised.value).endswith(": " + WHY[why])


@pytest.mark.parametrize("text", ["1e999999999", "1E+308", "9223372036854775808", "10E", "12E",
                                  "-1e999999999", "1e2147483647", "9.3e18"])
def test_accepted_but_beyond_int64_is_refused_as_too_large(text):
    assert expect(text)[0] == "too large"
    with pytest.raises(QuantityError, match="larger than Kubernetes can use"):
        parse_quantity(text)


def test_an_exponent_past_int32_wraps_in_kubernetes_and_is_refused():
    assert go_parse("1e4294967296") == (Fraction(1), 4294967296)   # Go reads 1: int32 wraps to 0
    with pytest.raises(QuantityError) as raised:
        parse_quantity("1e4294967296")
    assert str(raised.value) == ("'1e4294967296': Kubernetes keeps a quantity's exponent in 32 bits, so "
                                 "e4294967296 wraps to e0 and the API server would read another value; "
                                 "write the value you mean")


def test_a_quantity_field_trims_whitespace_as_unmarshal_json_does_the_kubelets_strings_do_not():
    assert parse_quantity(" 1 ") == parse_quantity("\t1\u00a0") == 1          # TestJSONWhitespace
    with pytest.raises(QuantityError, match="must match the regular expression"):
        parse_quantity(" 1", trim=False)


def test_numbers_are_read_as_their_json_text():
    assert (parse_quantity(2), parse_quantity(0.5), parse_quantity(5e-324)) == (2, Decimal("0.5"), Decimal("1E-9"))
    for value in (1e300, float("inf"), 2**63, -2**70):
        with pytest.raises(QuantityError, match="larger than Kubernetes can use"):
            parse_quantity(value)
    for value in (float("nan"), True, None, [1]):
        with pytest.raises(QuantityError, match="is not a Kubernetes quantity"):
            parse_quantity(value)


# --------------------------------------------------------------------------- fuzzing

digits = st.text(DIGITS, max_size=22)
exponent_values = st.one_of(st.integers(0, 40), st.integers(2**31 - 3, 2**31 + 3),
                            st.integers(2**63 - 3, 2**63 + 3), st.integers(0, 10**25))
exponents = st.builds(lambda e, sign, zeros, n: f"{e}{sign}{'0' * zeros}{n}", st.sampled_from("eE"),
                      st.sampled_from(["", "+", "-"]), st.integers(0, 2), exponent_values)
suffixes = st.one_of(st.sampled_from([*DECIMAL, *BINARY, "K", "mi", "ki", "i", "e", "E+", "e-", "ee", "KiB",
                                      "G5", "Ki5", "Mi-1", "-1", "+"]), exponents)
quantities = st.builds(lambda sign, whole, dot, fraction, suffix: sign + whole + dot + fraction + suffix,
                       st.sampled_from(["", "+", "-"]), digits, st.sampled_from(["", "."]), digits, suffixes)
garbage = st.text("0123456789.+-eEinumkKMGTPi _xB\t", max_size=14)
spaces = st.sampled_from(["", " ", "\t", "\n", "\u00a0", "\u2003", "\u3000"])


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(quantities, garbage))
@example("1e999999999")
@example("9e18")
@example("1E+308")
@example("0.9n")
def test_fuzzed_quantities_agree_with_the_go_rules(text):
    assert_agrees(text)


@settings(max_examples=300, deadline=None)
@given(quantities, spaces, spaces)
def test_fuzzed_quantity_fields_trim_go_whitespace(text, before, after):
    assert_agrees(text)
    assert_agrees(before + text + after, trim=False) if (before or after) else None
    try:
        expected = parse_quantity(text)
    except QuantityError:
        with pytest.raises(QuantityError):
            parse_quantity(before + text + after)
    else:
        assert parse_quantity(before + text + after) == expected


POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: p}}
spec:
  resources:
    limits: {{cpu: {cpu}, memory: 1Gi}}
  containers:
  - name: c
    image: registry.example/app:1
"""


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(quantities, garbage), st.booleans())
@example("1e999999999", True)
@example("1e999999999", False)
@example("1E+308", False)
def test_fuzzed_quantities_through_the_loader_and_the_engine(text, quoted):
    """Quoted, the text is the quantity; unquoted, YAML reads it first (a float, an int, a
    string) as Kubernetes does. Either way: no exception, and NG002 at the field exactly when
    Kubernetes refuses the value or cannot hold it."""
    written = json.dumps(text) if quoted else (text or '""')
    documents, errors = load_text(POD.format(cpu=written), "pod.yaml")
    result = lint_documents(documents, load_errors=errors)
    if errors or not documents or not quoted:
        return                       # unquoted text may not even be YAML: no crash is the point
    try:
        value = parse_quantity(text)
        refused = value < 0 or value * 1000 > MAX_INT64
    except QuantityError:
        refused = True
    at_field = [(f.line, f.column) for f in result.findings
                if f.rule == "NG002" and f.path == "spec.resources.limits.cpu"]
    assert at_field == ([(6, 19)] if refused else [])


ABSURD_VALUES = ["1e999999999", "-1e999999999", "1E+308", "9e18", "9223372036854775807", "9Ei", "1E",
                 "1e-999999999", "0.9n", "1e4294967296", ".", "Pi", " 1", "1_000", "NaN", "Infinity",
                 1e308, float("inf"), float("nan"), 5e-324, 10**30, -1]


def _documents() -> list[tuple[str, dict]]:
    """Every manifest the repository ships as an example or a platform fixture, and the node
    descriptions: pods and workloads, KubeletConfigurations, PerformanceProfiles, EKS
    NodeConfigs, OpenShift KubeletConfigs, Nodes, NodeProfiles."""
    import yaml

    from conftest import FIXTURES, REPO
    found = []
    for folder in (REPO / "deploy" / "examples", FIXTURES / "platforms", FIXTURES / "nodes",
                   FIXTURES / "rules" / "NG404", FIXTURES / "rules" / "NG208", FIXTURES / "rules" / "NG108"):
        for path in sorted(folder.rglob("*.yaml")):
            try:
                found += [(path.name, d) for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
            except yaml.YAMLError:
                continue
    return found


DOCUMENTS = _documents()


def _leaves(tree, prefix=()):
    if isinstance(tree, dict):
        for key, value in tree.items():
            yield from _leaves(value, prefix + (key,))
    elif isinstance(tree, list):
        for i, value in enumerate(tree):
            yield from _leaves(value, prefix + (i,))
    else:
        yield prefix


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_an_absurd_quantity_anywhere_never_raises(data):
    """Any value of any shipped manifest (a quantity field or not) replaced by an absurd or
    overflowing quantity: the engine, with and without a node description, and the node
    loader answer with findings or a NodeError, never an exception."""
    import copy

    from numaguard.lint.numa.node import load_node
    from numaguard.lint.numa.node_fields import NodeError

    name, original = data.draw(st.sampled_from(DOCUMENTS))
    document = copy.deepcopy(original)
    path = data.draw(st.sampled_from([p for p in _leaves(document) if p]))
    holder = document
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = data.draw(st.sampled_from(ABSURD_VALUES).map(copy.deepcopy))
    for node in (None, NODE):
        lint_documents([document], node=node)
    if document.get("kind") == "NodeProfile":
        try:
            load_node([document], source=name)
        except NodeError:
            pass


def _node():
    from numaguard.lint.numa.node import load_node_file
    from conftest import FIXTURES
    return load_node_file(FIXTURES / "nodes" / "explicit-dual-socket.yaml")


NODE = _node()


# --------------------------------------------------------------------------- end to end

ABSURD = POD.format(cpu='"1e999999999"')
ABSURD_MESSAGE = ("resources.limits.cpu: '1e999999999' is larger than Kubernetes can use: the API "
                  "server reads quantities as 64-bit integers (Quantity.Value(), MilliValue()), which "
                  "cannot hold more than 9223372036854775807")


def test_numaguard_lint_reports_an_overflowing_quantity_as_ng002(tmp_path):
    (tmp_path / "pod.yaml").write_text(ABSURD)
    run = run_cli("lint", "--format", "json", "pod.yaml", cwd=tmp_path)
    assert run.returncode == 1, run.stderr
    assert "Traceback" not in run.stderr
    findings = json.loads(run.stdout)["findings"]
    assert [(f["rule"], f["severity"], f["file"], f["line"], f["column"], f["path"], f["message"])
            for f in findings] == [("NG002", "error", "pod.yaml", 6, 19, "spec.resources.limits.cpu",
                                    ABSURD_MESSAGE)]


def test_lint_documents_reports_an_overflowing_quantity_as_ng002():
    documents, errors = load_text(ABSURD, "pod.yaml")
    result = lint_documents(documents, load_errors=errors)
    assert [(f.rule, f.line, f.column, f.path, f.message) for f in result.findings] == [
        ("NG002", 6, 19, "spec.resources.limits.cpu", ABSURD_MESSAGE)]


def test_cpu_whose_millicores_overflow_int64_is_ng002():
    # 9e18 is a valid memory size, but 9e18 CPUs is 9e21 millicores (MilliValue overflows)
    documents, _ = load_text(POD.format(cpu='"9e18"'), "pod.yaml")
    result = lint_documents(documents)
    assert [(f.rule, f.line, f.column, f.message) for f in result.findings] == [
        ("NG002", 6, 19, "resources.limits.cpu: '9e18' is larger than Kubernetes can use for CPU: the "
                         "scheduler and the kubelet read CPU as millicores in a 64-bit integer "
                         "(Quantity.MilliValue()), which cannot hold more than 9223372036854775807m")]


def test_the_format_message_quotes_kubernetes():
    assert FORMAT_WRONG == WHY["format"]


def test_the_webhook_denies_an_overflowing_quantity_in_enforce_mode():
    """It was allowed as "internal error; the object was not judged" (issue 14)."""
    import io

    from numaguard.lint.config import config_from_dict
    from numaguard.webhook import create_app
    from numaguard.webhook.decide import Policy
    from numaguard.webhook.settings import WebhookSettings

    pod = json.loads(json.dumps(load_text(ABSURD, "pod.yaml")[0][0].data))
    pod["metadata"]["namespace"] = "default"
    kind = {"group": "", "version": "v1", "kind": "Pod"}
    sent = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "request": {"uid": "4d1c3a52-0d1e-4a57-9d0c-6f1b1e1f0a01", "kind": kind, "requestKind": kind,
                        "resource": {"group": "", "version": "v1", "resource": "pods"},
                        "namespace": "default", "operation": "CREATE", "object": pod,
                        "userInfo": {"username": "admin"}, "dryRun": False}}
    log = io.StringIO()
    app = create_app(WebhookSettings(policy=Policy(config_from_dict({"webhook": {"mode": "enforce"}})),
                                     access_log=log)).test_client()
    response = app.post("/validate", json=sent).get_json()["response"]
    assert response["allowed"] is False
    assert "NG002" in response["status"]["message"]
    assert "'1e999999999' is larger than Kubernetes can use" in response["status"]["message"]
    assert json.loads(log.getvalue().splitlines()[-1])["decision"] == "deny"

"""Property tests for numaguard.lint.load.documents: nothing raises, and valid YAML loads as
Kubernetes reads it (PyYAML's reading, with go-yaml v2's differences applied)."""
from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from numaguard.lint.load.documents import Document, LoadError, PosDict, PosList, load_text
from numaguard.lint.load.kube_yaml import STR, key_string, resolve_plain

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "documents"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MANIFESTS = [(FIXTURES / name).read_text(encoding="utf-8")
             for name in ("pod.yaml", "multi.yaml", "merge-keys.yaml", "aliases.yaml", "pod.json",
                          "kind-list.yaml", "scalars.yaml")]
YAML_CHARACTERS = list(":-?[]{},&*!|>'\"%@`#\t\n ") + ["---\n", "...\n", "<<: ", "*a", "&a ", "!!int ",
                                                   "\ufeff", "\x00", "\u2028", "é", "\r\n"]


def check_result(result: tuple) -> None:
    docs, errors = result
    assert all(isinstance(d, Document) and (isinstance(d.data, dict) if d.skip is None else
                                            d.skip in ("not-kubernetes", "template")) for d in docs)
    assert all(isinstance(e, LoadError) and isinstance(e.message, str) for e in errors)
    for doc in docs:
        assert doc.line >= 1 and doc.index >= 0
        if doc.data is not None:
            check_marks(doc.data)
    # documents come in text order: indexes strictly increase
    assert [d.index for d in docs] == sorted({d.index for d in docs})
    for e in errors:
        assert (e.line is None) == (e.column is None)
        assert e.line is None or (e.line >= 1 and e.column >= 1)


def check_marks(value: object, depth: int = 0) -> None:
    """Every key of a PosDict and every item of a PosList has a 1-based position."""
    if depth > 50:
        return
    if isinstance(value, PosDict):
        assert set(value.marks) == set(value)
        assert all(line >= 1 and column >= 1 for line, column in value.marks.values())
        for item in value.values():
            check_marks(item, depth + 1)
    elif isinstance(value, PosList):
        assert len(value.marks) == len(value)
        for item in value:
            check_marks(item, depth + 1)


@SETTINGS
@given(st.text(max_size=300), st.sampled_from(["x.yaml", "x.json", "<stdin>"]))
def test_random_text_never_raises(text, source):
    check_result(load_text(text, source))


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_never_raise(raw):
    check_result(load_text(raw, "x.yaml"))


@st.composite
def mutated_manifests(draw):
    text = draw(st.sampled_from(MANIFESTS))
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        cut = draw(st.integers(0, 8))
        insert = draw(st.one_of(st.sampled_from(YAML_CHARACTERS), st.text(max_size=4)))
        text = text[:at] + insert + text[at + cut:]
    return text


@SETTINGS
@given(mutated_manifests(), st.sampled_from(["x.yaml", "x.json"]), st.booleans())
def test_mutated_manifests_never_raise(text, source, as_bytes):
    payload = text.encode("utf-8", "surrogatepass") if as_bytes else text
    check_result(load_text(payload, source))


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=20), st.sampled_from(["yes", "off", "0x1F", "017", "1:30", "~", "1e3",
                                                           "2001-12-14", "<<", "=", "---", "- a", "#x"]))
keys = st.one_of(st.text(max_size=12), st.integers(-5, 5), st.sampled_from(["on", "null", "<<", "1.0"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(keys, inner, max_size=4)),
                      max_leaves=20)


@st.composite
def yaml_streams(draw):
    # Every stream holds at least one non-empty mapping, so the comparisons below always have
    # a document to compare (without it, about a sixth of the streams held none).
    documents = [draw(st.dictionaries(keys, values, min_size=1, max_size=5))]
    for _ in range(draw(st.integers(0, 2))):
        document = draw(st.one_of(st.dictionaries(keys, values, max_size=5), values))
        if isinstance(document, dict) and document and draw(st.booleans()):
            shared = draw(st.one_of(st.lists(values, min_size=1, max_size=3),
                                    st.dictionaries(keys, values, min_size=1, max_size=3)))
            document["first"] = shared            # the same object twice: dumped as &id001 / *id001
            document["again"] = [shared, shared]
        documents.insert(draw(st.integers(0, len(documents))), document)
    style = draw(st.sampled_from([None, True, False]))
    return yaml.safe_dump_all(documents, default_flow_style=style, explicit_start=draw(st.booleans()),
                              allow_unicode=draw(st.booleans()), width=draw(st.sampled_from([20, 80, 10_000])))


@SETTINGS
@given(yaml_streams())
def test_valid_yaml_loads_as_kubernetes_reads_it(text):
    expected = [kubernetes_reading(d) for d in yaml.safe_load_all(text)]
    docs, errors = load_text(text, "x.yaml")
    def broken_manifest(d):           # a bare string naming apiVersion or kind: NG001
        return isinstance(d, str) and ("apiVersion" in d or "kind" in d)

    kept = [d for d in expected if d is not None and not broken_manifest(d)]
    assert docs and [d.data for d in docs] == kept
    assert [d.skip for d in docs] == [None if isinstance(d, dict) else "not-kubernetes" for d in kept]
    assert len(errors) == sum(1 for d in expected if broken_manifest(d))
    check_result((docs, errors))


_PYYAML = yaml.resolver.Resolver()


def kubernetes_reading(value):
    """What go-yaml v2 reads where PyYAML's dumper wrote `value`: the same, except strings
    PyYAML writes plain that go-yaml resolves to something else (`y`, `1e3`; such examples
    are discarded) and keys that are not strings (sigs.k8s.io/yaml makes them strings)."""
    if isinstance(value, str):
        plain_for_pyyaml = _PYYAML.resolve(yaml.ScalarNode, value, (True, False)) == STR
        assume(not (plain_for_pyyaml and resolve_plain(value)[0] != STR))
        return value
    if isinstance(value, list):
        return [kubernetes_reading(item) for item in value]
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            assume(key is not None)
            key = key_string(kubernetes_reading(key))
            assume(key not in out)
            out[key] = kubernetes_reading(item)
        return out
    return value


@SETTINGS
@given(yaml_streams())
def test_valid_yaml_as_bytes_loads_the_same(text):
    for document in yaml.safe_load_all(text):     # as above: streams Kubernetes reads as written
        kubernetes_reading(document)              # (no keys that collide once made strings)
    as_text = load_text(text, "x.yaml")
    as_bytes = load_text(text.encode("utf-8"), "x.yaml")
    assert as_text[0], text                       # there is always a document to compare
    assert [d.data for d in as_bytes[0]] == [d.data for d in as_text[0]]
    assert [(getattr(d.data, "marks", None), d.line, d.index) for d in as_bytes[0]] == \
        [(getattr(d.data, "marks", None), d.line, d.index) for d in as_text[0]]

"""Property tests for numaguard.lint.load.documents: nothing raises, and valid YAML loads as PyYAML loads it."""
from __future__ import annotations

from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from numaguard.lint.load.documents import Document, LoadError, PosDict, PosList, load_text

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "documents"
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MANIFESTS = [(FIXTURES / name).read_text(encoding="utf-8")
             for name in ("pod.yaml", "multi.yaml", "merge-keys.yaml", "aliases.yaml", "pod.json",
                          "kind-list.yaml", "scalars.yaml")]
YAML_CHARACTERS = list(":-?[]{},&*!|>'\"%@`#\t\n ") + ["---\n", "...\n", "<<: ", "*a", "&a ", "!!int ",
                                                   "\ufeff", "\x00", "\u2028", "é", "\r\n"]


def check_result(result: tuple) -> None:
    docs, errors = result
    assert all(type(d) is Document and isinstance(d.data, dict) for d in docs)
    assert all(type(e) is LoadError and e.message for e in errors)
    # documents come in text order: indexes and first lines strictly increase
    assert [d.index for d in docs] == sorted({d.index for d in docs})
    assert [d.line for d in docs] == sorted({d.line for d in docs})
    assert all(d.line >= 1 for d in docs[:1]) and all(d.index >= 0 for d in docs[:1])
    for e in errors:
        assert (e.line is None) == (e.column is None)
        assert e.line is None or (e.line >= 1 and e.column >= 1)
    for doc in docs:
        check_marks(doc.data)


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
def test_valid_yaml_loads_like_safe_load_all(text):
    expected = list(yaml.safe_load_all(text))
    docs, errors = load_text(text, "x.yaml")
    assert docs and [d.data for d in docs] == [d for d in expected if isinstance(d, dict)]
    assert [d.index for d in docs] == [i for i, d in enumerate(expected) if isinstance(d, dict)]
    not_mappings = [(i, d) for i, d in enumerate(expected) if d is not None and not isinstance(d, dict)]
    assert len(errors) == len(not_mappings)
    names = [(bool, "a boolean"), (list, "a list"), (str, "a string"), (int, "an integer"), (float, "a number")]
    for (i, d), error in zip(not_mappings, errors):
        what = next(name for cls, name in names if isinstance(d, cls))
        assert error.message == f"document {i + 1} is {what}, not a mapping"
    check_result((docs, errors))


@SETTINGS
@given(yaml_streams())
def test_valid_yaml_as_bytes_loads_the_same(text):
    as_text = load_text(text, "x.yaml")
    as_bytes = load_text(text.encode("utf-8"), "x.yaml")
    assert as_text[0], text                       # there is always a document to compare
    assert [d.data for d in as_bytes[0]] == [d.data for d in as_text[0]]
    assert as_bytes[1] == as_text[1]
    assert [(d.data.marks, d.line, d.index) for d in as_bytes[0]] == \
        [(d.data.marks, d.line, d.index) for d in as_text[0]]

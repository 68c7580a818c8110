"""The loader's two construct paths agree: plain YAML is built straight from parser events
(the fast path), everything else from PyYAML's node graph. For every real fixture file and for
random documents, both paths must give the same data, the same positions and the same
document boundaries."""
from __future__ import annotations


import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from numaguard.lint.load.documents import PosDict, PosList, _load_events, _load_yaml, looks_plain

from conftest import FIXTURES


def _marks(value):
    """Every recorded position in a loaded value, as a nested plain structure."""
    if isinstance(value, PosDict):
        return {k: (value.marks.get(k), _marks(v)) for k, v in value.items()}
    if isinstance(value, PosList):
        return [(m, _marks(v)) for m, v in zip(value.marks, value)]
    return None


def _both_paths(text: str):
    fast = _load_events(text, "x.yaml") if looks_plain(text) else None
    if fast is None:
        return None
    slow_docs, slow_starts, slow_errors, _ = _load_yaml(text, "x.yaml", [])
    return fast, (slow_docs, slow_starts, slow_errors)


def _assert_same(text: str) -> bool:
    both = _both_paths(text)
    if both is None:
        return False                  # the fast path declined: nothing to compare
    (fast_docs, fast_starts, fast_errors), (slow_docs, slow_starts, slow_errors) = both
    assert [d.data for d in fast_docs] == [d.data for d in slow_docs]
    assert [(d.index, d.line) for d in fast_docs] == [(d.index, d.line) for d in slow_docs]
    assert [_marks(d.data) for d in fast_docs] == [_marks(d.data) for d in slow_docs]
    assert fast_starts == slow_starts
    assert [e.message for e in fast_errors] == [e.message for e in slow_errors]
    return True


def test_fixture_files_load_the_same_on_both_paths():
    compared = 0
    for path in sorted(FIXTURES.rglob("*.y*ml")):
        text = path.read_text(encoding="utf-8", errors="replace")
        compared += _assert_same(text)
    assert compared > 100             # the fast path really took most fixtures


keys = st.sampled_from(["a", "spec", "cpu", "memory", "0x1F", "yes", "~", "1.5", "-", "k e y"])
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                    st.text(max_size=8), st.sampled_from(["500m", "4Gi", "on", "off", "null",
                                                         "2026-12-02", "0o17", "1_000", ".inf"]))
trees = st.recursive(scalars, lambda kids: st.one_of(st.lists(kids, max_size=4),
                                                      st.dictionaries(keys, kids, max_size=4)),
                     max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(docs=st.lists(st.dictionaries(keys, trees, min_size=1, max_size=4), min_size=1, max_size=3),
       flow=st.booleans())
def test_random_documents_load_the_same_on_both_paths(docs, flow):
    text = yaml.safe_dump_all(docs, default_flow_style=flow, sort_keys=False)
    _assert_same(text)

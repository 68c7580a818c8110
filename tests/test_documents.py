"""numaguard.lint.load.documents: positions, bad input of every kind, ignore comments, paths, Lists.

The inputs are real files under tests/fixtures/documents/ (several of them broken on purpose).
"""
from __future__ import annotations

import copy
import io
import json
import pickle
import sys
from pathlib import Path

import pytest
import yaml

from numaguard.lint.load import documents
from numaguard.lint.load.documents import (Document, LoadError, PosDict, PosList, expand_lists, load_file, load_paths,
                            load_text, position_of)

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures" / "documents"


def load(name: str) -> tuple[list[Document], list[LoadError]]:
    path = FIXTURES / name
    return load_text(path.read_bytes(), str(path))


def only_error(name: str) -> LoadError:
    docs, errors = load(name)
    assert docs == []
    assert len(errors) == 1, errors
    return errors[0]


# --------------------------------------------------------------------------- positions

def test_pod_fields_know_their_line_and_column():
    docs, errors = load("pod.yaml")
    assert errors == []
    [doc] = docs
    assert (doc.index, doc.line, doc.ignores) == (0, 1, frozenset())
    assert doc.source.endswith("pod.yaml")
    data = doc.data
    assert isinstance(data, PosDict) and isinstance(data["spec"]["containers"], PosList)
    assert data == yaml.safe_load((FIXTURES / "pod.yaml").read_text())
    assert data.marks["kind"] == (2, 7)
    assert data["metadata"].marks["namespace"] == (5, 14)
    assert data["spec"]["resources"]["limits"].marks["memory"] == (10, 15)
    assert data["spec"]["containers"].marks == [(12, 5), (16, 5)]
    assert data["spec"]["containers"][0]["resources"]["requests"].marks["memory"] == (15, 34)


def test_position_of_walks_the_path_and_falls_back_to_the_deepest_known_prefix():
    [doc] = load("pod.yaml")[0]
    data = doc.data
    assert position_of(data, ("spec", "containers", 0, "resources", "requests", "cpu")) == (15, 23)
    assert position_of(data, ("spec", "containers", 1, "image")) == (17, 12)
    # `requests` is missing from the second container: the container itself is the answer
    assert position_of(data, ("spec", "containers", 1, "resources", "requests", "cpu")) == (16, 5)
    assert position_of(data, ("spec", "containers", 7)) == (12, 3)
    assert position_of(data, ("spec", "containers", -1)) == (16, 5)
    assert position_of(data, ("nope",)) is None
    assert position_of(data, ()) is None
    assert position_of(data, ("kind", "deeper")) == (2, 7)
    assert position_of(data, (["unhashable"],)) is None


def test_position_of_on_plain_values_knows_nothing():
    plain = {"spec": {"containers": [{"name": "a"}]}}
    assert position_of(plain, ("spec", "containers", 0, "name")) is None
    assert position_of([1, 2], (0,)) is None
    assert position_of("text", ("a",)) is None
    # a PosDict below a plain dict is still found
    inner = PosDict(cpu="1")
    inner.marks["cpu"] = (3, 4)
    assert position_of({"limits": inner}, ("limits", "cpu")) == (3, 4)


def test_posdict_and_poslist_behave_as_dict_and_list():
    [doc] = load("pod.yaml")[0]
    data = doc.data
    assert json.loads(json.dumps(data)) == data
    clone = copy.deepcopy(data)
    assert clone == data and clone.marks == data.marks
    assert clone["spec"]["containers"].marks == data["spec"]["containers"].marks
    again = pickle.loads(pickle.dumps(data))
    assert again["spec"]["containers"].marks == data["spec"]["containers"].marks
    assert PosDict(a=1).marks == {} and PosList([1]).marks == []


def test_aliases_share_values_and_point_at_their_key():
    docs, errors = load("aliases.yaml")
    assert errors == []
    containers = docs[0].data["spec"]["containers"]
    assert containers[1]["resources"] == containers[0]["resources"]
    assert containers[1]["resources"] is containers[0]["resources"]     # built once, as PyYAML
    assert containers[0].marks["resources"] == (7, 16)
    assert containers[1].marks["resources"] == (11, 5)                  # the key of `*guaranteed`


# --------------------------------------------------------------------------- scalars, merges

def test_scalars_resolve_as_kubernetes_does():
    # go-yaml v2 resolve.go through sigs.k8s.io/yaml, not PyYAML's YAML 1.1 repository
    docs, errors = load("scalars.yaml")
    assert errors == []
    assert docs[0].data["data"] == {
        "hex": 31, "octal": 15, "underscored": 1000, "sexagesimal": "1:30", "float": 1500.0,
        "infinity": float("inf"), "true": True, "false": False, "tilde": None, "empty": None,
        "date": "2001-12-14T00:00:00Z", "quoted": "0x1F", "version": 1.1, "binary": "hello",
        "equals": "=", "single-letters": [True, True, False, False], "exponent": 1000.0,
        "octal-o": 15, "eight": 8.0}


def test_merge_keys_apply_in_order_as_go_yaml_v2_and_keep_marks():
    docs, errors = load("merge-keys.yaml")
    assert errors == []
    data = docs[0].data["data"]
    assert data["small"] == {"cpu": "1", "memory": "2Gi"}
    assert data["small"].marks == {"cpu": (5, 8), "memory": (13, 13)}
    # [*big, *defaults]: the first mapping wins a conflict
    assert data["both"] == {"cpu": "8", "memory": "1Gi", "hugepages": "2Gi"}
    assert data["both"].marks["cpu"] == (8, 8)
    assert data["bad-looking-but-quoted"] == {"<<": "not a merge"}


def test_a_merge_of_a_scalar_is_an_error():
    error = only_error("bad-merge.yaml")
    assert (error.line, error.column) == (4, 7)
    assert error.message == "map merge requires map or sequence of maps as the value"   # go-yaml's words


def test_merge_conflicts_resolve_in_the_order_written():
    # decode.go: a list of merged mappings is applied last to first (the earliest wins); a
    # mapping's `<<` and keys apply in order, so a key before a `<<` is overridden by it
    docs, errors = load_text("a: &a {long_key: 1}\nb: &b {long_key: 2}\nc: {<<: [*a, *b]}\n"
                             "d: {<<: *a, <<: *b}\ne: {long_key: 0, <<: *a}\nf: {<<: *a, long_key: 3}\n",
                             "x.yaml")
    assert errors == []
    assert [docs[0].data[k] for k in "cdef"] == [{"long_key": 1}, {"long_key": 2}, {"long_key": 1},
                                                 {"long_key": 3}]


def test_value_key_is_a_plain_string_key():
    docs, errors = load_text("=: equals\n<<: {a: 1}\n", "x.yaml")
    assert errors == []
    assert docs[0].data == {"=": "equals", "a": 1}


def test_unhashable_key_is_an_error_at_the_key():
    error = only_error("unhashable-key.yaml")
    assert (error.line, error.column) == (4, 5)
    assert "unhashable key" in error.message


def test_unknown_tag_is_ignored_as_go_yaml_does():
    docs, errors = load("unknown-tag.yaml")
    assert errors == []
    assert [d.index for d in docs] == [0, 1, 2]
    assert docs[1].data["data"] == {"bucket": "MyBucket"}
    assert docs[1].data["data"].marks["bucket"] == (8, 11)


def test_collections_with_other_tags_are_plain_collections():
    text = "s: !!set {a, b}\no: !!omap [{x: 1}, {w: 2}]\np: !!pairs [{x: 1}]\nb: !!binary aGk=\n"
    docs, errors = load_text(text, "x.yaml")
    assert errors == []
    assert docs[0].data == {"s": {"a": None, "b": None}, "o": [{"x": 1}, {"w": 2}],
                            "p": [{"x": 1}], "b": "hi"}


def test_explicitly_tagged_bad_scalar_is_an_error_not_an_exception():
    docs, errors = load_text("a: 1\nb: !!int ''\n", "x.yaml")
    assert docs == []
    assert [(e.line, e.column, e.message) for e in errors] == [
        (2, 4, "cannot decode !!null `` as a !!int")]


# --------------------------------------------------------------------------- broken input

def test_broken_document_keeps_the_ones_before_it():
    docs, errors = load("broken-middle.yaml")
    assert [d.data["metadata"]["name"] for d in docs] == ["before"]
    [error] = errors
    assert (error.line, error.column) == (9, 10)
    assert "mapping values are not allowed" in error.message


def test_documents_that_are_no_manifest_are_skipped_and_broken_manifests_are_errors():
    docs, errors = load("list-document.yaml")
    assert [(d.index, d.skip, d.skip_detail) for d in docs] == [
        (0, None, None), (1, "not-kubernetes", "a list"), (2, "not-kubernetes", "a bare value"),
        (4, "not-kubernetes", "a bare value")]
    assert docs[0].data["metadata"]["name"] == "fine"
    # colons forgotten: a manifest that kubectl cannot read
    assert [(e.line, e.column, e.message) for e in errors] == [
        (10, 1, "document 4 is a string, not a mapping")]


@pytest.mark.parametrize("name", ["empty.yaml", "comments-only.yaml"])
def test_empty_files_have_no_documents_and_no_errors(name):
    assert load(name) == ([], [])


def test_text_that_is_not_utf8_is_reported_with_its_offset():
    error = only_error("not-utf8.yaml")
    assert (error.line, error.column) == (4, 12)
    assert "not valid UTF-8" in error.message and "0xe9" in error.message and "offset 52" in error.message


def test_control_characters_are_reported_where_they_are():
    error = only_error("control-character.yaml")
    assert (error.line, error.column) == (4, 15)
    assert "#x0007" in error.message


def test_byte_offsets_become_character_columns_after_multibyte_text():
    [error] = load_text("a: ééé\nb: héllo \x07\n".encode(), "x.yaml")[1]
    assert (error.line, error.column) == (2, 10)


def test_lone_surrogate_in_text_is_an_error():
    docs, errors = load_text("a: 1\nb: \ud800\n", "x.yaml")
    assert docs == []
    assert [(e.line, e.column) for e in errors] == [(2, 4)]


@pytest.mark.parametrize("name,label", [("utf16-bom.yaml", "utf16"), ("utf8-bom.yaml", "bom")])
def test_byte_order_marks_are_honoured(name, label):
    docs, errors = load(name)
    assert errors == []
    assert docs[0].data["metadata"] == {"name": label}
    assert docs[0].data.marks["kind"] == (2, 7)


def test_crlf_line_ends_keep_lines_right():
    docs, errors = load("crlf.yaml")
    assert errors == []
    assert [d.line for d in docs] == [1, 7]
    assert docs[0].data["metadata"].marks["name"] == (4, 9)
    assert docs[1].ignores == frozenset({"NG111"})


def test_billion_laughs_is_refused_without_expanding_it():
    error = only_error("billion-laughs.yaml")
    assert error.message == "document expands through aliases beyond 1,000,000 nodes"
    # at `&g [*f, ...]`: 9**7 "lol"s, the first node whose expansion crosses the limit
    assert (error.line, error.column) == (11, 6)


def test_alias_expansion_limit_is_counted_over_the_expanded_tree(monkeypatch):
    text = "a: &a [1, 2, 3]\nb: [*a, *a, *a, *a]\n"         # 1 + 4 + 1 + 4*4 + keys = 24 nodes
    assert load_text(text, "x.yaml")[1] == []
    monkeypatch.setattr(documents, "MAX_EXPANDED_NODES", 20)
    docs, errors = load_text(text, "x.yaml")
    assert docs == [] and "beyond 20 nodes" in errors[0].message
    # without a `*` there is no alias, and no limit: size is bounded by the text
    assert load_text("a: [" + ", ".join(["1"] * 50) + "]\n", "x.yaml")[1] == []


def test_chained_merge_keys_count_as_expansion():
    # 1500 mappings, each merging the one before: small text, a quadratic amount of data
    error = only_error("merge-bomb.yaml")
    assert "expands through aliases" in error.message
    docs, errors = load_text("a: &a {x: 1}\nb: &b {<<: *a, w: 2}\nc: {<<: *b, z: 3}\n", "x.yaml")
    assert errors == [] and docs[0].data["c"] == {"x": 1, "w": 2, "z": 3}


def test_recursive_alias_is_an_error():
    error = only_error("recursive-alias.yaml")
    assert "recursive alias" in error.message
    assert (error.line, error.column) == (3, 11)


def test_recursive_merge_is_an_error():
    docs, errors = load_text("a: &a {b: 1, <<: *a}\n", "x.yaml")
    assert docs == [] and "recursive alias" in errors[0].message


def test_hundred_thousand_brackets_are_an_error_not_a_crash():
    error = only_error("deep-nesting.yaml")
    assert "nesting depth" in error.message
    assert error.line == 1


def test_nesting_deeper_than_python_recursion_is_an_error():
    error = only_error("deep-nesting-999.yaml")
    assert error.message == "document 1 nests too deeply"


def test_pure_python_loader_gives_the_same_answers(monkeypatch):
    monkeypatch.setattr(documents, "_Loader", yaml.SafeLoader)
    assert documents._loader_class().__mro__[1] is not getattr(yaml, "CSafeLoader", None)
    docs, errors = load("pod.yaml")
    assert errors == [] and docs[0].data["spec"]["containers"].marks == [(12, 5), (16, 5)]
    assert load("broken-middle.yaml")[1][0].line == 9
    error = only_error("control-character.yaml")
    assert (error.line, error.column) == (4, 15)
    assert "nest" in only_error("deep-nesting.yaml").message


def test_extended_pyyaml_resolver_tables_do_not_change_the_kubernetes_reading(monkeypatch):
    monkeypatch.setattr(documents._Loader, "yaml_path_resolvers", {(("x",), None): "tag:yaml.org,2002:str"})
    assert documents._loader_class() is not documents._Loader
    assert load_text("x: 1\n", "x.yaml")[0][0].data == {"x": 1}


# --------------------------------------------------------------------------- JSON

def test_json_parses_with_positions_and_json_numbers():
    docs, errors = load("pod.json")
    assert errors == []
    data = docs[0].data
    assert data == json.loads((FIXTURES / "pod.json").read_text())
    assert data["spec"]["overhead"]["ratio"] == 1000.0            # YAML 1.1 would say "1e3"
    assert data.marks["kind"] == (3, 11)
    assert position_of(data, ("spec", "containers", 0, "resources", "limits", "cpu")) == (8, 69)


def test_exponent_is_a_float_in_yaml_and_json_files_alike():
    # go-yaml's yamlStyleFloat takes `1e3`; YAML 1.1 (PyYAML) would keep it a string
    assert load_text('{"a": 1e3}', "x.yaml")[0][0].data == {"a": 1000.0}
    assert load_text('{"a": 1e3}', "x.json")[0][0].data == {"a": 1000.0}


def test_json_with_tabs_parses():
    docs, errors = load("tabs.json")
    assert errors == []
    assert docs[0].data["metadata"]["name"] == "tabbed"


def test_json_that_yaml_refuses_falls_back_to_json_without_positions():
    docs, errors = load("surrogate-escape.json")
    assert errors == []
    [doc] = docs
    assert doc.data["metadata"]["name"] == "emoji-\U0001F600" and doc.line == 1
    assert position_of(doc.data, ("metadata", "name")) is None


def test_json_key_longer_than_yaml_allows_falls_back_to_json():
    docs, errors = load("long-key.json")
    assert errors == [] and docs[0].data["kind"] == "ConfigMap"


def test_json_array_is_skipped_as_not_kubernetes():
    docs, errors = load("array.json")
    assert errors == [] and [(d.skip, d.skip_detail) for d in docs] == [("not-kubernetes", "a list")]


# --------------------------------------------------------------------------- ignore comments

def test_ignore_comments_belong_to_their_document():
    docs, errors = load("multi.yaml")
    assert errors == []
    assert [(d.index, d.line) for d in docs] == [(0, 4), (1, 11), (4, 27)]
    assert docs[0].ignores == frozenset({"NG112"})                 # header above the first ---
    assert docs[1].ignores == frozenset({"NG206", "NG207"})        # not NG999: that is scalar text
    assert docs[2].ignores == frozenset({"NG101"})                 # from the empty document before
    assert "--- when indented" in docs[1].data["metadata"]["annotations"]["note"]


def test_ignore_comment_after_block_scalar_still_counts():
    text = "a: |\n  text\n# numaguard: ignore NG301\nb: 1\n---\nc: 2\n"
    docs, errors = load_text(text, "x.yaml")
    assert errors == []
    assert [d.ignores for d in docs] == [frozenset({"NG301"}), frozenset()]


@pytest.mark.parametrize("text,expected", [
    # a one-line document followed directly by `---`: the comment below the marker is the next one's
    ("a: 1\n---\n# numaguard: ignore NG206\nb: 2\n", [(1, set()), (4, {"NG206"})]),
    ("a: 1\n# numaguard: ignore NG206\n---\nb: 2\n", [(1, {"NG206"}), (4, set())]),
    ("# numaguard: ignore NG206\na: 1\n---\nb: 2\n", [(2, {"NG206"}), (4, set())]),
    ("{a: 1}\n---\n# numaguard: ignore NG206\n{b: 2}\n", [(1, set()), (4, {"NG206"})]),
    # one-line documents written on their `---` line
    ("--- {a: 1}\n---\n# numaguard: ignore NG206\nb: 2\n", [(1, set()), (4, {"NG206"})]),
    ("--- {a: 1}\n# numaguard: ignore NG206\n--- {b: 2}\n", [(1, {"NG206"}), (3, set())]),
    ("--- {a: 1}\n--- {b: 2}\n# numaguard: ignore NG206\n--- {c: 3}\n",
     [(1, set()), (2, {"NG206"}), (4, set())]),
    ("---\na: 1\n# numaguard: ignore NG206\n---\nb: 2\n", [(2, {"NG206"}), (5, set())]),
    # after `...` the comment is outside the ended document: it goes to the next one
    ("a: 1\n...\n# numaguard: ignore NG206\n---\nb: 2\n", [(1, set()), (5, {"NG206"})]),
    ("a: 1\n# numaguard: ignore NG206\n...\n---\nb: 2\n", [(1, {"NG206"}), (5, set())]),
    # only a comment line counts: after a value or on the marker line it is YAML's comment only
    ("a: 1  # numaguard: ignore NG206\n---\nb: 2\n", [(1, set()), (3, set())]),
    ("--- # numaguard: ignore NG206\na: 1\n", [(2, set())]),
])
def test_ignore_comments_next_to_one_line_documents(text, expected):
    docs, errors = load_text(text, "x.yaml")
    assert errors == []
    assert [(d.line, set(d.ignores)) for d in docs] == expected
    # the event path (no ignore comments) places the documents on the same lines
    assert [d.line for d in load_text(text.replace("numaguard:", "other:"), "x.yaml")[0]] == \
        [line for line, _ in expected]


@pytest.mark.parametrize("comment,ids", [
    ("# numaguard: ignore NG206 # because of the db", {"NG206"}),
    ("# numaguard: ignore NG206 because NG207 is noisy", {"NG206"}),
    ("  #numaguard:ignore ng206;NG301", {"NG206", "NG301"}),
    ("# numaguard: ignore all", {"all"}),
    ("# numaguard: ignore", set()),
    ("# numaguard: ignored NG206", set()),
    ("# numaguard: check NG206", set()),
])
def test_ignore_comment_forms(comment, ids):
    docs, _ = load_text(f"{comment}\na: 1\n", "x.yaml")
    assert docs[0].ignores == frozenset(ids)


# --------------------------------------------------------------------------- files

def test_load_paths_walks_directories_sorted_and_skips_hidden_and_other_files():
    tree = FIXTURES / "tree"
    seen = [(Path(src).relative_to(tree).as_posix(), [d.data["kind"] for d in docs], errors)
            for src, docs, errors in load_paths([str(tree)])]
    assert seen == [("a.yml", ["B"], []), ("apps/d.yaml", ["D"], []), ("apps/g.generated.yaml", ["G"], []),
                    ("b.yaml", ["A"], []), ("c.json", ["C"], []), ("vendor/chart/e.yaml", ["E"], [])]


@pytest.mark.parametrize("patterns,expected", [
    (["vendor/**"], ["a.yml", "apps/d.yaml", "apps/g.generated.yaml", "b.yaml", "c.json"]),
    (["**/vendor/**"], ["a.yml", "apps/d.yaml", "apps/g.generated.yaml", "b.yaml", "c.json"]),
    (["vendor"], ["a.yml", "apps/d.yaml", "apps/g.generated.yaml", "b.yaml", "c.json"]),
    (["*.generated.yaml"], ["a.yml", "apps/d.yaml", "b.yaml", "c.json", "vendor/chart/e.yaml"]),
    (["apps/*.yaml", "*.json"], ["a.yml", "b.yaml", "vendor/chart/e.yaml"]),
    (["*.yaml"], ["a.yml", "c.json"]),
    (["apps/[dg]*.yaml"], ["a.yml", "b.yaml", "c.json", "vendor/chart/e.yaml"]),
])
def test_exclude_patterns(patterns, expected):
    tree = FIXTURES / "tree"
    got = [Path(src).relative_to(tree).as_posix() for src, _, _ in load_paths([str(tree)], exclude=patterns)]
    assert got == expected


def test_exclude_matches_the_path_as_given(monkeypatch):
    monkeypatch.chdir(FIXTURES)
    got = [src for src, _, _ in load_paths(["tree"], exclude=["tree/vendor/**", "./tree/apps/g.*"])]
    assert got == ["tree/a.yml", "tree/apps/d.yaml", "tree/b.yaml", "tree/c.json"]
    assert list(load_paths(["tree/b.yaml"], exclude=["tree/*.yaml"])) == []


def test_paths_may_be_path_objects():
    [(src, docs, errors)] = load_paths([FIXTURES / "pod.yaml"], exclude=["nothing/**"])
    assert src == str(FIXTURES / "pod.yaml") and docs[0].data["kind"] == "Pod"


def test_explicit_files_are_loaded_whatever_their_suffix():
    [(src, docs, errors)] = load_paths([str(FIXTURES / "tree" / "notes.txt")])
    assert errors == [] and [(d.data, d.skip, d.skip_detail) for d in docs] == [
        ("not yaml", "not-kubernetes", "a bare value")]


def test_missing_path_raises_before_anything_is_loaded():
    paths = load_paths([str(FIXTURES / "pod.yaml"), str(FIXTURES / "no-such-file.yaml")])
    with pytest.raises(FileNotFoundError) as info:
        next(paths)
    assert info.value.filename.endswith("no-such-file.yaml")


def test_a_link_that_dangles_by_the_time_it_is_read_is_skipped(tmp_path):
    target = tmp_path / "gone.yaml"
    (tmp_path / "link.yaml").symlink_to(target)
    target.write_text("a: 1\n")
    paths = load_paths([str(tmp_path)])
    target.unlink()                       # the link dangles now: nothing to read
    assert list(paths) == [(str(tmp_path / "link.yaml"),
                            [Document(str(tmp_path / "link.yaml"), 0, None, 1, frozenset(),
                                      skip="dangling-symlink", skip_detail=str(target))], [])]


def test_unreadable_file_is_a_load_error(tmp_path):
    (tmp_path / "folder.yaml").mkdir()
    assert load_file(str(tmp_path / "folder.yaml")) == (
        str(tmp_path / "folder.yaml"), [],
        [LoadError(str(tmp_path / "folder.yaml"), None, None, "cannot read file: Is a directory")])


def test_dash_reads_stdin(monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(b"kind: Pod\n---\n- not a mapping\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", stdin)
    [(src, docs, errors)] = load_paths(["-"])
    assert src == "<stdin>" and docs[0].source == "<stdin>"
    assert docs[0].data == {"kind": "Pod"}
    assert errors == [] and docs[1].skip == "not-kubernetes"


# --------------------------------------------------------------------------- Lists

def item_at(data, path):
    for step in path:
        data = data[step]
    return data


def test_expand_lists_gives_each_item_with_its_path():
    [doc] = load("kind-list.yaml")[0]
    expanded = expand_lists(doc)
    assert all(entry is doc for entry, _ in expanded)          # positions stay whole
    assert [prefix for _, prefix in expanded] == [("items", 0), ("items", 1), ("items", 2, "items", 0)]
    items = [item_at(doc.data, prefix) for _, prefix in expanded]
    assert items[0]["metadata"]["name"] == "one"
    assert items[1] == "not a mapping"                          # the engine reports it
    assert items[2]["metadata"]["name"] == "nested"
    assert position_of(doc.data, expanded[2][1] + ("metadata", "name")) == (13, 22)
    assert position_of(doc.data, expanded[1][1]) == (7, 3)


def test_expand_lists_leaves_other_documents_alone():
    [doc] = load("pod.yaml")[0]
    assert expand_lists(doc) == [(doc, ())]
    odd = Document("x", 0, {"kind": "List", "items": "oops"}, 1, frozenset())
    assert expand_lists(odd) == [(odd, ())]
    empty = Document("x", 0, {"kind": "DeploymentList", "items": []}, 1, frozenset({"NG1"}))
    assert expand_lists(empty) == []
    plain = Document("x", 0, {"kind": "List", "items": [{"kind": "Pod"}]}, 1, frozenset())
    assert expand_lists(plain) == [(plain, ("items", 0))]

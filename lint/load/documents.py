"""Load YAML/JSON documents and keep the line and column of every field.

PyYAML (libyaml's C parser when present) parses the text; this module builds plain Python
values itself, because PyYAML's constructor throws the positions away. Plain YAML (no
anchors, aliases, tags or merge keys: nearly every manifest) is built straight from the
parser's events; anything else from the node graph PyYAML composes. Mappings become
`PosDict`s and sequences `PosList`s: ordinary dicts and lists that also carry `.marks`, the
1-based (line, column) of every value. Scalars are resolved as Kubernetes resolves them
(go-yaml v2 through sigs.k8s.io/yaml, see `numaguard.lint.load.kube_yaml`), so every manifest
kubectl accepts loads, with the values the API server will see; a key written twice in one
mapping is an error, as in kubectl. A file of concatenated JSON objects is a stream of
documents, as kubectl reads it.

Bad input never raises: it becomes a `LoadError` (reported as NG001) and the documents that
parsed before it are kept. Guards: alias expansion is measured on the node graph before
anything is built (billion laughs), nesting is bounded by libyaml (1000 levels) and by
Python's recursion limit (caught), bytes that are not UTF-8 are reported with their offset.

Merge keys (`<<`) apply as in go-yaml v2: in the order written, each `<<` and each key
overriding what came before it; within a list of merged mappings the earliest wins.

A document that is not a Kubernetes object as written (a list, a template, a kustomize patch,
see `numaguard.lint.load.skips`) comes back as a Document with `skip` set to the reason.

Where things are: this module is the public face (Document, LoadError, load_text, load_paths,
position_of, expand_lists) and turns a text's stream of documents into Documents and
LoadErrors. Building one document's values (PosDict, PosList, the node and event paths, the
alias guard) is in `numaguard.lint.load.yaml_build`; `# numaguard: ignore` comments in
`numaguard.lint.load.ignore_comments`; choosing files (directory walks, `--exclude`) in `numaguard.lint.load.files`.
"""
from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import yaml
from yaml.events import DocumentEndEvent, StreamEndEvent, StreamStartEvent

from numaguard.lint.load.files import CHECKPOINT_NAMES, STDIN_ARGUMENT, input_files
from numaguard.lint.load import later_stages, skips
from numaguard.lint.model import value_kind
from numaguard.lint.load.ignore_comments import ignores_by_document
from numaguard.lint.load.yaml_build import (QUICK_LOADERS, DocumentError, EventBuilder,
                                            NodeBuilder, PosDict, PosList, RepeatedKey, expanded_size,
                                            names_an_object, quick_loader_class)

__all__ = ["Document", "LoadError", "PosDict", "PosList", "MAX_EXPANDED_NODES", "STDIN",
           "load_text", "load_paths", "load_file", "looks_plain", "position_of", "expand_lists"]

# libyaml when PyYAML was built with it; the pure-Python loader gives the same nodes, slower.
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _loader_class() -> type:
    """The class to parse with: `_Loader` with the quick resolver (see numaguard.lint.load.yaml_build)."""
    return quick_loader_class(_Loader)


MAX_EXPANDED_NODES = 1_000_000      # a document may not grow beyond this through aliases
# Document.skip_detail of a mapping without apiVersion and kind that gives a key twice
REPEATED_KEY = "no apiVersion or kind, and a key given twice"
STDIN = "<stdin>"
_NO_IGNORES: frozenset[str] = frozenset()


@dataclass
class Document:
    source: str                 # file path as given, or "<stdin>"
    index: int                  # 0-based document number within the file (null documents count)
    data: Any                   # a PosDict (plain dict when a JSON file only parsed with json)
    line: int                   # 1-based line where the document's content starts
    ignores: frozenset[str]     # rule ids from "# numaguard: ignore NG206, NG207" lines in it
    skip: str | None = None     # why it is not linted (`numaguard.lint.load.skips` reasons)
    skip_detail: str | None = None   # e.g. "a list", "Helm chart"
    # keys given twice (the later value kept, as kubectl reads it): the engine reports them on a
    # document it judges (NG001) and counts any other as REPEATED_KEY's not-kubernetes
    repeated_keys: tuple[RepeatedKey, ...] = ()


@dataclass
class LoadError:
    source: str
    line: int | None
    column: int | None
    message: str
    # where the construct the parser gave up on began (a simple key, a block mapping)
    context: tuple[int, int] | None = field(default=None, compare=False)


# --------------------------------------------------------------------------- loading text

def load_text(text: str | bytes, source: str, *, whole_file: bool = True) -> tuple[list[Document], list[LoadError]]:
    """Parse every document of one file's text. Never raises; problems come back as errors.

    `whole_file` (a file or standard input, not a string embedded in an object) also decides
    what a file is by its text (`_file_verdict`): a printf template, a text that is no object at
    all although it does not parse, a release manifest OpenShift deletes."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        decoded, error = _decode(raw, source)
        if whole_file and (error is not None or "\0" in decoded) and skips.binary_non_object(raw):
            # a key or a certificate named .json: no text, no object (but a broken manifest
            # that names apiVersion or kind stays NG001)
            return [Document(source, 0, None, 1, _NO_IGNORES, skip=skips.NOT_KUBERNETES,
                             skip_detail=skips.BINARY)], []
        if error is not None:
            return [], [error]
        text = decoded
    if not text.strip():
        return [], []
    try:
        roots: list[Any] | None = [] if "numaguard:" in text else None
        documents, starts, errors, parse_failed = _load_yaml(text, source, roots)
    except Exception as exc:                    # belt and braces: nothing escapes
        return [], [LoadError(source, None, None, f"cannot parse: {exc}")]
    stage = later_stages.template_stage(text, bool(errors))
    if stage is not None:
        return [template_document(source, stage)], []
    if parse_failed and text.lstrip()[:1] in ("{", "["):
        # JSON that YAML refuses (tabs, long keys, concatenated objects): read it as kubectl
        # does, as a stream of JSON values (k8s.io/apimachinery/pkg/util/yaml, YAMLOrJSONDecoder).
        fallback = _load_json_stream(text, source)
        if fallback is not None:
            return fallback
    if whole_file:
        verdict = _file_verdict(text, source, documents, errors, parse_failed)
        if verdict is not None:
            return verdict, []
    if documents and roots is not None:
        for document, ignores in zip(documents, ignores_by_document(text, starts, roots)):
            document.ignores = ignores
    return documents, errors


def _file_verdict(text: str, source: str, documents: list[Document], errors: list[LoadError],
                  parse_failed: str | None) -> list[Document] | None:
    """What a whole file is, when its text says so (else None, and it is loaded as usual):

    * a file whose parse fails on a printf or `%NAME%` placeholder is a template (a Go
      `fmt.Sprintf` input, a `%VAR%` file a script fills in), skipped as such;
    * a file that is not YAML and is no object at all (`skips.unparsed_non_object`: MIME user
      data, KEP metadata, a deliberately malformed test input) is skipped as not-kubernetes; a
      broken manifest, which names apiVersion or kind, stays NG001;
    * documents OpenShift's cluster-version operator deletes are skipped as `deletion` (not in
      the webhook, which never sees files: an annotation must not exempt a pod from review).
    """
    if parse_failed == SYNTAX and os.path.basename(source) not in CHECKPOINT_NAMES:   # NG406 judges those
        error = errors[-1]
        stage = later_stages.placeholder_stage(text, (error.line, error.column), error.context or (None, None))
        if stage is not None:
            return [template_document(source, stage)]
        detail = skips.unparsed_non_object(text)
        if detail is not None:
            return [Document(source, 0, None, 1, _NO_IGNORES, skip=skips.NOT_KUBERNETES, skip_detail=detail)]
    for document in documents:
        if document.skip is None and skips.is_cvo_deletion(document.data):
            document.skip, document.skip_detail = skips.DELETION, skips.CVO_DELETION
    return None


def template_document(source: str, stage: later_stages.LaterStage) -> Document:
    """The one Document standing for a template file (Helm, Jinja, a file with placeholders):
    skipped, counted by the stage that renders it (`skip_detail`)."""
    return Document(source, 0, None, 1, _NO_IGNORES, skip=skips.TEMPLATE, skip_detail=stage.name)


def looks_plain(text: str) -> bool:
    """No anchor (`&`) and no tag (`!`): worth trying the event path (`_load_events`), which
    declines anything else it meets. (Ignore comments and JSON numbers take the node path too.)"""
    return "&" not in text and "!" not in text


def _load_yaml(text: str, source: str, roots: list[Any] | None
               ) -> tuple[list[Document], list[int], list[LoadError], str | None]:
    """Documents, their 0-based start lines, errors, and how parsing itself failed: None (it did
    not), SYNTAX (the text is not YAML) or GUARD (a character, the nesting limit, recursion).

    `roots`, when given, collects every document's node graph (see `numaguard.lint.load.ignore_comments`).
    """
    if roots is None and looks_plain(text):
        loaded = _load_events(text, source)
        if loaded is not None:
            return (*loaded, None)
    documents: list[Document] = []
    starts: list[int] = []
    errors: list[LoadError] = []
    may_alias = "*" in text            # no alias without a `*`: skip measuring expansion
    loader = None
    byte_offsets = False
    index = 0
    try:
        loader_class = _loader_class()
        byte_offsets = not issubclass(loader_class, yaml.SafeLoader)    # libyaml counts bytes
        loader = loader_class(text)
        while loader.check_node():
            root = loader.get_node()
            position = index
            index += 1
            if root is None:
                continue
            if roots is not None:
                roots.append(root)
            try:
                if may_alias:
                    expanded_size(root, MAX_EXPANDED_NODES)
                builder = NodeBuilder(loader, may_alias)
                data = builder.construct(root)
            except DocumentError as exc:
                mark = exc.mark
                errors.append(LoadError(source, mark.line + 1 if mark else None,
                                        mark.column + 1 if mark else None, exc.message))
                continue
            except RecursionError:
                line, column = _mark(root)
                errors.append(LoadError(source, line, column,
                                        f"document {position + 1} nests too deeply"))
                continue
            except Exception as exc:                    # PyYAML's constructors, bad explicit tags
                errors.append(_construct_error(exc, source, root))
                continue
            if builder.repeated and not names_an_object(root):
                # no apiVersion, no kind (an LVM JSON report, a Helm values.yaml): not an
                # object, so not one the API server refuses; skipped as any such mapping
                line = _mark(root)[0]
                documents.append(Document(source, position, None, line, _NO_IGNORES,
                                          skip=skips.NOT_KUBERNETES, skip_detail=REPEATED_KEY))
                starts.append(line - 1)
                continue
            if data is not None:                          # None: an empty document (`---` alone)
                _keep(data, position, _mark(root), source, documents, starts, errors)
                if builder.repeated and documents and documents[-1].data is data:
                    documents[-1].repeated_keys = tuple(builder.repeated)
    except Exception as exc:       # YAMLError, RecursionError (Python parser), encoding errors
        errors.append(_yaml_error(exc, source, text, byte_offsets))
        return documents, starts, errors, _failure(exc)
    finally:
        if loader is not None:
            loader.dispose()
    return documents, starts, errors, None


SYNTAX, GUARD = "syntax", "guard"


def _failure(exc: Exception) -> str:
    """SYNTAX for a text that is not YAML (the scanner or parser stops on it); GUARD for what
    the loader refuses to read: characters YAML does not allow, libyaml's nesting limit,
    Python's recursion limit."""
    if isinstance(exc, yaml.MarkedYAMLError) and not isinstance(exc, yaml.reader.ReaderError) \
            and "maximum nesting depth" not in str(exc.problem):        # libyaml's flow-level guard
        return SYNTAX
    return GUARD


def _keep(data: Any, position: int, where: tuple[int, int], source: str,
          documents: list[Document], starts: list[int], errors: list[LoadError]) -> None:
    """A built document joins `documents` (with its 0-based start line in `starts`) when it is
    a mapping, or something that is no manifest at all (skipped: a list of Ansible tasks or
    JSON patches, a bare value such as a text file named .json); a bare value that names
    `apiVersion` or `kind` is a manifest gone wrong (colons forgotten), the LoadError
    "document N is a string, not a mapping"."""
    line, column = where
    if isinstance(data, dict):
        documents.append(Document(source, position, data, line, _NO_IGNORES))
        starts.append(line - 1)
    elif isinstance(data, str) and ("apiVersion" in data or "kind" in data):
        errors.append(LoadError(source, line, column,
                                f"document {position + 1} is {_type_name(data)}, not a mapping"))
    else:
        detail = "a list" if isinstance(data, list) else "a bare value"
        documents.append(Document(source, position, data, line, _NO_IGNORES,
                                  skip=skips.NOT_KUBERNETES, skip_detail=detail))
        starts.append(line - 1)


def _load_events(text: str, source: str) -> tuple[list[Document], list[int], list[LoadError]] | None:
    """The fast path of `_load_yaml` for plain YAML (see `numaguard.lint.load.yaml_build.EventBuilder`); None
    when the text needs the node path: anything unusual, and any error, so that errors are
    reported by one path only."""
    loader_class = _loader_class()
    if loader_class not in QUICK_LOADERS.values():
        return None
    documents: list[Document] = []
    starts: list[int] = []
    errors: list[LoadError] = []
    try:
        loader = loader_class(text)     # the pure-Python reader may refuse the text already
    except Exception:
        return None
    try:
        builder = EventBuilder(loader)
        next_event = loader.get_event
        if next_event().__class__ is not StreamStartEvent:
            return None
        index = 0
        while True:
            if next_event().__class__ is StreamEndEvent:    # else a DocumentStartEvent
                break
            root = next_event()
            data = builder.value(root)
            if next_event().__class__ is not DocumentEndEvent:
                return None
            position = index
            index += 1
            if data is not None:                            # None: an empty document
                mark = root.start_mark
                _keep(data, position, (mark.line + 1, mark.column + 1), source, documents,
                      starts, errors)
    except Exception:             # yaml_build._Unsupported, YAMLError, RecursionError, constructors
        return None
    finally:
        loader.dispose()
    return documents, starts, errors


def _load_json_stream(text: str, source: str) -> tuple[list[Document], list[LoadError]] | None:
    """The JSON fallback: one document per JSON value in the text, or None when the text is not
    a stream of JSON values. Each value is read again by the YAML loader, padded to its place
    in the file, so that its fields keep their lines; a value YAML refuses (tabs, long keys)
    is taken as json reads it (findings then point at its first line)."""
    decoder = json.JSONDecoder()
    spans = []
    end = 0
    try:
        while True:
            while end < len(text) and text[end].isspace():
                end += 1
            if end >= len(text):
                break
            start = end
            data, end = decoder.raw_decode(text, start)
            spans.append((start, end, data))
    except (ValueError, RecursionError):
        return None
    documents: list[Document] = []
    errors: list[LoadError] = []
    for position, (start, end, data) in enumerate(spans):
        line = text.count("\n", 0, start)
        column = start - (text.rfind("\n", 0, start) + 1)
        padded = "\n" * line + " " * column + text[start:end]
        loaded, _, load_errors, _ = _load_yaml(padded, source, None)
        if isinstance(data, dict) and loaded and not load_errors and isinstance(loaded[0].data, dict):
            document = loaded[0]
            document.index = position
            documents.append(document)
        elif isinstance(data, dict):
            documents.append(Document(source, position, data, line + 1, _NO_IGNORES))
        else:
            _keep(data, position, (line + 1, column + 1), source, documents, [], errors)
    return documents, errors


# --------------------------------------------------------------------------- errors

def _construct_error(exc: Exception, source: str, root: Any) -> LoadError:
    if isinstance(exc, yaml.MarkedYAMLError) and (exc.problem_mark or exc.context_mark):
        return _yaml_error(exc, source, "")
    line, column = _mark(root)
    return LoadError(source, line, column, f"cannot build document: {exc}")


def _mark(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return (mark.line + 1, mark.column + 1)


def _type_name(value: Any) -> str:
    return value_kind(value)


def _decode(raw: bytes, source: str) -> tuple[str | None, LoadError | None]:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):         # UTF-16 with a byte order mark
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    try:
        return raw.decode(encoding), None
    except UnicodeDecodeError as exc:
        offset = exc.start
        line = raw.count(b"\n", 0, offset) + 1
        column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
        bad = raw[offset:offset + 1].hex()
        what = "UTF-16" if encoding == "utf-16" else "UTF-8"
        return None, LoadError(source, line, column,
                               f"file is not valid {what}: byte 0x{bad} at offset {offset} cannot be decoded")


def _yaml_error(exc: Exception, source: str, text: str, byte_offsets: bool = False) -> LoadError:
    if isinstance(exc, yaml.reader.ReaderError):
        # libyaml reports a byte offset into the UTF-8 text, the Python reader a char offset.
        position = exc.position
        if byte_offsets:
            prefix = text.encode("utf-8", "surrogatepass")[:position].decode("utf-8", "replace")
        else:
            prefix = text[:position]
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        character = exc.character
        shown = f"#x{character:04x}" if isinstance(character, int) else repr(character)
        return LoadError(source, line, column, f"unacceptable character {shown}: {exc.reason}")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        parts = [p for p in (exc.context, exc.problem) if p]
        message = ": ".join(parts) or "invalid YAML"
        if mark is None:
            return LoadError(source, None, None, message)
        context = exc.context_mark
        return LoadError(source, mark.line + 1, mark.column + 1, message,
                         (context.line + 1, context.column + 1) if context is not None else None)
    if isinstance(exc, RecursionError):
        return LoadError(source, None, None, "document nests too deeply")
    if isinstance(exc, UnicodeEncodeError):       # text (not bytes) with a lone surrogate
        prefix = text[:exc.start]
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        return LoadError(source, line, column,
                         f"text holds an unpaired surrogate U+{ord(text[exc.start]):04X}")
    return LoadError(source, None, None, f"cannot parse: {exc}")


# --------------------------------------------------------------------------- files

def load_paths(paths: Iterable[str], *, exclude: Iterable[str] = (), dependencies: bool = False
               ) -> Iterator[tuple[str, list[Document], list[LoadError]]]:
    """Load files, directories (recursively: *.yaml, *.yml, *.json, sorted) and `-` (stdin).

    Yields (source, documents, errors) per file. Raises FileNotFoundError, before yielding
    anything, for a path that does not exist. `exclude` holds glob patterns matched against
    the posix path (as given and relative to the directory argument); `**` crosses
    directories, a pattern without `/` matches a file or directory name anywhere. Hidden
    directories and files are skipped while walking a directory, and so are `vendor/` and
    `node_modules/` unless `dependencies` is set (as in the CLI, `lintDependencies`).
    """
    for file_path in input_files(paths, exclude, dependencies=dependencies):
        yield load_file(file_path)


def load_file(file_path: str) -> tuple[str, list[Document], list[LoadError]]:
    """Read and parse one file (`-`: standard input). Never raises: an unreadable file is an
    error. Returns (source, documents, errors)."""
    if file_path == STDIN_ARGUMENT:
        raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read()
        documents, errors = load_text(raw, STDIN)
        return STDIN, documents, errors
    if skips.is_helm_template(file_path):
        return file_path, [template_document(file_path, later_stages.HELM)], []
    if os.path.islink(file_path) and not os.path.exists(file_path):
        # a symlink to nothing (a moved or deleted target): no file, so no object and no
        # error; skipped, counted, and named in a note with where it points
        target = os.readlink(file_path)
        return file_path, [Document(file_path, 0, None, 1, _NO_IGNORES, skip=skips.DANGLING_SYMLINK,
                                    skip_detail=target)], []
    raw, error = _read(file_path)
    if error is not None:
        return file_path, [], [error]
    documents, errors = load_text(raw, file_path)
    _mark_by_place(file_path, documents)
    return file_path, documents, errors


def _mark_by_place(path: str, documents: list[Document]) -> None:
    """Skip the documents of files whose place says what they are: a kustomize patch, a
    kustomization, a Helm chart's Chart.yaml."""
    if skips.is_kustomize_patch(path):
        reason, detail = skips.PATCH, "named as a patch in a kustomization"
    elif skips.is_chart_file(path):
        reason, detail = skips.NOT_KUBERNETES, skips.HELM_CHART
    elif skips.is_helm_values(path):
        reason, detail = skips.NOT_KUBERNETES, skips.HELM_VALUES
    elif skips.is_kustomization(path):
        reason, detail = skips.NOT_KUBERNETES, "kustomization"
    else:
        return
    for document in documents:
        if document.skip is None or document.skip == skips.NOT_KUBERNETES:
            document.skip, document.skip_detail = reason, detail


def _read(path: str) -> tuple[bytes | None, LoadError | None]:
    try:
        with open(path, "rb") as handle:
            return handle.read(), None
    except OSError as exc:
        return None, LoadError(path, None, None, f"cannot read file: {exc.strerror or exc}")


# --------------------------------------------------------------------------- positions

def position_of(data: Any, path: tuple) -> tuple[int, int] | None:
    """The (line, column) of the deepest element of `path` whose position is known.

    Walks `path` (keys and list indexes) from `data`; plain dicts/lists are walked through
    but know no positions. None when no step of the path has a known position.
    """
    found = None
    current = data
    for step in path:
        if isinstance(current, dict):
            try:
                if step not in current:
                    break
            except TypeError:          # unhashable step
                break
            marks = getattr(current, "marks", None)
            if marks is not None and step in marks:
                found = marks[step]
            current = current[step]
        elif isinstance(current, list) and isinstance(step, int) and not isinstance(step, bool):
            if not -len(current) <= step < len(current):
                break
            marks = getattr(current, "marks", None)
            if marks is not None and len(marks) == len(current):
                found = marks[step]
            current = current[step]
        else:
            break
    return found


# --------------------------------------------------------------------------- Lists

def expand_lists(doc: Document) -> list[tuple[Document, tuple]]:
    """Split a `kind: List` (or any `*List` kind with `items`) into its items.

    Returns (doc, path prefix) per item: the document itself (so positions and ignore
    comments stay whole) and the path to the item inside it, ("items", i); a List inside a
    List gives ("items", i, "items", j). Items that are not mappings are returned too, for the
    engine to report. Any other document comes back as [(doc, ())].
    """
    return [(doc, prefix) for prefix in _list_item_paths(doc.data, ())]


def _list_item_paths(data: Any, prefix: tuple) -> list[tuple]:
    kind = data.get("kind") if isinstance(data, dict) else None
    items = data.get("items") if isinstance(data, dict) else None
    if not (isinstance(kind, str) and kind.endswith("List") and isinstance(items, list)):
        return [prefix]
    paths: list[tuple] = []
    for i, item in enumerate(items):
        paths.extend(_list_item_paths(item, prefix + ("items", i)))
    return paths

"""CEL that finds an object's pod templates, as `numaguard.lint.objects.pod_templates` does.

For the kind of the request (`request.kind`), every template path of its carrier
(`numaguard.lint.carriers`) is walked one step at a time over a list of records

    {"p": the path so far (".spec.template.spec"), "v": the value there,
     "a": the metadata of every mapping passed on the way, "o": from the old object}

starting from the object, and on UPDATE from the old object too, so that the whole pipeline
is written once for both. A Field step keeps the records whose value is a mapping holding the
field (a step that is missing or of the wrong shape drops the template: numaguard reports those
as NG002, and the API server or the kind's schema refuses them); the mapping's metadata joins
"a", whose annotations the template inherits, the deepest winning, as `_merged_annotations`
merges them. A list or map wildcard of at most `MAX_ITEMS` items expands to its items; a longer
one gives one record with no value ("v": null), which the policy reports instead of judging
(deploy/README.md, "What the policy costs the API server"). CEL's macros give no index and cannot
flatten a list of lists, so a wildcard numbers the items through a bounded list of index
pairs over the records so far, which become a variable of their own (evaluated once).
"""
from __future__ import annotations

from numaguard.lint.carriers import Each, Field, Guard, PodCarrier, PodCarriers, TemplatePath
from numaguard.lint.export.cel import indexes, record, select, string, strings

SCOPE_ANNOTATION = "numaguard.io/scope"
IGNORE_ANNOTATION = "numaguard.io/ignore"
MAX_ITEMS = 32          # templates per list or map wildcard
MAX_NESTED = 8          # items per wildcard below another one (config podTemplates only)
ROOTS = 2               # the object, and the old object on UPDATE


def kind_key() -> str:
    return 'request.kind.group + "/" + request.kind.kind'


def carrier_conditions(carriers: PodCarriers) -> list[tuple[PodCarrier, str]]:
    """Each carrier with the CEL test of the requests it serves: its group and kind, and its
    versions not served by an entry before it (`PodCarriers.find` takes the first that serves
    the version: a config entry replaces the built-in one for the versions it names)."""
    out = []
    seen: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for carrier in carriers.carriers:
        earlier = seen.setdefault((carrier.group, carrier.kind), [])
        if any(not versions for versions in earlier):
            continue                                # an earlier entry serves every version
        taken = sorted({v for versions in earlier for v in versions})
        test = f"{kind_key()} == {string(carrier.group + '/' + carrier.kind)}"
        if carrier.versions:
            served = [v for v in carrier.versions if v not in taken]
            if not served:
                continue
            test += f" && request.kind.version in {strings(served)}"
        elif taken:
            test += f" && !(request.kind.version in {strings(taken)})"
        earlier.append(carrier.versions)
        out.append((carrier, f"({test})"))
    return out


def _balanced(index: str, leaves: list[str], low: int, high: int) -> str:
    """`leaves[index]` for low <= index < high, else [], as nested conditionals log2(n) deep."""
    if high - low == 1:
        return f"({index} == {low} ? ({leaves[low]}) : [])"
    middle = (low + high) // 2
    return (f"({index} < {middle} ? {_balanced(index, leaves, low, middle)} :\n"
            f"{_balanced(index, leaves, middle, high)})")


def _concatenated(lists: list[str]) -> str:
    """The lists joined with `+`, nested as a balanced tree: CEL parsers limit how deeply an
    expression nests (32 in cel-go and cel-cpp), and `a + b + c...` nests one level per list
    (an AppWrapper has one walk per kind it may wrap)."""
    if not lists:
        return "[]"
    if len(lists) == 1:
        return lists[0]
    middle = len(lists) // 2
    return f"({_concatenated(lists[:middle])} + {_concatenated(lists[middle:])})"


def _item(path: str, value: str, held: str) -> str:
    return record(p=path, v=value, a=f"{held}.a", o=f"{held}.o")


class TemplateWalk:
    """The `templates` expression and the variables its wildcards need (`extra`, in order).
    `variables=False` (a matchCondition sees no variables): a kind whose paths have a wildcard
    is always sent, as one record with no value."""

    def __init__(self, variables: bool = True, old: bool = True) -> None:
        self.variables = variables
        self.old = old
        self.extra: list[tuple[str, str]] = []
        self.shared: dict[tuple, tuple[str, int]] = {}     # walks up to a wildcard, by their steps

    def roots(self) -> str:
        new = record(p='""', v="object", a="[]", o="false")
        if not self.old:
            return f"[{new}]"
        old = record(p='""', v="oldObject", a="[]", o="true")
        return f'([{new}] + (request.operation == "UPDATE" ? [{old}] : []))'

    def kinds(self, carriers: PodCarriers) -> list[tuple[str, str]]:
        """(the CEL test of the requests of one set of kinds with the same template paths, the
        walk of those paths), in the table's order."""
        groups: dict[tuple, list[str]] = {}
        walks: dict[tuple, PodCarrier] = {}
        for carrier, test in carrier_conditions(carriers):
            key = (tuple((p.text, p.unless, p.inline, p.containers) for p in carrier.paths), carrier.none_when)
            groups.setdefault(key, []).append(test)
            walks.setdefault(key, carrier)
        return [(" || ".join(groups[k]), _concatenated([self.path(p, walks[k].none_when) for p in walks[k].paths]))
                for k in groups]

    def variables_for(self, carriers: PodCarriers) -> list[tuple[str, str]]:
        """The variables that give `templates`: `kind`, the number of the first set of kinds
        the request's kind is one of (-1 for none); each set's walk (`templates0`...) with the
        variables its wildcards need; and `templates`, the walk of the request's set, chosen
        through a balanced tree of conditionals (CEL parsers limit how deeply an expression
        nests, and a policy variable is evaluated only when used)."""
        kinds = self.kinds(carriers)
        tests = "[" + ", ".join(test for test, _ in kinds) + "]"
        out = [("kind", f"({indexes(len(kinds))}.filter(i, {tests}[i]) + [-1])[0]")]
        out += self.extra
        out += [(f"templates{i}", walk) for i, (_, walk) in enumerate(kinds)]
        leaves = [f"variables.templates{i}" for i in range(len(kinds))]
        out.append(("templates", _balanced("variables.kind", leaves, 0, len(leaves))))
        return out

    def path(self, path: TemplatePath, none_when: tuple = ()) -> str:
        """The records of one template path (Field steps, then `spec`; an inline path ends at
        the pod spec itself, assembled as `numaguard.lint.objects._inline_target` assembles it).
        `none_when`: (annotation, values) of an object with no template of its own."""
        items, size = self.roots(), ROOTS
        if none_when:
            items = f"{items}.filter(r, !({object_annotation_in('r.v', none_when)}))"
        if path.unless:                     # an Argo Rollout with workloadRef has no template of its own
            value, guards = "r.v", []
            for name in path.unless:
                guards += [f"type({value}) == map", f"{string(name)} in {value}"]
                value = select(value, name)
            items = f"{items}.filter(r, !({' && '.join(guards)} && {value} != null))"
        steps = (*path.steps, *(() if path.inline else (Field("spec"),)))
        start = 0
        # paths that share their first steps up to a wildcard (an AppWrapper's, one per wrapped
        # kind) share that walk: a variable of its own, evaluated once
        for depth in range(len(steps), 0, -1):
            cached = self.shared.get((none_when, path.unless, steps[:depth]))
            if cached is not None:
                (items, size), start = cached, depth
                break
        for depth, step in enumerate(steps[start:], start=start + 1):
            if isinstance(step, Guard):
                items = f"{items}.filter(r, r.v == null || {_is_kind('r.v', step.group, step.kind)})"
            elif isinstance(step, Field):
                items = self._field(items, step.name)
            elif not self.variables:
                return "[" + record(p='"*"', v="null", a="[]", o="false") + "]"
            else:
                items, size = self._wildcard(items, size, step, MAX_ITEMS if size == ROOTS else MAX_NESTED)
                name = f"walk{len(self.extra)}"
                self.extra.append((name, items))
                items = f"variables.{name}"
                self.shared[(none_when, path.unless, steps[:depth])] = (items, size)
        items = f"{items}.filter(r, r.v == null || type(r.v) == map)"
        return f"{items}.map(r, r.v == null ? r : {_assembled(path)})" if path.inline else items

    @staticmethod
    def _field(items: str, name: str) -> str:
        value = select("r.v", name)
        made = record(p=f"r.p + {string('.' + name)}", v=value, a="r.a + [r.v.?metadata.orValue(null)]", o="r.o")
        return (f"{items}.filter(r, r.v == null || type(r.v) == map && {string(name)} in r.v && {value} != null)"
                f".map(r, r.v == null ? r : {made})")

    def _wildcard(self, items: str, size: int, step, bound: int) -> tuple[str, int]:
        name = f"walk{len(self.extra)}"
        self.extra.append((name, items))
        w, held = f"variables.{name}", f"variables.{name}[q[0]]"
        pairs = "[" + ", ".join(f"[{i}, {j}]" for i in range(size) for j in range(bound)) + "]"
        if step is Each.LIST_ITEM:
            shape, suffix = "list", "[*]"
            made = _item(f'{held}.p + "[" + string(q[1]) + "]"', f"{held}.v[q[1]]", held)
        else:
            shape, suffix = "map", ".*"
            key = f"{held}.v.map(k, k)[q[1]]"
            made = _item(f'{held}.p + "." + string({key})', f"{held}.v[{key}]", held)
        fits = f"type({held}.v) == {shape} && size({held}.v) <= {bound}"
        expanded = f"{pairs}.filter(q, q[0] < size({w}) && {fits} && q[1] < size({held}.v)).map(q, {made})"
        over = record(p=f"r.p + {string(suffix)}", v="null", a="r.a", o="r.o")
        beyond = f"{w}.filter(r, r.v != null && type(r.v) == {shape} && size(r.v) > {bound}).map(r, {over})"
        return f"({expanded} + {w}.filter(r, r.v == null) + {beyond})", size * (bound + 1)


def _is_kind(value: str, group: str, kind: str) -> str:
    """`value` is an object of this API group (any version) and kind."""
    version = f'{value}["apiVersion"]'
    in_group = f'{version}.startsWith({string(group + "/")})' if group else f'!{version}.contains("/")'
    return (f'type({value}) == map && "kind" in {value} && {value}.kind == {string(kind)} && '
            f'"apiVersion" in {value} && type({version}) == string && {in_group}')


# The pod spec fields the policy reads (lint/export/pod_rules_cel.py) and the refused ones.
_POD_FIELDS = ("resources", "nodeSelector", "tolerations", "affinity", "initContainers")


def _assembled(path: TemplatePath) -> str:
    """The record of an inline pod spec (`_inline_target`): the component's pod fields, a
    container field placed first (KServe's model), and its `annotations` as the pod's, last."""
    def value(name: str) -> str:
        return f'(type(r.v) == map && {string(name)} in r.v ? r.v[{string(name)}] : null)'

    own = f'(type({value("containers")}) == list ? {value("containers")} : [])'
    containers = value("containers")
    if path.containers:        # one list, not nested conditionals: CEL parsers limit nesting
        models = "[" + ", ".join(f"dyn({value(n)})" for n in path.containers) + "].filter(m, type(m) == map)"
        containers = f"(size({models}) > 0 ? [{models}[0]] + {own} : {containers})"
    pod = "{" + ", ".join(f"{string(n)}: dyn({value(n)})" for n in _POD_FIELDS) + \
        f', "containers": dyn({containers})' + "}"
    meta = '{"annotations": dyn(' + value("annotations") + ")}"
    return record(p="r.p", v=pod, a=f"r.a + [{meta}]", o="r.o")


def object_annotation_in(value: str, condition: tuple) -> str:
    """The object `value`'s annotation `condition[0]` is one of `condition[1]`."""
    key = string(condition[0])
    return (f'type({value}) == map && "metadata" in {value} && type({value}.metadata) == map && '
            f'"annotations" in {value}.metadata && type({value}.metadata.annotations) == map && '
            f'{key} in {value}.metadata.annotations && {value}.metadata.annotations[{key}] in {strings(condition[1])}')


def annotation(key: str) -> str:
    """The template's annotation `key` from `t.a` (the metadata passed on the way, deepest
    last): the last that has it; a value that is no string reads as "" (it is no scope and
    names no rule)."""
    found = (f"t.a.filter(m, type(m) == map && \"annotations\" in m && type(m.annotations) == map && "
             f"{string(key)} in m.annotations).map(m, m.annotations[{string(key)}])")
    last = f"{found}[size({found}) - 1]"
    return f"(size({found}) == 0 ? \"\" : type({last}) == string ? {last} : \"\")"

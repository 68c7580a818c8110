"""The pod rules NG101, NG103-NG107, NG111 and NG114 in CEL: the variables of the admission policy.

Each variable is a list with one record per pod template, each stage computing what the next
needs (CEL has no local bindings; a policy variable is evaluated once per request and then
reused, k8s.io/apiserver/pkg/admission/plugin/cel/composition.go):

    templates -> scoped -> tiered -> checked -> raw -> pods -> sums -> facts -> levels -> rule lists

mirroring, step for step, what the engine does with a pod (lint/stages/pods.py `PodStage.judge`):

* `tiered`: the scope tier, `pod_scope` in lint/rules/pods.py (lint/README.md "Which pods are
  policy-checked"): "unmanaged", "managed", "assumed", "validity" or "out"; "bounds" for a
  template beyond the policy's bounds (`Bounds`), which is reported, not judged;
* `checked`: the judged tiers, with "malformed" for what numaguard reports as NG002 (the
  API server or the kind's schema refuses it first) and "bounds" for quantities beyond the
  integer arithmetic below;
* `pods`: quantities as integers (CEL's `sum()` takes no Quantity): cpu in millicores and the
  rest in whole units, each rounded up as the API server rounds every ResourceList up to 1m
  (SetDefaults_ResourceList, pkg/apis/core/v1/defaults.go); containers' requests defaulted
  from their limits (SetDefaults_Pod);
* `sums`: the containers' aggregate requests and limits, max(app + sidecars, each init
  container + the sidecars declared before it) (component-helpers resource/helpers.go);
* `facts`, `levels`: the pod-level requests and limits after the API server's defaulting
  (defaultHugePagePodLimits, defaultPodRequests, defaultPodLimits in SetDefaults_Pod), as
  `_pod_level` in lint/k8s/resources.py;
* one list per rule of the templates it finds, each {"p": pod spec path, "m": message}.

Quantities are read with the Kubernetes quantity library (k8s.io/apiserver/pkg/cel/library/
quantity.go): `quantity()`, `isQuantity()`, `isInteger()`, `asInteger()`, `asApproximateFloat()`,
`compareTo()`, `isLessThan()`. A value that is not an integer (`isInteger()` also answers false
for "2000m" and "0.5Gi", by representation) is rounded up from `asApproximateFloat()`: the
float is within one unit of the value below 2^52 units, and `compareTo` picks the exact
ceiling among the four integers around it.
"""
from __future__ import annotations

from dataclasses import dataclass

from numaguard.lint.export.cel import indexes, read, record, string, strings
from numaguard.lint.export.pod_templates_cel import IGNORE_ANNOTATION, SCOPE_ANNOTATION, annotation
from numaguard.lint.model import DEFAULT_POOL_NAME, PoolSettings


@dataclass(frozen=True)
class Bounds:
    """What one pod template may hold for the policy to judge it: every list the expressions
    iterate has a bound, so that the cost of judging is bounded whatever the object (the Pod
    schema sets no maxItems on these lists). A template beyond them is reported, not judged."""

    containers: int = 32           # initContainers, and containers, each
    resources: int = 16            # names in one requests or limits map
    tolerations: int = 64
    terms: int = 16                # required node affinity terms, and expressions per term
    values: int = 64               # values of one node affinity expression


BOUNDS = Bounds()
# Quantities beyond these are not rounded exactly from asApproximateFloat() (deploy/README.md, "What the
# policy costs the API server").
MAX_FLOAT_MILLICORES = "4503599627370"       # cores: 2^52 millicores
MAX_FLOAT_UNITS = "4503599627370496"         # 2^52 bytes
MAX_CPU = "9223372036854775807m"             # NG002 beyond: millicores in an int64
MAX_INT64 = "9223372036854775807"
JUDGED_TIERS = ("managed", "assumed", "validity")
COVERED = ("NG101", "NG103", "NG104", "NG105", "NG106", "NG107", "NG111", "NG114")
# Every other rule about a pod, and why the policy leaves it out (deploy/README.md, "What the policy
# covers"; tests/export/test_admission_policy.py checks the two lists hold every pod rule).
NOT_COVERED = {
    "NG002": "the API server checks an object's schema and quantities before any policy runs (a CRD by its "
             "schema); the policy judges no template numaguard would report as NG002",
    "NG102": "the API server refuses other pod-level resources and claims itself (validatePodResourceName); "
             "nothing for a policy to add",
    "NG108": "the API server refuses invalid pod-level hugepages itself (page-size multiples, request equal to "
             "limit); nothing for a policy to add",
    "NG109": "the API server refuses pod-level resources on a Windows pod itself; nothing for a policy to add",
    "NG110": "an info that explains each container's placement in the budget: nothing to deny, and one message "
             "per container is more than an admission warning should carry",
    "NG112": "an info about images for canary runs (a placeholder image tells nothing about performance): "
             "nothing for admission to act on",
    "NG113": "depends on the node's kubelet configuration (a static CPU or Memory Manager policy, feature "
             "gates), which an admission policy cannot see",
    "NG301": "needs the pool's node description and the kubelet's NUMA allocation, simulated: beyond CEL and "
             "its cost limits; use the webhook or numaguard lint with a node description",
    "NG302": "needs the pool's node description and packs copies of the pod on a simulated node: beyond CEL "
             "and its cost limits",
    "NG303": "needs the node's threads per core and cpuManagerPolicyOptions, which an admission policy cannot "
             "see",
}


# -- small CEL pieces ------------------------------------------------------------------------------
def _supported(name: str) -> str:
    """component-helpers IsSupportedPodLevelResource: cpu, memory, hugepages-*."""
    return f'({name} == "cpu" || {name} == "memory" || {name}.startsWith("hugepages-"))'


def _hugepages(name: str) -> str:
    return f'{name}.startsWith("hugepages-")'


def _text(x: str) -> str:
    """A quantity value as ParseQuantity reads it: a string (surrounding spaces trimmed, as
    Quantity.UnmarshalJSON does) or a JSON number as written."""
    return f"(type({x}) == string ? {x}.trim() : string({x}))"


def _is_quantity(x: str) -> str:
    return f"((type({x}) == string || type({x}) == int || type({x}) == double) && isQuantity({_text(x)}))"


def _q(x: str) -> str:
    return f"quantity({_text(x)})"


def _units(name: str, x: str) -> str:
    """The value `x` of resource `name` as an integer: millicores for cpu, whole units
    otherwise, rounded up."""
    q = _q(x)
    milli = (f"({q}.isInteger() ? {q}.asInteger() * 1000 : [-1, 0, 1, 2].map(d, int({q}.asApproximateFloat() "
             f"* 1000.0) + d).filter(u, quantity(string(u) + \"m\").compareTo({q}) >= 0)[0])")
    whole = (f"({q}.isInteger() ? {q}.asInteger() : [-1, 0, 1, 2].map(d, int({q}.asApproximateFloat()) + d)"
             f".filter(u, quantity(string(u)).compareTo({q}) >= 0)[0])")
    return f'({name} == "cpu" ? {milli} : {whole})'


def _entries(m: str) -> str:
    """A resource map as a list of {"n": name, "v": integer}."""
    return f"{m}.map(k, {record(n='k', v=_units('k', f'{m}[k]'))})"


def _valid_map(m: str) -> str:
    """numaguard's NG002 checks of a requests or limits map (lint/k8s/pod_schema.py
    `_check_resource_list`): string names, quantities, non-negative, within int64 (cpu: in
    millicores). A name with a comma is no resource name (not a qualified name)."""
    x = f"{m}[k]"
    return (f"({m} == null || type({m}) == map && {m}.all(k, type(k) == string && !k.contains(\",\") && "
            f"{_is_quantity(x)} && {_q(x)}.compareTo(quantity(\"0\")) >= 0 && "
            f"{_q(x)}.compareTo(quantity(k == \"cpu\" ? \"{MAX_CPU}\" : \"{MAX_INT64}\")) <= 0))")


def _exact_map(m: str) -> str:
    """Every value of a (valid) map within what `_units` rounds exactly."""
    x = f"{m}[k]"
    return (f"({m} == null || {m}.all(k, {_q(x)}.isInteger() || "
            f"{_q(x)}.isLessThan(quantity(k == \"cpu\" ? \"{MAX_FLOAT_MILLICORES}\" : \"{MAX_FLOAT_UNITS}\"))))")


def _field(holder: str, name: str) -> str:
    """A field that may be absent, as null."""
    return f"({string(name)} in {holder} ? {holder}[{string(name)}] : null)"


def _requirement(holder: str, which: str) -> str:
    """`holder.resources.<which>` (requests or limits) as written, null when absent; `holder`
    is a mapping whose resources, when there, is a mapping (`_shape`)."""
    return (f'("resources" in {holder} && {holder}.resources != null && {string(which)} in {holder}.resources ? '
            f'{holder}.resources[{string(which)}] : null)')


def _value(items: str, name: str) -> str:
    """The integer of `name` in a list of entries, 0 when absent. (Its own variable `y`: a
    comprehension variable hides an outer one of the same name, and `name` is often `e.n`.)"""
    return f"{items}.filter(y, y.n == {name}).map(y, y.v).sum()"


def _has(items: str, name: str) -> str:
    return f"{items}.exists(y, y.n == {name})"


def _cpu(v: str) -> str:
    return f'({v} % 1000 == 0 ? string({v} / 1000) : string({v}) + "m")'


def _amount(name: str, v: str) -> str:
    """A number as numaguard writes it: cpu as 4 or 1500m, the rest with a binary suffix."""
    binary = " : ".join(f"{v} > 0 && {v} % {2 ** p} == 0 ? string({v} / {2 ** p}) + \"{s}\""
                        for s, p in (("Gi", 30), ("Mi", 20), ("Ki", 10)))
    return f'({name} == "cpu" ? {_cpu(v)} : {binary} : string({v}))'


def _ignored(rule_id: str) -> str:
    """numaguard.io/ignore names the rule (or all) on the template or its workload."""
    return f'p.ig.exists(x, x == "ALL" || x == {string(rule_id)})'


class PodRulesCel:
    """The variables after `templates` for the pools of a config. `refused`: CEL, the pod
    fields the request's kind refuses in its templates (Knative's resources)."""

    def __init__(self, pools: tuple[PoolSettings, ...], scope_all: bool, refused: str = "[]") -> None:
        self.pools = tuple(p for p in pools if p.node_labels or p.taint)
        self.scope_all = scope_all
        self.refused = refused

    @staticmethod
    def var(stage: str) -> str:
        return f"variables.{stage}"

    # -- scope -----------------------------------------------------------------------------------
    def stages(self) -> list[tuple[str, str]]:
        """(stage, CEL) after `templates`, in order."""
        b = BOUNDS
        terms_path = ["affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]
        fits = " && ".join([
            f"size({read('t.v', ['tolerations'], 'list', '[]')}) <= {b.tolerations}",
            f"size({read('t.v', terms_path, 'list', '[]')}) <= {b.terms}",
            f"{read('t.v', terms_path, 'list', '[]')}.all(m, size({read('m', ['matchExpressions'], 'list', '[]')}) <= {b.terms} && "
            f"{read('m', ['matchExpressions'], 'list', '[]')}.all(e, size({read('e', ['values'], 'list', '[]')}) <= {b.values}))",
            *(f"size({read('t.v', [name], 'list', '[]')}) <= {b.containers} && "
              f"{read('t.v', [name], 'list', '[]')}.all(c, size({read('c', ['resources', 'requests'], 'map', '{}')}) <= {b.resources} && "
              f"size({read('c', ['resources', 'limits'], 'map', '{}')}) <= {b.resources})"
              for name in ("initContainers", "containers")),
            f"size({read('t.v', ['resources', 'requests'], 'map', '{}')}) <= {b.resources}",
            f"size({read('t.v', ['resources', 'limits'], 'map', '{}')}) <= {b.resources}",
        ])
        scoped = record(
            p="t.p.substring(1)", v="t.v", o="t.o", s=annotation(SCOPE_ANNOTATION), r=self.refused,
            ig=f'{annotation(IGNORE_ANNOTATION)}.replace(";", ",").split(",").map(x, x.trim().upperAscii())',
            fit=f"t.v != null && {fits}",
            ns=read("t.v", ["nodeSelector"], "map", "{}"),
            tl=read("t.v", ["tolerations"], "list", "[]"),
            tm=read("t.v", terms_path, "list", "[]"),
            rq=read("t.v", ["resources", "requests"], "map", "{}"),
            rl=read("t.v", ["resources", "limits"], "map", "{}"),
        )
        ic, ac = read("t.v", ["initContainers"], "list", "[]"), read("t.v", ["containers"], "list", "[]")
        aimed = record(
            p="t.p", v="t.v", o="t.o", s="t.s", r="t.r", ig="t.ig", fit="t.fit", rq="t.rq", rl="t.rl",
            sel="t.fit ? [" + ", ".join(self._selects(pool) for pool in self.pools) + "] : []",
            tol="t.fit ? [" + ", ".join(self._tolerates(pool) for pool in self.pools) + "] : []",
            sc="t.fit ? [" + ", ".join(self._score(pool) for pool in self.pools) + "] : []",
        )
        tiered = record(p="t.p", v="t.v", o="t.o", ig="t.ig", aim=self._aim(), tier=self._tier(),
                        shape=f"t.fit && {self._shape()}")
        # The requests and limits maps as written (null when absent): the pod's, then the init
        # containers' requests, their limits, the containers' requests, their limits.
        maps = (f'[{_requirement("t.v", "requests")}, {_requirement("t.v", "limits")}] + '
                + " + ".join(f'{lst}.map(c, {_requirement("c", which)})' for lst in (ic, ac) for which in ("requests", "limits")))
        checked = record(p="t.p", o="t.o", ig="t.ig", aim="t.aim", tier="t.tier", ic=ic, ac=ac,
                         shape="t.shape", maps=f"t.shape ? {maps} : []")
        state = (f'!t.shape || !t.maps.all(m, {_valid_map("m")}) ? "malformed" : '
                 f'!t.maps.all(m, {_exact_map("m")}) ? "bounds" : "ok"')
        judged = record(p="t.p", o="t.o", ig="t.ig", aim="t.aim", tier="t.tier", ic="t.ic", ac="t.ac",
                        maps="t.maps", state=state)
        raw = record(p="t.p", o="t.o", tier="t.tier", ig="t.ig", aim="t.aim", ic="t.ic", ac="t.ac",
                     e=f"t.maps.map(m, m == null ? [] : {_entries('m')})")
        return [
            ("scoped", f"{self.var('templates')}.map(t, {scoped})"),
            ("aimed", f"{self.var('scoped')}.map(t, {aimed})"),
            ("tiered", f"{self.var('aimed')}.map(t, {tiered})"),
            ("checked", f"{self.var('tiered')}.filter(t, t.tier in {strings(JUDGED_TIERS)}).map(t, {checked})"),
            ("judged", f"{self.var('checked')}.map(t, {judged})"),
            ("raw", f'{self.var("judged")}.filter(t, t.state == "ok").map(t, {raw})'),
            ("pods", f"{self.var('raw')}.map(p, {self._pods()})"),
            ("sums", f"{self.var('pods')}.map(p, {self._sums()})"),
            ("facts", f"{self.var('sums')}.map(p, {self._facts()})"),
            ("levels", f"{self.var('facts')}.map(p, {self._levels()})"),
        ]

    def _selects(self, pool: PoolSettings) -> str:
        """`_selects_pool`: a nodeSelector entry with a pool label, or a required node affinity
        expression In (with the label's value) or Exists on a pool label key."""
        if not pool.node_labels:
            return "false"
        return "(" + " || ".join(f"({string(k)} in t.ns && t.ns[{string(k)}] == {string(v)}) || {self._affinity(k, v)}"
                                 for k, v in pool.node_labels.items()) + ")"

    @staticmethod
    def _affinity(key: str, value: str) -> str:
        """A required node affinity expression In (with the label's value) or Exists on the
        label `key`, in any term."""
        return (f"t.tm.exists(m, {read('m', ['matchExpressions'], 'list', '[]')}.exists(e, type(e) == map && "
                f"\"key\" in e && e.key == {string(key)} && \"operator\" in e && (e.operator == \"Exists\" || "
                f"e.operator == \"In\" && \"values\" in e && type(e.values) == list && {string(value)} in e.values)))")

    def _tolerates(self, pool: PoolSettings) -> str:
        """`_tolerates_pool` (core/v1 Toleration.ToleratesTaint): the pool's taint key, no
        effect or the taint's, and Exists or Equal with the taint's value."""
        taint = pool.taint
        if not taint:
            return "false"
        op = '(("operator" in x && x.operator != null && x.operator != "") ? x.operator : "Equal")'
        value = '(("value" in x && x.value != null && x.value != "") ? x.value : "")'
        effect = '!("effect" in x) || x.effect == null || x.effect == ""'
        if taint.get("effect"):
            effect += f" || x.effect == {string(taint['effect'])}"
        return (f"t.tl.exists(x, type(x) == map && \"key\" in x && x.key == {string(taint['key'])} && ({effect}) && "
                f"({op} == \"Exists\" || {op} == \"Equal\" && {value} == {string(taint.get('value') or '')}))")

    def _score(self, pool: PoolSettings) -> str:
        """`targeted_pools`' count for one pool: one per pool label selected (nodeSelector, or a
        required node affinity In/Exists expression on the label) and one for its taint
        tolerated; 0 for a pool the nodeSelector excludes (another value of a pool label,
        `_excludes`)."""
        selected = [f"(({string(k)} in t.ns && t.ns[{string(k)}] == {string(v)}) || {self._affinity(k, v)} ? 1 : 0)"
                    for k, v in pool.node_labels.items()]
        tolerated = [f"({self._tolerates(pool)} ? 1 : 0)"] if pool.taint else []
        excluded = " || ".join(f"({string(k)} in t.ns && t.ns[{string(k)}] != {string(v)})"
                               for k, v in pool.node_labels.items()) or "false"
        return f"({excluded} ? 0 : {' + '.join(selected + tolerated)})"

    def _aim(self) -> str:
        """Per pool (`self.pools` order): "selects" or "tolerates" when the template targets it
        (`targeted_pools`: among the pools of the highest count) half-way, selecting its labels
        without tolerating its taint or the reverse (NG111, judged in each targeted pool's
        context), else ""."""
        if not self.pools:
            return "[]"
        half = ", ".join(f't.sc[{i}] > 0 && t.sc[{i}] == t.sc.max() && t.sel[{i}] != t.tol[{i}] ? '
                         f'(t.sel[{i}] ? "selects" : "tolerates") : ""' for i in range(len(self.pools)))
        return f"t.fit ? [{half}] : []"

    def _tier(self) -> str:
        """`pod_placement`: unmanaged by annotation; managed by targeting a pool (a count above
        0, `_score`), by annotation or by `scope: all`; out without pod-level resource names;
        assumed with cpu, memory or hugepages when no pool pods can target is configured;
        validity otherwise."""
        targets = "t.sc.exists(x, x > 0)" if self.pools else "false"
        named = "t.rq.exists(k, type(k) == string) || t.rl.exists(k, type(k) == string)"
        supported = (f"t.rq.exists(k, type(k) == string && {_supported('k')}) || "
                     f"t.rl.exists(k, type(k) == string && {_supported('k')})")
        assumed = "false" if self.pools else f"({supported})"
        return (f'!t.fit ? "bounds" : t.s == "unmanaged" ? "unmanaged" : '
                f'(t.s == "managed" || {"true" if self.scope_all else "false"} || {targets}) ? "managed" : '
                f'!({named}) ? "out" : {assumed} ? "assumed" : "validity"')

    @staticmethod
    def _shape() -> str:
        """The shape numaguard's NG002 asks of what the rules read (lint/k8s/pod_schema.py): the
        fields the carrier refuses absent (Knative's resources), containers given, container
        lists of mappings, resources that are mappings (their requests and limits are checked
        with the quantities, `_valid_map`)."""
        resources = 'c.resources == null || type(c.resources) == map'
        lists = " && ".join(
            f'({field} == null || type({field}) == list && {field}.all(c, type(c) == map && '
            f'(!("resources" in c) || {resources})))'
            for field in (_field("t.v", "initContainers"), _field("t.v", "containers")))
        return (f'(t.r.all(f, !(f in t.v) || t.v[f] == null) && "containers" in t.v && t.v.containers != null && '
                f'{lists} && (!("resources" in t.v) || {resources.replace("c.", "t.v.")}))')

    # -- numbers ---------------------------------------------------------------------------------
    def _pods(self) -> str:
        """Containers from the converted maps `p.e` (`raw`): init containers first, in order (a
        sidecar is one with restartPolicy Always), then the containers; each container's
        requests defaulted from its limits (SetDefaults_Pod: a missing request takes the limit)."""
        b = BOUNDS
        init_rq, init_lm = "p.e[2 + i]", "p.e[2 + size(p.ic) + i]"
        app_rq, app_lm = "p.e[2 + 2 * size(p.ic) + i]", "p.e[2 + 2 * size(p.ic) + size(p.ac) + i]"

        def containers(field: str, offset: int, kind: str, rq: str, lm: str) -> str:
            c = f"p.{field}[i]"
            name = f'("name" in {c} && type({c}.name) == string ? {c}.name : "#" + string(i))'
            effective = f"{rq} + {lm}.filter(x, !{_has(rq, 'x.n')})"
            made = record(name=name, k=kind, o=f"i + {offset}", rq=effective, lm=lm)
            return f"{indexes(b.containers)}.filter(i, i < size(p.{field})).map(i, {made})"

        sidecar = '("restartPolicy" in p.ic[i] && p.ic[i].restartPolicy == "Always" ? "sidecar" : "init")'
        cs = (f"{containers('ic', 0, sidecar, init_rq, init_lm)} + "
              f"{containers('ac', 100, string('app'), app_rq, app_lm)}")
        return record(p="p.p", o="p.o", tier="p.tier", ig="p.ig",
                      prq="p.e[0]", plm="p.e[1]", cs=cs)

    def _sums(self) -> str:
        """The aggregate of every supported resource some container requests (or limits)."""
        def aggregate(which: str) -> str:
            v = lambda holder: _value(f"{holder}.{which}", "n")     # noqa: E731
            running = f'p.cs.filter(s, s.k == "sidecar" && s.o < c.o).map(s, {v("s")}).sum()'
            return (f'([p.cs.filter(c, c.k != "init").map(c, {v("c")}).sum()] + '
                    f'p.cs.filter(c, c.k == "init").map(c, {v("c")} + {running})).max()')
        first = f'c.rq.filter(e, {_supported("e.n")} && !p.cs.exists(d, d.o < c.o && {_has("d.rq", "e.n")})).map(e, e.n)'
        names = f'p.cs.map(c, {first}.join(",")).join(",").split(",").filter(n, n != "")'
        agg = record(n="n", rq=aggregate("rq"), lm=aggregate("lm"), hasLm=f"p.cs.exists(c, {_has('c.lm', 'n')})",
                     every=f"p.cs.all(c, {_has('c.lm', 'n')})")
        return record(p="p.p", o="p.o", tier="p.tier", ig="p.ig", prq="p.prq", plm="p.plm",
                      cs="p.cs", agg=f"{names}.map(n, {agg})")

    def _facts(self) -> str:
        """defaultHugePagePodLimits: hugepages the containers limit and the pod names in
        neither requests nor limits take the aggregate limit, when spec.resources names
        anything. And which containers qualify for an exclusive slice (`g`,
        IsContainerEquivalentQOSGuaranteed)."""
        added = (f'(size(p.prq) > 0 || size(p.plm) > 0) ? p.agg.filter(a, {_hugepages("a.n")} && a.hasLm && '
                 f'!{_has("p.prq", "a.n")} && !{_has("p.plm", "a.n")}).map(a, {record(n="a.n", v="a.lm")}) : []')
        guaranteed = " && ".join(f'{_value("c.rq", string(r))} != 0 && {_value("c.rq", string(r))} == {_value("c.lm", string(r))}'
                                 for r in ("cpu", "memory"))
        cs = f"p.cs.map(c, {record(name='c.name', k='c.k', o='c.o', rq='c.rq', lm='c.lm', g=guaranteed)})"
        return record(p="p.p", o="p.o", tier="p.tier", ig="p.ig", prq="p.prq", plm="p.plm",
                      cs=cs, agg="p.agg", hpa=added)

    def _levels(self) -> str:
        """defaultPodRequests (when pod-level limits name anything: cpu and memory from the
        containers' aggregate requests, then every supported limit without a request from the
        limit) and defaultPodLimits (pod-level requests of a supported resource and no
        supported limit: cpu and memory from the aggregate limits, when every container limits
        them)."""
        limit_keys = "(size(p.plm) > 0 || size(p.hpa) > 0)"
        in_agg = lambda n: f"p.agg.exists(a, a.n == {n})"      # noqa: E731
        agg = lambda n, f: f"p.agg.filter(a, a.n == {n}).map(a, a.{f}).sum()"    # noqa: E731
        step3 = (f'!p.plm.exists(e, {_supported("e.n")}) && size(p.hpa) == 0 && (p.prq.exists(e, {_supported("e.n")}) || '
                 f'size(p.plm) > 0 && ({in_agg(string("cpu"))} || {in_agg(string("memory"))}))')

        def request(r: str) -> str:
            n = string(r)
            return (f"({_has('p.prq', n)} ? [{record(n=n, v=_value('p.prq', n))}] : "
                    f"({limit_keys} && {in_agg(n)}) ? [{record(n=n, v=agg(n, 'rq'))}] : "
                    f"{_has('p.plm', n)} ? [{record(n=n, v=_value('p.plm', n))}] : [])")

        def limit(r: str) -> str:
            n = string(r)
            return (f"({_has('p.plm', n)} ? [{record(n=n, v=_value('p.plm', n))}] : "
                    f"({step3} && p.agg.exists(a, a.n == {n} && a.hasLm && a.every)) ? [{record(n=n, v=agg(n, 'lm'))}] : [])")

        plain = 'e.n != "cpu" && e.n != "memory"'
        requests = (f"{request('cpu')} + {request('memory')} + p.prq.filter(e, {plain}) + "
                    f"p.plm.filter(e, {_hugepages('e.n')} && !{_has('p.prq', 'e.n')}) + p.hpa")
        limits = f"{limit('cpu')} + {limit('memory')} + p.plm.filter(e, {plain}) + p.hpa"
        return record(p="p.p", o="p.o", tier="p.tier", ig="p.ig", prq="p.prq", plm="p.plm",
                      cs="p.cs", agg="p.agg", rq=requests, lm=limits,
                      set=f'p.prq.exists(e, {_supported("e.n")}) || p.plm.exists(e, {_supported("e.n")})')

    # -- rules -----------------------------------------------------------------------------------
    def rules(self) -> dict[str, tuple[str, str]]:
        """Rule id -> (the test of one `levels` record `p`, its message)."""
        policy = 'p.tier != "validity"'
        cpu, memory = string("cpu"), string("memory")

        def above(n: str) -> str:
            return f"({_has('p.rq', n)} && {_has('p.lm', n)} && {_value('p.rq', n)} > {_value('p.lm', n)})"

        guaranteed = " && ".join(f"{_value('p.rq', r)} > 0 && {_value('p.rq', r)} == {_value('p.lm', r)}" for r in (cpu, memory))
        pod_cpu = f"({_has('p.rq', cpu)} ? {_value('p.rq', cpu)} : {_value('p.lm', cpu)})"
        shown = lambda which, r: f"({_has(which, r)} ? {_amount(r, _value(which, r))} : \"unset\")"     # noqa: E731
        out = {
            "NG101": ('p.tier == "managed" && !p.set',
                      'p.p + ".resources: the pod has no pod-level cpu, memory or hugepages requests or limits: the '
                      'pod-scope resource managers will not treat it as one unit; add spec.resources with requests '
                      'equal to limits for cpu (whole CPUs) and memory"'),
            "NG103": (f"{policy} && p.set && !{above(cpu)} && !{above(memory)} && !({guaranteed})",
                      f'p.p + ".resources: pod QoS is not Guaranteed after defaulting: requests cpu " + {shown("p.rq", cpu)} + '
                      f'", memory " + {shown("p.rq", memory)} + "; limits cpu " + {shown("p.lm", cpu)} + ", memory " + '
                      f'{shown("p.lm", memory)} + "; set spec.resources requests equal to limits for both cpu and memory"'),
            "NG104": (f"{policy} && p.set && {pod_cpu} > 0 && {pod_cpu} % 1000 != 0",
                      f'p.p + ".resources." + ({_has("p.prq", cpu)} ? "requests" : "limits") + ".cpu: pod-level cpu is " + '
                      f'{_cpu(pod_cpu)} + ", not a whole number of CPUs: no exclusive CPU block is reserved; use cpu: " + '
                      f'string(({pod_cpu} + 999) / 1000)'),
            "NG105": (f"p.set && p.agg.exists(a, a.rq > {_value('p.rq', 'a.n')})",
                      f'p.agg.filter(a, a.rq > {_value("p.rq", "a.n")}).map(a, p.p + ".resources.requests." + a.n + ": " + '
                      f'({_has("p.rq", "a.n")} ? {_amount("a.n", _value("p.rq", "a.n"))} : "0") + " is below the containers\' '
                      f'aggregate requests of " + {_amount("a.n", "a.rq")} + "; the API server rejects the pod")[0]'),
            "NG106": (f'p.set && p.cs.exists(c, c.k == "app" && c.lm.exists(e, {_has("p.lm", "e.n")} && e.v > {_value("p.lm", "e.n")}))',
                      f'p.cs.filter(c, c.k == "app" && c.lm.exists(e, {_has("p.lm", "e.n")} && e.v > {_value("p.lm", "e.n")}))'
                      f'.map(c, c.lm.filter(e, {_has("p.lm", "e.n")} && e.v > {_value("p.lm", "e.n")}).map(e, p.p + '
                      f'".containers: container \'" + c.name + "\' limits " + e.n + " " + {_amount("e.n", "e.v")} + '
                      f'" above the pod limit of " + {_amount("e.n", _value("p.lm", "e.n"))} + "; the API server rejects the pod")[0])[0]'),
            "NG107": (f"{policy} && p.set && {guaranteed} && ({self._cpu_rejected()} || {self._memory_rejected()})",
                      f'p.p + ".resources: the kubelet rejects the pod: the exclusive containers\' slices use the whole pod '
                      f'budget (cpu " + {shown("p.rq", cpu)} + ", memory " + {shown("p.rq", memory)} + ") while others need '
                      f'its shared pool; raise the pod budget or let an exclusive container share"'),
            "NG114": (f'(p.prq + p.plm).exists(e, !{_hugepages("e.n")} && {above("e.n")})',
                      f'(p.prq + p.plm).filter(e, !{_hugepages("e.n")} && {above("e.n")}).map(e, p.p + ".resources.requests." + '
                      f'e.n + ": " + {_amount("e.n", _value("p.rq", "e.n"))} + " is above the pod limit of " + '
                      f'{_amount("e.n", _value("p.lm", "e.n"))} + "; the API server rejects the pod")[0]'),
        }
        # NG111 (`pool_targeting`), in the context of each pool the template targets: only a
        # pool with both labels and a taint can be targeted half-way (`aim`).
        mixed = [(i, pool) for i, pool in enumerate(self.pools) if pool.node_labels and pool.taint]
        if mixed:
            messages = []
            for i, pool in mixed:
                name = "the managed pool" if pool.name == DEFAULT_POOL_NAME else f"pool {pool.name}"
                taint = pool.taint
                labels = ", ".join(f"{k}: {v}" for k, v in pool.node_labels.items())
                selects = string(f": the pod selects {name} but does not tolerate its taint {_taint_text(pool)}: it "
                                 f"will stay Pending; add a toleration {{key: {taint.get('key')}, operator: Equal, "
                                 f"value: {taint.get('value', '')}, effect: {taint.get('effect', '')}}}")
                tolerates = string(f".tolerations: the pod tolerates the taint of {name} but does not select its "
                                   f"nodes: it may be scheduled on a node without the pod-level resource managers; "
                                   f"add nodeSelector {{{labels}}}")
                messages.append(f'p.aim[{i}] != "" ? p.p + (p.aim[{i}] == "selects" ? {selects} : {tolerates})')
            half = " || ".join(f'p.aim[{i}] != ""' for i, _ in mixed)
            out["NG111"] = (f"{policy} && ({half})",
                            " : ".join(messages) + ' : ""')
        return out

    def _cpu_rejected(self) -> str:
        """The CPU Manager's validatePodScopeResources (`_check_budget` for cpu): containers with
        whole exclusive CPUs; T = the pod's whole CPUs."""
        total = f"{_value('p.rq', string('cpu'))}"
        exclusive = lambda c: f"({c}.g && {_value(f'{c}.rq', string('cpu'))} % 1000 == 0)"     # noqa: E731
        cpus = lambda c: f"({_value(f'{c}.rq', string('cpu'))} / 1000)"                          # noqa: E731
        return self._rejected(f"({total} / 1000)", exclusive, cpus, f"{total} % 1000 == 0")

    def _memory_rejected(self) -> str:
        """The Memory Manager's check for each of the pod's memory and hugepages requests."""
        inner = self._rejected("r.v", lambda c: f"{c}.g", lambda c: f"({_value(f'{c}.rq', 'r.n')})", "true")
        return f'p.rq.exists(r, (r.n == "memory" || {_hugepages("r.n")}) && {inner})'

    @staticmethod
    def _rejected(total: str, exclusive, amount, applies: str) -> str:
        """`_check_budget`: an exclusive init container larger than what the exclusive sidecars
        before it leave, a shared one with nothing left, or sharing app containers and
        sidecars with the long-running exclusive slices using the whole budget."""
        before = f'p.cs.filter(s, s.k == "sidecar" && s.o < i.o && {exclusive("s")}).map(s, {amount("s")}).sum()'
        long_running = f'p.cs.filter(c, c.k != "init" && {exclusive("c")}).map(c, {amount("c")}).sum()'
        init = (f'p.cs.exists(i, i.k == "init" && ({exclusive("i")} ? {amount("i")} > {total} - {before} : '
                f'{before} >= {total}))')
        shared = f'p.cs.exists(c, c.k != "init" && !{exclusive("c")}) && {long_running} >= {total}'
        return f"({applies} && ({init} || {shared}))"


def _taint_text(pool: PoolSettings) -> str:
    taint = pool.taint or {}
    return f"{taint.get('key')}={taint.get('value', '')}:{taint.get('effect', '')}"



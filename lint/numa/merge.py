"""The Topology Manager's hint merge, its policies and its policy options.

Behaviour copied from `pkg/kubelet/cm/topologymanager/`:

* `policy.go` - `filterProvidersHints`, `mergePermutation`, `maxOfMinAffinityCounts`,
  `HintMerger` (`compare`, `CompareNUMAAffinityMasks`, `Merge`);
* `policy_none.go`, `policy_best_effort.go`, `policy_restricted.go`,
  `policy_single_numa_node.go` (`filterSingleNumaHints`);
* `numa_info.go` - `NUMAInfo.Narrowest` / `Closest` / `CalculateAverageFor`;
* `policy_options.go` - `prefer-closest-numa-nodes`, `max-allowable-numa-nodes`;
* `topology_manager.go` - the startup check against `max-allowable-numa-nodes`,
  `TopologyHint.LessThan`, `TopologyAffinityError`.

Masks are plain ints (see `numaguard.lint.numa.bitmask`); `None` is "no NUMA preference" (Go's nil mask).

Speed. The kubelet folds `compare` over the full cross product of the providers' hint lists.
`compare` ranks candidates by a total order (preferred first; among preferred the fitter mask;
among non-preferred the popcount closest to, and preferably not above,
`bestNonPreferredAffinityCount`; then the fitter mask), so the fold's result is the best
candidate under that order whatever the iteration order. `HintMerger.merge` uses that: it
finds the preferred candidates directly (all non-nil masks of a preferred permutation are
equal, so they are the masks every list offers as preferred) and only when there is none does
it enumerate the distinct AND results list by list (at most 2^N of them). The literal fold is
kept as `HintMerger.merge_by_permutation` and the tests check both agree.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from numaguard.lint.numa.bitmask import format_mask, is_narrower_than, mask_bits, mask_of

PolicyName = str
POLICY_NONE: PolicyName = "none"
POLICY_BEST_EFFORT: PolicyName = "best-effort"
POLICY_RESTRICTED: PolicyName = "restricted"
POLICY_SINGLE_NUMA_NODE: PolicyName = "single-numa-node"
POLICY_NAMES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8       # topology_manager.go defaultMaxAllowableNUMANodes

# Maturity of each option in the release we simulate (1.37): prefer-closest-numa-nodes went GA
# in 1.32, max-allowable-numa-nodes in 1.35 (policy_options.go stableOptions).
OPTION_LEVELS_1_37: Mapping[str, str] = {
    PREFER_CLOSEST_NUMA_NODES: "stable",
    MAX_ALLOWABLE_NUMA_NODES: "stable",
}

TOPOLOGY_AFFINITY_ERROR_REASON = "TopologyAffinityError"
TOPOLOGY_AFFINITY_ERROR_MESSAGE = "Resources cannot be allocated with Topology locality"


# --- errors ---------------------------------------------------------------------------------

class TopologyManagerError(ValueError):
    """The kubelet would refuse to start: bad policy, bad option, machine too large."""


class TopologyAffinityError(Exception):
    """The pod is rejected at admission because its merged hint is not admissible.

    `reason` and `message` are what the kubelet puts in the pod status
    (`topology_manager.go` TopologyAffinityError).
    """

    reason = TOPOLOGY_AFFINITY_ERROR_REASON

    def __init__(self, hint: TopologyHint | None = None) -> None:
        super().__init__(TOPOLOGY_AFFINITY_ERROR_MESSAGE)
        self.message = TOPOLOGY_AFFINITY_ERROR_MESSAGE
        self.hint = hint


# --- hints ----------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class TopologyHint:
    """A NUMA affinity (`None` = any NUMA node) and whether it is a preferred placement.

    Equality is the kubelet's `TopologyHint.IsEqual` (same preference, same mask, nil == nil).
    """

    affinity: int | None
    preferred: bool

    def less_than(self, other: TopologyHint) -> bool:
        """topology_manager.go LessThan: preferred first, then the narrower mask.

        Both masks must be non-nil (the kubelet would dereference nil).
        """
        if self.preferred != other.preferred:
            return self.preferred
        return is_narrower_than(self.affinity, other.affinity)

    def __repr__(self) -> str:
        return f"TopologyHint({format_mask(self.affinity)}, {self.preferred})"


def hint(bits: Iterable[int] | None, preferred: bool) -> TopologyHint:
    """Convenience constructor: `hint([0, 1], True)`, `hint(None, False)`."""
    return TopologyHint(None if bits is None else mask_of(bits), preferred)


def as_topology_hint(h) -> TopologyHint:
    """A TopologyHint from any hint-like object with `preferred` and `affinity` or `mask`
    (e.g. `numaguard.lint.numa.cpu_hints.CPUHint`)."""
    if isinstance(h, TopologyHint):
        return h
    return TopologyHint(getattr(h, "affinity", None) if hasattr(h, "affinity") else h.mask,
                        bool(h.preferred))


ProviderHints = Mapping[str, Sequence[TopologyHint] | None] | None
"""One hint provider's answer: resource name -> hints; a `None` list means "no preference",
an empty list means "no possible placement"; a `None` or empty map means "no preference"."""


def filter_providers_hints(providers_hints: Sequence[ProviderHints]) -> list[list[TopologyHint]]:
    """policy.go filterProvidersHints: one hint list per (provider, resource).

    A provider with a nil/empty map contributes `[{nil, preferred}]`; a resource with a nil
    list contributes `[{nil, preferred}]`; a resource with an empty list `[{nil, non-preferred}]`.
    """
    all_hints: list[list[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            all_hints.append([TopologyHint(None, True)])
            continue
        for resource_hints in hints.values():
            if resource_hints is None:
                all_hints.append([TopologyHint(None, True)])
            elif len(resource_hints) == 0:
                all_hints.append([TopologyHint(None, False)])
            else:
                all_hints.append([as_topology_hint(h) for h in resource_hints])
    return all_hints


def filter_single_numa_hints(
        all_hints: Sequence[Sequence[TopologyHint]]) -> list[list[TopologyHint]]:
    """policy_single_numa_node.go filterSingleNumaHints.

    Keeps, per list, preferred "don't care" hints and preferred hints naming exactly one NUMA
    node. A list may end up empty, which leaves the merger with no permutation at all.
    """
    return [[h for h in hints
             if h.preferred and (h.affinity is None or h.affinity.bit_count() == 1)]
            for hints in all_hints]


def merge_permutation(default_affinity: int, permutation: Sequence[TopologyHint]) -> TopologyHint:
    """policy.go mergePermutation: AND of all non-nil masks (and the default affinity).

    Preferred only if every hint is preferred *and* every non-nil mask equals the first
    non-nil one: {0}(pref) with {0,1}(pref) merges to {0} non-preferred.
    """
    preferred = True
    first: int | None = None
    merged = default_affinity
    for h in permutation:
        if h.affinity is not None:
            if first is None:
                first = h.affinity
            elif h.affinity != first:
                preferred = False
            merged &= h.affinity
        if not h.preferred:
            preferred = False
    return TopologyHint(merged, preferred)


def narrowest_hint(hints: Sequence[TopologyHint]) -> TopologyHint | None:
    """policy.go narrowestHint: the narrowest non-nil hint of a list (first one on ties)."""
    best: TopologyHint | None = None
    for h in hints:
        if h.affinity is None:
            continue
        if best is None or is_narrower_than(h.affinity, best.affinity):
            best = h
    return best


def max_of_min_affinity_counts(filtered_hints: Sequence[Sequence[TopologyHint]]) -> int:
    """policy.go maxOfMinAffinityCounts, i.e. bestNonPreferredAffinityCount.

    The largest, over lists, of the popcount of that list's narrowest non-nil mask; 0 if none.
    """
    best = 0
    for hints in filtered_hints:
        narrowest = narrowest_hint(hints)
        if narrowest is not None and narrowest.affinity.bit_count() > best:
            best = narrowest.affinity.bit_count()
    return best


# --- NUMA info (numa_info.go) ---------------------------------------------------------------

@dataclass(frozen=True)
class NUMAInfo:
    """The machine's NUMA node ids and, when prefer-closest is on, their distances."""

    nodes: tuple[int, ...]
    distances: Mapping[int, Mapping[int, int]] | None = None

    @classmethod
    def from_topology(cls, topology, prefer_closest_numa: bool = False) -> NUMAInfo:
        """numa_info.go NewNUMAInfo from a `numaguard.lint.numa.topology.Topology`.

        Distances are only read when prefer-closest is on; missing ones are a startup error.
        """
        nodes = tuple(n.id for n in topology.numa_nodes)
        if not prefer_closest_numa:
            return cls(nodes)
        if topology.distances is None:
            raise TopologyManagerError("error getting NUMA distances from cadvisor")
        return cls(nodes, {a: dict(topology.distances[a]) for a in nodes})

    @property
    def default_affinity_mask(self) -> int:
        """DefaultAffinityMask(): all NUMA nodes of the machine."""
        return mask_of(self.nodes)

    def narrowest(self, m1: int, m2: int) -> int:
        """Narrowest(): `m1` if it is narrower than `m2`, else `m2`."""
        return m1 if is_narrower_than(m1, m2) else m2

    def average_distance(self, mask: int) -> float:
        """NUMADistances.CalculateAverageFor: mean over all ordered pairs, diagonal included."""
        if mask == 0:
            return 0.0
        bits = mask_bits(mask)
        total = 0.0
        count = 0.0
        for a in bits:
            row = self.distances[a]
            for b in bits:
                total += float(row[b])
                count += 1
        return total / count

    def closest(self, m1: int, m2: int) -> int:
        """Closest(): narrowest if popcounts differ, else the smaller average distance,
        else (equal averages) the integer-smaller mask."""
        if m1.bit_count() != m2.bit_count():
            return self.narrowest(m1, m2)
        d1, d2 = self.average_distance(m1), self.average_distance(m2)
        if d1 == d2:
            return m1 if m1 < m2 else m2
        return m1 if d1 < d2 else m2


# --- policy options (policy_options.go) -----------------------------------------------------

@dataclass(frozen=True)
class PolicyOptions:
    """Parsed `topologyManagerPolicyOptions`."""

    prefer_closest_numa: bool = False
    max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES


_GO_TRUE = {"1", "t", "T", "TRUE", "true", "True"}
_GO_FALSE = {"0", "f", "F", "FALSE", "false", "False"}
_GO_INT = re.compile(r"^[+-]?[0-9]+$")


def _quote(text: str) -> str:
    # Go's %q for plain text; good enough for option names and values people type.
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def check_policy_option_available(option: str, *, alpha_enabled: bool = False,
                                  beta_enabled: bool = True,
                                  option_levels: Mapping[str, str] = OPTION_LEVELS_1_37) -> None:
    """policy_options.go CheckPolicyOptionAvailable; raises TopologyManagerError.

    `option_levels` maps option name -> "alpha" | "beta" | "stable"; `alpha_enabled` /
    `beta_enabled` are the TopologyManagerPolicyAlphaOptions / BetaOptions feature gates
    (beta gates default to on).
    """
    level = option_levels.get(option)
    if level is None:
        raise TopologyManagerError(f"unknown Topology Manager Policy option: {_quote(option)}")
    if level == "alpha" and not alpha_enabled:
        raise TopologyManagerError("topology manager policy alpha-level options not enabled, "
                                   f"but option {_quote(option)} provided")
    if level == "beta" and not beta_enabled:
        raise TopologyManagerError("topology manager policy beta-level options not enabled, "
                                   f"but option {_quote(option)} provided")


def new_policy_options(policy_options: Mapping[str, str] | None, *, alpha_enabled: bool = False,
                       beta_enabled: bool = True,
                       option_levels: Mapping[str, str] = OPTION_LEVELS_1_37) -> PolicyOptions:
    """policy_options.go NewPolicyOptions: validate and parse the option map.

    Options are checked in the map's order (Go's is random; the first error wins). Errors
    carry the kubelet's text (alpha/beta messages are lower-case since the kubelet's
    error-string cleanup; "unknown Topology Manager Policy option" kept its capitals).
    """
    prefer_closest = False
    max_nodes = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
    for name, value in (policy_options or {}).items():
        check_policy_option_available(name, alpha_enabled=alpha_enabled,
                                      beta_enabled=beta_enabled, option_levels=option_levels)
        if name == PREFER_CLOSEST_NUMA_NODES:
            if value in _GO_TRUE:
                prefer_closest = True
            elif value in _GO_FALSE:
                prefer_closest = False
            else:
                raise TopologyManagerError(
                    f"bad value for option {_quote(name)}: strconv.ParseBool: parsing "
                    f"{_quote(value)}: invalid syntax")
        elif name == MAX_ALLOWABLE_NUMA_NODES:
            if not _GO_INT.match(value):
                raise TopologyManagerError(
                    f"unable to convert policy option to integer {_quote(name)}: strconv.Atoi: "
                    f"parsing {_quote(value)}: invalid syntax")
            number = int(value)
            if number < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                raise TopologyManagerError(
                    f"the minimum value of {_quote(name)} should not be less than "
                    f"{DEFAULT_MAX_ALLOWABLE_NUMA_NODES}")
            # values above 8 only log a warning in the kubelet
            max_nodes = number
        else:
            # available per the level table but not something this kubelet parses
            raise TopologyManagerError(
                f"unsupported topologymanager option: {_quote(name)} ({value})")
    return PolicyOptions(prefer_closest_numa=prefer_closest, max_allowable_numa_nodes=max_nodes)


def check_max_allowable_numa_nodes(policy_name: PolicyName, num_numa_nodes: int,
                                   opts: PolicyOptions) -> None:
    """topology_manager.go NewManager: any policy but none refuses machines with more NUMA
    nodes than `max-allowable-numa-nodes`."""
    if policy_name != POLICY_NONE and num_numa_nodes > opts.max_allowable_numa_nodes:
        raise TopologyManagerError("unsupported on machines with more than "
                                   f"{opts.max_allowable_numa_nodes} NUMA Nodes")


# --- the merger (policy.go HintMerger) ------------------------------------------------------

class HintMerger:
    """policy.go HintMerger for one set of filtered hint lists.

    `compare` and `compare_numa_affinity_masks` are the kubelet's functions one for one;
    `merge` returns what the kubelet's `Merge` returns (see the module docstring for how).
    """

    def __init__(self, numa_info: NUMAInfo, hints: Sequence[Sequence[TopologyHint]],
                 policy_name: PolicyName, opts: PolicyOptions = PolicyOptions()) -> None:
        self.numa_info = numa_info
        self.hints = [list(h) for h in hints]
        self.use_closest = policy_name != POLICY_SINGLE_NUMA_NODE and opts.prefer_closest_numa
        self.best_non_preferred_affinity_count = max_of_min_affinity_counts(self.hints)
        self._avg_cache: dict[int, float] = {}

    # -- kubelet functions, one for one --
    def compare_numa_affinity_masks(self, current: TopologyHint,
                                    candidate: TopologyHint) -> TopologyHint:
        """The fitter of two hints: equal masks keep `current`; otherwise Closest (when
        prefer-closest is on and the policy is not single-numa-node) or Narrowest decides."""
        if candidate.affinity == current.affinity:
            return current
        if self.use_closest:
            best = self.numa_info.closest(current.affinity, candidate.affinity)
        else:
            best = self.numa_info.narrowest(current.affinity, candidate.affinity)
        return current if best == current.affinity else candidate

    def compare(self, current: TopologyHint | None, candidate: TopologyHint) -> TopologyHint | None:
        """HintMerger.compare: which of the running best and a candidate to keep."""
        cand_count = candidate.affinity.bit_count()
        if cand_count == 0:
            return current
        if current is None:
            return candidate
        if not current.preferred and candidate.preferred:
            return candidate
        if current.preferred and not candidate.preferred:
            return current
        if current.preferred and candidate.preferred:
            return self.compare_numa_affinity_masks(current, candidate)
        # both non-preferred: aim for bestNonPreferredAffinityCount, never above if avoidable
        best = self.best_non_preferred_affinity_count
        cur_count = current.affinity.bit_count()
        if cur_count > best:                                   # case 1
            return self.compare_numa_affinity_masks(current, candidate)
        if cur_count == best:                                  # case 2
            if cand_count != best:
                return current
            return self.compare_numa_affinity_masks(current, candidate)
        if cand_count > best:                                  # case 3a
            return current
        if cand_count == best:                                 # case 3b
            return candidate
        if cand_count > cur_count:                             # case 3ca
            return candidate
        if cand_count < cur_count:                             # case 3cb
            return current
        return self.compare_numa_affinity_masks(current, candidate)   # case 3cc

    def merge_by_permutation(self) -> TopologyHint:
        """HintMerger.Merge literally: fold `compare` over the full cross product.

        Exponential in the number of lists; kept as the reference for `merge`.
        """
        default = self.numa_info.default_affinity_mask
        best: TopologyHint | None = None

        def iterate(i: int, accum: list[TopologyHint]) -> None:
            nonlocal best
            if i == len(self.hints):
                best = self.compare(best, merge_permutation(default, accum))
                return
            for h in self.hints[i]:
                accum.append(h)
                iterate(i + 1, accum)
                accum.pop()

        iterate(0, [])
        return best if best is not None else TopologyHint(default, False)

    # -- fast equivalent --
    def _fitter_key(self, mask: int) -> tuple:
        # Total order behind compare_numa_affinity_masks: smaller key = fitter.
        if self.use_closest:
            avg = self._avg_cache.get(mask)
            if avg is None:
                avg = self._avg_cache[mask] = self.numa_info.average_distance(mask)
            return (mask.bit_count(), avg, mask)
        return (mask.bit_count(), 0.0, mask)

    def _non_preferred_key(self, mask: int) -> tuple:
        # Total order behind compare() for two non-preferred hints.
        best = self.best_non_preferred_affinity_count
        count = mask.bit_count()
        if count == best:
            return (0, 0, self._fitter_key(mask))
        if count < best:
            return (1, -count, self._fitter_key(mask))
        return (2, 0, self._fitter_key(mask))

    def merge(self) -> TopologyHint:
        """The hint the kubelet's HintMerger.Merge returns, without the full cross product."""
        default = self.numa_info.default_affinity_mask
        lists = self.hints
        if any(len(h) == 0 for h in lists):
            return TopologyHint(default, False)        # no permutation at all

        # Preferred candidates: every hint preferred and every non-nil mask equal to one mask m.
        pref_sets: list[set[int]] = []
        nil_pref: list[bool] = []
        for hints in lists:
            pref_sets.append({h.affinity for h in hints if h.preferred and h.affinity is not None})
            nil_pref.append(any(h.preferred and h.affinity is None for h in hints))
        strict = [s for s, n in zip(pref_sets, nil_pref) if not n]
        if strict:
            raw = set.intersection(*strict)
        else:
            raw = set().union(*pref_sets)
        preferred = {m & default for m in raw}
        if all(nil_pref):
            preferred.add(default)                     # the all-"don't care" permutation
        preferred.discard(0)
        if preferred:
            return TopologyHint(min(preferred, key=self._fitter_key), True)

        # No preferred candidate survives: rank every reachable AND result as non-preferred.
        reachable = {default}
        for hints in lists:
            masks = {default if h.affinity is None else h.affinity for h in hints}
            reachable = {r & m for r in reachable for m in masks}
            reachable.discard(0)                       # empty intersections never win
            if not reachable:
                return TopologyHint(default, False)
        return TopologyHint(min(reachable, key=self._non_preferred_key), False)


# --- policies -------------------------------------------------------------------------------

class Policy(Protocol):
    """What every Topology Manager policy offers (policy.go Policy)."""

    name: PolicyName

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        """Merged hint and whether the pod may be admitted."""
        ...


@dataclass(frozen=True)
class NonePolicy:
    """policy_none.go: no merge, `{nil, non-preferred}`, always admit."""

    name: PolicyName = POLICY_NONE

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        return TopologyHint(None, False), True


@dataclass(frozen=True)
class BestEffortPolicy:
    """policy_best_effort.go: the merged hint, always admit."""

    numa_info: NUMAInfo
    opts: PolicyOptions = field(default_factory=PolicyOptions)
    name: PolicyName = POLICY_BEST_EFFORT

    def merge_hint(self, providers_hints: Sequence[ProviderHints]) -> TopologyHint:
        filtered = filter_providers_hints(providers_hints)
        return HintMerger(self.numa_info, filtered, self.name, self.opts).merge()

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        return self.merge_hint(providers_hints), True


@dataclass(frozen=True)
class RestrictedPolicy(BestEffortPolicy):
    """policy_restricted.go: best-effort's merge; admit only a preferred result."""

    name: PolicyName = POLICY_RESTRICTED

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        best = self.merge_hint(providers_hints)
        return best, best.preferred


@dataclass(frozen=True)
class SingleNumaNodePolicy:
    """policy_single_numa_node.go: merge only single-NUMA preferred hints (and preferred
    "don't care" hints); an all-nodes result is reported as nil; admit only preferred.
    prefer-closest-numa-nodes is ignored by this policy."""

    numa_info: NUMAInfo
    opts: PolicyOptions = field(default_factory=PolicyOptions)
    name: PolicyName = POLICY_SINGLE_NUMA_NODE

    def merge(self, providers_hints: Sequence[ProviderHints]) -> tuple[TopologyHint, bool]:
        filtered = filter_single_numa_hints(filter_providers_hints(providers_hints))
        best = HintMerger(self.numa_info, filtered, self.name, self.opts).merge()
        if best.affinity == self.numa_info.default_affinity_mask:
            best = TopologyHint(None, best.preferred)
        return best, best.preferred


def new_policy(policy_name: PolicyName, numa_info: NUMAInfo,
               opts: PolicyOptions = PolicyOptions()) -> Policy:
    """The policy object for a `topologyManagerPolicy` value; TopologyManagerError if unknown."""
    if policy_name == POLICY_NONE:
        return NonePolicy()
    if policy_name == POLICY_BEST_EFFORT:
        return BestEffortPolicy(numa_info, opts)
    if policy_name == POLICY_RESTRICTED:
        return RestrictedPolicy(numa_info, opts)
    if policy_name == POLICY_SINGLE_NUMA_NODE:
        return SingleNumaNodePolicy(numa_info, opts)
    raise TopologyManagerError(f"unknown policy: {_quote(policy_name)}")


def new_topology_manager_policy(policy_name: PolicyName, topology,
                                policy_options: Mapping[str, str] | None = None, *,
                                alpha_enabled: bool = False, beta_enabled: bool = True,
                                option_levels: Mapping[str, str] = OPTION_LEVELS_1_37) -> Policy:
    """What the kubelet does at startup (topology_manager.go NewManager), minus the scope.

    Parses the options, reads NUMA distances when prefer-closest is on, refuses machines with
    more NUMA nodes than max-allowable-numa-nodes (unless the policy is none), builds the policy.
    Raises TopologyManagerError with the kubelet's message.
    """
    opts = new_policy_options(policy_options, alpha_enabled=alpha_enabled,
                              beta_enabled=beta_enabled, option_levels=option_levels)
    numa_info = NUMAInfo.from_topology(topology, opts.prefer_closest_numa)
    check_max_allowable_numa_nodes(policy_name, len(numa_info.nodes), opts)
    return new_policy(policy_name, numa_info, opts)


def admit(policy: Policy, providers_hints: Sequence[ProviderHints]) -> TopologyHint:
    """Merge and apply the policy's admit decision: the hint, or TopologyAffinityError."""
    best, admitted = policy.merge(providers_hints)
    if not admitted:
        raise TopologyAffinityError(best)
    return best

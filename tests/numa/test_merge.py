"""Topology Manager merge, policies and options against the kubelet's own tables.

Origins (kubernetes/kubernetes, pkg/kubelet/cm/topologymanager/):
* policy_test.go: commonPolicyMergeTestCases, (*bestEffortPolicy).mergeTestCases,
  mergeTestCasesNoPolicies, mergeTestCasesClosestNUMA, (*singleNumaNodePolicy).mergeTestCases,
  TestMaxOfMinAffinityCounts, TestCompareHintsNarrowest, commonNUMAInfo{Two,Four,Eight}Nodes;
* policy_best_effort_test.go: TestPolicyBestEffortCanAdmitPodResult, TestPolicyBestEffortMerge
  (4 nodes: common + mergeTestCases + mergeTestCasesNoPolicies),
  TestPolicyBestEffortMergeClosestNUMA (8 nodes: common + mergeTestCases + ClosestNUMA);
* policy_restricted_test.go: TestPolicyRestrictedCanAdmitPodResult, TestPolicyRestrictedMerge
  (the restricted policy embeds best-effort's merge, so it runs best-effort's tables);
* policy_single_numa_node_test.go: TestPolicySingleNumaNodeCanAdmitPodResult,
  TestPolicySingleNumaNodeFilterHints, TestPolicySingleNumaNodeMerge (4 nodes);
* policy_none_test.go: TestPolicyNoneMerge, TestPolicyNoneCanAdmitPodResult;
* policy_options_test.go: TestNewTopologyManagerOptions, TestPolicyDefaultsAvailable,
  TestPolicyOptionsAvailable; topology_manager_test.go TestNewManager (startup errors).

Hint notation in the tables: "01+" = NUMA nodes {0,1} preferred, "2-" = {2} non-preferred,
"nil+" / "nil-" = no affinity. A provider is a dict resource -> "hint hint ..." (None = nil
list, "" = empty list); a provider itself may be None (nil map) or {} (empty map).
Expected "all" = every NUMA node of the machine.
"""
import random

import pytest

from numaguard.lint.numa.bitmask import mask_of
from numaguard.lint.numa.merge import (
    BestEffortPolicy, HintMerger, NonePolicy, NUMAInfo, PolicyOptions, RestrictedPolicy,
    SingleNumaNodePolicy, TopologyAffinityError, TopologyHint, TopologyManagerError, admit,
    check_policy_option_available, filter_providers_hints, filter_single_numa_hints,
    max_of_min_affinity_counts, merge_permutation, new_policy, new_policy_options,
    new_topology_manager_policy,
)
from numaguard.lint.numa.topology import CPU, NUMANode, Topology


# --- notation ------------------------------------------------------------------------------

def H(text: str) -> TopologyHint:
    bits, pref = text[:-1], text[-1] == "+"
    assert text[-1] in "+-", text
    if bits == "nil":
        return TopologyHint(None, pref)
    return TopologyHint(mask_of(int(b) for b in bits), pref)


def hints(text: str | None):
    if text is None:
        return None
    return [H(t) for t in text.split()]


def providers(spec):
    out = []
    for p in spec:
        if p is None:
            out.append(None)
        else:
            out.append({res: hints(h) for res, h in p.items()})
    return out


def expected_hint(text: str, nodes) -> TopologyHint:
    if text.startswith("all"):
        return TopologyHint(mask_of(nodes), text[-1] == "+")
    return H(text)


# NUMA infos of policy_test.go
TWO_NODES = NUMAInfo((0, 1), {0: {0: 10, 1: 11}, 1: {0: 11, 1: 10}})
FOUR_NODES = NUMAInfo((0, 1, 2, 3), {
    0: dict(enumerate([10, 11, 12, 12])), 1: dict(enumerate([11, 10, 12, 12])),
    2: dict(enumerate([12, 12, 10, 11])), 3: dict(enumerate([12, 12, 11, 10]))})
EIGHT_NODES = NUMAInfo(tuple(range(8)), {
    0: dict(enumerate([10, 11, 12, 12, 30, 30, 30, 30])),
    1: dict(enumerate([11, 10, 12, 12, 30, 30, 30, 30])),
    2: dict(enumerate([12, 12, 10, 11, 30, 30, 30, 30])),
    3: dict(enumerate([12, 12, 11, 10, 30, 30, 30, 30])),
    4: dict(enumerate([30, 30, 30, 30, 10, 11, 12, 12])),
    5: dict(enumerate([30, 30, 30, 30, 11, 10, 12, 12])),
    6: dict(enumerate([30, 30, 30, 30, 12, 12, 10, 11])),
    7: dict(enumerate([30, 30, 30, 30, 12, 12, 13, 10]))})


# --- policy_test.go tables ------------------------------------------------------------------
# (test-case name, providers, expected merged hint)

COMMON = [   # commonPolicyMergeTestCases
    ("Two providers, 1 hint each, same mask, both preferred 1/2",
     [{"resource1": "0+"}, {"resource2": "0+"}], "0+"),
    ("Two providers, 1 hint each, same mask, both preferred 2/2",
     [{"resource1": "1+"}, {"resource2": "1+"}], "1+"),
    ("Two providers, 1 no hints, 1 single hint preferred 1/2",
     [None, {"resource": "0+"}], "0+"),
    ("Two providers, 1 no hints, 1 single hint preferred 2/2",
     [None, {"resource": "1+"}], "1+"),
    ("Two providers, 1 with 2 hints, 1 with single hint matching 1/2",
     [{"resource1": "0+ 1+"}, {"resource2": "0+"}], "0+"),
    ("Two providers, 1 with 2 hints, 1 with single hint matching 2/2",
     [{"resource1": "0+ 1+"}, {"resource2": "1+"}], "1+"),
    ("Two providers, both with 2 hints, matching narrower preferred hint from both",
     [{"resource1": "0+ 1+"}, {"resource2": "0+ 01-"}], "0+"),
    ("Ensure less narrow preferred hints are chosen over narrower non-preferred hints",
     [{"resource1": "1+ 01-"}, {"resource2": "0+ 1+ 01-"}], "1+"),
    ("Multiple resources, same provider",
     [{"resource1": "1+ 01-", "resource2": "0+ 1+ 01-"}], "1+"),
]

BEST_EFFORT = [   # (*bestEffortPolicy).mergeTestCases
    ("Two providers, 2 hints each, same mask (some with different bits), same preferred",
     [{"resource1": "01+ 02+"}, {"resource2": "01+ 02+"}], "01+"),
    ("TopologyHint not set", [], "all+"),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], "all+"),
    ("HintProvider returns -nil map[string][]TopologyHint from provider",
     [{"resource": None}], "all+"),
    ("HintProvider returns empty non-nil map[string][]TopologyHint from provider",
     [{"resource": ""}], "all-"),
    ("Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
     [{"resource": "nil+"}], "all+"),
    ("Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
     [{"resource": "nil-"}], "all-"),
    ("Two providers, 1 hint each, no common mask",
     [{"resource1": "0+"}, {"resource2": "1+"}], "all-"),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
     [{"resource1": "0+"}, {"resource2": "0-"}], "0-"),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
     [{"resource1": "1+"}, {"resource2": "1-"}], "1-"),
    ("Two providers, 1 hint each, 1 wider mask, both preferred 1/2",
     [{"resource1": "0+"}, {"resource2": "01+"}], "0-"),
    ("Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
     [{"resource1": "0+ 1+"}, {"resource2": "01-"}], "0-"),
    ("Two providers, 1 hint each, 1 wider mask, both preferred 2/2",
     [{"resource1": "1+"}, {"resource2": "01+"}], "1-"),
    ("bestNonPreferredAffinityCount (1)",
     [{"resource1": "0123- 01-"}, {"resource2": "01-"}], "01-"),
    ("bestNonPreferredAffinityCount (2)",
     [{"resource1": "0123- 01-"}, {"resource2": "03-"}], "03-"),
    ("bestNonPreferredAffinityCount (3)",
     [{"resource1": "0123- 01-"}, {"resource2": "12-"}], "12-"),
    ("bestNonPreferredAffinityCount (4)",
     [{"resource1": "0123- 01-"}, {"resource2": "23-"}], "23-"),
]

NO_POLICIES = [   # (*bestEffortPolicy).mergeTestCasesNoPolicies
    ("bestNonPreferredAffinityCount (5)",
     [{"resource1": "0123- 01-"}, {"resource2": "12- 23-"}], "12-"),
    ("bestNonPreferredAffinityCount (6)",
     [{"resource1": "0123- 01-"}, {"resource2": "123- 12- 13- 23-"}], "12-"),
]

CLOSEST_NUMA = [   # (*bestEffortPolicy).mergeTestCasesClosestNUMA
    ("Two providers, 2 hints each, same mask (some with different bits), same preferred",
     [{"resource1": "04+ 02+"}, {"resource2": "04+ 02+"}], "02+"),
    ("Two providers, 2 hints each, different mask",
     [{"resource1": "4+ 02+"}, {"resource2": "4+ 02+"}], "4+"),
    ("bestNonPreferredAffinityCount (5)",
     [{"resource1": "0123- 01-"}, {"resource2": "12- 23-"}], "23-"),
    ("bestNonPreferredAffinityCount (6)",
     [{"resource1": "0123- 01-"}, {"resource2": "123- 12- 13- 23-"}], "23-"),
]

SINGLE_NUMA = [   # (*singleNumaNodePolicy).mergeTestCases; "nil" = affinity reported as nil
    ("TopologyHint not set", [], "nil+"),
    ("HintProvider returns empty non-nil map[string][]TopologyHint", [{}], "nil+"),
    ("HintProvider returns -nil map[string][]TopologyHint from provider",
     [{"resource": None}], "nil+"),
    ("HintProvider returns empty non-nil map[string][]TopologyHint from provider",
     [{"resource": ""}], "nil-"),
    ("Single TopologyHint with Preferred as true and NUMANodeAffinity as nil",
     [{"resource": "nil+"}], "nil+"),
    ("Single TopologyHint with Preferred as false and NUMANodeAffinity as nil",
     [{"resource": "nil-"}], "nil-"),
    ("Two providers, 1 hint each, no common mask",
     [{"resource1": "0+"}, {"resource2": "1+"}], "nil-"),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 1/2",
     [{"resource1": "0+"}, {"resource2": "0-"}], "nil-"),
    ("Two providers, 1 hint each, same mask, 1 preferred, 1 not 2/2",
     [{"resource1": "1+"}, {"resource2": "1-"}], "nil-"),
    ("Two providers, 1 with 2 hints, 1 with single non-preferred hint matching",
     [{"resource1": "0+ 1+"}, {"resource2": "01-"}], "nil-"),
    ("Single NUMA hint generation",
     [{"resource1": "01+", "resource2": "0+ 1+ 01-"}], "nil-"),
    ("One no-preference provider",
     [{"resource1": "0+ 1+ 01-"}, None], "0+"),
]


def _ids(table):
    return [name for name, _, _ in table]


def _check(policy, numa_info, provider_spec, expected, admitted):
    best, admit_result = policy.merge(providers(provider_spec))
    assert best == expected_hint(expected, numa_info.nodes)
    assert admit_result is admitted
    # the literal cross-product fold gives the same answer
    lists = filter_providers_hints(providers(provider_spec))
    if isinstance(policy, SingleNumaNodePolicy):
        lists = filter_single_numa_hints(lists)
    merger = HintMerger(numa_info, lists, policy.name, policy.opts)
    assert merger.merge() == merger.merge_by_permutation()


@pytest.mark.parametrize("name,spec,expected", COMMON + BEST_EFFORT + NO_POLICIES,
                         ids=_ids(COMMON + BEST_EFFORT + NO_POLICIES))
def test_best_effort_merge(name, spec, expected):
    # policy_best_effort_test.go TestPolicyBestEffortMerge (commonNUMAInfoFourNodes)
    _check(BestEffortPolicy(FOUR_NODES), FOUR_NODES, spec, expected, True)


@pytest.mark.parametrize("name,spec,expected", COMMON + BEST_EFFORT + CLOSEST_NUMA,
                         ids=_ids(COMMON + BEST_EFFORT + CLOSEST_NUMA))
def test_best_effort_merge_closest_numa(name, spec, expected):
    # policy_best_effort_test.go TestPolicyBestEffortMergeClosestNUMA (commonNUMAInfoEightNodes)
    policy = BestEffortPolicy(EIGHT_NODES, PolicyOptions(prefer_closest_numa=True))
    _check(policy, EIGHT_NODES, spec, expected, True)


@pytest.mark.parametrize("name,spec,expected", COMMON + BEST_EFFORT + NO_POLICIES,
                         ids=_ids(COMMON + BEST_EFFORT + NO_POLICIES))
def test_restricted_merge(name, spec, expected):
    # policy_restricted_test.go TestPolicyRestrictedMerge: same merge, admit = preferred
    _check(RestrictedPolicy(FOUR_NODES), FOUR_NODES, spec, expected, expected.endswith("+"))


@pytest.mark.parametrize("name,spec,expected", COMMON + BEST_EFFORT + CLOSEST_NUMA,
                         ids=_ids(COMMON + BEST_EFFORT + CLOSEST_NUMA))
def test_restricted_merge_closest_numa(name, spec, expected):
    # policy_restricted_test.go (ClosestNUMA variant of the merge tables, 8 nodes)
    policy = RestrictedPolicy(EIGHT_NODES, PolicyOptions(prefer_closest_numa=True))
    _check(policy, EIGHT_NODES, spec, expected, expected.endswith("+"))


@pytest.mark.parametrize("name,spec,expected", COMMON + SINGLE_NUMA,
                         ids=_ids(COMMON + SINGLE_NUMA))
def test_single_numa_node_merge(name, spec, expected):
    # policy_single_numa_node_test.go TestPolicySingleNumaNodeMerge (commonNUMAInfoFourNodes)
    _check(SingleNumaNodePolicy(FOUR_NODES), FOUR_NODES, spec, expected, expected.endswith("+"))


def test_single_numa_node_ignores_prefer_closest():
    # policy.go NewHintMerger: Closest only when policy != single-numa-node. With a (made-up)
    # smaller self-distance on node 2, Closest would pick {2}; Narrowest picks {1}.
    dist = {a: {b: (5 if a == b == 2 else 10 if a == b else 20) for b in range(3)} for a in range(3)}
    info = NUMAInfo((0, 1, 2), dist)
    spec = [{"r": "2+ 1+"}]
    closest = BestEffortPolicy(info, PolicyOptions(prefer_closest_numa=True))
    assert closest.merge(providers(spec)) == (H("2+"), True)
    single = SingleNumaNodePolicy(info, PolicyOptions(prefer_closest_numa=True))
    assert single.merge(providers(spec)) == (H("1+"), True)


# --- policy_none_test.go ---------------------------------------------------------------------

@pytest.mark.parametrize("name,spec", [
    ("merged empty providers hints", []),
    ("merge with a single provider with a single preferred resource", [{"resource": "01+"}]),
    ("merge with a single provider with a single non-preferred resource", [{"resource": "01-"}]),
])
def test_none_policy_merge(name, spec):
    # TestPolicyNoneMerge: TopologyHint{} and admit
    assert NonePolicy().merge(providers(spec)) == (TopologyHint(None, False), True)


# --- can-admit tables ------------------------------------------------------------------------

@pytest.mark.parametrize("policy,preferred,expected", [
    ("none", False, True), ("none", True, True),                       # policy_none_test.go
    ("best-effort", False, True), ("best-effort", True, True),         # policy_best_effort_test.go
    ("restricted", False, False), ("restricted", True, True),          # policy_restricted_test.go
    ("single-numa-node", False, False),                                # policy_single_numa_node_test.go
])
def test_can_admit_pod_result(policy, preferred, expected):
    # Test*CanAdmitPodResult: "Preferred is set to <x> in topology hints", hint {nil, x}.
    # The policies decide on the merged hint; feed one provider whose only hint is {nil, x}.
    p = new_policy(policy, TWO_NODES)
    _, admitted = p.merge([{"r": [TopologyHint(None, preferred)]}])
    assert admitted is expected


def test_admit_raises_topology_affinity_error():
    with pytest.raises(TopologyAffinityError) as err:
        admit(RestrictedPolicy(TWO_NODES), providers([{"a": "0+"}, {"b": "1+"}]))
    assert err.value.reason == "TopologyAffinityError"
    assert str(err.value) == "Resources cannot be allocated with Topology locality"
    assert err.value.hint == TopologyHint(mask_of([0, 1]), False)
    assert admit(BestEffortPolicy(TWO_NODES), providers([{"a": "0+"}, {"b": "1+"}])) == H("01-")


# --- single-numa-node filter (TestPolicySingleNumaNodeFilterHints) -----------------------------

@pytest.mark.parametrize("name,lists,expected", [
    ("filter empty resources", [], []),
    ("filter hints with nil socket mask 1/2", ["nil-", "nil+"], ["", "nil+"]),
    ("filter hints with nil socket mask 2/2", ["0+ nil-", "1+ nil+"], ["0+", "1+ nil+"]),
    ("filter hints with empty resource socket mask", ["1+ 0+ nil-", ""], ["1+ 0+", ""]),
    ("filter hints with wide sockemask",
     ["0+ 1+ 12- 012- nil-", "12- 012- 02- 3-", "12- 012- 02-"], ["0+ 1+", "", ""]),
])
def test_filter_single_numa_hints(name, lists, expected):
    assert filter_single_numa_hints([hints(x) for x in lists]) == [hints(x) for x in expected]


# --- TestMaxOfMinAffinityCounts -------------------------------------------------------------

@pytest.mark.parametrize("lists,expected", [
    ([], 0),
    ([[TopologyHint(0, True)]], 0),
    (["0+"], 1),
    (["01+"], 2),
    (["01+ 012+"], 2),
    (["01+ 012+", "012+"], 3),
    (["01+ 012+", "012+ 0123+"], 3),
])
def test_max_of_min_affinity_counts(lists, expected):
    lists = [x if isinstance(x, list) else hints(x) for x in lists]
    assert max_of_min_affinity_counts(lists) == expected


def test_max_of_min_affinity_counts_skips_nil_hints():
    # narrowestHint ignores nil masks; a list of only nil hints contributes nothing
    assert max_of_min_affinity_counts([hints("nil+"), hints("nil- 012+")]) == 3


# --- TestCompareHintsNarrowest ----------------------------------------------------------------
# (name, bestNonPreferredAffinityCount, current or None, candidate, expected winner)

COMPARE = [
    ("candidate.NUMANodeAffinity.Count() == 0 (1)", -1, None, TopologyHint(0, False), "current"),
    ("candidate.NUMANodeAffinity.Count() == 0 (2)", -1, TopologyHint(0, True),
     TopologyHint(0, False), "current"),
    ("current == nil (1)", -1, None, "0+", "candidate"),
    ("current == nil (2)", -1, None, "0-", "candidate"),
    ("!current.Preferred && candidate.Preferred", -1, "0-", "0+", "candidate"),
    ("current.Preferred && !candidate.Preferred", -1, "0+", "0-", "current"),
    ("current.Preferred && candidate.Preferred (1)", -1, "0+", "0+", "current"),
    ("current.Preferred && candidate.Preferred (2)", -1, "01+", "0+", "candidate"),
    ("current.Preferred && candidate.Preferred (3)", -1, "0+", "01+", "current"),
    ("!current.Preferred && !candidate.Preferred (1.1)", 1, "01-", "01-", "current"),
    ("!current.Preferred && !candidate.Preferred (1.2)", 1, "12-", "01-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (1.3)", 1, "01-", "12-", "current"),
    ("!current.Preferred && !candidate.Preferred (2.1)", 2, "01-", "0-", "current"),
    ("!current.Preferred && !candidate.Preferred (2.2)", 2, "01-", "01-", "current"),
    ("!current.Preferred && !candidate.Preferred (2.3)", 2, "12-", "01-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (2.4)", 2, "01-", "12-", "current"),
    ("!current.Preferred && !candidate.Preferred (3a)", 2, "0-", "012-", "current"),
    ("!current.Preferred && !candidate.Preferred (3b)", 2, "0-", "01-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.1)", 3, "0-", "01-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.2)", 3, "0-", "12-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (3ca.3)", 4, "01-", "123-", "candidate"),
    ("!current.Preferred && !candidate.Preferred (3cb)", 4, "123-", "01-", "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.1)", 4, "012-", "012-", "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.2)", 4, "012-", "123-", "current"),
    ("!current.Preferred && !candidate.Preferred (3cc.3)", 4, "123-", "012-", "candidate"),
]


@pytest.mark.parametrize("name,best_count,current,candidate,expected", COMPARE,
                         ids=[c[0] for c in COMPARE])
def test_compare_hints_narrowest(name, best_count, current, candidate, expected):
    current = H(current) if isinstance(current, str) else current
    candidate = H(candidate) if isinstance(candidate, str) else candidate
    merger = HintMerger(NUMAInfo(()), [], "best-effort", PolicyOptions())
    merger.best_non_preferred_affinity_count = best_count
    result = merger.compare(current, candidate)
    assert result is (current if expected == "current" else candidate)


# --- merge_permutation (policy.go) ----------------------------------------------------------

@pytest.mark.parametrize("perm,expected", [
    ("0+ 01+", "0-"),          # equal-mask rule: preferred needs every non-nil mask equal
    ("0+ 0+", "0+"),
    ("nil+ 1+", "1+"),
    ("nil+ nil+", "0123+"),    # nil acts as "all nodes"
    ("0+ 1+", TopologyHint(0, False)),
    ("01+ nil- 01+", "01-"),
])
def test_merge_permutation(perm, expected):
    want = H(expected) if isinstance(expected, str) else expected
    assert merge_permutation(mask_of(range(4)), hints(perm)) == want


def test_filter_providers_hints_rules():
    lists = filter_providers_hints([None, {}, {"a": None, "b": [], "c": hints("0+ 1-")}])
    assert lists == [hints("nil+"), hints("nil+"), hints("nil+"), hints("nil-"), hints("0+ 1-")]


def test_closest_average_distance_includes_diagonal():
    # numa_info.go CalculateAverageFor: {0,1} on four nodes = (10+11+11+10)/4
    assert FOUR_NODES.average_distance(mask_of([0, 1])) == 10.5
    assert FOUR_NODES.closest(mask_of([1, 2]), mask_of([2, 3])) == mask_of([2, 3])
    assert FOUR_NODES.closest(mask_of([0, 2]), mask_of([1, 3])) == mask_of([0, 2])  # tie: smaller
    assert FOUR_NODES.closest(mask_of([3]), mask_of([0, 1])) == mask_of([3])         # narrowest


def test_closest_uses_asymmetric_distances():
    # commonNUMAInfoEightNodes has d[7][6]=13 but d[6][7]=11: {6,7} averages (10+11+13+10)/4
    assert EIGHT_NODES.average_distance(mask_of([6, 7])) == 11.0
    assert EIGHT_NODES.closest(mask_of([6, 7]), mask_of([4, 5])) == mask_of([4, 5])  # 10.5
    # {4,6} also averages 11.0: equal averages go to the integer-smaller mask
    assert EIGHT_NODES.closest(mask_of([6, 7]), mask_of([4, 6])) == mask_of([4, 6])


# --- fast merge == literal fold, on random inputs ---------------------------------------------

@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("policy", ["best-effort", "single-numa-node", "closest"])
def test_fast_merge_agrees_with_cross_product(seed, policy):
    rng = random.Random(seed)
    info = EIGHT_NODES if policy == "closest" else NUMAInfo(tuple(range(4)))
    n = len(info.nodes)
    lists = []
    for _ in range(rng.randint(0, 4)):
        lst = []
        for _ in range(rng.randint(0, 5)):
            mask = None if rng.random() < 0.15 else rng.randint(0, (1 << n) - 1)
            lst.append(TopologyHint(mask, rng.random() < 0.5))
        lists.append(lst)
    if policy == "single-numa-node":
        lists = filter_single_numa_hints(lists)
    opts = PolicyOptions(prefer_closest_numa=policy == "closest")
    merger = HintMerger(info, lists, "best-effort" if policy == "closest" else policy, opts)
    assert merger.merge() == merger.merge_by_permutation()


def test_eight_numa_cross_product_is_fast_enough_to_run_in_a_test():
    # 8 NUMA nodes, two memory resources and a CPU list of all 255 masks: the literal product
    # would be 255^3 permutations; the fast merge answers with the single-node preferred hint.
    info = NUMAInfo(tuple(range(8)))
    every = [TopologyHint(m, m.bit_count() == 1) for m in range(1, 256)]
    best = HintMerger(info, [every, every, every], "best-effort").merge()
    assert best == H("0+")


# --- policy_options_test.go ---------------------------------------------------------------------

FANCY_LEVELS = {"prefer-closest-numa-nodes": "stable", "max-allowable-numa-nodes": "beta",
                "fancy-new-option": "beta", "fancy-alpha-option": "alpha"}


@pytest.mark.parametrize("name,options,gates,expected", [
    ("return TopologyManagerOptions with PreferClosestNUMA set to true",
     {"prefer-closest-numa-nodes": "true", "max-allowable-numa-nodes": "8"}, {},
     PolicyOptions(True, 8)),
    ("return TopologyManagerOptions with MaxAllowableNUMANodes set to 12",
     {"max-allowable-numa-nodes": "12"}, {"beta_enabled": True}, PolicyOptions(False, 12)),
    ("fail to set option when TopologyManagerPolicyBetaOptions feature gate is not set",
     {"max-allowable-numa-nodes": "8"}, {"beta_enabled": False},
     "topology manager policy beta-level options not enabled,"),
    ("return empty TopologyManagerOptions", {}, {}, PolicyOptions(False, 8)),
    ("fail to parse options with error PreferClosestNUMANodes",
     {"prefer-closest-numa-nodes": "not a boolean"}, {}, "bad value for option"),
    ("fail to parse options with error MaxAllowableNUMANodes",
     {"max-allowable-numa-nodes": "can't parse to int"}, {"alpha_enabled": True},
     "unable to convert policy option to integer"),
    ("test beta options fail", {"fancy-new-option": "true"}, {"beta_enabled": False},
     "topology manager policy beta-level options not enabled,"),
    ("test alpha options fail", {"fancy-alpha-option": "true"}, {},
     "topology manager policy alpha-level options not enabled,"),
    # "test beta/alpha options success": the option passes the gate check; the kubelet then
    # returns "unsupported topologymanager option" (the Go test only compares the options).
    ("test beta options success", {"fancy-new-option": "true"}, {"beta_enabled": True},
     'unsupported topologymanager option: "fancy-new-option" (true)'),
    ("test alpha options success", {"fancy-alpha-option": "true"}, {"alpha_enabled": True},
     'unsupported topologymanager option: "fancy-alpha-option" (true)'),
])
def test_new_topology_manager_options(name, options, gates, expected):
    if isinstance(expected, PolicyOptions):
        assert new_policy_options(options, option_levels=FANCY_LEVELS, **gates) == expected
    else:
        with pytest.raises(TopologyManagerError) as err:
            new_policy_options(options, option_levels=FANCY_LEVELS, **gates)
        assert expected in str(err.value)


@pytest.mark.parametrize("value,ok", [("7", False), ("8", True), ("9", True), ("64", True)])
def test_max_allowable_numa_nodes_minimum(value, ok):
    # policy_options.go: values below defaultMaxAllowableNUMANodes (8) are an error
    if ok:
        assert new_policy_options({"max-allowable-numa-nodes": value}).max_allowable_numa_nodes == int(value)
    else:
        with pytest.raises(TopologyManagerError,
                           match='the minimum value of "max-allowable-numa-nodes" should not be '
                                 'less than 8'):
            new_policy_options({"max-allowable-numa-nodes": value})


@pytest.mark.parametrize("option,available", [
    ("this-option-does-not-exist", False),
    ("prefer-closest-numa-nodes", True),
    ("max-allowable-numa-nodes", True),
])
def test_policy_defaults_available(option, available):
    # TestPolicyDefaultsAvailable (default gates, release 1.37 maturity levels)
    try:
        check_policy_option_available(option)
        got = True
    except TopologyManagerError:
        got = False
    assert got is available


@pytest.mark.parametrize("option,gate,enabled,available", [
    ("this-option-does-not-exist", "beta", False, False),
    ("this-option-does-not-exist", "beta", True, False),
    ("prefer-closest-numa-nodes", "beta", False, True),
    ("prefer-closest-numa-nodes", "alpha", False, True),
    ("fancy-alpha-option", "alpha", True, True),
    ("fancy-alpha-option", "alpha", False, False),
    ("fancy-new-option", "beta", True, True),
    ("fancy-new-option", "beta", False, False),
])
def test_policy_options_available(option, gate, enabled, available):
    # TestPolicyOptionsAvailable
    gates = {f"{gate}_enabled": enabled}
    try:
        check_policy_option_available(option, option_levels=FANCY_LEVELS, **gates)
        got = True
    except TopologyManagerError:
        got = False
    assert got is available


def test_unknown_option_message():
    with pytest.raises(TopologyManagerError,
                       match='^unknown Topology Manager Policy option: "unknown-option"$'):
        new_policy_options({"unknown-option": "true"})


# --- startup (topology_manager_test.go TestNewManager) ------------------------------------------

def _machine(numa_count: int, distances=None) -> Topology:
    cpus = tuple(CPU(i, i, 0, i) for i in range(numa_count))
    return Topology(cpus, tuple(NUMANode(i, 1 << 30) for i in range(numa_count)), distances)


def test_more_than_8_numa_nodes_refused():
    # TestNewManager "more than 8 NUMA nodes"
    with pytest.raises(TopologyManagerError,
                       match="^unsupported on machines with more than 8 NUMA Nodes$"):
        new_topology_manager_policy("best-effort", _machine(9))


def test_more_than_8_numa_nodes_allowed_with_option_or_policy_none():
    assert new_topology_manager_policy("none", _machine(9)).name == "none"
    policy = new_topology_manager_policy("restricted", _machine(9),
                                         {"max-allowable-numa-nodes": "9"})
    assert policy.name == "restricted"


def test_prefer_closest_needs_distances():
    # TestNewManager "can't get NUMA distances"
    with pytest.raises(TopologyManagerError, match="error getting NUMA distances from cadvisor"):
        new_topology_manager_policy("best-effort", _machine(1), {"prefer-closest-numa-nodes": "true"})


def test_unknown_policy_name():
    with pytest.raises(TopologyManagerError, match='^unknown policy: "bogus"$'):
        new_topology_manager_policy("bogus", _machine(2))


def test_prefer_closest_from_topology_distances():
    topo = _machine(4, {a: {b: (10 if a == b else 20 if abs(a - b) == 1 else 30) for b in range(4)}
                        for a in range(4)})
    policy = new_topology_manager_policy("best-effort", topo, {"prefer-closest-numa-nodes": "true"})
    # {0,2} and {1,2} both non-preferred size 2; {1,2} is closer, Narrowest would pick {0,2}
    best, _ = policy.merge(providers([{"r": "02- 12-"}]))
    assert best == H("12-")


# --- TopologyHint.LessThan (topology_manager.go) --------------------------------------------------

@pytest.mark.parametrize("a,b,less", [
    ("0+", "0-", True), ("0-", "0+", False), ("0+", "01+", True), ("1+", "0+", False),
    ("01-", "2-", False),
])
def test_topology_hint_less_than(a, b, less):
    assert H(a).less_than(H(b)) is less

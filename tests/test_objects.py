"""Kinds are matched with their API group: a Volcano `batch.volcano.sh` Job or an OpenKruise
`apps.kruise.io` DaemonSet is not a `batch/v1` Job or an `apps/v1` DaemonSet."""
from numaguard.lint.engine import lint_documents
from numaguard.lint.objects import api_group, classify

BAD_TEMPLATE = {"spec": {"containers": "not a list"}}


def test_api_group_of_core_grouped_and_odd_api_versions():
    assert [api_group(v) for v in ("v1", "apps/v1", "batch.volcano.sh/v1alpha1", "", None)] == \
        ["", "apps", "batch.volcano.sh", "", ""]


def test_same_kind_of_another_group_is_skipped_as_unknown_kind():
    docs = [{"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "vc"},
             "spec": {"tasks": [{"template": BAD_TEMPLATE}]}},
            {"apiVersion": "apps.kruise.io/v1alpha1", "kind": "DaemonSet", "metadata": {"name": "ds"},
             "spec": {"template": BAD_TEMPLATE}}]
    assert [classify(d).kind for d in docs] == ["skip", "skip"]
    result = lint_documents(docs)
    assert result.findings == []
    assert (result.summary.objects, result.summary.skipped_by_reason["unknown-kind"]) == (0, 2)


def test_builtin_kind_of_its_own_group_is_judged():
    doc = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds"}, "spec": {}}
    found = classify(doc)
    assert (found.kind, found.pods, [(p.path, p.message) for p in found.problems]) == \
        ("pod", (), [(("spec",), "DaemonSet: spec.template is missing")])

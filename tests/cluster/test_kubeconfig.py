"""Which kubeconfig files and which context audit uses, as kubectl (client-go's loader) does."""
from __future__ import annotations

import os

from numaguard.lint.cluster.api import _readable_configs, kubeconfig_files, kubectl_current_context


def test_kubeconfig_files_follow_kubeconfig_or_the_home_file(tmp_path):
    home = os.path.expanduser("~/.kube/config")
    assert kubeconfig_files({}) == [home]
    assert kubeconfig_files({"KUBECONFIG": ""}) == [home]
    # duplicates and empty entries dropped, order kept, ~ expanded
    listed = os.pathsep.join(["/a", "", "~/b", "/a", "/c"])
    assert kubeconfig_files({"KUBECONFIG": listed}) == ["/a", os.path.expanduser("~/b"), "/c"]


def test_missing_and_empty_files_are_left_out_unreadable_ones_kept(tmp_path):
    (tmp_path / "empty").write_text("")
    (tmp_path / "blank").write_text("\n  \n")
    (tmp_path / "broken").write_text("contexts: [\n")
    (tmp_path / "good").write_text("current-context: a\n")
    (tmp_path / "a-directory").mkdir()
    files = [str(tmp_path / n) for n in ("missing", "empty", "blank", "broken", "good", "a-directory")]
    assert _readable_configs(files) == [(str(tmp_path / "broken"), None),
                                        (str(tmp_path / "good"), {"current-context": "a"}),
                                        (str(tmp_path / "a-directory"), None)]


def test_the_first_file_that_sets_current_context_wins():
    configs = [("f0", None), ("f1", {"kind": "Config"}), ("f2", {"current-context": ""}),
               ("f3", {"current-context": "dev"}), ("f4", {"current-context": "prod"})]
    assert kubectl_current_context(configs) == "dev"
    assert kubectl_current_context(configs[:3]) is None
    assert kubectl_current_context([("f", ["not", "a", "mapping"])]) is None

"""What the documents of one batch (a file and its kubelet drop-ins, stdin, a library call)
say about each other, settled before any of them is judged: kubelet drop-ins paired with their
main file, platform objects with the document of the same file they take as their base, and
which pools name each file. Kept for the batch only: the pairs are keyed by id() and must not
outlive the batch's documents."""
from __future__ import annotations

from typing import Callable

from numaguard.lint.load.documents import Document
from numaguard.lint.stages.documents import is_kubelet_config, name_of


class Batch:
    def __init__(self, pools_naming: Callable[[str | None], tuple[str, ...]] = lambda source: ()) -> None:
        self._pools_naming = pools_naming
        self._named: dict[str | None, tuple[str, ...]] = {}    # source -> pools naming it
        self.dropins: dict[str, list[Document]] = {}     # main source -> its drop-ins, in order
        self.merged_dropins: set[int] = set()             # id() of drop-ins merged into a main
        self.companions: dict[tuple, Document] = {}       # (source, group, kind[, name]) -> the document
        self.owned_companions: set[int] = set()           # id() of companions judged with a carrier
        self.companion_findings: set = set()              # findings already reported on a companion

    def clear(self) -> None:
        """Forget the batch once its documents are judged."""
        for kept in (self.dropins, self.merged_dropins, self.companions, self.owned_companions,
                     self.companion_findings, self._named):
            kept.clear()

    def pools_naming(self, source: str | None) -> tuple[str, ...]:
        """The pools whose kubeletConfigs name this file, matched once per file of a batch."""
        if source not in self._named:
            self._named[source] = self._pools_naming(source)
        return self._named[source]

    def collect_dropins(self, docs: list[Document]) -> None:
        """Pair kubelet drop-ins (`<main>.d/*.conf`) with their main file when both are linted
        in this run; the drop-ins are then linted as part of the merged configuration."""
        from numaguard.lint.k8s.kubelet_dropin import dropin_owner, walk_order

        mains = {d.source for d in docs if d.source and is_kubelet_config(d.data)}
        for d in sorted(docs, key=lambda d: (walk_order(d.source), d.index)):    # merge order
            owner = dropin_owner(d.source)
            if owner in mains and is_kubelet_config(d.data):
                self.dropins.setdefault(owner, []).append(d)
                self.merged_dropins.add(id(d))

    def collect_companions(self, docs: list[Document]) -> None:
        """Pair platform objects with the document of the same file they take as their base
        (kubeadm's InitConfiguration and its KubeletConfiguration): that document is then
        schema-checked on its own and judged as part of the carriers built over it."""
        from numaguard.lint.platforms.registry import companion_keys

        wanted = {}
        for d in docs:
            if isinstance(d.data, dict) and isinstance(d.data.get("apiVersion"), str):
                for key in companion_keys(d.data):
                    wanted[(d.source,) + tuple(key)] = True
        for d in docs:
            if not isinstance(d.data, dict) or not isinstance(d.data.get("apiVersion"), str):
                continue
            for key in wanted:
                source, group, kind = key[:3]
                if d.source == source and d.data.get("kind") == kind and d.data["apiVersion"].startswith(group) \
                        and (len(key) == 3 or name_of(d.data) == key[3]):
                    if self.companions.setdefault(key, d) is d:
                        self.owned_companions.add(id(d))

"""One finding, not two: a KubeletConfig the Node Tuning Operator rendered from a
PerformanceProfile, linted in the same run as the profile.

The operator renders a profile into a KubeletConfig named `performance-<profile>` (owned by the
profile, or labelled with its name: `numaguard.lint.platforms.openshift_base.rendered_profile`), and
repositories keep both: the profile the user edits and the render (expected test output, a
GitOps copy). numaguard judges both with the same kubelet rules, so every problem of the profile
would be reported twice. The profile keeps the finding: it is what the user edits, and its
findings already point at the profile field to change.

Which documents belong together is known only once the whole run has been read (the render and
its profile may be in different files, linted by different workers). So a render's findings
are held back as (profile, rule, kubelet field) while the documents are linted, the profiles'
findings are noted under the same key, and `release` hands back the held findings that no
profile of that name has: a render that disagrees with its profile (out of date) still says
what is wrong with it. Only findings on the kubelet configuration are keyed this way; what the
platform itself refuses about the render object stays with it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

Key = tuple[str, str, tuple]            # (profile name, rule id, field of the kubelet configuration)


@dataclass
class RenderedFindings:
    """The run's ledger: keys the profiles produced, and the renders' findings held back."""

    sources: set[Key] = field(default_factory=set)
    held: list[tuple[Key, Any]] = field(default_factory=list)

    def note_source(self, profile: str, rule_id: str, kubelet_path: tuple) -> None:
        self.sources.add((profile, rule_id, _hashable(kubelet_path)))

    def hold(self, profile: str, rule_id: str, kubelet_path: tuple, finding: Any) -> None:
        self.held.append(((profile, rule_id, _hashable(kubelet_path)), finding))

    def merge(self, other: RenderedFindings) -> None:
        """Add what a later batch (another worker's files) left behind."""
        self.sources |= other.sources
        self.held.extend(other.held)

    def release(self) -> list[Any]:
        """The held findings that no profile of the run also has, in the order they were held."""
        out = [finding for key, finding in self.held if key not in self.sources]
        self.held = []
        return out


def _hashable(path: tuple) -> tuple[Hashable, ...]:
    return tuple(step if isinstance(step, (str, int)) else str(step) for step in path)


__all__ = ["RenderedFindings"]

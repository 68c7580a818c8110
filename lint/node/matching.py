"""Which checkpoint entry belongs to a running container, and whether the two agree.

The kubelet's checkpoints key their entries by pod uid and container name; its PodResources
API names pods by namespace and name, without their uid. A container is matched to its entry
by pod uid when node inspect knows it (from `--pods` manifests, else from the pod's log
directory), else by container name alone, and only when that name is unambiguous: exactly one
running pod has a container of that name and at most one pod of the checkpoint records one.
Two pods with a container named "app" leave both unchecked rather than compared with the
wrong entry; a container name no pod of the checkpoint records is "not recorded" whoever owns
it. Verdicts say "matched by name only" when that is how they were reached.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Mapping, TypeVar

from numaguard.lint.k8s.cpuset import format_cpuset

T = TypeVar("T")

AGREES, DIFFERS, REJECTED, UNCHECKED, SKIPPED = "agrees", "differs", "rejected", "unchecked", "skipped"
WARNS, MEASURED = "warns", "measured"


@dataclass(frozen=True)
class Verdict:
    """One comparison for one container. `differs`/`rejected` make inspect exit 1,
    `unchecked` makes it incomplete; `skipped` says why nothing was compared (a source that
    could not be read, already reported as such); `warns`: a warning-level finding, the rest
    agrees; `measured`: a figure with nothing to judge it against (a shared container's
    throttling)."""

    status: str
    detail: str = ""
    by_name: bool = False            # reached by matching the container by name only

    def __str__(self) -> str:
        text = self.status + (f": {self.detail}" if self.detail else "")
        return text + (" (matched by name only)" if self.by_name else "")


@dataclass(frozen=True)
class PodIdentity:
    uid: str | None
    how: str                         # "--pods", "pod log directory", or why there is no uid


def identify(namespace: str, name: str, manifest_uids: Mapping[tuple[str, str], str],
             log_uids: Mapping[tuple[str, str], frozenset[str]]) -> PodIdentity:
    key = (namespace, name)
    if manifest_uids.get(key):
        return PodIdentity(manifest_uids[key], "--pods")
    found = log_uids.get(key, frozenset())
    if len(found) == 1:
        return PodIdentity(next(iter(found)), "pod log directory")
    if found:
        return PodIdentity(None, f"{len(found)} pod log directories")
    return PodIdentity(None, "no uid known")


@dataclass(frozen=True)
class Match(Generic[T]):
    status: str                      # "found", "none" (no entry for this container) or "ambiguous"
    value: T | None = None
    by_name: bool = False
    note: str = ""


def find_entry(entries: Mapping[str, Mapping[str, T]], who: PodIdentity, container: str,
               running_with_name: int) -> Match[T]:
    """The checkpoint entry of `container` of the pod `who`. `running_with_name`: how many
    running pods (PodResources) have a container of that name."""
    if who.uid is not None:
        value = entries.get(who.uid, {}).get(container)
        return Match("none" if value is None else "found", value)
    candidates = [by_c[container] for by_c in entries.values() if container in by_c]
    if not candidates:
        return Match("none", by_name=True)
    if len(candidates) == 1 and running_with_name == 1:
        return Match("found", candidates[0], by_name=True)
    return Match("ambiguous", by_name=True,
                 note=f"{len(candidates)} pod(s) of the checkpoint and {running_with_name} running pod(s) have a "
                      f"container named {container} and its pod's uid is unknown ({who.how}): give --pods, or "
                      "mount the pod log directories")


def entry_verdict(match: Match[T], got: T, show: Callable[[T], str]) -> Verdict:
    """A checkpoint's entry against what PodResources reports the container got (`got`; an
    empty value: nothing, which no entry is right for). `show` prints a recorded value."""
    if match.status == "ambiguous":
        return Verdict(UNCHECKED, match.note)
    if match.status == "none":
        return Verdict(DIFFERS, "not recorded") if got else Verdict(AGREES, by_name=match.by_name)
    if match.value == got:
        return Verdict(AGREES, by_name=match.by_name)
    return Verdict(DIFFERS, f"checkpoint records {show(match.value)}", match.by_name)


def show_cpus(cpus: frozenset[int]) -> str:
    return format_cpuset(cpus) or "no CPUs"


def show_numa(numa: tuple[int, ...]) -> str:
    return "NUMA " + (",".join(map(str, numa)) or "-")

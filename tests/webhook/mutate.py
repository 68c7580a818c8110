"""Seeded mutations of real AdmissionReviews, for the fuzz test (tests/webhook/test_fuzz.py) and
the fuzz benchmark (tests/bench/bench_webhook_fuzz.py).

The reviews start as the API server sends them (reviews.py) around every object of a judged
kind the repository holds (judged_objects.py); each mutant gets one to four mutations at
random places, most inside `request.object`: a field deleted, a value replaced by one of
another JSON type, a huge number, unicode (emoji, right-to-left marks, NUL, lone surrogates),
deep nesting, a long string. `random.Random(seed)` makes mutant N the same in every run.
"""
from __future__ import annotations

import copy
import random
from typing import Any, Iterator

from .judged_objects import judged_objects
from .reviews import burstable_pod, deployment, managed_pod, replica_pod, review

OTHER_TYPES = [None, True, False, 0, -1, 1.5, "", "x", [], {}, [1, "a", None], {"a": {"b": []}}]
# Huge numbers as JSON numbers and digit strings. (A quantity with a huge exponent, such as
# "1e999999999", is the engine's to refuse (NG002), issue 14 §3; the benchmark sends those.)
HUGE = [10 ** 30, -(2 ** 63), 2 ** 64, 1e308, -1e308, 1.7976931348623157e308, 5e-324, "9" * 40,
        "99999999999999999999Ei", "-9223372036854775809", "0." + "0" * 60 + "1", 10 ** 4000]
UNICODE = ["\u0000", "é", "日本語", "🙂" * 50, "\u202eevil", "\ud800", "\udfff\ud800", "\ufeffcpu", "a\nb\r\tc",
           "𝟙𝟘", "Ǆ", "\u200b"]
OVERFLOWING = ["1e999999999", "1E2147483648", "9e9999999999999999999"]


def base_reviews() -> list[dict]:
    controller = {"username": "system:serviceaccount:kube-system:replicaset-controller"}
    out = [review(managed_pod()), review(burstable_pod()), review(managed_pod(cpu="48")),
           review(managed_pod(namespace="team-warn")), review(burstable_pod(namespace="team-audit")),
           review(deployment(burstable_pod()), "UPDATE", old=deployment(managed_pod())),
           review(None, "DELETE", kind="Deployment", old=deployment(managed_pod())),
           review(managed_pod(), dry_run=True)]
    replica = review(replica_pod(burstable_pod()))
    replica["request"]["userInfo"] = controller
    out.append(replica)
    for _, obj in judged_objects():
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {}) if isinstance(obj.get("metadata", {}), dict) else {}
        meta.setdefault("namespace", "default")
        out.append(review(obj))
    return out


def _paths(value: Any, path: tuple = ()) -> Iterator[tuple]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, path + (i,))


def _nest(value: Any, depth: int, rng: random.Random) -> Any:
    for _ in range(depth):
        value = [value] if rng.random() < 0.5 else {"n": value}
    return value


def _replacement(rng: random.Random, current: Any, overflow: bool) -> Any:
    kind = rng.choice(["type", "huge", "unicode", "nest", "long"] + (["overflow"] * 2 if overflow else []))
    if kind == "type":
        return copy.deepcopy(rng.choice([v for v in OTHER_TYPES if type(v) is not type(current)]))
    if kind == "huge":
        return rng.choice(HUGE)
    if kind == "unicode":
        text = rng.choice(UNICODE)
        return text + current if isinstance(current, str) and rng.random() < 0.5 else text
    if kind == "nest":
        return _nest(copy.deepcopy(current), rng.choice([1, 5, 30, 63, 70, 200]), rng)
    if kind == "overflow":
        return rng.choice(OVERFLOWING)
    return rng.choice("ab🙂") * rng.choice([1000, 50_000])


def mutant(seed: int, bases: list[dict], *, overflow: bool = False) -> dict:
    """Review number `seed`: a base review with one to four mutations."""
    rng = random.Random(seed)
    doc = copy.deepcopy(bases[seed % len(bases)])
    for _ in range(rng.randint(1, 4)):
        paths = [p for p in _paths(doc) if p]
        inside = [p for p in paths if p[:2] in (("request", "object"), ("request", "oldObject")) and len(p) > 2]
        path = rng.choice(inside if inside and rng.random() < 0.75 else paths)
        parent = doc
        for key in path[:-1]:
            parent = parent[key]
        if rng.random() < 0.25:
            del parent[path[-1]]
        else:
            parent[path[-1]] = _replacement(rng, parent[path[-1]], overflow)
    return doc

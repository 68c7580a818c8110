"""What could not be read, said once and in words.

A pool with a firewall problem fails the same way on every node, but the API server puts each
node's details in its message: the node proxy's 503 reads "error trying to reach service:
dial tcp 10.0.3.28:10250: connect: connection refused"
(staging/src/k8s.io/apimachinery/pkg/util/proxy/transport.go wraps the dial error of Go's
net/http, which names the address), and a reset reads "read tcp 10.0.0.2:51234->10.0.3.28:10250".
So before grouping, the node's name, IP addresses and ports are taken out of each message;
a group prints one line with the values all its nodes share and `<node>`, `<node-ip>` or
`<port>` where they differ: "3 nodes (a, b, c): ...: dial tcp <node-ip>:10250: ...".
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from numaguard.lint.cluster.api import ApiError, Unreachable, seconds

PROXY = "cannot read the kubelet configuration through the node proxy"
# An IPv4 address, or an IPv6 one as Go's net.JoinHostPort writes it ([addr]), and its port.
_ADDRESS = re.compile(r"(?P<ip>(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?![\w.])|\[[0-9A-Fa-f:.%]+\])"
                      r"(?::(?P<port>\d{1,5})(?!\d))?")
_PLACEHOLDERS = {"node": "<node>", "ip": "<node-ip>", "port": "<port>"}


def configz_error(exc: Exception, timeout: float, attempts: int = 1) -> str:
    """One node's configz failure in words (its name and addresses still in it)."""
    if isinstance(exc, Unreachable) and exc.kind == "timeout":
        return f"the kubelet did not answer configz within {seconds(timeout)} (via the API server's node proxy)"
    return _configz_error(exc) + (f" ({attempts} attempts)" if attempts > 1 else "")


def _configz_error(exc: Exception) -> str:
    if isinstance(exc, ApiError) and not exc.is_status and exc.status in (401, 403):
        # The API server answers its own 401/403 with a Status; plain text through the proxy
        # is the kubelet's authorizer refusing the API server's kubelet client
        # (pkg/kubelet/server/server.go InstallAuthFilter: "Forbidden (user=..., verb=...,
        # resource=nodes, subresource=...)").
        return f"{PROXY}: {exc.status} from the kubelet itself (its own authorization, not RBAC on " \
               f"nodes/proxy): {exc.message}"
    if isinstance(exc, ApiError):
        return f"{PROXY}: {exc.line()}"
    return f"{PROXY}: {exc}"


@dataclass(frozen=True)
class _Shaped:
    template: str                         # the message with \0kind\0 slots
    values: tuple[tuple[str, str], ...]   # (kind, value) per slot, in order


def _shape(text: str, node: str) -> _Shaped:
    values: list[tuple[str, str]] = []

    def address(match: re.Match) -> str:
        values.append(("ip", match["ip"]))
        if match["port"] is None:
            return "\0ip\0"
        values.append(("port", match["port"]))
        return "\0ip\0:\0port\0"

    # the name as a word of its own: node "web" is no part of "webhook"
    pieces = re.split(rf"(?<![\w.-]){re.escape(node)}(?![\w-])", text) if node else [text]
    out = []
    for i, piece in enumerate(pieces):
        if i:
            values.append(("node", node))
            out.append("\0node\0")
        out.append(_ADDRESS.sub(address, piece))
    return _Shaped("".join(out), tuple(values))


def _render(template: str, members: list[_Shaped]) -> str:
    parts = template.split("\0")
    out, slot = [], 0
    for i, part in enumerate(parts):
        if i % 2 == 0:
            out.append(part)
            continue
        seen = {m.values[slot][1] for m in members}
        out.append(seen.pop() if len(seen) == 1 else _PLACEHOLDERS[part])
        slot += 1
    return "".join(out)


def names(items: list[str], limit: int = 3) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" and {len(items) - limit} more" if len(items) > limit else "")


def nodes_phrase(failed: list[str]) -> str:
    return f"node/{failed[0]}" if len(failed) == 1 else f"{len(failed)} nodes ({names(failed)})"


def grouped(failures: dict[str, str]) -> list[str]:
    """One line per distinct failure, in the order of the first node failing that way:
    `node/NAME: message` for one node, `N nodes (a, b, c): message` for several."""
    groups: dict[str, list[tuple[str, _Shaped]]] = {}
    for node, text in failures.items():
        shaped = _shape(text, node)
        groups.setdefault(shaped.template, []).append((node, shaped))
    return [f"{nodes_phrase([n for n, _ in members])}: {_render(template, [s for _, s in members])}"
            for template, members in groups.items()]


def count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n:,} " + (noun if n == 1 else plural or noun + "s")


def list_unread(what: str, noun: str, read_before: int) -> str:
    """How a list that failed part way is named in the summary line."""
    return f"the {what} list" + (f" after its first {count(read_before, noun)}" if read_before else "")


__all__ = ["configz_error", "grouped", "list_unread", "names", "nodes_phrase", "count", "PROXY"]

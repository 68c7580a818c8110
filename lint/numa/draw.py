"""Draw a node as text: sockets, NUMA nodes, cores and their hardware threads, marking
reserved, already taken and newly placed CPUs, so fragmentation is visible at a glance."""
from __future__ import annotations

from collections import defaultdict
from typing import Iterable

from numaguard.lint.numa.topology import Topology

RESERVED, TAKEN, PLACED, SHARED, FREE = "R", "#", "+", "s", "."
LEGEND = (f"{RESERVED} reserved   {TAKEN} taken by earlier pods   {PLACED} exclusive, this pod   "
          f"{SHARED} this pod's shared pool   {FREE} free")


def node_layout(topo: Topology) -> dict[int, dict[int, dict[int, list[int]]]]:
    """The node as drawings see it: socket -> NUMA node -> core -> its CPU ids (threads in
    id order), everything sorted. Shared by the text drawing and the HTML report's SVG."""
    layout: dict[int, dict[int, dict[int, list[int]]]] = defaultdict(lambda: defaultdict(dict))
    for cpu in sorted(topo.cpus, key=lambda c: c.id):
        layout[cpu.socket][cpu.numa].setdefault(cpu.core, []).append(cpu.id)
    return {s: {n: dict(sorted(cores.items())) for n, cores in sorted(numas.items())}
            for s, numas in sorted(layout.items())}


def draw_node(topo: Topology, *, reserved: Iterable[int] = (), taken: Iterable[int] = (),
              placed: Iterable[int] = (), shared: Iterable[int] = (),
              free_memory: dict[int, int] | None = None, cores_per_row: int = 16) -> str:
    reserved, taken, placed, shared = set(reserved), set(taken), set(placed), set(shared)

    def mark(cpu: int) -> str:
        if cpu in placed:
            return PLACED
        if cpu in shared:
            return SHARED
        if cpu in taken:
            return TAKEN
        if cpu in reserved:
            return RESERVED
        return FREE

    layout = node_layout(topo)
    threads = max(len(ids) for numa in layout.values() for cores in numa.values()
                  for ids in cores.values())
    lines: list[str] = []
    for socket in sorted(layout):
        lines.append(f"socket {socket}")
        for numa in sorted(layout[socket]):
            cores = layout[socket][numa]
            cpu_ids = [c for ids in cores.values() for c in ids]
            free = sum(1 for c in cpu_ids if mark(c) == FREE)
            memory = ""
            if free_memory is not None and numa in free_memory:
                memory = f", {free_memory[numa] / 2**30:.1f} GiB memory free"
            lines.append(f"  NUMA {numa}: {len(cores)} cores, {len(cpu_ids)} CPUs, "
                         f"{free} CPUs free{memory}")
            core_ids = sorted(cores)
            for start in range(0, len(core_ids), cores_per_row):
                row = core_ids[start:start + cores_per_row]
                width = max(len(str(cores[c][0])) for c in row) + 1
                lines.append("    cpu " + "".join(f"{cores[c][0]:>{width}}" for c in row))
                for t in range(threads):
                    cells = "".join(f"{(mark(cores[c][t]) if t < len(cores[c]) else ' '):>{width}}"
                                    for c in row)
                    lines.append(f"    t{t}  {cells}")
    lines.append(LEGEND)
    return "\n".join(lines) + "\n"

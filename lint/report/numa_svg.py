"""An SVG drawing of one node: NUMA nodes side by side, each core a column of its hardware
threads, each CPU coloured by what holds it (reserved, exclusive to a pod, a pod's shared
pool, free = the node's shared pool). Built on numaguard.lint.numa.draw.node_layout, the
same model the text drawing uses. Plain SVG, no fonts or images fetched."""
from __future__ import annotations

from html import escape

from numaguard.lint.numa.draw import node_layout

CELL, GAP, PAD, HEAD = 12, 2, 8, 30
CORES_PER_ROW = 16
COLORS = {"reserved": "#6b7280", "exclusive": "#dc2626", "shared": "#f59e0b", "free": "#d1fae5"}
LABELS = {"reserved": "reserved (system)", "exclusive": "exclusive to a pod",
          "shared": "a pod's shared pool", "free": "free (node shared pool)"}


def cpu_state(occ, cpu: int, exclusive: dict[int, str], shared: dict[int, str]) -> tuple[str, str]:
    """(state, holding pod) of one CPU; `exclusive`/`shared` are occ's maps, computed once."""
    if cpu in exclusive:
        return "exclusive", exclusive[cpu]
    if cpu in shared:
        return "shared", shared[cpu]
    if cpu in occ.reserved:
        return "reserved", ""
    return "free", ""


def node_svg(occ) -> str:
    layout = node_layout(occ.topology)
    exclusive, shared = occ.exclusive, occ.pod_shared
    threads = max((len(ids) for numas in layout.values() for cores in numas.values()
                   for ids in cores.values()), default=1)
    free_by_numa = occ.free_cpus_by_numa()
    boxes = []
    x = PAD
    height = 0
    for socket, numas in layout.items():
        for numa, cores in numas.items():
            core_ids = list(cores)
            columns = min(len(core_ids), CORES_PER_ROW)
            rows = -(-len(core_ids) // CORES_PER_ROW)
            width = columns * (CELL + GAP) + 2 * PAD
            box_height = HEAD + rows * (threads * (CELL + GAP) + 6) + PAD
            parts = [f'<g class="numa" data-numa="{numa}" transform="translate({x},{PAD})">',
                     f'<rect class="numa-box" width="{width}" height="{box_height}" rx="4"/>',
                     f'<text x="{PAD}" y="13" class="numa-label">NUMA {numa} · socket {socket}</text>',
                     f'<text x="{PAD}" y="25" class="numa-free">{free_by_numa.get(numa, 0)} of '
                     f'{sum(len(v) for v in cores.values())} CPUs free</text>']
            for i, core in enumerate(core_ids):
                row, col = divmod(i, CORES_PER_ROW)
                cx = PAD + col * (CELL + GAP)
                for t, cpu in enumerate(cores[core]):
                    cy = HEAD + row * (threads * (CELL + GAP) + 6) + t * (CELL + GAP)
                    state = cpu_state(occ, cpu, exclusive, shared)
                    who = f" · {state[1]}" if state[1] else ""
                    parts.append(f'<rect class="cpu {state[0]}" data-cpu="{cpu}" x="{cx}" y="{cy}" '
                                 f'width="{CELL}" height="{CELL}" fill="{COLORS[state[0]]}">'
                                 f'<title>CPU {cpu} (core {core}): {LABELS[state[0]]}{escape(who)}</title></rect>')
            parts.append("</g>")
            boxes.append("".join(parts))
            x += width + PAD
            height = max(height, box_height)
    total_w, total_h = x, height + 2 * PAD
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="numa-map" role="img" '
            f'aria-label="CPU map of {escape(occ.name)}" width="{total_w}" height="{total_h}" '
            f'viewBox="0 0 {total_w} {total_h}">' + "".join(boxes) + "</svg>")


def legend_svg() -> str:
    items = []
    for i, (state, label) in enumerate(LABELS.items()):
        x = 4 + i * 190
        items.append(f'<rect x="{x}" y="4" width="{CELL}" height="{CELL}" fill="{COLORS[state]}" '
                     f'class="cpu {state}"/><text x="{x + CELL + 6}" y="15">{label}</text>')
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="legend" width="{4 * 190}" height="22" '
            f'viewBox="0 0 {4 * 190} 22">' + "".join(items) + "</svg>")

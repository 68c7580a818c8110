"""An SVG drawing of one node: NUMA nodes side by side, each core a column of its hardware
threads, each CPU coloured by what holds it (reserved, exclusive to a pod, a pod's shared
pool, free = the node's shared pool). Built on numaguard.lint.numa.draw.node_layout, the
same model the text drawing uses. Plain SVG, no fonts or images fetched.

A node holds up to hundreds of CPUs and a page up to hundreds of maps, so a CPU is not an
element: each run of neighbouring CPUs in one thread row held alike (the same state and pod,
named on hover) is one rectangle, filled through its class (`MAP_CSS`) with a pattern
(`patterns_svg`, once per page) that draws a cell per CPU.

When the node's resident memory was measured (`node inspect --processes`: `occ.resident`),
each NUMA box lists below its CPUs the containers with memory there, largest first, a bar per
container against the largest: teal on one of its own NUMA nodes, purple outside them, light
grey for a container pinned to none.
"""
from __future__ import annotations

from html import escape

from numaguard.lint.numa.draw import node_layout
from numaguard.lint.rules.processes import human_bytes

CELL, GAP, PAD, HEAD = 12, 2, 8, 30
STEP = CELL + GAP
CORES_PER_ROW = 16
COLORS = {"reserved": "#6b7280", "exclusive": "#dc2626", "shared": "#f59e0b", "free": "#d1fae5"}
LABELS = {"reserved": "reserved (system)", "exclusive": "exclusive to a pod",
          "shared": "a pod's shared pool", "free": "free (node shared pool)"}


MEMORY_COLORS = {"local": "#0d9488", "remote": "#9333ea", "unpinned": "#cbd5e1"}
MEMORY_LABELS = {"local": "its own NUMA node", "remote": "outside its NUMA nodes", "unpinned": "not pinned"}
MEM_ROW, MEM_BAR, MEM_WIDTH, MEM_SHOWN = 14, 60, 260, 8

# The page's CSS for the map's cells: one class per state ("c-" and its initial), and the
# memory bars ("m-" and the initial of their state)
MAP_CSS = ("".join(f".c-{state[0]}{{fill:url(#ng-cpu-{state})}}" for state in COLORS)
           + "".join(f".m-{state[0]}{{fill:{color}}}" for state, color in MEMORY_COLORS.items())
           + ".mem-label{font-size:10px}")


def patterns_svg(extra: dict[str, str] | None = None) -> str:
    """One cell per STEP x STEP tile, aligned on the first cell of every NUMA box; `extra`:
    more fills by name (`numaguard plan` colours CPUs by workload), used as `url(#ng-cpu-NAME)`."""
    colours = {**COLORS, **(extra or {})}
    tiles = "".join(f'<pattern id="ng-cpu-{state}" patternUnits="userSpaceOnUse" x="{PAD}" y="{HEAD}" '
                    f'width="{STEP}" height="{STEP}"><rect width="{CELL}" height="{CELL}" fill="{color}"/></pattern>'
                    for state, color in colours.items())
    return f'<svg class="defs" width="0" height="0" aria-hidden="true"><defs>{tiles}</defs></svg>'


def cpu_state(occ, cpu: int, exclusive: dict[int, str], shared: dict[int, str]) -> tuple[str, str]:
    """(state, holding pod) of one CPU; `exclusive`/`shared` are occ's maps, computed once."""
    if cpu in exclusive:
        return "exclusive", exclusive[cpu]
    if cpu in shared:
        return "shared", shared[cpu]
    if cpu in occ.reserved:
        return "reserved", ""
    return "free", ""


def _runs(cells: list[tuple[int, str, str]]):
    """(first column, length, state, holder) of each run of equal (state, holder) cells."""
    start = 0
    for i in range(1, len(cells) + 1):
        if i == len(cells) or cells[i][1:] != cells[start][1:]:
            yield cells[start][0], i - start, cells[start][1], cells[start][2]
            start = i


def node_svg(occ, cell_class=None) -> str:
    """`cell_class(state, holder)`: the CSS class of a run of CPUs (default `c-` and the
    state's initial); `numaguard plan` gives each workload its own."""
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
            width = columns * STEP + 2 * PAD
            box_height = HEAD + rows * (threads + 1) * STEP - STEP + PAD
            memory = _memory_rows(occ, numa) if occ.resident else None
            if memory is not None:
                width = max(width, MEM_WIDTH)
                memory_top, box_height = box_height, box_height + MEM_ROW * (1 + min(len(memory), MEM_SHOWN + 1))
            parts = [f'<g class="numa" data-numa="{numa}" transform="translate({x},{PAD})">',
                     f'<rect class="numa-box" width="{width}" height="{box_height}" rx="4"/>',
                     f'<text x="{PAD}" y="13" class="numa-label">NUMA {numa} · socket {socket}</text>',
                     f'<text x="{PAD}" y="25" class="numa-free">{free_by_numa.get(numa, 0)} of '
                     f'{sum(len(v) for v in cores.values())} CPUs free</text>']
            for row in range(rows):
                block = core_ids[row * CORES_PER_ROW:(row + 1) * CORES_PER_ROW]
                for t in range(threads):
                    cells = [(col, *cpu_state(occ, cores[core][t], exclusive, shared))
                             for col, core in enumerate(block) if t < len(cores[core])]
                    y = HEAD + (row * (threads + 1) + t) * STEP
                    for col, length, state, holder in _runs(cells):
                        css = cell_class(state, holder) if cell_class is not None else f"c-{state[0]}"
                        rect = (f'<rect class="{css}" x="{PAD + col * STEP}" y="{y}" width="{length * STEP}" '
                                f'height="{STEP}"')
                        parts.append(f"{rect}><title>{escape(holder)}: {LABELS[state]}</title></rect>"
                                     if holder else rect + "/>")
            if memory is not None:
                parts.append(_memory_svg(memory, memory_top))
            parts.append("</g>")
            boxes.append("".join(parts))
            x += width + PAD
            height = max(height, box_height)
    total_w, total_h = x, height + 2 * PAD
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="numa-map" role="img" '
            f'aria-label="CPU map of {escape(occ.name)}" width="{total_w}" height="{total_h}" '
            f'viewBox="0 0 {total_w} {total_h}">' + "".join(boxes) + "</svg>")


def _memory_rows(occ, numa: int) -> list[tuple[str, int, str]]:
    """(container, bytes, state) of the containers with resident memory on `numa`, largest first."""
    rows = []
    for r in occ.resident:
        size = r.by_numa.get(numa, 0)
        if size:
            rows.append((r.label, size, "unpinned" if not r.home else "local" if numa in r.home else "remote"))
    return sorted(rows, key=lambda row: (-row[1], row[0]))


def _memory_svg(rows: list[tuple[str, int, str]], top: int) -> str:
    """The rows of one NUMA node, each bar against the largest there (the NUMA node's own size
    would leave a container of megabytes on a node of hundreds of gigabytes without a bar)."""
    parts = [f'<text x="{PAD}" y="{top + 10}" class="numa-free">resident memory</text>']
    biggest = max([size for _label, size, _state in rows], default=1)
    for i, (label, size, state) in enumerate(rows[:MEM_SHOWN]):
        y = top + MEM_ROW * (i + 1)
        bar = max(2, round(MEM_BAR * size / biggest))
        parts.append(f'<rect class="mem m-{state[0]}" x="{PAD}" y="{y + 3}" width="{bar}" height="8">'
                     f"<title>{escape(label)}: {human_bytes(size)}, {MEMORY_LABELS[state]}</title></rect>"
                     f'<text x="{PAD + MEM_BAR + 6}" y="{y + 11}" class="mem-label">{escape(label)} '
                     f"{human_bytes(size)}</text>")
    if len(rows) > MEM_SHOWN:
        rest = rows[MEM_SHOWN:]
        parts.append(f'<text x="{PAD + MEM_BAR + 6}" y="{top + MEM_ROW * (MEM_SHOWN + 1) + 11}" class="mem-label">'
                     f"and {len(rest)} more ({human_bytes(sum(size for _l, size, _s in rest))})</text>")
    return "".join(parts)


def legend_svg(memory: bool = False) -> str:
    """The CPU states' colours; with `memory`, the memory bars' too."""
    entries = [(COLORS[state], f"cpu {state}", label) for state, label in LABELS.items()]
    if memory:
        entries += [(MEMORY_COLORS[state], f"mem {state}", f"memory: {label}") for state, label in MEMORY_LABELS.items()]
    items = []
    for i, (color, css, label) in enumerate(entries):
        x = 4 + i * 190
        items.append(f'<rect x="{x}" y="4" width="{CELL}" height="{CELL}" fill="{color}" '
                     f'class="{css}"/><text x="{x + CELL + 6}" y="15">{label}</text>')
    width = len(entries) * 190
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="legend" width="{width}" height="22" '
            f'viewBox="0 0 {width} 22">' + "".join(items) + "</svg>")

"""`numaguard plan`: the node pool under the scheduler and the kubelet together.

Pure like `numaguard.lint.numa` (workloads, pools and a scheduler model in; placements out; no
files, no terminal): the scheduler's filters and scores one module per plugin they mirror
(`fit`, `balanced`, `taints`, `node_affinity`, `pod_affinity`, `nrt`), put together by
`scheduler`; the kubelet is `numaguard.lint.numa.admission`, called unchanged on each node's
occupancy (`nodes`). `play` runs one scenario; `sizing`, `drain` and `surge` run many.
"""

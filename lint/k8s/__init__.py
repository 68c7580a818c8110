"""Kubernetes semantics, one module per Kubernetes source it mirrors (each cites its file):
quantities, cpusets, pod resources and QoS, the pod-level budget (KEP-5526), the pod schema,
the KubeletConfiguration, its feature gates and its schema. Plain data in, facts out: no rules."""

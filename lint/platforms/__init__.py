"""The platforms that carry kubelet settings: one module per platform object numaguard reads a
kubelet from (EKS nodeadm, eksctl, Karpenter, Bottlerocket, EKS Anywhere, OpenShift, the Node
Tuning Operator, kubeadm, kind, Cluster API, Talos, GKE, Gardener), each turning its object into
the configuration the kubelet starts with (`carrier.PlatformKubelet`), and `registry`, which
names the reader of every (apiVersion, kind) so that a run imports a platform only when one of
its objects appears.

A layer above `numaguard.lint.k8s`: a platform reads the kubelet's own semantics (flags,
drop-ins, layers, schema) from there; `k8s` never imports a platform (import-linter contract in
pyproject.toml)."""

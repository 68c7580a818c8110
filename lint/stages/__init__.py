"""The stages a document goes through in a lint run, one module each (`numaguard.lint.engine`
feeds them and is the only entry point):

1. `classify`: what a document is (a pod carrier, a KubeletConfiguration, a platform object, a
   file a run check reads, or skipped), after the documents of its batch are paired
   (`batch`: kubelet drop-ins with their main file, platform objects with their base).
2. judge per object: `pods` (scope, schema, the pod rules per pool), `kubelets` (a
   KubeletConfiguration with its drop-ins, validity or pool requirements) and
   `platform_kubelets` (the configuration a platform object makes the kubelet start with).
3. `run_checks`, collect: every input is offered to the run checks, which keep an extract.
4. `run_checks`, judge the run: after the last document, each check judges its extracts once.

Every finding goes through `findings` (severity, suppression, NG003 for a value another program
renders, counting). `state.RunState` is what the stages share within one run.
"""

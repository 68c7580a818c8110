"""A test plugin, not part of numaguard: tests/webhook/test_failsafe.py puts this folder on
PYTHONPATH of the `numaguard webhook serve` it starts, and Python imports `sitecustomize` when
an interpreter starts, so the server (and the gunicorn workers it forks) runs with one rule,
NG103, that raises for a pod whose container runs TRIGGER_IMAGE, as a rule with a bug would.
Every other pod is judged by the real rule."""
import dataclasses

from numaguard.lint.rules import pods

TRIGGER_IMAGE = "registry.example/numaguard-test:raise"
_real = pods.pod_not_guaranteed


def _check(pod, ctx):
    containers = pod.spec.get("containers") if isinstance(pod.spec, dict) else None
    if any(isinstance(c, dict) and c.get("image") == TRIGGER_IMAGE for c in containers or ()):
        raise ZeroDivisionError("division by zero (the test plugin's rule)")
    return _real.check(pod, ctx)


# The registry collects the Rule values of the rule modules when first asked (after this ran).
pods.pod_not_guaranteed = dataclasses.replace(_real, check=_check)

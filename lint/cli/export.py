"""`numaguard export admission-policy`: a thin click command; the documents come from
numaguard.lint.export.admission_policy."""
from __future__ import annotations

import click

from numaguard.lint.cli.common import UsageProblem, load_config

MODES = ("enforce", "warn", "audit")


@click.group()
def export() -> None:
    """Write numaguard's checks for other engines."""


@export.command("admission-policy")
@click.option("--config", "config_path", type=click.Path(dir_okay=False),
              help="Config file (default: .numaguard.yaml here or in a parent directory): its pools, "
                   "scope, rule severities, webhook.mode and webhook.namespaces.")
@click.option("--mode", type=click.Choice(MODES),
              help="enforce: errors are denied, warnings shown; warn: everything shown; audit: "
                   "everything recorded in the audit log (default: the config's webhook.mode, else enforce).")
@click.option("--failure-policy", type=click.Choice(["Ignore", "Fail"]), default="Ignore", show_default=True,
              help="What the API server does if a policy cannot be evaluated.")
@click.option("--output", "-o", "output", type=click.Path(dir_okay=False),
              help="Write to this file instead of standard output.")
def admission_policy(config_path: str | None, mode: str | None, failure_policy: str, output: str | None) -> None:
    """Write ValidatingAdmissionPolicies and their bindings for the pod rules CEL can express.

    The API server then judges pods and workload templates itself, with no webhook to run.
    """
    from numaguard.lint.export.admission_policy import ExportError, admission_policy_yaml

    config = load_config(config_path)
    try:
        text = admission_policy_yaml(config, mode=mode, failure_policy=failure_policy,
                                     config_name=config_path or "(defaults)")
    except ExportError as e:
        raise UsageProblem(str(e)) from None
    if output is None:
        click.echo(text, nl=False)
        return
    try:
        with open(output, "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as e:
        raise UsageProblem(f"{output}: cannot write: {e.strerror}") from None
    click.echo(f"{output}: written")

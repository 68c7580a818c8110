"""`python -m numaguard`: the same command line as the `numaguard` script.

This folder is installed as the `numaguard` namespace package itself (see `package-dir` in
pyproject.toml): it holds only this module, no `__init__.py`, so `numaguard.lint` and
`numaguard.webhook`, installed from their own folders, share the `numaguard` namespace.
"""
from numaguard.lint.cli.start import main

main(prog_name="numaguard")

"""numaguard as a kubectl plugin: `kubectl numaguard lint|audit|simulate|plan|node|...`.

kubectl finds a plugin as an executable named `kubectl-<name>` on PATH and, on Linux and
macOS, replaces itself with it (execve), passing every argument after the plugin's name
unchanged and its own environment (staging/src/k8s.io/kubectl/pkg/cmd/plugin.go,
HandlePluginCommand and DefaultPluginHandler.Execute). kubectl parses none of its own global
flags for a plugin: one placed before the plugin name is refused ("flags cannot be placed
before plugin name"), one after it is the plugin's. So `kubectl numaguard audit --context prod`
reaches `numaguard audit` as `--context prod`, and the kubeconfig is found as kubectl finds it
($KUBECONFIG, else ~/.kube/config) by numaguard.lint.cluster.api.connect.

Shell completion: kubectl completes a plugin's arguments by running `kubectl_complete-<name>`
with the words typed after the plugin name, the last one being the word to complete, and
reads one completion per line, then an optional `:<directive>` line in Cobra's terms
(staging/src/k8s.io/kubectl/pkg/cmd/plugin/plugin_completion.go, pluginCompletion and
getPluginCompletions). `complete` answers it from the click command tree.
"""
from __future__ import annotations

import sys

PROG_NAME = "kubectl numaguard"

# Cobra's ShellCompDirective bits (spf13/cobra completions.go), as kubectl reads them.
DIRECTIVE_DEFAULT = 0           # the shell completes file names
DIRECTIVE_NO_FILE_COMP = 4      # only the completions given
DIRECTIVE_FILTER_DIRS = 16      # directory names only


def main() -> None:
    """The `kubectl-numaguard` executable: the numaguard command line, named as users type it."""
    from numaguard.lint.cli.start import main as numaguard

    numaguard(prog_name=PROG_NAME)


def completions(words: list[str]) -> list[str]:
    """kubectl's plugin completion answer for `kubectl numaguard WORDS...` (the last word is
    the one being completed, "" for a new word): `value<TAB>help` lines, then `:directive`.
    Where click knows no values (a file or directory, a PATH argument, a free-form value), none
    is given and the shell completes file names, as Cobra does by default."""
    from click.shell_completion import ShellComplete

    from numaguard.lint.cli.main import main as numaguard

    args, incomplete = list(words[:-1]), (words[-1] if words else "")
    items = ShellComplete(numaguard, {}, PROG_NAME, "_KUBECTL_NUMAGUARD_COMPLETE") \
        .get_completions(args, incomplete)
    kinds = {item.type for item in items}
    if "dir" in kinds:
        return [f":{DIRECTIVE_FILTER_DIRS}"]
    if not items or "file" in kinds:
        return [f":{DIRECTIVE_DEFAULT}"]
    lines = [f"{item.value}\t{item.help}" if item.help else str(item.value) for item in items]
    return [*lines, f":{DIRECTIVE_NO_FILE_COMP}"]


def complete() -> None:
    """The `kubectl_complete-numaguard` executable kubectl runs for shell completion."""
    sys.stdout.write("".join(line + "\n" for line in completions(sys.argv[1:])))

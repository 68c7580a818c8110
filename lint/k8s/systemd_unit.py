"""The kubelet's command line in a systemd unit (an OpenShift MachineConfig's `kubelet.service`).

systemd reads a unit file and then its drop-ins in name order (`systemd.unit(5)`: "drop-in
files ... are applied in lexicographic order of their filename"); a list setting such as
`ExecStart=` is appended to, and an empty assignment (`ExecStart=`) resets it, which is how a
drop-in replaces the command. A line ending in `\\` continues on the next (`systemd.syntax(7)`).
`ExecStart=` (`systemd.service(5)`, "Command lines") may start with the prefixes `@-:+!`; its
words are split as the shell splits them, with double and single quotes; `${VAR}` is replaced by
the variable's value as one word and `$VAR` alone by its value split at whitespace, from
`Environment=` and `EnvironmentFile=` (this module knows the former only).

`kubelet_command` gives the kubelet's words and the variables it could not expand.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class UnitCommand:
    """The kubelet's arguments (after the kubelet binary), each with the index of the text it
    came from, and the arguments left out because they hold a variable systemd expands from a
    file numaguard does not see."""

    words: list[tuple[str, int]] = field(default_factory=list)
    unexpanded: list[tuple[str, int]] = field(default_factory=list)
    found: bool = False                # an ExecStart runs the kubelet
    container: str | None = None       # the kubelet runs from this image (docker/podman run, hyperkube)


def directives(text: str) -> list[tuple[str, str, str]]:
    """(section, key, value) of every assignment, continuation lines joined."""
    out, section, pending = [], "", ""
    for raw in text.splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
        elif "=" in line:
            key, _, value = line.partition("=")
            out.append((section, key.strip(), value.strip()))
    if pending:
        out.append((section, *pending.partition("=")[::2]))
    return out


def kubelet_command(texts: list[str]) -> UnitCommand:
    """The kubelet's command line in a unit and its drop-ins (`texts`, in the order systemd
    applies them)."""
    exec_start: list[tuple[str, int]] = []
    environment: dict[str, str] = {}
    for index, text in enumerate(texts):
        for section, key, value in directives(text):
            if section != "Service":
                continue
            if key == "ExecStart":
                if value:
                    exec_start.append((value, index))
                else:
                    exec_start = []          # an empty assignment resets the list
            elif key == "Environment":
                for pair in _split(value):
                    name, sep, val = pair.partition("=")
                    if sep:
                        environment[name] = val
    command = UnitCommand()
    for line, index in exec_start:
        words = _split(line.lstrip("@-:+!"))
        start = next((i for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "kubelet"), None)
        if start is None:
            continue
        image = _container(words[:start])
        if image is not None:
            image = " ".join(_expand(image, environment) or [image])
        command = UnitCommand(found=True, container=image)
        for word in words[start + 1:]:
            expanded = _expand(word, environment)
            if expanded is None:
                command.unexpanded.append((word, index))
            else:
                command.words += [(w, index) for w in expanded]
    return command


_RUNTIMES = ("docker", "podman", "nerdctl", "crictl")


def _container(runner: list[str]) -> str | None:
    """The image the kubelet runs from when the words before it start a container (`docker run
    ... IMAGE`, `hyperkube kubelet`), else None: then the kubelet is the node's own binary."""
    names = [w.rsplit("/", 1)[-1] for w in runner]
    if names and names[0] in _RUNTIMES and "run" in names:
        options = [w for w in runner[names.index("run") + 1:] if not w.startswith("-")]
        return options[-1] if options else runner[0]
    if "hyperkube" in names:
        return runner[names.index("hyperkube")]
    return None


def _split(value: str) -> list[str]:
    try:
        return shlex.split(value, comments=False, posix=True)
    except ValueError:                      # an unbalanced quote: systemd refuses the line
        return value.split()


def _expand(word: str, environment: dict[str, str]) -> list[str] | None:
    """The words `word` becomes; None when it names a variable the unit does not set."""
    names = [m[1] or m[2] for m in _VARIABLE.finditer(word)]
    if any(name not in environment for name in names):
        return None
    if word.startswith("$") and not word.startswith("${") and _VARIABLE.fullmatch(word):
        return environment[word[1:]].split()
    return [_VARIABLE.sub(lambda m: environment[m[1] or m[2]], word)]


__all__ = ["kubelet_command", "directives", "UnitCommand"]

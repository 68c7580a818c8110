"""Which files a lint run reads: walking directories and applying `--exclude` globs.

`numaguard.lint.load.documents.load_paths` reads and parses what `input_files` names; the choice of files
lives here so that loading YAML and walking the file system can be read (and changed)
separately. The glob dialect is a small one of our own, close to .gitignore: `**` crosses
directories, `*` and `?` stay within one name, and a pattern without `/` matches a file or
directory name anywhere in the path.
"""
from __future__ import annotations

import os
import re
from typing import Callable, Iterable, Iterator

YAML_SUFFIXES = (".yaml", ".yml", ".json")
# The kubelet's checkpoint files (JSON without a suffix), read when a directory such as
# /var/lib/kubelet is walked (numaguard.lint.k8s.checkpoints).
CHECKPOINT_NAMES = ("cpu_manager_state", "memory_manager_state")
STDIN_ARGUMENT = "-"


def input_files(paths: Iterable[str], exclude: Iterable[str] = ()) -> Iterator[str]:
    """The files named by `paths`, directories walked, in order; `-` (stdin) passed through.

    Raises FileNotFoundError, before yielding anything, for a path that does not exist.
    `exclude` holds glob patterns matched against the posix path (as given and relative to
    the directory argument); a pattern excludes the paths it matches and everything under
    them. Directories yield their *.yaml, *.yml and *.json files (and the kubelet's
    cpu_manager_state and memory_manager_state) recursively, sorted; hidden
    directories and files are skipped while walking.
    """
    paths = [os.fspath(path) for path in paths]
    for path in paths:
        if path != STDIN_ARGUMENT and not os.path.lexists(path):     # a dangling symlink: skipped
            raise FileNotFoundError(2, "No such file or directory", path)
    patterns = list(exclude)
    is_excluded = _excluder(patterns) if patterns else None
    for path in paths:
        if path == STDIN_ARGUMENT:
            yield path
            continue
        directory = os.path.isdir(path)
        for file_path in _files_under(path) if directory else [path]:
            if is_excluded is not None:
                relative = os.path.relpath(file_path, path) if directory else path
                if is_excluded(_posix(file_path), _posix(relative)):
                    continue
            yield file_path


def _posix(path: str) -> str:
    return path.replace(os.sep, "/") if os.sep != "/" else path


def _files_under(directory: str) -> list[str]:
    found = []
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if not d.startswith(".")]     # .git, .github, editor state
        for name in files:
            if (name.lower().endswith(YAML_SUFFIXES) or name in CHECKPOINT_NAMES) and not name.startswith("."):
                found.append(os.path.join(root, name))
    return sorted(found, key=_posix)


def _excluder(patterns: Iterable[str]) -> Callable[[str, str], bool]:
    """A test for exclusion: a pattern excludes the paths it matches and everything under them.

    A pattern without `/` (like `vendor` or `*.generated.yaml`) matches any one name in the
    path, as .gitignore does.
    """
    compiled = []
    for pattern in patterns:
        pattern = pattern.strip().removeprefix("./").rstrip("/")
        if pattern:
            compiled.append((_glob_regex(pattern), _glob_regex(pattern + "/**"), "/" not in pattern))

    def excluded(path: str, relative: str) -> bool:
        candidates = {p.removeprefix("./") for p in (path, relative)}
        for whole, under, by_name in compiled:
            for candidate in candidates:
                if whole.match(candidate) or under.match(candidate):
                    return True
                if by_name and any(whole.match(part) for part in candidate.split("/")):
                    return True
        return False

    return excluded


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """A glob as a regex: `**` crosses directories, `*` and `?` stay within one name."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[":
            end = pattern.find("]", i + 2)
            if end == -1:
                out.append(re.escape("["))
                i += 1
            else:
                body = pattern[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")

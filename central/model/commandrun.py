"""How long a container's command runs and how it exits, read from the command itself.

Simulated nodes run no processes, but batch test suites (Volcano's e2e specs among them) write
containers whose whole job is to wait and exit: `sh -c "sleep 10s && exit 3"`, `sleep 5`,
`/bin/true`, `tail -f /dev/null`. This reads such a command line as a shell would run it and
says when it ends and with which exit code, without running anything.

A script is a list of simple commands joined by `;`, newlines, `&&` and `||`, run in order
with `$?` kept as a shell keeps it. Understood simple commands:
- `sleep D...` (seconds, or with an s/m/h/d suffix, summed; `infinity`): takes that long;
- `exit [N]` ends the script; `exec CMD` runs CMD and ends with it;
- `true`, `:` exit 0 and `false` exits 1; `tail -f FILE` never ends;
- commands that only print or set things up (`echo`, `mkdir`, `export`, `trap`, ...) finish at
  once with 0, and `VAR=value` assignments are skipped; `> FILE` redirections are ignored.
In an image whose programs are all known (`images.known_programs`: busybox, nginx on Alpine), a
command the image does not have is "not found" (status 127, the script goes on), and so is a
script file given to `sh`. Anything else reached (a program such as `python3 train.py`, a pipe,
a background `&`, a command substitution) makes the whole command not understood: the caller
keeps the container running until it is deleted. A branch the script skips (`true || xyz`) is
never read.
"""

from __future__ import annotations

import math
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from central.model.images import is_file, known_programs, on_path

SHELLS = frozenset({"sh", "bash", "ash", "dash"})
NOT_FOUND = 127  # the shell's status for a command or script file that does not exist
START_ERROR = 128  # the runtime's exit code for a container whose program does not exist
# Commands that finish at once with status 0 whatever their arguments: they print, or set up
# the process or its files, and none of that changes when a simulated container ends.
INSTANT = frozenset({
    "echo", "printf", "cd", "export", "unset", "set", "trap", "ulimit", "umask", "mkdir", "touch", "rm",
    "cp", "mv", "ln", "chmod", "chown", "date", "env", "hostname", "pwd", "ls", "cat", "id", "whoami",
    "uname", "sync", "wait"})
REDIRECTS = frozenset({">", ">>", "<"})
_SLEEP = re.compile(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)")
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True)
class Run:
    """A command's run: `seconds` until it exits (None: never exits by itself), `exit_code`."""

    seconds: float | None
    exit_code: int = 0


class NotUnderstood(Exception):
    """The command does something this reading cannot tell the end of."""


def container_run(container: Mapping[str, Any]) -> Run | None:
    """The run of a container's `command` + `args`; None when absent or not understood."""
    argv = [str(word) for word in (container.get("command") or []) + (container.get("args") or [])]
    if not argv:
        return None  # the image's own entrypoint: unknown here
    try:
        return command_run(argv, known_programs(container.get("image")))
    except NotUnderstood:
        return None


def command_run(argv: Sequence[str], programs: frozenset[str] | None = None) -> Run:
    """The run of one argv, `sh -c SCRIPT` included, in an image with `programs` (None:
    unknown). Raises NotUnderstood."""
    if _base(argv[0]) in SHELLS:
        return _shell_run(list(argv[1:]), programs)
    if programs is not None and not on_path(argv[0], programs):
        return Run(0.0, START_ERROR)  # the container cannot start: "executable file not found"
    state = _Shell(programs)
    state.simple(list(argv))
    return state.result()


def script_run(script: str, programs: frozenset[str] | None = None) -> Run:
    """The run of a shell script's text. Raises NotUnderstood."""
    state = _Shell(programs)
    for connector, words in _commands(script):
        if state.ended or (connector == "&&" and state.status != 0) or (connector == "||" and state.status == 0):
            continue
        state.simple(words)
    return state.result()


def _shell_run(args: list[str], programs: frozenset[str] | None) -> Run:
    """A shell started with `args`: `-c SCRIPT`, or a script file."""
    if len(args) >= 2 and re.fullmatch(r"-[eux]*c[eux]*", args[0]):
        return script_run(args[1], programs)
    if args and not args[0].startswith("-") and programs is not None and not is_file(args[0], programs):
        return Run(0.0, NOT_FOUND)  # "sh: can't open 'fake.sh'": the image has no such file
    raise NotUnderstood(" ".join(args))  # a script file we cannot read


class _Shell:
    def __init__(self, programs: frozenset[str] | None) -> None:
        self.programs = programs
        self.seconds = 0.0
        self.status = 0
        self.ended = False
        self.forever = False

    def simple(self, words: list[str]) -> None:
        while words and _ASSIGNMENT.match(words[0]):
            words = words[1:]
        if not words:
            self.status = 0
            return
        name, args = _base(words[0]), words[1:]
        if name == "exec" and args:
            self.simple(args)
            self.ended = True
        elif name == "exit":
            self.status = _exit_code(args, self.status)
            self.ended = True
        elif name == "sleep":
            self._sleep(args)
        elif name == "tail" and any(re.fullmatch(r"-[a-zA-Z]*[fF][a-zA-Z]*", a) for a in args):
            self._never_ends()
        elif name in ("true", ":"):
            self.status = 0
        elif name == "false":
            self.status = 1
        elif name in INSTANT:
            self.status = 0
        elif name in SHELLS:
            run = _shell_run(args, self.programs)
            if run.seconds is None:
                self._never_ends()
            else:
                self.seconds, self.status = self.seconds + run.seconds, run.exit_code
        elif self.programs is not None and not on_path(words[0], self.programs):
            self.status = NOT_FOUND  # "sh: xyz: not found"; the script goes on
        else:
            raise NotUnderstood(" ".join(words))

    def _sleep(self, args: list[str]) -> None:
        if not args:
            raise NotUnderstood("sleep without a duration")
        for arg in args:
            if arg in ("infinity", "inf"):
                self._never_ends()
                return
            match = _SLEEP.fullmatch(arg)
            if match is None:
                raise NotUnderstood(f"sleep {arg}")
            self.seconds += float(match.group(1)) * _UNIT[match.group(2)]
        self.status = 0

    def _never_ends(self) -> None:
        self.forever = True
        self.ended = True

    def result(self) -> Run:
        if self.forever or not math.isfinite(self.seconds):
            return Run(None)
        return Run(self.seconds, self.status)


def _commands(script: str) -> list[tuple[str, list[str]]]:
    """The script's simple commands, each with the connector before it (`;`, `&&` or `||`)."""
    lexer = shlex.shlex(script, posix=True, punctuation_chars=";&|<>\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        tokens = list(lexer)
    except ValueError as err:  # an unclosed quote
        raise NotUnderstood(str(err)) from err
    out: list[tuple[str, list[str]]] = []
    connector, words = ";", []
    skip_next = False
    for token in tokens:
        if skip_next:
            skip_next = False
            continue
        core = token.replace("\n", "")  # `&&` may end a line
        if core in ("", ";") and token:
            operator = ";"
        elif core in ("&&", "||"):
            operator = core
        elif token in REDIRECTS:
            skip_next = True  # the redirection's target is no argument of the command
            continue
        elif token and set(token) <= set(";&|<>\n"):
            raise NotUnderstood(f"shell operator {token!r}")
        else:
            if "`" in token or "$(" in token:
                raise NotUnderstood(f"command substitution in {token!r}")
            words.append(token)
            continue
        if words:
            out.append((connector, words))
        elif operator != ";":
            raise NotUnderstood(f"{operator!r} with no command before it")
        connector, words = operator, []
    if words:
        out.append((connector, words))
    return out


def _exit_code(args: list[str], status: int) -> int:
    if not args:
        return status
    if not re.fullmatch(r"-?\d+", args[0]):
        raise NotUnderstood(f"exit {args[0]}")
    return int(args[0]) & 0xFF


def _base(word: str) -> str:
    return word.rsplit("/", 1)[-1]

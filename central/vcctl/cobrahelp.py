"""`--help` of the commands Caldera shares with vcctl, in cobra's layout (vcctl is a cobra
program): scripts and Volcano's vcctl suite read `job --help`, `job list --help` ... the same.

    CobraParser   an ArgumentParser whose format_help is cobra's help template: the command's
                  text, "Usage:", "Available Commands:" (by name, padded to 11), "Flags:" as
                  pflag prints them (sorted by long name, "-h, --help  help for <name>"
                  included, `(default "x")`), and the "Use ... [command] --help" line
    program_name  "vcctl" when Caldera runs under that name (a `vcctl` link to `caldera`), so
                  the help names the command the user typed

Flags and errors are still argparse's; only the help text changes.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

NAME_PADDING = 11  # cobra's minimum width of the command-name column


def program_name(argv0: str | None = None) -> str:
    name = os.path.basename(sys.argv[0] if argv0 is None else argv0)
    return "vcctl" if name == "vcctl" else "caldera"


class _Subcommands(argparse._SubParsersAction):  # type: ignore[type-arg]
    """A subcommand's one-line help is also its description, as cobra prints its Short."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        if kwargs.get("help"):
            kwargs.setdefault("description", kwargs["help"])
        parser: argparse.ArgumentParser = super().add_parser(name, **kwargs)
        return parser


class CobraParser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _Subcommands)

    def format_help(self) -> str:
        return cobra_help(self)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return sorted((choice.dest, choice.help or "") for choice in action._choices_actions)
    return []


def _type_name(action: argparse.Action) -> str:
    if action.nargs == 0:
        return ""
    return "int" if action.type is int else "float64" if action.type is float else "string"


def _default(action: argparse.Action, help_text: str) -> str:
    """pflag's default suffix: only for a non-zero default, strings quoted."""
    value = action.default
    if action.nargs == 0 or "(default" in help_text or value in (None, "", 0, False, []) \
            or value is argparse.SUPPRESS:
        return ""
    return f' (default "{value}")' if isinstance(value, str) else f" (default {value})"


def flag_usages(parser: argparse.ArgumentParser, name: str) -> str:
    """pflag's FlagUsages: `  -s, --long type` (or `      --long type`), the help 3 spaces
    after the widest of those, sorted by long name."""
    rows: list[tuple[str, str, str]] = []  # (long name, left part, help)
    for action in parser._actions:
        if not action.option_strings or action.help is argparse.SUPPRESS:
            continue
        shorts = [o for o in action.option_strings if not o.startswith("--")]
        longs = [o for o in action.option_strings if o.startswith("--")]
        long = longs[0] if longs else shorts[0]
        left = f"  {shorts[0]}, {long}" if shorts and longs else f"      {long}"
        kind = _type_name(action)
        help_text = f"help for {name}" if isinstance(action, argparse._HelpAction) else action.help or ""
        rows.append((long.lstrip("-"), left + (f" {kind}" if kind else ""), help_text + _default(action, help_text)))
    width = max((len(left) for _, left, _ in rows), default=0)
    return "".join(f"{left.ljust(width)}   {text}".rstrip() + "\n" for _, left, text in sorted(rows))


def cobra_help(parser: argparse.ArgumentParser) -> str:
    path = parser.prog
    name = path.split()[-1]
    commands = _subcommands(parser)
    out = f"{parser.description.strip()}\n\n" if parser.description else ""
    out += "Usage:\n" + (f"  {path} [command]" if commands else f"  {path} [flags]")
    if commands:
        pad = max([NAME_PADDING] + [len(command) for command, _ in commands])
        out += "\n\nAvailable Commands:" + "".join(f"\n  {command.ljust(pad)} {short}" for command, short in commands)
    flags = flag_usages(parser, name)
    if flags:
        out += "\n\nFlags:\n" + flags.rstrip("\n")
    if commands:
        out += f'\n\nUse "{path} [command] --help" for more information about a command.'
    return out + "\n"

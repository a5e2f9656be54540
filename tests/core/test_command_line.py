"""Conventions every `caldera` command keeps: each flag says what it does, help shows defaults."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Iterator

import pytest

from central.cli import COMMANDS, Parser


def _flags(parser: argparse.ArgumentParser, name: str) -> Iterator[tuple[str, argparse.Action]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _flags(sub, f"{name} {sub_name}")
        elif action.option_strings:
            yield name, action


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_flag_has_help(command: str) -> None:
    parser = Parser(prog=f"caldera {command}")
    importlib.import_module(COMMANDS[command][0]).add_arguments(parser)
    missing = [f"{name} {action.option_strings[0]}" for name, action in _flags(parser, command)
               if not (action.help or "").strip()]
    assert missing == []


def test_help_shows_defaults() -> None:
    parser = Parser(prog="caldera webhook")
    importlib.import_module(COMMANDS["webhook"][0]).add_arguments(parser)
    assert "tasks per job (default: 100)" in " ".join(parser.format_help().split())


def test_progress_on_a_terminal_only(capsys, monkeypatch) -> None:
    from central.cli import main

    argv = ["fragmentation", "--nodes", "4", "--steps", "8", "--seeds", "1", "--policy", "binpack"]
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    assert main(argv) == 0
    piped = capsys.readouterr()
    assert piped.err == "" and "binpack" in piped.out
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich's switch: treat the stream as a terminal
    assert main(argv) == 0
    terminal = capsys.readouterr()
    assert "binpack, seed 1" in terminal.err and terminal.out == piped.out

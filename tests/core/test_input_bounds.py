"""What a person's terminal and machine are protected from in the command line's input: input
too large is refused at once, and names reach the terminal with control and bidi characters
escaped."""

from __future__ import annotations

import json

import pytest

from central import manifests
from central.cli import main
from central.errors import printable
from tests.builders import pod


@pytest.mark.parametrize("raw, shown", [
    ("plain-name", "plain-name"),
    ("evil\x1b[2Jname", "evil\\x1b[2Jname"),
    ("nul\x00", "nul\\x00"),
    ("abc\u202edcba", "abc\\u202edcba"),  # RIGHT-TO-LEFT OVERRIDE
    ("iso\u2066late\u2069", "iso\\u2066late\\u2069"),
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("naïve-ünïcode", "naïve-ünïcode"),  # letters stay letters
])
def test_printable_escapes_what_a_terminal_would_act_on(raw: str, shown: str) -> None:
    assert printable(raw) == shown


def test_validate_escapes_names_in_its_table_and_errors(tmp_path, capsys) -> None:
    evil = "x\x1b]0;pwned\x07\u202e"
    (tmp_path / "a.yaml").write_text(json.dumps(pod("p", evil)))
    main(["validate", "--manifests", str(tmp_path / "a.yaml")])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\u202e" not in out and "\x07" not in out
    assert "x\\x1b]0;pwned\\x07\\u202e" in out


def test_error_lines_are_escaped(tmp_path, capsys) -> None:
    path = tmp_path / "bad\x1b[31m.yaml"
    path.write_text("kind: [")
    assert main(["validate", "--manifests", str(path)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "bad\\x1b[31m.yaml" in err


def test_input_over_the_byte_limit_is_refused_before_parsing(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(manifests, "MAX_INPUT_BYTES", 1000)
    (tmp_path / "a.yaml").write_text(json.dumps(pod("p", "ml")) + "\n")
    (tmp_path / "b.yaml").write_text("---\n".join(json.dumps(pod(f"p{i}", "ml")) for i in range(20)))
    assert main(["validate", "--manifests", str(tmp_path)]) == 2
    assert "larger than" in capsys.readouterr().err


def test_more_objects_than_the_limit_are_refused(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(manifests, "MAX_OBJECTS", 3)
    (tmp_path / "a.yaml").write_text(json.dumps({"kind": "List", "items": [pod(f"p{i}", "ml") for i in range(4)]}))
    assert main(["simulate", "--manifests", str(tmp_path / "a.yaml")]) == 2
    assert "more than 3 objects" in capsys.readouterr().err

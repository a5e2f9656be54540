"""`--help` of job, queue and pod in cobra's layout, checked against the texts Volcano's vcctl
suite (test/e2e/vcctl/vcctl.go) expects vcctl to print. That suite asserts the whole output is
part of its text; Caldera's differs where it has more (klog's Global Flags are vcctl's only;
--context, -o, -A, -l and the kubeconfig-derived namespace are Caldera's), so each test states
what is the same: the exact lines, in cobra's column widths."""

from __future__ import annotations

import argparse
import sys

import pytest

from central.cli import main
from central.vcctl.cobrahelp import CobraParser, cobra_help, program_name

VCCTL_JOB_HELP = """\
vcctl command line operation job

Usage:
  vcctl job [command]

Available Commands:
  delete      delete a job
  list        list job information
  resume      resume a job
  run         run job by parameters from the command line
  suspend     abort a job
  view        show job information

Flags:
  -h, --help   help for job
"""
VCCTL_JOB_HELP_END = """
Use "vcctl job [command] --help" for more information about a command.
"""


def help_of(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/vcctl"])  # run through a `vcctl` link
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    return capsys.readouterr().out


def test_program_name_follows_the_name_it_runs_under() -> None:
    assert program_name("/usr/bin/vcctl") == "vcctl"
    assert program_name("/usr/bin/caldera") == "caldera"
    assert program_name("/x/caldera/__main__.py") == "caldera"


def test_job_help_is_vcctls_but_for_klogs_global_flags(monkeypatch, capsys) -> None:
    # vcctl job --help: everything but the "Global Flags:" block of klog's flags, byte for byte
    assert help_of(["job", "--help"], monkeypatch, capsys) == VCCTL_JOB_HELP + VCCTL_JOB_HELP_END


def test_caldera_names_itself_when_run_as_caldera(monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["caldera"])
    with pytest.raises(SystemExit):
        main(["queue", "--help"])
    out = capsys.readouterr().out
    assert "Usage:\n  caldera queue [command]\n" in out
    assert out.endswith('Use "caldera queue [command] --help" for more information about a command.\n')


# (argv, vcctl's text before its flags, vcctl's flag lines Caldera prints the same)
LEAVES = [
    (["job", "list", "--help"], "list job information\n\nUsage:\n  vcctl job list [flags]\n\nFlags:\n",
     ["  -h, --help                help for list",
      "  -q, --queue string        list job with specified queue name",
      "  -S, --scheduler string    list job with specified scheduler name"]),
    (["job", "suspend", "-n", "job1", "--help"], "abort a job\n\nUsage:\n  vcctl job suspend [flags]\n\nFlags:\n",
     ["  -h, --help                help for suspend",
      "  -N, --name string         the name of job"]),
    (["job", "resume", "-n", "job1", "--help"], "resume a job\n\nUsage:\n  vcctl job resume [flags]\n\nFlags:\n",
     ["  -h, --help                help for resume",
      "  -N, --name string         the name of job"]),
    (["job", "run", "--help"],
     "run job by parameters from the command line\n\nUsage:\n  vcctl job run [flags]\n\nFlags:\n",
     ["  -f, --filename string     the yaml file of job",
      "  -h, --help                help for run",
      '  -i, --image string        the container image of job (default "busybox")',
      '  -L, --limits string       the resource limit of the task (default "cpu=1000m,memory=100Mi")',
      "  -m, --min int             the minimal available tasks of job (default 1)",
      "  -N, --name string         the name of job",
      "  -r, --replicas int        the total tasks of job (default 1)",
      '  -R, --requests string     the resource request of the task (default "cpu=1000m,memory=100Mi")',
      '  -S, --scheduler string    the scheduler for this job (default "volcano")']),
]


@pytest.mark.parametrize(("argv", "head", "flag_lines"), LEAVES,
                         ids=["job list", "job suspend", "job resume", "job run"])
def test_action_help_has_vcctls_heading_and_flag_lines(argv, head, flag_lines, monkeypatch, capsys) -> None:
    out = help_of(argv, monkeypatch, capsys)
    assert out.startswith(head)
    lines = out.splitlines()
    for line in flag_lines:
        assert line in lines, line
    flags = [line for line in lines[head.count("\n"):] if line]
    assert flags == sorted(flags, key=lambda line: line.split("--")[1]), "pflag sorts flags by long name"


def test_flag_column_is_three_spaces_after_the_widest_and_defaults_are_pflags() -> None:
    parser = CobraParser(prog="vcctl thing", description="do a thing")
    parser.add_argument("-c", "--count", type=int, default=0, help="how many")
    parser.add_argument("--label", default="x", help="a label")
    parser.add_argument("--dry", action="store_true", help="change nothing")
    assert cobra_help(parser) == (
        "do a thing\n\nUsage:\n  vcctl thing [flags]\n\nFlags:\n"
        "  -c, --count int      how many\n"          # a zero default is not shown
        "      --dry            change nothing\n"    # a switch has no type
        "  -h, --help           help for thing\n"
        '      --label string   a label (default "x")\n')


def test_a_command_with_actions_lists_them_padded_to_cobras_minimum() -> None:
    parser = CobraParser(prog="vcctl group")
    sub = parser.add_subparsers(dest="action")
    sub.add_parser("go", help="go somewhere")
    sub.add_parser("averyverylongname", help="long")
    out = cobra_help(parser)
    assert "Available Commands:\n  averyverylongname long\n  go                go somewhere\n" in out
    assert isinstance(sub.choices["go"], argparse.ArgumentParser) and sub.choices["go"].description == "go somewhere"

"""`caldera bench --help` says roughly how long each mode runs, before anyone starts one."""

import importlib
import re

from central.cli import COMMANDS, Parser


def test_help_gives_each_mode_a_run_time() -> None:
    parser = Parser(prog="caldera bench")
    importlib.import_module(COMMANDS["bench"][0]).add_arguments(parser)
    text = " ".join(parser.format_help().split())
    duration = r"about [\d-]+ (s|minutes)"
    for mode in ("1000x10000", "5000x50000", "1000x15000"):  # the default sizes and the preemption run
        assert re.search(rf"{mode},? {duration}", text), mode
    assert re.search(r"the default, both sizes then the preemption run, " + duration, text)
    assert re.search(r"--e2e first builds .* \(7-12 minutes, once", text) and "several minutes per size" in text

"""`caldera conformance`: build Volcano's e2e suites from a pinned commit and run them on a
`caldera up` cluster against Caldera, against Volcano, or both with each failure classified."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from central.conformance import build, compare, ginkgo, harness, report
from central.errors import InputError
from central.kube.client import ApiError
from central.localcluster import build as cpbuild
from central.localcluster import versions
from central.localcluster.processes import StartError

# (system, suite) -> its result; suites and systems in the order they ran.
Results = dict[tuple[str, str], report.SuiteResult]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--suite", action="append", choices=[*build.SUITES, "all"],
                        help="a suite to run (repeatable; default: all)")
    parser.add_argument("--against", choices=["caldera", "volcano", "both"], default="caldera",
                        help="the system under test; `both` classifies each failure as Caldera-only or both")
    parser.add_argument("--volcano-repo", type=Path,
                        help=f"a clone of {build.REPO_URL} holding commit {versions.VOLCANO[:12]} "
                             f"(default: ${build.REPO_ENV}); needed only for the first build")
    parser.add_argument("--dir", type=Path, help="folder for reports and logs (default: a new temporary one)")
    parser.add_argument("--focus", help="run only the specs whose names match this regular expression")
    parser.add_argument("--timeout", type=float, default=ginkgo.SUITE_TIMEOUT, help="seconds per suite (default 3600)")
    parser.add_argument("--keep", action="store_true", help="keep each cluster's folder (etcd data, pod files)")
    parser.add_argument("--build-only", action="store_true", help="build the suites, vcctl and Volcano, then exit")
    parser.add_argument("--reports-only", action="store_true",
                        help="run nothing: print the tables and comparison from the reports already in --dir")


def run(args: argparse.Namespace) -> int:
    say = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    suites = build.SUITES if not args.suite or "all" in args.suite else tuple(dict.fromkeys(args.suite))
    systems = harness.SYSTEMS if args.against == "both" else (args.against,)
    if args.timeout <= 0:
        raise InputError("--timeout", f"expected a positive number of seconds, got {args.timeout}")
    if args.reports_only:
        if args.dir is None:
            raise InputError("--reports-only", "needs --dir, the folder of an earlier run")
        return print_results({(system, suite): report.load(suite, args.dir / system / suite / "report.json")
                              for suite in suites for system in systems}, args.dir.resolve())
    try:
        built = build.ensure(args.volcano_repo, suites, progress=say)
        if args.build_only:
            print(f"built in {built.bin}")
            return 0
        why = cpbuild.unavailable()
        if why:
            raise cpbuild.BuildError(why)
    except cpbuild.BuildError as err:
        print(f"caldera conformance: {err}", file=sys.stderr)
        return 2
    out = (args.dir or Path(tempfile.mkdtemp(prefix="caldera-conformance-"))).resolve()
    results: Results = {}
    for suite in suites:
        for system in systems:
            try:
                result = harness.run_suite(built, suite, system, out / system / suite, args.focus, args.timeout,
                                           args.keep, say)
            except (cpbuild.BuildError, StartError, ApiError, RuntimeError) as err:  # the next suite may still run
                result = report.SuiteResult(suite, suite_failures=[f"the harness could not run it: {err}"])
            except KeyboardInterrupt:  # what finished before Ctrl-C is still worth a table
                result = report.load(suite, out / system / suite / "report.json")
                result.suite_failures.append("interrupted")
                results[(system, suite)] = result
                print_results(results, out)
                return 130
            results[(system, suite)] = result
            print(report.table(result, system) + "\n", flush=True)
    return print_results(results, out)


def print_results(results: Results, out: Path) -> int:
    text = summary(results)
    (out / "results.md").write_text(text + "\n")
    print(text)
    print(f"\nreports and logs: {out}", file=sys.stderr)
    return 1 if failing(results) else 0


def _compared(results: Results) -> list[str]:
    """Suites with results on both systems."""
    return [suite for (system, suite) in results if system == harness.CALDERA and (harness.VOLCANO, suite) in results]


def summary(results: Results) -> str:
    """A row per (system, suite) in the order they ran, then the comparison of each suite run on both."""
    parts = [report.summary([(system, result) for (system, _), result in results.items()])]
    parts += [compare.comparison(results[(harness.CALDERA, s)], results[(harness.VOLCANO, s)]) for s in _compared(results)]
    return "\n\n".join(parts)


def failing(results: Results) -> bool:
    """A suite run on both fails on a spec that Volcano passes; one run on Caldera alone fails at all."""
    compared = _compared(results)
    if any(d.kind in (compare.CALDERA_ONLY, compare.NOT_ON_VOLCANO)
           for s in compared for d in compare.classify(results[(harness.CALDERA, s)], results[(harness.VOLCANO, s)])):
        return True
    return any(r.failures() or r.suite_failures for (system, suite), r in results.items()
               if system == harness.CALDERA and suite not in compared)

"""One of Volcano's e2e suites run by the ginkgo CLI against a cluster, into a JSON report."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from central.conformance.build import Build
from central.conformance.report import SuiteResult, load
from central.localcluster.build import Progress

# The arguments Volcano CI gives each suite (hack/run-e2e-kind.sh): jobp runs on 4 processes;
# the scheduling suites import Kubernetes' e2e framework, whose own [sig-*] specs are skipped.
SUITE_ARGS = {
    "jobp": ["--procs=4"],
    "schedulingbase": ["--skip=\\[sig-.*\\]"],
    "schedulingaction": ["--skip=\\[sig-.*\\]"],
}
SUITE_TIMEOUT = 3600.0
# ginkgo shuffles the top-level containers with a random seed, and the suites leave state behind
# (schedulingaction's Guarantee specs create queues with guarantees they never delete, which
# then cap the default queue of every later spec): one seed gives both systems the same order.
SEED = 1


def argv(built: Build, suite: str, report: Path, focus: str | None = None,
         timeout: float = SUITE_TIMEOUT) -> list[str]:
    args = [str(built.ginkgo), "run", "-v", "--no-color", f"--json-report={report}",
            f"--timeout={int(timeout)}s", f"--seed={SEED}", *SUITE_ARGS.get(suite, [])]
    if focus:
        args.append(f"--focus={focus}")
    return args + [str(built.suite(suite))]


def run(built: Build, suite: str, kubeconfig: Path, out: Path, focus: str | None = None,
        timeout: float = SUITE_TIMEOUT, say: Progress = print) -> SuiteResult:
    """Run `suite` with KUBECONFIG and VC_BIN (the folder holding vcctl) set as CI sets them;
    its output goes to out/ginkgo.log, its report to out/report.json."""
    out.mkdir(parents=True, exist_ok=True)
    report = out / "report.json"
    report.unlink(missing_ok=True)
    env = dict(os.environ, KUBECONFIG=str(kubeconfig), VC_BIN=str(built.bin))
    started = time.monotonic()
    say(f"running {suite} (log: {out / 'ginkgo.log'}) ...")
    with open(out / "ginkgo.log", "wb") as log:
        proc = subprocess.Popen(argv(built, suite, report, focus, timeout), env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            # ginkgo's own --timeout ends the suite first; this one only guards against a hang
            proc.wait(timeout=timeout + 300)
        except subprocess.TimeoutExpired:  # the report, if any, says what finished
            _kill_group(proc)
        except BaseException:  # Ctrl-C: the suite is interrupted too, its report kept
            _kill_group(proc)
            raise
    result = load(suite, report)
    say(f"{suite} finished in {time.monotonic() - started:.0f} s")
    return result


def _kill_group(proc: subprocess.Popen[bytes], grace: float = 60.0) -> None:
    """Interrupt the suite as Ctrl-C would, so that ginkgo runs its cleanups and writes the
    report of what finished (the rest as interrupted); after `grace` seconds, kill it."""
    for sig, wait in ((signal.SIGINT, grace), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue
    proc.wait()

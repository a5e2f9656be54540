from __future__ import annotations

import json
from pathlib import Path

import pytest

from nodeagent.cli import main
from nodeagent.config import AgentConfig, ConfigError, load_config
from tests.nodeagent.fakes import fake_proc, fake_sys


def test_defaults_without_a_file() -> None:
    assert load_config() == AgentConfig()


def test_file_and_flags_merge(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("qos:\n  cpu_suppress:\n    threshold_percent: 70\n    min_cores: 2\n"
                    "  eviction:\n    dry_run: true\n")
    cfg = load_config(path, {"qos.cpu_suppress.min_cores": 0.5, "exporter.port": 9999})
    assert cfg.qos.cpu_suppress.threshold_percent == 70.0 and cfg.qos.cpu_suppress.min_cores == 0.5
    assert cfg.qos.eviction.dry_run is True and cfg.exporter.port == 9999


@pytest.mark.parametrize("text, key", [
    pytest.param("qos:\n  cpu_suppress:\n    threshold_percent: 150\n", "qos.cpu_suppress.threshold_percent",
                 id="percent-out-of-range"),
    pytest.param("qos:\n  cpu_suppress:\n    min_cores: 0\n", "qos.cpu_suppress.min_cores", id="zero-floor"),
    pytest.param("qos:\n  eviction:\n    consecutive_samples: two\n", "qos.eviction.consecutive_samples",
                 id="wrong-type"),
    pytest.param("qos:\n  eviction:\n    dry_run: 1\n", "qos.eviction.dry_run", id="int-for-bool"),
    pytest.param("collect:\n  peroid_s: 1\n", "collect.peroid_s", id="unknown-key"),
    pytest.param("collect: 5\n", "collect", id="section-not-a-mapping"),
    pytest.param("qos: false\n", "qos", id="qos-false-is-not-defaults"),
    pytest.param("qos:\n  memory_protect: off\n", "qos.memory_protect", id="nested-off-is-not-defaults"),
    pytest.param("qos:\n  eviction:\n    low_watermark_percent: 95\n", "qos.eviction.low_watermark_percent",
                 id="low-watermark-above-high"),
    pytest.param("stream:\n  deadband_percent: -1\n", "stream.deadband_percent", id="negative-deadband"),
    pytest.param("collect:\n  period_s: -1\n", "collect.period_s", id="negative-period"),
    pytest.param("collect:\n  period_s: 10\n  window_s: 5\n", "collect.window_s", id="window-below-period"),
    pytest.param("qos:\n  default_level: GOLD\n", "qos.default_level", id="bad-qos-level"),
    pytest.param("paths:\n  cgroup_driver: openrc\n", "paths.cgroup_driver", id="bad-driver"),
    pytest.param("stream:\n  server: sched:7070\n", "stream.ca_file", id="tls-without-certs"),
    pytest.param("exporter:\n  port: 70000\n", "exporter.port", id="bad-port"),
    pytest.param("node:\n  topology_manager_policy: strict\n", "node.topology_manager_policy",
                 id="bad-topology-policy"),
])
def test_bad_config_names_the_key(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert err.value.key == key


def test_qos_false_says_how_to_turn_qos_off(tmp_path: Path) -> None:
    path = tmp_path / "agent.yaml"
    path.write_text("qos: false\n")
    with pytest.raises(ConfigError, match=r"qos\.enabled: false"):
        load_config(path)
    path.write_text("qos:\n  enabled: false\n")
    assert load_config(path).qos.enabled is False
    path.write_text("qos:\n")  # an empty section is the defaults, as YAML spells it
    assert load_config(path).qos.enabled is True


@pytest.mark.parametrize("argv, needle", [
    pytest.param(["--config", "{cfg}"], "qos.cpu_suppress.threshold_percent", id="file"),
    pytest.param(["--qos.eviction.consecutive_samples", "0"], "qos.eviction.consecutive_samples", id="flag"),
    pytest.param(["--qos-eviction-consecutive-samples", "0"], "qos.eviction.consecutive_samples", id="kebab-flag"),
    pytest.param(["--config", "{missing}"], "cannot read config file", id="missing-file"),
    pytest.param(["--config", "{garbage}"], "not valid YAML", id="not-yaml"),
])
def test_cli_refuses_bad_config_with_exit_2(tmp_path: Path, capsys, argv: list[str], needle: str) -> None:
    (tmp_path / "bad.yaml").write_text("qos:\n  cpu_suppress:\n    threshold_percent: 0\n")
    (tmp_path / "garbage.yaml").write_text("qos: [unclosed\n")
    files = {"cfg": tmp_path / "bad.yaml", "missing": tmp_path / "nope.yaml", "garbage": tmp_path / "garbage.yaml"}
    assert main([a.format(**files) for a in argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_once_prints_a_full_report_from_fake_roots(tmp_path: Path, capsys) -> None:
    sys_root, proc_root = fake_sys(tmp_path / "sys"), fake_proc(tmp_path / "proc")
    code = main(["--once", "--output", "json", "--node.name", "node-7", "--paths.sys_root", str(sys_root),
                 "--paths.proc_root", str(proc_root), "--paths.cgroup_root", str(tmp_path / "cg"),
                 "--collect.period_s", "0.05", "--collect.window_s", "1", "--collect.gpu", "false"])
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    assert report["node_name"] == "node-7" and report["full"] is True
    assert report["topology"]["threads"] == 7 and len(report["topology"]["numa_nodes"]) == 2
    assert report["resources"]["cpu_capacity_cores"] == 7.0
    assert report["gpus"]["status"] == "none"


def test_caldera_dispatches_agent() -> None:
    from caldera.cli import main as caldera_main

    with pytest.raises(SystemExit) as done:
        caldera_main(["agent", "--help"])
    assert done.value.code == 0


def test_agent_process_serves_then_stops_on_sigterm(tmp_path: Path) -> None:
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    agent = subprocess.Popen(
        [sys.executable, "-m", "nodeagent", "--node.name", "n1", "--paths.sys_root", str(fake_sys(tmp_path / "s")),
         "--paths.proc_root", str(fake_proc(tmp_path / "p")), "--paths.cgroup_root", str(tmp_path / "cg"),
         "--collect.period_s", "0.1", "--collect.gpu", "false", "--exporter.address", "127.0.0.1",
         "--exporter.port", str(port)],
        cwd=Path(__file__).resolve().parents[2], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
                    assert answer.status == 200
                    break
            except OSError:
                assert agent.poll() is None, agent.stderr.read()
                assert time.monotonic() < deadline, "agent never became ready"
                time.sleep(0.05)
        agent.send_signal(signal.SIGTERM)
        assert agent.wait(timeout=10) == 0
        assert "Traceback" not in agent.stderr.read()
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def test_kebab_and_dotted_flags_set_the_same_key() -> None:
    from nodeagent.cli import _overrides, _parser

    kebab = _overrides(_parser().parse_args(["--qos-cpu-suppress-threshold-percent", "70", "--node-name", "n1"]))
    dotted = _overrides(_parser().parse_args(["--qos.cpu_suppress.threshold_percent", "70", "--node.name", "n1"]))
    assert kebab == dotted == {"qos.cpu_suppress.threshold_percent": 70, "node.name": "n1"}

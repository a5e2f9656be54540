"""deviceshare and tdm: argument errors, the per-card invariants, the agent health hook."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from central.actions.allocate import Allocate
from central.errors import InputError
from central.framework.action import ActionHandle
from central.framework.session import Session
from central.model.cache import ClusterCache
from central.plugins.gpucards import card_memory
from central.scheduler import load_config
from central.scheduler.cycle import run_cycle
from tests.scenarios.harness import objects_of

GPU_NODE = {"cpu": 64, "memory": "256Gi", "volcano.sh/gpu-number": 4, "volcano.sh/gpu-memory": 64000}


def conf_with(plugin: str) -> str:
    return f'actions: "allocate"\ntiers:\n- plugins: [{{name: predicates}}, {plugin}]\n'


def session_for(case: dict, conf_text: str) -> Session:
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    return Session(cache, load_config(conf_text))


@pytest.mark.parametrize("plugin, where", [
    pytest.param("{name: deviceshare, arguments: {deviceshare.SchedulePolicy: worst}}",
                 "arguments.deviceshare.SchedulePolicy", id="policy"),
    pytest.param("{name: deviceshare, arguments: {deviceshare.GPUSharingEnable: yes please}}",
                 "arguments.deviceshare.GPUSharingEnable", id="sharing-not-bool"),
    pytest.param("{name: deviceshare, arguments: {deviceshare.ScheduleWeight: heavy}}",
                 "arguments.deviceshare.ScheduleWeight", id="weight-not-number"),
    pytest.param("{name: deviceshare, arguments: {deviceshare.ScheduleWeight: -1}}",
                 "arguments.deviceshare.ScheduleWeight", id="weight-negative"),
    pytest.param("{name: deviceshare, arguments: {deviceshare.GPUShareEnable: true}}",
                 "arguments.deviceshare.GPUShareEnable", id="misspelt"),
    pytest.param("{name: deviceshare, arguments: {deviceshare.VGPUEnable: true}}",
                 "arguments.deviceshare.VGPUEnable", id="vgpu-unsupported"),
    pytest.param("{name: tdm, arguments: {tdm.revocable-zone.rz1: '25:00-18:00'}}",
                 "arguments.tdm.revocable-zone.rz1", id="window-hour"),
    pytest.param("{name: tdm, arguments: {tdm.revocable-zone.rz1: '9-18'}}",
                 "arguments.tdm.revocable-zone.rz1", id="window-shape"),
    pytest.param("{name: tdm, arguments: {tdm.evict.period: soon}}", "arguments.tdm.evict.period", id="period"),
    pytest.param("{name: tdm, arguments: {tdm.revocable: x}}", "arguments.tdm.revocable", id="tdm-unknown"),
])
def test_bad_arguments_name_the_argument(plugin, where):
    with pytest.raises(InputError) as err:
        session_for({"nodes": {"n1": GPU_NODE}}, conf_with(plugin))
    assert where in str(err.value)


def test_bad_budget_faults_the_podgroup_and_others_schedule():
    """The session used to refuse to open: every tenant stopped for one PodGroup's typo."""
    case = {"nodes": {"n1": GPU_NODE},
            "podgroups": {"ns/j": {"minMember": 1, "annotations": {"volcano.sh/jdb-min-available": "lots"}},
                          "ns/k": {"minMember": 1}},
            "pods": {"ns/j-0": {"group": "j", "cpu": 1}, "ns/k-0": {"group": "k", "cpu": 1}}}
    ssn = session_for(case, conf_with("{name: tdm}"))
    assert ssn.job_valid(ssn.jobs["ns/j"]).startswith("PodGroup ns/j: metadata.annotations[volcano.sh/jdb-min-available]")
    Allocate({}).execute(ActionHandle(ssn))
    result = ssn.close()
    assert result.binds == {"ns/k-0": "n1"}
    assert [(f.kind, f.key, f.source) for f in result.faults] == [("PodGroup", "ns/j", "tdm")]


def test_bad_argument_is_one_line_from_the_cli(tmp_path, capsys):
    from central.cli import main
    config = tmp_path / "sched.conf"
    config.write_text(conf_with("{name: deviceshare, arguments: {deviceshare.SchedulePolicy: worst}}"))
    assert main(["simulate", "--config", str(config)]) == 2
    err = capsys.readouterr().err
    assert "deviceshare.SchedulePolicy" in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.parametrize("annotations, expected", [
    pytest.param({}, [16000e3] * 4, id="even-split"),
    pytest.param({"caldera.sh/gpu-mig-slices": "3g.40gb, 1g.10gb"}, [40 * 1024e3, 10 * 1024e3], id="mig"),
    pytest.param({"caldera.sh/gpu-mig-slices": "3g.forty"}, [], id="mig-malformed"),
])
def test_card_memory(annotations, expected):
    cache = ClusterCache()
    cache.apply(objects_of({"nodes": {"n1": {**GPU_NODE, "annotations": annotations}}})[0])
    assert card_memory(cache.nodes["n1"]) == pytest.approx(expected)


@st.composite
def gpu_clusters(draw):
    nodes = {}
    for i in range(draw(st.integers(1, 4))):
        cards = draw(st.integers(1, 8))
        bad = draw(st.lists(st.integers(0, cards - 1), max_size=2, unique=True))
        nodes[f"n{i}"] = {"cpu": 64, "memory": "256Gi", "volcano.sh/gpu-number": cards,
                          "volcano.sh/gpu-memory": cards * 16000,
                          "annotations": {"volcano.sh/gpu-unhealthy-ids": ",".join(map(str, bad))}}
    pods = {}
    for j in range(draw(st.integers(1, 25))):
        if draw(st.booleans()):
            memory = draw(st.sampled_from([1000, 4000, 8000, 12000, 16000]))
            pods[f"ns/p{j}"] = {"cpu": 1, "volcano.sh/gpu-memory": memory}
        else:
            pods[f"ns/p{j}"] = {"cpu": 1, "volcano.sh/gpu-number": draw(st.integers(1, 4))}
    return {"nodes": nodes, "pods": pods}


@settings(max_examples=40, deadline=None)
@given(gpu_clusters(), st.sampled_from(["binpack", "spread", "fragmentation-aware"]))
def test_cards_are_never_overcommitted(case, policy):
    """Whatever the mix: shared pods fit their card's memory, whole cards hold one pod, no
    pod lands on an unhealthy card, and a whole-card pod gets exactly the cards it asked for."""
    cache = ClusterCache()
    for obj in objects_of(case):
        cache.apply(obj)
    args = ("{deviceshare.GPUSharingEnable: true, deviceshare.GPUNumberEnable: true, "
            f"deviceshare.SchedulePolicy: {policy}, deviceshare.ScheduleWeight: 1}}")
    conf = load_config(conf_with(f"{{name: deviceshare, arguments: {args}}}"))
    result = run_cycle(cache, conf)
    memory: dict[tuple[str, int], float] = {}
    holders: dict[tuple[str, int], int] = {}
    whole: set[tuple[str, int]] = set()
    for pod, node in result.binds.items():
        spec = case["pods"][pod]
        cards = [int(c) for c in result.annotations[pod]["volcano.sh/gpu-index"].split(",")]
        bad = case["nodes"][node]["annotations"]["volcano.sh/gpu-unhealthy-ids"]
        assert not set(cards) & {int(c) for c in bad.split(",") if c}
        if "volcano.sh/gpu-number" in spec:
            assert len(cards) == spec["volcano.sh/gpu-number"] == len(set(cards))
            whole.update((node, c) for c in cards)
        for card in cards:
            holders[node, card] = holders.get((node, card), 0) + 1
            memory[node, card] = memory.get((node, card), 0) + spec.get("volcano.sh/gpu-memory", 0)
    assert all(holders[key] == 1 for key in whole)
    assert all(used <= 16000 for used in memory.values())

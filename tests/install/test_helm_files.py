"""charts/caldera carries copies of daemonset/ (helm warns on, and will not package, a symlinked
files/): they must be the same bytes. After editing daemonset/: python3 charts/sync_files.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "caldera"
DAEMONSET = ROOT / "daemonset"


def chart_files() -> dict[str, bytes]:
    return {p.relative_to(CHART).as_posix(): p.read_bytes() for p in (CHART / "files").rglob("*") if p.is_file()} | {
        p.relative_to(CHART).as_posix(): p.read_bytes() for p in (CHART / "crds").rglob("*") if p.is_file()}


def test_the_chart_carries_daemonset_as_copies_crds_apart_and_no_namespace():
    expected = {f"files/{p.relative_to(DAEMONSET).as_posix()}": p.read_bytes() for p in DAEMONSET.rglob("*")
                if p.is_file() and p.name not in ("crds.yaml", "namespace.yaml")}
    expected["crds/crds.yaml"] = (DAEMONSET / "crds.yaml").read_bytes()
    got = chart_files()
    assert sorted(got) == sorted(expected), "run python3 charts/sync_files.py"
    assert [name for name in got if got[name] != expected[name]] == [], "run python3 charts/sync_files.py"
    assert not any(p.is_symlink() for p in CHART.rglob("*"))

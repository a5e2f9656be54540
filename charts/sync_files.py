"""Copy daemonset/ into charts/caldera: the chart renders the same objects, and helm warns on a
symlinked files/ (and would not package it), so the chart carries copies. Run it after editing
daemonset/: `python3 charts/sync_files.py`; tests/install/test_helm_files.py fails while the
copies differ.

The CRDs go to crds/ (helm installs them once and never deletes them on uninstall); the
Namespace is left out (helm installs into the release's namespace, --create-namespace makes it).
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "daemonset"
CHART = ROOT / "charts" / "caldera"
NOT_RENDERED = {"namespace.yaml", "crds.yaml"}


def copies() -> dict[Path, Path]:
    """chart path -> daemonset/ path, for every file the chart carries."""
    wanted = {CHART / "crds" / "crds.yaml": SOURCE / "crds.yaml"}
    for source in sorted(SOURCE.rglob("*")):
        if source.is_file() and source.relative_to(SOURCE).as_posix() not in NOT_RENDERED:
            wanted[CHART / "files" / source.relative_to(SOURCE)] = source
    return wanted


def main() -> None:
    for target in (CHART / "files", CHART / "crds"):
        if target.is_symlink() or target.is_file():
            target.unlink()
        elif target.exists():
            shutil.rmtree(target)
    for target, source in copies().items():
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)


if __name__ == "__main__":
    main()

"""Reading Kubernetes objects from files: multi-document YAML (JSON is YAML too), a file or
a directory tree of them, `List`s unpacked. Shared by `caldera simulate` and `caldera
validate`, so a bad file is refused the same way by both, in one line naming file and place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from central.errors import InputError
from central.model.fields import yaml_problem

SUFFIXES = (".yaml", ".yml", ".json")
# libyaml's C loader where PyYAML was built with it: the same safe subset, about 10x faster
# than the pure-Python one on large manifests (simulate on 20,000 pods spent most of its time there)
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def read_objects(path_text: str) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every object under `path_text`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for file in _files(Path(path_text)):
        try:
            docs = list(yaml.load_all(file.read_text(), Loader=LOADER))  # noqa: S506 (a safe loader)
        except (OSError, UnicodeDecodeError) as err:
            raise InputError(str(file), f"cannot read: {getattr(err, 'strerror', None) or err}") from None
        except yaml.YAMLError as err:
            raise InputError(str(file), yaml_problem(err)) from None
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            items = doc.get("items") if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            for item in items or []:
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not item["kind"]:
                    raise InputError(f"{file}: document {i + 1}", "expected a Kubernetes object (a map with a kind)")
                out.append((str(file), item))
    return out


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise InputError(str(path), "no .yaml, .yml or .json files in this directory")
        return files
    if not path.exists():
        raise InputError(str(path), "no such file or directory")
    return [path]

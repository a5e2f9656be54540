"""Reading Kubernetes objects from files: multi-document YAML (JSON is YAML too), a file or
a directory tree of them, `List`s unpacked. Shared by `caldera simulate` and `caldera
validate`, so a bad file is refused the same way by both, in one line naming file and place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from central.errors import InputError
from central.model.fields import yaml_documents

SUFFIXES = (".yaml", ".yml", ".json")


def read_objects(path_text: str) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every object under `path_text`."""
    out: list[tuple[str, dict[str, Any]]] = []
    for file in _files(Path(path_text)):
        for i, doc in enumerate(yaml_documents(read_file(file), str(file))):
            if doc is None:
                continue
            items = (doc.get("items") or []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            if not isinstance(items, list):
                raise InputError(f"{file}: document {i + 1}: items", "expected a list of objects")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not item["kind"]:
                    raise InputError(f"{file}: document {i + 1}", "expected a Kubernetes object (a map with a kind)")
                out.append((str(file), item))
    return out


def read_file(path: Path | str) -> bytes:
    """A file's bytes; InputError naming it when it cannot be read (decoding is the parser's)."""
    try:
        return Path(path).read_bytes()
    except OSError as err:
        raise InputError(str(path), f"cannot read: {err.strerror or err}") from None


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise InputError(str(path), "no .yaml, .yml or .json files in this directory")
        return files
    if not path.exists():
        raise InputError(str(path), "no such file or directory")
    return [path]

"""Reading Kubernetes objects from files: multi-document YAML (JSON is YAML too), a file or
a directory tree of them, `List`s unpacked. Shared by `caldera simulate` and `caldera
validate`, so a bad file is refused the same way by both, in one line naming file and place.

Input is bounded, so a huge file is refused at once rather than parsed for minutes into
gigabytes: at most `MAX_INPUT_BYTES` from one path (all its files together) and
`MAX_OBJECTS` objects. 5,000 nodes, 30,000 pods and their PodGroups are about 9 MB of YAML.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from central.errors import InputError
from central.model.fields import yaml_documents

SUFFIXES = (".yaml", ".yml", ".json")
MAX_INPUT_BYTES = 64 << 20
MAX_OBJECTS = 200_000


def read_objects(path_text: str) -> list[tuple[str, dict[str, Any]]]:
    """(file, object) for every object under `path_text`."""
    out: list[tuple[str, dict[str, Any]]] = []
    left = MAX_INPUT_BYTES
    for file in _files(Path(path_text)):
        data = read_file(file, left)
        left -= len(data)
        for i, doc in enumerate(yaml_documents(data, str(file))):
            if doc is None:
                continue
            items = (doc.get("items") or []) if isinstance(doc, dict) and doc.get("kind") == "List" else [doc]
            if not isinstance(items, list):
                raise InputError(f"{file}: document {i + 1}: items", "expected a list of objects")
            for item in items:
                if not isinstance(item, dict) or not isinstance(item.get("kind"), str) or not item["kind"]:
                    raise InputError(f"{file}: document {i + 1}", "expected a Kubernetes object (a map with a kind)")
                out.append((str(file), item))
            if len(out) > MAX_OBJECTS:
                raise InputError(f"{file}: document {i + 1}", f"more than {MAX_OBJECTS:,} objects; at most that many "
                                 "are read")
    return out


def read_file(path: Path | str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """A file's bytes; InputError naming it when it cannot be read or holds more than `limit`
    bytes (decoding is the parser's). Reads at most `limit` + 1 bytes, so a pipe or device
    cannot feed it forever."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise InputError(str(path), f"cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise InputError(str(path), f"the input is larger than {MAX_INPUT_BYTES >> 20} MiB (all files of a path "
                         "together); Caldera reads at most that")
    return data


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix in SUFFIXES and p.is_file())
        if not files:
            raise InputError(str(path), "no .yaml, .yml or .json files in this directory")
        return files
    if not path.exists():
        raise InputError(str(path), "no such file or directory")
    return [path]

"""Regenerates the gRPC stubs in nodeagent/api/v1 from proto/ (run: python -m nodeagent.api.generate).

The stubs are committed so images never need grpcio-tools; a test regenerates them into a
temporary directory and fails when the committed ones differ. The proto path mirrors the
package (proto/nodeagent/api/v1), so generated imports read `from nodeagent.api.v1 import ...`.
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO / "proto"
PROTOS = ("nodeagent/api/v1/agent.proto", "nodeagent/api/v1/podresources.proto")


def generate(out_dir: Path) -> None:
    from grpc_tools import protoc  # test extra only

    include = Path(protoc.__file__).parent / "_proto"
    args = [
        "grpc_tools.protoc",
        f"-I{PROTO_ROOT}",
        f"-I{include}",
        f"--python_out={out_dir}",
        f"--pyi_out={out_dir}",
        f"--grpc_python_out={out_dir}",
        *PROTOS,
    ]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")


if __name__ == "__main__":
    generate(REPO)
    sys.exit(0)

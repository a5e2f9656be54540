"""The committed gRPC stubs must be exactly what protoc generates from proto/."""

from __future__ import annotations

from pathlib import Path

from nodeagent.api import generate

STUBS = tuple(f"{proto}{suffix}" for proto in ("agent", "podresources")
              for suffix in ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))


def test_committed_stubs_match_the_proto(tmp_path: Path) -> None:
    generate.generate(tmp_path)
    committed = generate.REPO / "nodeagent" / "api" / "v1"
    for name in STUBS:
        fresh = (tmp_path / "nodeagent" / "api" / "v1" / name).read_text()
        assert fresh == (committed / name).read_text(), (
            f"nodeagent/api/v1/{name} is out of date: run python -m nodeagent.api.generate"
        )


def test_stub_imports_by_package_path() -> None:
    from nodeagent.api.v1 import agent_pb2, agent_pb2_grpc

    assert agent_pb2.DESCRIPTOR.package == "nodeagent.api.v1"
    assert hasattr(agent_pb2_grpc, "NodeReportServiceStub")

"""The scheduler's receiving end of the node agents' report stream.

`NodeReportStore` keeps the latest merged report per node and knows which are fresh;
`ReceiverServer` is the gRPC server feeding it. Only `nodeagent.api` (the contract) is imported
from the agent side.
"""

from central.agents.server import ReceiverServer, ServerTls
from central.agents.store import NodeReportStore

__all__ = ["NodeReportStore", "ReceiverServer", "ServerTls"]

"""The exporter's HTTP server, bounded: a thread per connection but at most a few at once, and
every read and write on a connection times out, so slow or idle clients cannot pile up threads."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_CONNECTIONS = 16  # Prometheus and the kubelet's probes need a handful
IO_TIMEOUT_S = 10.0  # per read or write: an idle or trickling client is dropped after this


class BoundedHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler], *,
                 max_connections: int = MAX_CONNECTIONS, io_timeout_s: float = IO_TIMEOUT_S) -> None:
        self._slots = threading.BoundedSemaphore(max_connections)
        self.io_timeout_s = io_timeout_s
        super().__init__(address, handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        conn, peer = super().get_request()
        conn.settimeout(self.io_timeout_s)
        return conn, peer

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self.shutdown_request(request)  # over the cap: closed at once rather than queued
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()

"""The exporter's HTTP server cannot be held open by idle clients or flooded with connections."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler

from nodeagent.httpserve import BoundedHTTPServer
from tests.bounded_http import connections_over_the_cap_are_refused, idle_client_is_dropped


class Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _serve(**limits: float) -> BoundedHTTPServer:
    server = BoundedHTTPServer(("127.0.0.1", 0), Ok, **limits)  # type: ignore[arg-type]
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server


def test_an_idle_client_is_dropped_after_the_io_timeout() -> None:
    server = _serve(io_timeout_s=0.5)
    try:
        idle_client_is_dropped(server.server_port, 0.5)
    finally:
        server.shutdown()
        server.server_close()


def test_connections_over_the_cap_are_closed_at_once() -> None:
    server = _serve(max_connections=2, io_timeout_s=30)
    try:
        connections_over_the_cap_are_refused(server.server_port, 2, "/")
    finally:
        server.shutdown()
        server.server_close()


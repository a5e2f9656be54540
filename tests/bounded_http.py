"""Checks shared by the agent's and the components' bounded HTTP servers: an idle client is
dropped after the I/O timeout, and connections over the cap are closed at once."""

from __future__ import annotations

import socket
import time
import urllib.request


def idle_client_is_dropped(port: int, timeout_s: float) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as idle:
        started = time.monotonic()
        assert idle.recv(1) == b""  # closed by the server, not by our own timeout
        assert timeout_s * 0.5 <= time.monotonic() - started < 5


def connections_over_the_cap_are_refused(port: int, cap: int, path: str) -> None:
    held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(cap)]
    try:
        time.sleep(0.2)  # the server has taken them
        with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
            extra.sendall(f"GET {path} HTTP/1.0\r\n\r\n".encode())
            started = time.monotonic()
            assert extra.recv(1) == b"" and time.monotonic() - started < 2  # closed unanswered, at once
    finally:
        for conn in held:
            conn.close()
    time.sleep(0.2)
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:  # slots come back
        assert answer.status == 200

"""API-server requests one node agent makes for its pod list, old poll vs LIST + WATCH: prints
figures, asserts nothing.

A local HTTP server stands in for the API server (it answers a LIST and holds a WATCH open for
its timeoutSeconds, as kube-apiserver does) and counts requests. The old source is a full LIST
every agent period (1 s); the new one is `WatchPodSource` at its defaults.

    python -m nodeagent.bench.api_requests [--seconds 60]
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from nodeagent.pods import HttpPodSource
from nodeagent.podwatch import WatchPodSource

POD = {"metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "1"}, "spec": {},
       "status": {"phase": "Running", "qosClass": "BestEffort"}}


def serve(counts: Counter[tuple[str, str]]) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            query = parse_qs(urlparse(self.path).query)
            node = query.get("fieldSelector", [""])[0]
            verb = "watch" if "watch" in query else "list"
            counts[(node, verb)] += 1
            self.send_response(200)
            self.end_headers()
            if verb == "list":
                self.wfile.write(json.dumps({"metadata": {"resourceVersion": "1"}, "items": [POD]}).encode())
                return
            deadline = time.monotonic() + int(query["timeoutSeconds"][0])
            while time.monotonic() < deadline and not stop.is_set():
                time.sleep(0.1)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


stop = threading.Event()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    counts: Counter[tuple[str, str]] = Counter()
    server = serve(counts)
    url = f"http://127.0.0.1:{server.server_port}"
    old = HttpPodSource(f"{url}/api/v1/pods?fieldSelector=spec.nodeName%3Dold", None)
    new = WatchPodSource(url, "new", None, None)
    t0 = time.monotonic()
    while time.monotonic() - t0 < args.seconds:
        old.pods()  # one agent period
        try:
            new.pods()
        except RuntimeError:
            pass  # first call: the watch thread is starting
        time.sleep(1.0)
    stop.set()
    new.close()
    minutes = (time.monotonic() - t0) / 60
    for node, label in (("spec.nodeName=old", "old (LIST every 1 s period)"),
                        ("spec.nodeName=new", "new (LIST from watch cache, then WATCH)")):
        lists, watches = counts[(node, "list")], counts[(node, "watch")]
        print(f"{label}: {lists} LIST + {watches} WATCH in {minutes:.1f} min = "
              f"{(lists + watches) / minutes:.1f} requests per node per minute")
    print("new at steady state: one WATCH per 5-10 min (jittered timeoutSeconds) = 0.1-0.2 requests "
          "per node per minute; a LIST only at start and after 410 Gone")
    server.shutdown()


if __name__ == "__main__":
    main()

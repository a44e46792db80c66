"""The floor of bench/trainers/overhead.py's openrlhf path without kjudge: OpenRLHF's way of posting
(one aiohttp session per query, a step's 256 at once) to a ThreadingHTTPServer of the same kind as
kjudge's reward server whose handler only answers. Prints, per step, when the first request reached
the server and when every reply was back. Run in the openrlhf trainer venv (it has aiohttp):
  ~/.cache/kjudge/trainers/openrlhf/bin/python bench/trainers/openrlhf_client_floor.py [N] [REPS]"""
import asyncio
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp

first = []


class Answer(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if not first:
            first.append(time.time())
        body = b'{"rewards":[0]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 4096  # as kjudge.integrations.openrlhf's


async def post(url, body):
    async with aiohttp.ClientSession() as s:
        async with s.post(url, json=body) as r:
            return await r.json()


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    srv = Server(("127.0.0.1", 0), Answer)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d/reward" % srv.server_address[1]
    for rep in range(reps):
        first.clear()
        t0 = time.time()

        async def step():
            return await asyncio.gather(*[post(url, {"query": ["x" * 2000]}) for _ in range(n)])
        asyncio.run(step())
        print(f"step {rep}: first request at the server after {1000 * (first[0] - t0):.1f} ms, "
              f"all {n} replies after {1000 * (time.time() - t0):.1f} ms")


if __name__ == "__main__":
    main()

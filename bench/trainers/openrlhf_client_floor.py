"""The floor of bench/trainers/overhead.py's openrlhf path without kjudge: OpenRLHF's way of posting
(one aiohttp session per query, a step's 256 at once) to a server whose handler only answers,
of the same kind as kjudge's reward server: `asyncio` (the default; asyncio streams, as
kjudge.integrations.openrlhf since its asyncio rewrite) or `threading` (a ThreadingHTTPServer, as
before it), in a process of its own as the reward server is (it used to share the client's
process, and its GIL). Prints, per step, when the first request reached the server and when
every reply was back. Run in the openrlhf trainer venv (it has aiohttp):
  ~/.cache/kjudge/trainers/openrlhf/bin/python bench/trainers/openrlhf_client_floor.py [N] [REPS] [asyncio|threading]
  ... openrlhf_client_floor.py --serve PORT [asyncio|threading]   the answer server alone (overhead.py's openrlhf-floor)"""
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import aiohttp

first = []
BODY = b'{"rewards":[0]}'


class Answer(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        arrived = time.time()
        if not first:
            first.append(arrived)
        body = b'{"rewards":[0],"arrived":%.6f}' % arrived
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


async def answer(reader, writer):
    """One request per connection (OpenRLHF's sessions post once): headers, body, the answer
    (with "arrived": when the body was read, for overhead.py's openrlhf-floor path)."""
    length = 0
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    await reader.readexactly(length)
    arrived = time.time()
    if not first:
        first.append(arrived)
    body = b'{"rewards":[0],"arrived":%.6f}' % arrived
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                 b"Connection: close\r\n\r\n%s" % (len(body), body))
    await writer.drain()
    writer.close()


async def post(url, body):
    async with aiohttp.ClientSession() as s:
        async with s.post(url, json=body) as r:
            return await r.json()


def serve(port, kind="asyncio"):
    """The answer server alone, in this process, on 127.0.0.1:port (main and overhead.py run it)."""
    if kind == "threading":
        return Server(("127.0.0.1", port), Answer).serve_forever()

    async def run():
        srv = await asyncio.start_server(answer, "127.0.0.1", port, backlog=4096)
        await srv.serve_forever()
    asyncio.run(run())


def server_process(kind):
    """(process, port): the answer server in a process of its own, as the reward server runs."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), kind])
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the answer server did not start")


def main():
    if sys.argv[1:2] == ["--serve"]:
        return serve(int(sys.argv[2]), *sys.argv[3:4])
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 256
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    kind = sys.argv[3] if len(sys.argv) > 3 else "asyncio"
    proc, port = server_process(kind)
    url = "http://127.0.0.1:%d/reward" % port
    firsts, alls = [], []
    try:
        for rep in range(reps):
            t0 = time.time()

            async def step():
                return await asyncio.gather(*[post(url, {"query": ["x" * 2000]}) for _ in range(n)])
            replies = asyncio.run(step())
            firsts.append(1000 * (min(r["arrived"] for r in replies) - t0))
            alls.append(1000 * (time.time() - t0))
            print(f"step {rep} ({kind} server): first request at the server after {firsts[-1]:.1f} ms, "
                  f"all {n} replies after {alls[-1]:.1f} ms", flush=True)
    finally:
        proc.terminate()
        proc.wait()
    print(f"median over {reps} steps ({kind} server): first request {statistics.median(firsts):.1f} ms, "
          f"all replies {statistics.median(alls):.1f} ms")


if __name__ == "__main__":
    main()

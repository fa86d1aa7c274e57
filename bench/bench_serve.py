"""Request latency of `qgpu serve` for BF/ADF images of a resident dataset.
usage: python3 bench/bench_serve.py QGPU_BINARY FILE [PORT]
Prints server-side compute time (X-Compute-Ms header) and client round trip, median of 20 after 3 warm-ups."""
import json
import statistics
import subprocess
import sys
import time
import urllib.request

qgpu, path = sys.argv[1], sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 8321
server = subprocess.Popen([qgpu, "serve", path, "--port", str(port)], stdout=subprocess.DEVNULL,
                          stderr=open("/tmp/qgpu-serve.log", "w"))
base = f"http://127.0.0.1:{port}"
try:
    t0 = time.time()
    while True:
        try:
            listing = json.loads(urllib.request.urlopen(base + "/api/datasets", timeout=2).read())
            break
        except Exception:
            if server.poll() is not None or time.time() - t0 > 300:
                raise SystemExit("server did not come up: " + open("/tmp/qgpu-serve.log").read()[-2000:])
            time.sleep(0.5)
    items = listing["datasets"] if isinstance(listing, dict) else listing
    ds_id = items[0]["id"]
    print(f"server ready (dataset loaded) after {time.time() - t0:.1f} s")
    cases = {
        "BF disk r=32 (u64)": f"/api/datasets/{ds_id}/virtual?kind=bf&cr=96&cc=96&r=32&format=u64",
        "ADF annulus 40..90 (u64)": f"/api/datasets/{ds_id}/virtual?kind=adf&cr=96&cc=96&inner=40&outer=90&format=u64",
        "BF disk r=32 (png)": f"/api/datasets/{ds_id}/virtual?kind=bf&cr=96&cc=96&r=32&format=png",
    }
    for name, url in cases.items():
        server_ms, total_ms = [], []
        for i in range(23):
            t = time.perf_counter()
            with urllib.request.urlopen(base + url, timeout=30) as r:
                body = r.read()
                compute = float(r.headers.get("X-Compute-Ms", "nan"))
            if i >= 3:
                total_ms.append((time.perf_counter() - t) * 1e3)
                server_ms.append(compute)
        print(f"| serve {name} | 512x512x192x192 uint16 | server {statistics.median(server_ms):.3f} ms | "
              f"round trip {statistics.median(total_ms):.3f} ms | {len(body)} bytes, loopback |")
finally:
    server.terminate()
    server.wait()

"""Request latency of `qgpu serve` for the viewer's requests on a resident dataset: BF/ADF images and the products
(CoM, centred DPC, iDPC, SSB preview at a defocus: the live defocus slider), the requests the viewer sends on a redraw.
usage: python3 bench/bench_serve.py QGPU_BINARY FILE [PORT]     (BENCH_SERVE_BACKEND=cpu: smoke run without a GPU)
Prints server-side compute time (X-Compute-Ms header) and client round trip, median of 20 after 3 warm-ups, and the
median of each server-side stage (Server-Timing header: compute = GPU work synchronised, transfer = host<->device
copies, host = host-side loops, prepare = SSB G(K, Q) (first request of a bin), render / encode = display and response encoding, other = the rest of the total)."""
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request


def server_timing(header):
    """{name: ms} from a Server-Timing header ("compute;dur=1.2, transfer;dur=0.3, total;dur=1.6")."""
    out = {}
    for entry in (header or "").split(","):
        parts = [p.strip() for p in entry.split(";")]
        if not parts[0]:
            continue
        for p in parts[1:]:
            if p.startswith("dur="):
                out[parts[0]] = out.get(parts[0], 0.0) + float(p[4:])
    return out


qgpu, path = sys.argv[1], sys.argv[2]
port = int(sys.argv[3]) if len(sys.argv) > 3 else 8321
backend = os.environ.get("BENCH_SERVE_BACKEND", "auto")  # cpu: a smoke run without a GPU
server = subprocess.Popen([qgpu, "serve", path, "--port", str(port), "--backend", backend], stdout=subprocess.DEVNULL,
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
        "CoM (f32)": f"/api/datasets/{ds_id}/com?format=f32",
        "DPC calibrated rotation (f32)": f"/api/datasets/{ds_id}/dpc?format=f32",
        "DPC given rotation (f32)": f"/api/datasets/{ds_id}/dpc?format=f32&rotation=0",
        "iDPC calibrated rotation (f32)": f"/api/datasets/{ds_id}/idpc?format=f32",
        "iDPC given rotation (f32)": f"/api/datasets/{ds_id}/idpc?format=f32&rotation=0",
        "iDPC given rotation (png)": f"/api/datasets/{ds_id}/idpc?format=png&rotation=0",
        # The live defocus slider: a new defocus each request ({i}); the first request of a bin builds G(K, Q)
        # (printed as "first"), the others reuse it.
        "SSB slider bin 4 (f32)": f"/api/datasets/{ds_id}/ssb?format=f32&bin=4&defocus={{i}}",
        "SSB slider bin 2 (f32)": f"/api/datasets/{ds_id}/ssb?format=f32&bin=2&defocus={{i}}",
        # bin 1 (the full reconstruction): G of every BF pixel, kept on a GPU since the service keeps every bin
        "SSB slider bin 1, full (f32)": f"/api/datasets/{ds_id}/ssb?format=f32&bin=1&defocus={{i}}",
        "max pattern (f32, computed once)": f"/api/datasets/{ds_id}/max_pattern?format=f32",
        "4-quadrant segment: POST uint8 mask (u64)": None,
    }
    if os.environ.get("QGPU_BENCH_SERVE_SKIP"):  # names to leave out, comma separated (e.g. a known slow one)
        for skip in os.environ["QGPU_BENCH_SERVE_SKIP"].split(","):
            cases.pop(skip, None)
    det_r, det_c = items[0]["shape"][2], items[0]["shape"][3]
    shape = "x".join(map(str, items[0]["shape"]))
    quadrant = bytes(1 if (r - det_r // 2) ** 2 + (c - det_c // 2) ** 2 <= 32 ** 2 and r < det_r // 2 and c >= det_c // 2
                     else 0 for r in range(det_r) for c in range(det_c))
    for name, url in cases.items():
        server_ms, total_ms, first_ms, stage_ms = [], [], None, {}
        repeats = 23
        for i in range(repeats):
            t = time.perf_counter()
            try:
                if url is None:
                    req = urllib.request.Request(base + f"/api/datasets/{ds_id}/virtual?format=u64&dtype=uint8",
                                                 data=quadrant, headers={"Content-Type": "application/octet-stream"})
                else:
                    req = base + url.format(i=100 + 10 * i)
                r = urllib.request.urlopen(req, timeout=300)
            except urllib.error.HTTPError as e:  # e.g. SSB without calibration in the file: say so, go on
                print(f"| serve {name} | HTTP {e.code}: {e.read()[:200]!r} |")
                break
            with r:
                body = r.read()
                compute = float(r.headers.get("X-Compute-Ms", "nan"))
                stages = server_timing(r.headers.get("Server-Timing"))
            if i == 0:
                first_ms = compute
            if i >= 3:
                total_ms.append((time.perf_counter() - t) * 1e3)
                server_ms.append(compute)
                for k, v in stages.items():
                    stage_ms.setdefault(k, []).append(v)
        if not server_ms:
            continue
        print(f"| serve {name} | {shape} {items[0]['dtype']} | server {statistics.median(server_ms):.3f} ms | "
              f"round trip {statistics.median(total_ms):.3f} ms | first {first_ms:.1f} ms | {len(body)} bytes, loopback |")
        if stage_ms:  # a stage missing from some responses counts 0 there
            n = len(server_ms)
            parts = [f"{k} {statistics.median(v + [0.0] * (n - len(v))):.3f}" for k, v in stage_ms.items() if k != "total"]
            print(f"|   stages {name} | " + " | ".join(parts) + " | ms, median each |")
finally:
    server.terminate()
    server.wait()

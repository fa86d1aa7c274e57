"""Datasets on several GPUs under `qgpu serve --devices`: placement, and whether their queries run concurrently.
usage: python3 bench/bench_serve_devices.py QGPU_BINARY FILE DEVICES [PORT] [BACKEND]
  DEVICES e.g. 0,1,2,3: FILE is served once per device (ids FILE, FILE-2, ...), placed one per GPU.
Prints /api/datasets placement (device, memory, resident bytes, admission limit), then the wall time of R CoM
requests per dataset run one dataset after the other and all datasets at once (one client thread each): on
separate GPUs the concurrent wall time approaches the sequential time / number of devices. Checks every answer
equals the first dataset's (the same file)."""
import json
import subprocess
import sys
import threading
import time
import urllib.request

qgpu, path, devices = sys.argv[1], sys.argv[2], sys.argv[3]
port = int(sys.argv[4]) if len(sys.argv) > 4 else 8322
backend = sys.argv[5] if len(sys.argv) > 5 else "cuda"
n = len(devices.split(","))
REPEAT = 10
server = subprocess.Popen([qgpu, "serve", *([path] * n), "--devices", devices, "--port", str(port), "--backend", backend],
                          stdout=subprocess.DEVNULL, stderr=open("/tmp/qgpu-serve-devices.log", "w"))
base = f"http://127.0.0.1:{port}"


def get(url):
    with urllib.request.urlopen(base + url, timeout=600) as r:
        return r.read()


try:
    t0 = time.time()
    while True:
        try:
            listing = json.loads(get("/api/datasets"))
            break
        except Exception:
            if server.poll() is not None or time.time() - t0 > 600:
                raise SystemExit("server did not come up: " + open("/tmp/qgpu-serve-devices.log").read()[-2000:])
            time.sleep(0.5)
    items = listing["datasets"]
    print(f"# {n} datasets loaded after {time.time() - t0:.1f} s")
    print("| id | device | memory | representation | resident GB | admission limit GB | free at load GB |")
    print("| --- | ---: | --- | --- | ---: | ---: | ---: |")
    for d in items:
        p = d["placement"]
        gb = lambda k: f"{p[k] / 1e9:.2f}" if k in p else "-"
        print(f"| {d['id']} | {p['device']} | {p['memory']} | {p.get('representation', '-')} | {gb('resident_bytes')} "
              f"| {gb('admission_limit_bytes')} | {gb('admission_free_bytes')} |")
    ids = [d["id"] for d in items]
    # BF disks of varying radius: a computation per request (the server keeps CoM once computed)
    urls = {i: [f"/api/datasets/{i}/virtual?kind=bf&r={8 + k}&format=u64" for k in range(REPEAT)] for i in ids}
    first = [get(u) for u in urls[ids[0]]]  # warm-up and reference
    for i in ids[1:]:
        get(urls[i][0])
    t = time.perf_counter()
    for i in ids:
        for u, want in zip(urls[i], first):
            assert get(u) == want, f"{i}: {u} differs from {ids[0]}"
    sequential = time.perf_counter() - t
    errors = []

    def run(i):
        try:
            for u, want in zip(urls[i], first):
                if get(u) != want:
                    errors.append(f"{i}: {u} differs")
        except Exception as e:  # noqa: BLE001
            errors.append(f"{i}: {e}")

    threads = [threading.Thread(target=run, args=(i,)) for i in ids]
    t = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    concurrent = time.perf_counter() - t
    if errors:
        raise SystemExit("; ".join(errors))
    print(f"# {REPEAT} BF requests per dataset: sequential {sequential:.3f} s, concurrent {concurrent:.3f} s, "
          f"speed-up {sequential / concurrent:.2f} (ideal {n})")
finally:
    server.terminate()
    server.wait()

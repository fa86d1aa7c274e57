"""The widget's round trip through a real Jupyter kernel: a detector drag sent by the front end -> the new BF image
(float32 buffer) received back, the way a notebook front end sees it (issue 29).

This process plays the front end with jupyter_client (Debian python3-jupyter-client; the kernel: python3-ipykernel).
In the kernel, qgpu.widget.Show4D runs on the loaded dataset. With anywidget importable there, the messages are the
widget protocol itself (comm target jupyter.widget: an `update` of the detector trait in, a `custom` message with the
image buffer out); without it, the same Show4D state is bound to a plain comm (target qgpu.show4d) carrying the same
JSON + binary buffers over the same kernel channels. Both are printed with which one ran.

usage: python3 bench/bench_widget.py FILE [--backend cuda|cpu] [--drags N]
Prints per drag: round trip (front end sends -> image buffer received), the kernel-side update (compute + hand over
to the comm, Show4D.timings) and the image bytes; medians and p95 over N drags after 3 warm-ups."""
import argparse
import os
import queue
import statistics
import sys
import time
import uuid

KERNEL_SETUP = r"""
import numpy as np, quantem.gpu as qgpu, quantem.gpu.widget as qw
ds = qgpu.io.load({path!r}, backend={backend!r})
if qw.anywidget is not None:
    w = qw.Show4D(ds)
    mode = "anywidget"
    comm_id = w.comm.comm_id
else:
    try:
        from comm import create_comm
    except ImportError:  # ipykernel < 6.18 (Debian 12's 6.17)
        from ipykernel.comm import Comm as create_comm
    c = create_comm(target_name="qgpu.show4d", data={{}})
    w = qw.Show4D(ds)
    w.send = lambda content, buffers=None: c.send(content, buffers=buffers)
    c.on_msg(lambda msg: setattr(w, "detector", msg["content"]["data"]["detector"]))
    mode = "comm"
    comm_id = c.comm_id
print(mode, comm_id, w.detector["cr"], w.detector["cc"], w.detector["r"], flush=True)
"""


class Frontend:
    """A kernel with the dataset and a Show4D, driven over its channels the way a notebook front end drives it."""

    def __init__(self, path, backend, env=None):
        from jupyter_client.manager import KernelManager
        self.km = KernelManager(kernel_name="python3")
        self.km.start_kernel(env={**os.environ, "PYDEVD_DISABLE_FILE_VALIDATION": "1", **(env or {})})
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        out = self.execute(KERNEL_SETUP.format(path=str(path), backend=backend))
        words = out.split()
        self.mode, self.comm_id = words[:2]
        self.center, self.radius = (float(words[2]), float(words[3])), float(words[4])  # the fitted BF disk

    def execute(self, code, timeout=600):
        """Runs code in the kernel; returns its stdout, raising with the kernel's traceback on an error."""
        msg_id = self.kc.execute(code)
        text = []
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            t, c = msg["msg_type"], msg["content"]
            if t == "stream":
                text.append(c["text"])
            elif t == "error":
                raise RuntimeError("kernel: " + "\n".join(c["traceback"]))
            elif t == "status" and c["execution_state"] == "idle":
                return "".join(text)

    def drag(self, detector, timeout=60):
        """Sends a detector change as the front end does; waits for the image message. Returns (seconds, content,
        buffers)."""
        if self.mode == "anywidget":
            data = {"method": "update", "state": {"detector": detector}, "buffer_paths": []}
        else:
            data = {"detector": detector}
        start = time.perf_counter()
        self.kc.session.send(self.kc.shell_channel.socket, "comm_msg",
                             content={"comm_id": self.comm_id, "data": data})
        while True:
            msg = self.kc.get_iopub_msg(timeout=timeout)
            if msg["msg_type"] != "comm_msg" or msg["content"].get("comm_id") != self.comm_id:
                continue
            d = msg["content"]["data"]
            content = d.get("content", d) if self.mode == "anywidget" else d
            if self.mode == "anywidget" and d.get("method") != "custom":
                continue
            if content.get("type") == "error":
                raise RuntimeError("widget: " + content["message"])
            if content.get("type") == "image" and content.get("panel") == "real":
                return time.perf_counter() - start, content, [bytes(b) for b in msg["buffers"]]

    def kernel_timings(self):
        return self.execute("print(repr([ms for what, ms in w.timings if what == 'image']))")

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


def in_process(a, why):
    """Without a kernel: the comm layer's Python side alone (Show4D's stub model keeps each message's buffers)."""
    import quantem.gpu as qgpu
    import quantem.gpu.widget as qw
    ds = qgpu.io.load(a.file, backend=a.backend)
    if qw.anywidget is None:
        w = qw.Show4D(ds)
    else:  # the anywidget class needs a kernel for its comm: the state class with a stub send
        class Stub(qw.Show4DState):
            def send(self, content, buffers=None):
                self.sent.append((content, [bytes(b) for b in (buffers or [])]))
        w = Stub()
        w.sent = []
        w._setup(ds)
    print(f"{why}: the comm layer's Python side in this process (set the detector trait -> image handed to the comm)")
    cr, cc, r = w.detector["cr"], w.detector["cc"], w.detector["r"]
    trips = []
    for i in range(a.drags + 3):
        start = time.perf_counter()
        w.detector = {"kind": "disk", "cr": cr + (i % 5) - 2, "cc": cc + (i % 3) - 1, "r": r + (i % 4) - 2,
                      "inner": r * 1.2, "outer": r * 2.5, "h": r, "w": r}
        if i >= 3:
            trips.append((time.perf_counter() - start) * 1e3)
    print(f"update (compute + hand over): median {statistics.median(trips):.2f} ms over {len(trips)} drags, "
          f"{len(w.sent[-1][1][0])} bytes per image")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--backend", default="cuda")
    ap.add_argument("--drags", type=int, default=50)
    a = ap.parse_args()
    try:
        import jupyter_client  # noqa: F401
        import ipykernel  # noqa: F401
    except ImportError as e:
        return in_process(a, f"no kernel here ({e})")
    t0 = time.perf_counter()
    fe = Frontend(a.file, a.backend)
    print(f"kernel up and {a.file} loaded on {a.backend} in {time.perf_counter() - t0:.1f} s; messages: {fe.mode}"
          f" ({'the anywidget protocol' if fe.mode == 'anywidget' else 'anywidget absent: a plain comm'})")
    (cr, cc), r = fe.center, fe.radius
    trips, sizes = [], []
    for i in range(a.drags + 3):
        det = {"kind": "disk", "cr": cr + (i % 5) - 2, "cc": cc + (i % 3) - 1, "r": r + (i % 4) - 2,
               "inner": r * 1.2, "outer": r * 2.5, "h": r, "w": r}
        sec, content, buffers = fe.drag(det)
        if i >= 3:
            trips.append(sec * 1e3)
            sizes.append(sum(len(b) for b in buffers))
    kernel = eval(fe.kernel_timings())[3:]  # noqa: S307 - our own kernel's repr of a list of floats
    fe.close()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]  # noqa: E731
    print(f"{content['rows']}x{content['cols']} float32 image, {sizes[0]} bytes per update")
    print(f"round trip (drag sent -> image received): median {statistics.median(trips):.2f} ms, p95 "
          f"{q(trips, 0.95):.2f} ms over {len(trips)} drags")
    print(f"kernel side (compute + hand over to the comm): median {statistics.median(kernel):.2f} ms, p95 "
          f"{q(kernel, 0.95):.2f} ms")
    print(f"transport (round trip - kernel side, medians): {statistics.median(trips) - statistics.median(kernel):.2f} ms")


if __name__ == "__main__":
    sys.exit(main())

"""The Python side of the widget test (widget.e2e.mjs): qgpu.widget's Show4DState on a real dataset, talking JSON
lines instead of a Jupyter comm. stdin: {"set": {trait: value}} or {"msg": content}; stdout: {"state": traits}
first, then per request every message the widget sent ({"content", "buffers": [base64]}) and {"done": state,
"ms": time in Python}.

    python widget_bridge.py FILE"""
import base64
import json
import sys
import time

import quantem.gpu as qgpu
from quantem.gpu.widget import Show4DState

SYNCED = ["shape", "products", "product", "detector", "position", "c1", "colormap", "calibration", "status", "source",
          "missing"]


class Bridge(Show4DState):
    def send(self, content, buffers=None):
        print(json.dumps({"content": content, "buffers": [base64.b64encode(bytes(b)).decode() for b in buffers or []]}),
              flush=True)


def state(w):
    return {k: getattr(w, k) for k in SYNCED}


w = Bridge()
w._setup(qgpu.io.load(sys.argv[1], backend="cpu"))
print(json.dumps({"state": state(w)}), flush=True)
for line in sys.stdin:
    request = json.loads(line)
    start = time.perf_counter()
    try:
        if "set" in request:
            with w.hold_trait_notifications():
                for k, v in request["set"].items():
                    setattr(w, k, v)
        if "msg" in request:
            w.handle_message(request["msg"])
    except Exception as e:  # noqa: BLE001 - the test sees it
        print(json.dumps({"content": {"type": "error", "message": f"{type(e).__name__}: {e}"}, "buffers": []}), flush=True)
    print(json.dumps({"done": state(w), "ms": (time.perf_counter() - start) * 1e3}), flush=True)

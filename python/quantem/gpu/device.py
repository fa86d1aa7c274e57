"""Backend selection: detect() reports the GPU, resolve() checks a backend name."""
from ._args import document
from ._qgpu import detect, resolve  # noqa: F401

document(detect, """What this machine offers (a dict): {"cuda_available": bool, "device_count", "name",
    "reason": why not (or ""), ...}.

    detect()  (no parameters)""")

document(resolve, """The usable backend a name gives: "cuda" | "cpu" | "auto" -> "cuda" or "cpu".

    backend: "cuda", "cpu" or "auto" (cuda; never falls back to cpu).
    Raises: BackendUnavailable (cuda or auto without a usable GPU), InvalidArgument (an unknown name).""")

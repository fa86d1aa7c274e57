"""Backend selection: detect() reports the GPU, resolve() checks a backend name."""
from ._args import document
from ._qgpu import detect, resolve, vulkan_device  # noqa: F401

document(detect, """What this machine offers (a dict): {"cuda_available": bool, "device_count", "name",
    "reason": why not (or ""), ...}.

    detect()  (no parameters)""")

document(resolve, """The usable backend a name gives: "cuda" | "cpu" | "vulkan" | "auto" -> "cuda", "cpu" or
    "vulkan".

    backend: "cuda", "cpu", "vulkan" or "auto" (cuda; never falls back to cpu or vulkan).
    Raises: BackendUnavailable (cuda or auto without a usable GPU, vulkan without a Vulkan device),
    InvalidArgument (an unknown name).""")

document(vulkan_device, """The Vulkan adapter the vulkan backend uses (a dict): {"available": bool, "name", "type"
    (discrete | integrated | virtual | cpu | other), "driver", "api_version", "reason": why not (or "")}.

    vulkan_device()  (no parameters)""")

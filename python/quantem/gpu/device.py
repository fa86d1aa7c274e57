"""Backend selection: detect() reports the GPU, resolve() checks a backend name."""
from ._qgpu import detect, resolve  # noqa: F401

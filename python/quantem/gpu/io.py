"""HDF5 4D-STEM input: inspect (metadata, readiness), discover, load, and the built-in simulated sample."""
from ._qgpu import discover, inspect, load, write_sample  # noqa: F401

"""quantem: 4D-STEM tools. This tree ships the GPU package, quantem.gpu."""
__path__ = __import__("pkgutil").extend_path(__path__, __name__)

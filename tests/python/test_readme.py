"""The README's Python example, run as written on the CPU backend (only load chooses; the rest follows)."""
import os
import re

import numpy as np

import quantem.gpu as qgpu

README = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")


def readme_python_example():
    text = open(README).read()
    block = re.search(r"Python \(.*?\):\n\n((?:    .*\n)+)", text).group(1)
    return "\n".join(line[4:] for line in block.splitlines())


def test_readme_python_example_runs_on_cpu(tmp_path):
    code = readme_python_example()
    assert 'backend="cuda"' in code and "qgpu.display.render" in code and "qgpu.dpc.idpc" in code
    path = tmp_path / "scan.h5"
    qgpu.io.write_sample(str(path), scan=(16, 16), detector=(48, 48), seed=2)
    os.chdir(tmp_path)
    scope = {}
    exec(code.replace('backend="cuda"', 'backend="cpu"'), scope)
    assert scope["ds"].backend == "cpu"
    assert scope["diff"].dtype == np.int64
    for name in ["bf", "adf", "diff", "phase", "rgba", "ssb_phase"]:
        assert scope[name].provenance["backend"] == "cpu", name
    np.testing.assert_array_equal(scope["chain"]["idpc"], scope["phase"])  # the one-call chain: the same iDPC
    assert scope["rgba"].shape == (16, 16, 4) and scope["rgba"].dtype == np.uint8
    assert scope["bf"].dtype == np.uint64 and int(scope["bf"].min()) > 0

"""Run by an installed Python (outside the source tree, no PYTHONPATH): the README's Python example on the cpu
backend, from the installed quantem.gpu, and the `qgpu` command.

    python check_installed.py README.md PREFIX [QGPU]

PREFIX: where quantem.gpu must be imported from; QGPU: the qgpu command to run (default: `qgpu` on PATH)."""
import os
import re
import subprocess
import sys

import numpy as np

readme, prefix = os.path.abspath(sys.argv[1]), os.path.realpath(sys.argv[2])
qgpu_cmd = sys.argv[3] if len(sys.argv) > 3 else "qgpu"
import quantem.gpu as qgpu  # noqa: E402

where = os.path.realpath(qgpu.__file__)
assert where.startswith(prefix + os.sep), f"quantem.gpu imported from {where}, not from the installed {prefix}"
assert os.path.realpath(qgpu._qgpu.__file__).startswith(prefix + os.sep), qgpu._qgpu.__file__

# The command: sample written and read back through the installed program.
subprocess.run([qgpu_cmd, "sample", "scan.h5", "--scan", "16", "16", "--detector", "48", "48"], check=True,
               stdout=subprocess.DEVNULL)
info = subprocess.run([qgpu_cmd, "info", "scan.h5"], check=True, capture_output=True, text=True).stdout
assert "16 x 16" in info or "16x16" in info, info

block = re.search(r"Python \(.*?\):\n\n((?:    .*\n)+)", open(readme).read()).group(1)
code = "\n".join(line[4:] for line in block.splitlines()).replace('backend="cuda"', 'backend="cpu"')
scope = {}
exec(code, scope)
assert scope["ds"].backend == "cpu" and scope["ds"].shape == (16, 16, 48, 48)
assert scope["bf"].dtype == np.uint64 and int(scope["bf"].min()) > 0
np.testing.assert_array_equal(scope["chain"]["idpc"], scope["phase"])
assert os.path.getsize("dpc_row.png") > 100 and os.path.getsize("products.h5") > 1000
# A movie from the installed command and module: the FFmpeg plugin travelled beside the library.
subprocess.run([qgpu_cmd, "movie", "scan.h5", "-o", "row.gif", "--backend", "cpu", "--path-row", "3"], check=True,
               stdout=subprocess.DEVNULL)
assert open("row.gif", "rb").read(6) == b"GIF89a"
path, frames = qgpu.movie.render(scope["ds"], "bf.gif", sweep="bf", range=(2, 6), frames=3)
assert frames == 3 and open("bf.gif", "rb").read(6) == b"GIF89a"
print("installed quantem.gpu", qgpu.__version__, "from", os.path.dirname(where), "ran the README example on cpu")

import os
import shutil
import subprocess

import pytest

QGPU = os.environ.get("QGPU", os.path.join(os.path.dirname(__file__), "../../build/qgpu"))
MPIRUN = os.environ.get("MPIRUN") or shutil.which("mpirun")


def qgpu(*args, ranks=None, timeout=300):
    """Runs qgpu, as one process or under `mpirun -n ranks --oversubscribe` (as root: --allow-run-as-root)."""
    cmd = [QGPU, *map(str, args)]
    env = None
    if ranks:
        # containers often forbid the cross-memory attach of Open MPI's shared-memory transport: copy instead
        env = dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism="none")
        if not MPIRUN:
            pytest.skip("mpirun not found (apt-get install openmpi-bin libopenmpi-dev)")
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        cmd = [MPIRUN, *root, "--oversubscribe", "-n", str(ranks), *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def single(tmp_path_factory):
    """One file, 10x12 scan (10 rows: not divisible by 3 ranks), 48x48 detector."""
    path = tmp_path_factory.mktemp("single") / "scan.h5"
    r = qgpu("sample", path, "--scan", 10, 12, "--detector", 48, 48, "--seed", 4)
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture(scope="session")
def acquisition(tmp_path_factory):
    """A multi-file acquisition: master + 3 data files, 11x9 scan (11 rows over 2 or 3 ranks: uneven)."""
    path = tmp_path_factory.mktemp("multi") / "acq_master.h5"
    r = qgpu("sample", path, "--scan", 11, 9, "--detector", 40, 40, "--files", 3, "--seed", 2)
    assert r.returncode == 0, r.stderr
    return path

"""quantem.gpu installed for real, each way the README gives, then the README's Python example run on cpu from the
installed copy outside the source tree (check_installed.py, no PYTHONPATH):

- cmake_component: `cmake --install BUILD --component python --prefix DIR`, then PYTHONPATH=DIR.
- pip_install: `pip install .` into a venv (--system-site-packages: Debian's numpy), reusing the build tree
  (QGPU_BUILD_DIR); the `qgpu` command lands on the venv's PATH.
- pip_wheel: `pip wheel .` (reusing the build tree), the wheel installed into another fresh venv.
- fresh_copy: `pip install .` from a copy of the source tree with no build tree: the backend configures and builds
  its own (ccache makes it quick where the objects were compiled before).

Run by ctest (tests/install/CMakeLists.txt) with QGPU_TEST_BUILD_DIR set; pip never reaches a package index here."""
import os
import pathlib
import shutil
import subprocess
import sys
import zipfile

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(REPO, "tests", "install", "check_installed.py")
README = os.path.join(REPO, "README.md")
BUILD = os.environ.get("QGPU_TEST_BUILD_DIR", os.path.join(REPO, "build"))
PYTHON = os.environ.get("QGPU_TEST_PYTHON", "/usr/bin/python3")
OFFLINE = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_CACHE_DIR": "1"}


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "QGPU_BUILD_DIR", "VIRTUAL_ENV")}
    env.update(OFFLINE, **extra)
    return env


def run(cmd, **kwargs):
    result = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, cmd))} failed ({result.returncode}):\n" \
                                   f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
    return result


def venv(path):
    run([PYTHON, "-m", "venv", "--system-site-packages", path])
    return os.path.join(path, "bin")


def check(python, prefix, workdir, env, qgpu="qgpu"):
    os.makedirs(workdir, exist_ok=True)
    out = run([python, CHECK, README, prefix, qgpu], cwd=workdir, env=env).stdout
    assert "ran the README example on cpu" in out
    return out


def site_packages(bindir):
    code = "import sysconfig; print(sysconfig.get_paths()['platlib'])"
    return run([os.path.join(bindir, "python"), "-c", code]).stdout.strip()


@pytest.fixture
def where(tmp_path, request):
    """A fresh folder: under QGPU_TEST_TMP (ctest: in the build tree, under CCACHE_BASEDIR), else pytest's."""
    root = os.environ.get("QGPU_TEST_TMP")
    if not root:
        return tmp_path
    path = pathlib.Path(root) / request.node.name
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


def test_cmake_component(where):
    prefix = where / "prefix"
    run(["cmake", "--install", BUILD, "--component", "python", "--prefix", prefix])
    assert (prefix / "quantem" / "gpu" / "io.py").is_file() and (prefix / "quantem" / "gpu" / "bin" / "qgpu").is_file()
    check(PYTHON, str(prefix), where / "run", clean_env(PYTHONPATH=str(prefix)),
          qgpu=str(prefix / "quantem" / "gpu" / "bin" / "qgpu"))


def test_pip_install_reusing_build_tree(where):
    bindir = venv(where / "venv")
    run([os.path.join(bindir, "pip"), "install", REPO], env=clean_env(QGPU_BUILD_DIR=BUILD))
    env = clean_env(PATH=bindir + os.pathsep + os.environ["PATH"])
    assert shutil.which("qgpu", path=env["PATH"]) == os.path.join(bindir, "qgpu")
    check(os.path.join(bindir, "python"), site_packages(bindir), where / "run", env)


def test_pip_wheel_into_fresh_venv(where):
    wheels = where / "wheels"
    run([PYTHON, "-m", "pip", "wheel", "--no-deps", "-w", wheels, REPO,
         "--config-settings", f"build-dir={BUILD}"], env=clean_env(), cwd=where)
    (wheel,) = wheels.glob("quantem_gpu-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for must in ("quantem/__init__.py", "quantem/gpu/__init__.py", "quantem/gpu/io.py", "quantem/gpu/bin/qgpu",
                 "quantem/gpu/libquantem_gpu.so", "quantem/gpu/libquantem_gpu_movie.so", "quantem_gpu-0.1.0.data/scripts/qgpu",
                 "quantem_gpu-0.1.0.dist-info/RECORD"):
        assert must in names, f"{must} not in {wheel.name}: {names}"
    assert any(n.startswith("quantem/gpu/_qgpu.") and n.endswith(".so") for n in names), names
    bindir = venv(where / "venv")
    run([os.path.join(bindir, "pip"), "install", wheel], env=clean_env())
    env = clean_env(PATH=bindir + os.pathsep + os.environ["PATH"])
    check(os.path.join(bindir, "python"), site_packages(bindir), where / "run", env)


def source_files():
    """The files of the source tree a fresh clone would have (tracked, or new and not ignored)."""
    try:
        out = subprocess.run(["git", "-C", REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        pytest.skip(f"the fresh-copy install needs the source tree as a git checkout ({e})")
    return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(REPO, f))]


def test_pip_install_from_fresh_copy(where):
    # The copy's build tree build-pip-cpXY sits one level below its root, as build/ does in the checkout, so the
    # compiler command lines (relative to CCACHE_BASEDIR) match and ccache answers the objects compiled before.
    src = where / "src"
    for f in source_files():
        os.makedirs(src / os.path.dirname(f), exist_ok=True)
        shutil.copy2(os.path.join(REPO, f), src / f)
    bindir = venv(where / "venv")
    run([os.path.join(bindir, "pip"), "install", src], env=clean_env(), cwd=where)
    env = clean_env(PATH=bindir + os.pathsep + os.environ["PATH"])
    check(os.path.join(bindir, "python"), site_packages(bindir), where / "run", env)

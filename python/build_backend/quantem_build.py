"""PEP 517 build backend of quantem-gpu, in the source tree (pyproject.toml: backend-path, no requirements), so that
`pip install .` and `pip wheel .` work offline with the Python standard library alone.

It builds the compiled core with this repository's CMake build (the interpreter that runs pip, so _qgpu matches it),
installs the CMake component `python` (the package quantem.gpu: its Python files, _qgpu, libquantem_gpu.so and the
qgpu program, all found through $ORIGIN) into a staging folder and packs that folder into a wheel, with a `qgpu`
script that pip puts on PATH.

Where it builds (pip -C KEY=VALUE / --config-settings, or the environment; a -C setting wins):
  build-dir / QGPU_BUILD_DIR     an existing configured build tree to reuse (e.g. `build` of scripts/build.sh): only
                                 the targets _qgpu and qgpu are brought up to date there. It must have been
                                 configured for this Python (checked).
  (default)                      build-pip-<python tag> in the source tree, configured on first use with the tests,
                                 benchmarks and fuzzers off; ccache is used when installed (as scripts/build.sh).
  cmake-args / QGPU_CMAKE_ARGS   extra arguments for that first configure (space-separated).
The CMake build needs the build dependencies of scripts/install-deps.sh (CUDA toolkit, HDF5, pybind11-dev, ...).
"""
import base64
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # python/build_backend/..


class BuildError(RuntimeError):
    pass


def _project():
    """name, version, summary, requires-python, dependencies and optional dependencies from pyproject.toml."""
    path = os.path.join(SOURCE, "pyproject.toml")
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise BuildError("building quantem-gpu needs Python >= 3.11 (tomllib) or the tomli package") from None
    with open(path, "rb") as f:
        return tomllib.load(f)["project"]


def _tag():
    soabi = sysconfig.get_config_var("SOABI") or ""
    m = re.match(r"cpython-(\d+)(t?)", soabi)
    if sys.implementation.name != "cpython" or not m:
        raise BuildError(f"quantem-gpu builds for CPython only (this is {sys.implementation.name}, SOABI {soabi!r})")
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    platform = re.sub(r"[-.]", "_", sysconfig.get_platform())
    return f"{py}-cp{m.group(1)}{m.group(2)}-{platform}"


def _setting(config_settings, key, env):
    value = (config_settings or {}).get(key)
    if isinstance(value, list):
        value = value[-1]
    return value if value not in (None, "") else os.environ.get(env, "")


def _run(cmd, **kwargs):
    print("quantem-gpu build:", " ".join(shlex.quote(str(c)) for c in cmd), file=sys.stderr, flush=True)
    try:
        subprocess.run([str(c) for c in cmd], check=True, stdout=sys.stderr, **kwargs)
    except FileNotFoundError:
        raise BuildError(f"'{cmd[0]}' was not found: building quantem-gpu needs CMake >= 3.25 and the build "
                         "dependencies of scripts/install-deps.sh") from None
    except subprocess.CalledProcessError as e:
        raise BuildError(f"'{' '.join(map(str, cmd[:3]))} ...' failed with status {e.returncode} (its output is "
                         "above; pip shows it with -v)") from None


def _build_tree(config_settings):
    """The configured build tree to use: the one named by build-dir / QGPU_BUILD_DIR, else build-pip-<tag> here."""
    given = _setting(config_settings, "build-dir", "QGPU_BUILD_DIR")
    if given:
        build = os.path.abspath(os.path.join(SOURCE, os.path.expanduser(given)))
        if not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
            raise BuildError(f"build-dir {build!r} is not a configured CMake build tree (no CMakeCache.txt): "
                             "configure it first (scripts/build.sh) or leave build-dir unset")
        return build, []
    build = os.path.join(SOURCE, "build-pip-" + _tag().split("-")[0])
    args = ["-DQGPU_BUILD_TESTS=OFF", "-DQGPU_BUILD_BENCH=OFF", "-DQGPU_BUILD_FUZZ=OFF", "-DQGPU_BUILD_PYTHON=ON",
            "-DCMAKE_BUILD_TYPE=Release", f"-DPython_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):  # as scripts/build.sh: rebuilds and other trees share compiled objects
        args += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache", "-DCMAKE_CUDA_COMPILER_LAUNCHER=ccache"]
    args += shlex.split(_setting(config_settings, "cmake-args", "QGPU_CMAKE_ARGS"))
    return build, args


def _cache_value(build, key):
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if line.startswith(key + ":"):
                return line.split("=", 1)[1].strip()
    return None


def _stage(config_settings, prefix):
    """Builds _qgpu and qgpu and installs the component `python` into prefix."""
    cmake = shutil.which("cmake") or "cmake"
    build, configure = _build_tree(config_settings)
    env = dict(os.environ)
    env.setdefault("CCACHE_BASEDIR", os.path.dirname(SOURCE))
    env.setdefault("CCACHE_NOHASHDIR", "1")
    if configure and not os.path.isfile(os.path.join(build, "CMakeCache.txt")):
        _run([cmake, "-S", SOURCE, "-B", build] + configure, env=env)
    if (_cache_value(build, "QGPU_BUILD_PYTHON:BOOL") or "ON").upper() not in ("ON", "1", "TRUE", "YES"):
        raise BuildError(f"build tree {build!r} was configured with QGPU_BUILD_PYTHON=OFF: it has no Python module")
    _run([cmake, "--build", build, "--target", "_qgpu", "qgpu"], env=env)
    _run([cmake, "--install", build, "--component", "python", "--prefix", prefix], env=env)
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    gpu = os.path.join(prefix, "quantem", "gpu")
    built = sorted(f for f in os.listdir(gpu) if f.startswith("_qgpu"))
    if built != ["_qgpu" + suffix]:
        raise BuildError(f"build tree {build!r} holds {', '.join(built) or 'no _qgpu'}, not _qgpu{suffix} for this "
                         f"Python ({sys.executable}, {sys.version.split()[0]}): it was configured for another "
                         "interpreter; use another build-dir or none")


def _metadata(project):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    lines += [f"Requires-Dist: {d}" for d in project.get("dependencies", [])]
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    return "\n".join(lines) + "\n"


def _dist_info_name(project):
    return f"{re.sub(r'[-_.]+', '_', project['name'])}-{project['version']}"


# The `qgpu` command: pip rewrites "#!python" to the environment's interpreter. It finds the program inside the
# installed package without importing quantem.gpu (no need to load the compiled core to start a process).
SCRIPT = """#!python
import importlib.util, os, sys
spec = importlib.util.find_spec("quantem")
for folder in (spec.submodule_search_locations if spec else []):
    exe = os.path.join(folder, "gpu", "bin", "qgpu")
    if os.access(exe, os.X_OK):
        os.execv(exe, ["qgpu"] + sys.argv[1:])
sys.exit("qgpu: error: the qgpu program was not found in the installed package quantem.gpu (quantem/gpu/bin/qgpu)")
"""


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    name = _dist_info_name(project) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, name), exist_ok=True)
    with open(os.path.join(metadata_directory, name, "METADATA"), "w") as f:
        f.write(_metadata(project))
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    tag = _tag()
    base = _dist_info_name(project)
    wheel_name = f"{base}-{tag}.whl"
    with tempfile.TemporaryDirectory(prefix="quantem-gpu-wheel-") as prefix:
        _stage(config_settings, prefix)
        files = []  # (arcname, path or bytes, executable)
        for folder, dirs, names in os.walk(prefix):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for n in sorted(names):
                path = os.path.join(folder, n)
                files.append((os.path.relpath(path, prefix).replace(os.sep, "/"), path, os.access(path, os.X_OK)))
        files.append((f"{base}.data/scripts/qgpu", SCRIPT.encode(), True))
        dist = f"{base}.dist-info"
        files.append((f"{dist}/METADATA", _metadata(project).encode(), False))
        files.append((f"{dist}/WHEEL", ("Wheel-Version: 1.0\nGenerator: quantem-gpu build_backend\n"
                                        f"Root-Is-Purelib: false\nTag: {tag}\n").encode(), False))
        os.makedirs(wheel_directory, exist_ok=True)
        record = []
        out = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as z:
            for arcname, src, executable in files:
                data = src if isinstance(src, bytes) else open(src, "rb").read()
                info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100755 if executable else 0o100644) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
                record.append(_record_line(arcname, data))
            record.append(f"{dist}/RECORD,,")
            info = zipfile.ZipInfo(f"{dist}/RECORD", date_time=(2020, 1, 1, 0, 0, 0))
            info.external_attr = 0o100644 << 16
            z.writestr(info, "\n".join(record) + "\n")
    print(f"quantem-gpu build: wrote {out}", file=sys.stderr)
    return wheel_name

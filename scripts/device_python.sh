#!/bin/bash
# Builds the Python module (quantem.gpu._qgpu) for the device machine's own python3 (3.12 on the H200 image) against
# the carried libquantem_gpu.so, then runs the Python tests there (the CUDA ones included). The binding sources need
# our headers, pybind11 and the Python headers (both in the image), nlohmann-json and the HDF5 headers (carried in
# .devpack as .devinc by scripts/device_pack.sh). usage (in a device call): bash scripts/device_python.sh [PYTEST ARGS]
set -uo pipefail
source scripts/device_env.sh
PY=${PYTHON:-python3}
py_inc=$($PY -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
pybind_inc=$($PY -c 'import pybind11; print(pybind11.get_include())' 2>/dev/null || echo /usr/include)
ext=$($PY -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
out=${QGPU_PY_OUT:-/tmp/qgpu-py}
logs=${QGPU_PY_LOGS:-$out}; mkdir -p "$logs"  # one log per test file
rm -rf "$out" && mkdir -p "$out/obj" && cp -r python/quantem "$out/"
echo "python $($PY --version 2>&1), module $ext, compiler $(${CXX:-c++} --version | head -1)"
$PY -c "import importlib.util as u; print('have: ' + ', '.join(m + (' yes' if u.find_spec(m) else ' no') for m in ('numpy', 'h5py', 'jupyter_client', 'ipykernel', 'anywidget', 'traitlets')))"
for f in python/src/*.cpp; do
  ${CXX:-c++} -O2 -std=c++20 -fPIC -fvisibility=hidden -Isrc -I.devinc -I.devinc/hdf5/serial -I"$py_inc" \
    -I"$pybind_inc" -c "$f" -o "$out/obj/$(basename "$f" .cpp).o" &
done
wait
# --exclude-libs,ALL: the image's compiler wrapper (g++-real) links part of libstdc++ statically; exported from the
# module, those copies were bound by the carried libzmq's IO thread (std::ostream << long) and it crashed inside them
# (test_live, s9c and s14b: cuda-gdb put the SIGSEGV in std::codecvt "from _qgpu...so" under libzmq.so.5).
${CXX:-c++} -shared "$out"/obj/*.o -L.devbin -lquantem_gpu -Wl,-rpath,"$PWD/.devbin" -Wl,--exclude-libs,ALL \
  -o "$out/quantem/gpu/_qgpu$ext" || { echo "linking the module failed"; exit 1; }
echo "module: $(readelf -d "$out/quantem/gpu/_qgpu$ext" | grep -c NEEDED) libraries needed, $(nm -D --defined-only \
  "$out/quantem/gpu/_qgpu$ext" 2>/dev/null | grep -c ' [TW] _ZNS\|_ZNKSt\|_ZSt') libstdc++ symbols exported"
# A module built by a newer compiler needs the image's newer libstdc++ (backward compatible with our libraries).
if [ -n "${QGPU_SYSTEM_LIBSTDCXX:-1}" ]; then rm -f .devlib/libstdc++.so.6* .devlib/libgcc_s.so.1; fi
# One pytest process per file: the image's h5py brings its own HDF5, and a file that imports it must not take the
# rest of the run down with it. -rs: each skip with its reason.
status=0
for f in ${QGPU_PY_FILES:-tests/python/test_*.py}; do
  PYTHONPATH="$out" $PY -m pytest -q -rs -p no:cacheprovider "$f" "$@" > "$logs/$(basename "$f").log" 2>&1
  rc=$?; [ $rc -eq 0 ] || [ $rc -eq 5 ] || status=1
  echo "$(basename "$f") rc=$rc $(tail -1 "$logs/$(basename "$f").log")"
  [ $rc -eq 0 ] || [ $rc -eq 5 ] || grep -E "^(FAILED|ERROR)|Error|Fatal" "$logs/$(basename "$f").log" | head -8
  if [ $rc -ge 128 ]; then  # a crash: again, stopping at the first, with the native stack printed and symbolised
    cc -shared -fPIC -O1 -o "$out/segv.so" scripts/segv_backtrace.c -ldl 2>/dev/null
    LD_PRELOAD="$out/segv.so" PYTHONPATH="$out" $PY -m pytest -q -x -p no:faulthandler -p no:cacheprovider "$f" "$@" \
      > "$logs/$(basename "$f").crash" 2>&1
    grep '^FRAME' "$logs/$(basename "$f").crash" | head -40 | while read -r _ obj off sym; do
      case "$obj" in *quantem*|*_qgpu*) echo "  $(basename "$obj") $off $sym $(addr2line -f -C -e "$obj" "$off" 2>/dev/null | head -1 | cut -c1-160)";;
        *) echo "  $obj $sym";; esac
    done | tee -a "$logs/$(basename "$f").crash" | head -30
    # Unbuffered and verbose (the failing test's name, Python's own fault dump), then under cuda-gdb (the image has
    # no gdb; cuda-gdb debugs host code too) for every thread's native stack.
    (ulimit -s; PYTHONUNBUFFERED=1 PYTHONPATH="$out" timeout 120 $PY -X faulthandler -m pytest -v -s -x \
      -p no:cacheprovider "$f" "$@") > "$logs/$(basename "$f").verbose" 2>&1
    tail -25 "$logs/$(basename "$f").verbose"
    if command -v cuda-gdb >/dev/null; then
      PYTHONPATH="$out" timeout 180 cuda-gdb -batch -ex run -ex "info threads" -ex "thread apply all bt 25" \
        --args $PY -m pytest -q -x -p no:faulthandler -p no:cacheprovider "$f" "$@" > "$logs/$(basename "$f").gdb" 2>&1
      grep -A40 -E "received signal|SIGSEGV" "$logs/$(basename "$f").gdb" | head -60
    fi
  fi
done
exit $status

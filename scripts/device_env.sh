# Sourced on the device machine: use the carried libraries (.devlib) and the bitshuffle plugin.
here=$(pwd)
for t in .devpack/devbin.tar.xz .devpack/devlib.tar.xz .devpack/devinc.tar.xz .devpack-movie/devmovie.tar.xz \
         .devpack-mpi/devmpi.tar.xz .devpack-webgpu/devwebgpu.tar.xz; do
  [ -f "$t" ] && tar xJf "$t"; done
# .devmovie (the movie plugin's FFmpeg libraries) is there only when .devpack-movie was carried: without it a movie
# fails with BackendUnavailable (as on any machine without FFmpeg) and everything else runs.
export LD_LIBRARY_PATH=$here/.devbin:$here/.devlib:$here/.devmovie:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
# (kept when .devlib has no plugin: a check run of the steps on a build machine uses its own)
if [ -f "$here/.devlib/plugins/libh5bshuf.so" ]; then export QGPU_BSHUF_PLUGIN=$here/.devlib/plugins/libh5bshuf.so; fi
export QGPU_TEST_TMP=/tmp/qgpu-test
export QGPU_BIN=$here/.devbin/qgpu  # the command the Python and CLI tests run
# The real detector files (carried in .devinc) where the tests look for them: ../shared/data beside the tree.
[ -e ../shared ] || ln -s "$here/.devinc/shared" ../shared 2>/dev/null || echo "no ../shared: the real-file tests fail"
mkdir -p $QGPU_TEST_TMP
if ! ldconfig -p | grep -q libcufft.so.12 && [ ! -e /usr/local/cuda/lib64/libcufft.so.12 ]; then
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$(dirname "$(find / -name 'libcufft.so.12' 2>/dev/null | head -1)")
fi

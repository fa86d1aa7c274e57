#!/bin/bash
# Packs Open MPI (Debian's mpirun/orted, its plugins, PMIx and the libraries they need) into .devpack-mpi for the
# device step `mpi` (issue 33: ranks sharing the one lent GPU); carry .devpack-mpi beside .devpack. On the device,
# scripts/device_env.sh unpacks it to .devmpi and the step runs .devmpi/usr/bin/mpirun with OPAL_PREFIX there.
# PMIx finds its plugins only at its built-in path: the step copies them there when that path is empty.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .devmpi && mkdir -p .devmpi/lib
for f in $(dpkg -L libopenmpi3 openmpi-bin openmpi-common libpmix2 | grep -vE '/(doc|man|lintian|include)/'); do
  { [ -f "$f" ] || [ -L "$f" ]; } || continue
  mkdir -p ".devmpi$(dirname "$f")" && cp -P "$f" ".devmpi$f"
done
# The libraries mpirun, orted and the plugins need that a CUDA image may lack (not the C library).
find .devmpi -name '*.so*' -o -path '*/bin/*' -type f | while read -r f; do ldd "$f" 2>/dev/null || true; done |
  awk '/=> \//{print $3}' | sort -u | grep -vE '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' |
  while read -r lib; do [ -e ".devmpi$lib" ] || cp -L "$lib" .devmpi/lib/; done
du -sh .devmpi
rm -rf .devpack-mpi && mkdir -p .devpack-mpi
tar cf - .devmpi | xz -T0 -9 > .devpack-mpi/devmpi.tar.xz
ls -la .devpack-mpi

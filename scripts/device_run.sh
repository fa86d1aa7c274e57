#!/bin/bash
# One device call (H200): run with the binaries packed by scripts/device_pack.sh (carry .devpack, or .devbin and .devlib).
# Logs of every step are written to $OUT/logs (returned with the call).
# usage: bash scripts/device_run.sh STEP...   steps: tests, s512, load512, decode, encoded, host, s1024, load1024,
#        queries, live (stream V2 receive+decode+image of s512), livemerlin (Merlin TCP, quad 12-bit), movie, cache, fuzzgpu, ssb, serve, detector, cudatests (GPU tests only), enctests (encoded GPU tests; enctests_compact: with QGPU_ENCODED_POLICY=compact), replay (300k mutants),
#        python (Python tests, built there), webgpu (issue 34: the WebGPU kernels on the real adapter; carry
#        .devpack-webgpu), formats (npy load vs floor and numpy+CuPy), merlin (the same for a 34 GB .mib,
#        then its qgpu convert to bitshuffle+LZ4 HDF5 and the load of the result), dm4 / empad (4.8 / 4.4 GB DM4 and
#        EMPAD loads vs the floor), parallax, mpi (issue 33: 1/2/4 ranks on the one GPU; carry .devpack-mpi), widget (issue
#        29's round trip, after s512 and python), scale (2048x2048 scan tiled from s512's chunks, loaded encoded, without
#        and with the radial basis, then SSB bin 4 / 2), ncu_build (stalls of the basis + copy build at bin 4, 2048^2 load),
#        prof_scale (the kernels of the 2048x2048 basis + copy load, nsys or
#        ncu durations), scale1024 (the same at 1024x1024), scale4096 (at 4096x4096, no SSB;
#        needs s512 first), scale4096basis (its basis + scan-binned copy load and queries alone), scale4096ssb (the basis load and SSB at 4096x4096; after scale4096 or writes the file), ncu_sum (Nsight Compute
#        profile of the encoded masked-sum kernel; needs s512 first), ncu_dec / ncu_src_dec (the same / per-instruction stalls
#        of the load's decode kernel), ncu_enc (the same for the encoder's encode_reserve), ncu_src_enc / ncu_src_enc_dose (its per-instruction stalls on the
#        sample / the 1e5-count dose sample), ncu_src
#        (per-instruction stalls of the masked-sum kernel), sass (its SASS), sass_enc (the encoder's SASS), timeline512 (the
#        load's timeline, QGPU_LOAD_TIMELINE=1), replay_short (a short mutant replay), dose (issue 33 item 4: bench_encoded_dose, encoded vs dense per dose
#        and encoder policy), dose_ab (the fast policy per dose, the default and each setting of QGPU_AB in turn,
#        then the loads' timelines at 1e5), dose_small (the same at 32x32 x 64x64), index (issue 33 item 5: bench_chunk_index, the
#        chunk index parse of the sample alone, after s512). Logs go to $OUT; a short table is printed last.
# A check of the steps' commands on a machine without a GPU (the steps formats-like: merlin, dm4, empad), at a small
# size on the cpu backend with the build's binaries linked into one folder:
#   QGPU_BENCH_SMALL=1 QGPU_BENCH_BACKEND=cpu QGPU_DEVICE_BIN=DIR QGPU_DEVICE_TMP=/tmp/mine bash scripts/device_run.sh dm4
set -o pipefail
source scripts/device_env.sh
QB=${QGPU_DEVICE_TMP:-/tmp/qb}
SMALL=${QGPU_BENCH_SMALL:-0}
BK=${QGPU_BENCH_BACKEND:-cuda}
OUT=${OUT:-$QB/out}; LOG=$QB/logs; mkdir -p "$OUT" "$LOG"
# Only 8 files come back from a call: the logs travel as one archive in $OUT, refreshed after every step so that it
# comes back even when the call is stopped at its limit.
save_logs() { tar czf "$OUT/logs.tar.gz.part" -C "$QB" logs && mv "$OUT/logs.tar.gz.part" "$OUT/logs.tar.gz"; }
B=${QGPU_DEVICE_BIN:-.devbin}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version,memory.total --format=csv,noheader | tee "$LOG/gpu.txt"
nproc | sed 's/^/cores: /'
{ grep -E "MemTotal|MemFree|MemAvailable" /proc/meminfo; echo "THP: $(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null)"; } | tee -a "$LOG/gpu.txt"
step() { local name=$1 limit=$2; shift 2; local t0=$SECONDS; timeout "$limit" "$@" >"$LOG/$name.log" 2>&1; local rc=$?
         echo "== $name rc=$rc $((SECONDS - t0)) s"; grep -E '^\||written in|rror|Failure| passed| failed' "$LOG/$name.log" | head -40; save_logs; return 0; }
# The SASS of the first function of libquantem_gpu.so whose name matches $1, into $LOG/$2.log.
sass_of() { local CUOBJ; CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)
            "${CUOBJ:-cuobjdump}" -sass $B/libquantem_gpu.so 2>&1 |
              awk -v f="$1" '$0 ~ "Function : .*" f {on=1} on{print} on&&/^\t\t\.\.\.\.\.\.\.\.\.\./{exit}' >"$LOG/$2.log"
            echo "== $2 $(wc -l <"$LOG/$2.log") lines"; }
for s in "$@"; do
  case $s in
    tests)
      for t in $B/test_*; do
        n=$(basename "$t"); timeout 300 "$t" --gtest_brief=1 >"$LOG/$n.log" 2>&1
        echo "$n rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/$n.log" | tr '\n' ' ')"
        grep -E '^\[  FAILED|Failure' "$LOG/$n.log" | head -8
      done; save_logs ;;
    cudatests)  # only the GPU tests of each binary (the CPU ones run on CI; QGPU_TESTS="test_io test_dpc": of those)
      for t in $(if [ -n "${QGPU_TESTS:-}" ]; then for n in $QGPU_TESTS; do echo "$B/$n"; done; else echo $B/test_*; fi); do
        n=$(basename "$t"); timeout 90 "$t" --gtest_brief=1 --gtest_filter='*Cuda*:*Gpu*:*GPU*' >"$LOG/$n.log" 2>&1
        echo "$n rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/$n.log" | tr '\n' ' ')"
        grep -E '^\[  FAILED|Failure' "$LOG/$n.log" | head -8
      done; save_logs ;;
    enctests|enctests_compact)  # the encoded resident's GPU tests only (test_resident, and the encoded parallax);
      # enctests_compact: the same with the encoder's compact policy (wide rANS alphabets: the kernel's lane-by-lane path)
      P=; [ "$s" = enctests_compact ] && P=compact
      for t in $B/test_resident $B/test_parallax; do
        n=$(basename "$t")$P; QGPU_ENCODED_POLICY=$P timeout 120 "$t" --gtest_brief=1 --gtest_filter='*Encoded*Cuda*:*EncodedCuda*:*Cuda*Encoded*:RadialBasisCuda.*' >"$LOG/$n.log" 2>&1
        echo "$n rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/$n.log" | tr '\n' ' ')"
        grep -E '^\[  FAILED|Failure' "$LOG/$n.log" | head -8
      done; save_logs ;;
    gpuhelpers)  # issue 30: the GPU tests of every binary whose kernels moved to the device/cuda helpers
      for t in $B/test_ssb $B/test_parallax $B/test_dpc $B/test_display $B/test_io $B/test_detector $B/test_resident; do
        n=$(basename "$t"); timeout 200 "$t" --gtest_brief=1 --gtest_filter='*Cuda*:*Gpu*:*GPU*' >"$LOG/$n.log" 2>&1
        echo "$n rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/$n.log" | tr '\n' ' ')"
        grep -E '^\[  FAILED|Failure' "$LOG/$n.log" | head -8
      done; save_logs ;;
    dose)  # issue 33 item 4: encoded vs dense per dose (256x256 x 192x192 samples written there) and encoder policy
      for d in ${QGPU_DOSES:-1e3 4e3 2e4 1e5 2e5}; do  # (QGPU_DOSES: fewer)
        step bench_encoded_dose_$d 150 $B/bench_encoded_dose --backend cuda --dir /tmp/qb/dose --doses $d --reps 15 \
          --policies ${QGPU_DOSE_POLICIES:-compact,fast} --keep
      done ;;
    dose_ab)  # the fast policy per dose, the default against each setting of QGPU_AB in turn on the same files
      # (QGPU_AB: space-separated settings, each VAR=VALUE[,VAR=VALUE...]), then the loads' timelines at 1e5 (or at QGPU_TIMELINE_DOSES)
      for d in ${QGPU_DOSES:-1e3 4e3 2e4 1e5 2e5}; do
        step bench_encoded_dose_$d 150 $B/bench_encoded_dose --backend cuda --dir /tmp/qb/dose --doses $d --reps 15 \
          --policies fast --keep
        i=0
        for ab in ${QGPU_AB:-}; do
          i=$((i + 1)); echo "ab$i: $ab"
          step bench_encoded_dose_${d}_ab$i 150 env ${ab//,/ } $B/bench_encoded_dose --backend cuda \
            --dir /tmp/qb/dose --doses $d --reps 15 --policies fast --keep
        done
      done
      for td in ${QGPU_TIMELINE_DOSES:-1e5}; do  # the doses whose loads' timelines follow
        F=/tmp/qb/dose/dose_${td}_256_192.h5
        [ -f $F ] || continue
        step bench_load_dose$td 200 $B/bench_load $F 256 192 uint16 --skip-cpu
        i=0
        for ab in ${QGPU_AB:-}; do
          i=$((i + 1)); step bench_load_dose${td}_ab$i 200 env ${ab//,/ } $B/bench_load $F 256 192 uint16 --skip-cpu
        done
      done ;;
    dose_small) step bench_encoded_dose_small 60 $B/bench_encoded_dose --backend cuda --small --dir /tmp/qb/dose ;;
    prof_scale)  # the kernels of the 2048x2048 basis + scan-binned copy load and its queries (nsys, else ncu durations)
      step bench_scale_write 240 $B/bench_scale /tmp/qb/s2048.h5 --tile-from /tmp/qb/s512.h5 --factor 4 --basis-only --no-ssb
      NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems/*/bin/nsys /usr/local/cuda*/bin/nsys 2>/dev/null | head -1)
      if [ -n "$NSYS" ]; then
        step nsys_scale 300 "$NSYS" profile -o /tmp/qb/prof_scale --force-overwrite true $B/bench_scale /tmp/qb/s2048.h5 \
          --basis-only --no-ssb
        step nsys_scale_kernels 120 "$NSYS" stats --report cuda_gpu_kern_sum --format csv /tmp/qb/prof_scale.nsys-rep
      else
        NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
        step ncu_scale_kernels 400 "${NCU:-ncu}" --clock-control none --metrics gpu__time_duration.sum \
          --print-summary per-kernel $B/bench_scale /tmp/qb/s2048.h5 --basis-only --no-ssb
      fi ;;
    scale) step bench_scale 240 $B/bench_scale /tmp/qb/s2048.h5 --tile-from /tmp/qb/s512.h5 --factor 4 ;;
    ncu_build)  # the one-pass basis + copy build kernel at bin 4 (the 4096^2 viewer's bin) in a 2048^2 load (after s512)
      [ -f /tmp/qb/s2048.h5 ] || step bench_scale_write 240 $B/bench_scale /tmp/qb/s2048.h5 --tile-from /tmp/qb/s512.h5 \
        --factor 4 --basis-only --no-ssb
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      step ncu_build 300 "${NCU:-ncu}" --clock-control none --kernel-name regex:build_binned_kernel --launch-skip 40 \
        --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
        --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SourceCounters \
        $B/qgpu info /tmp/qb/s2048.h5 --backend cuda --representation encoded --radial-basis on --scan-binned 4 --timing ;;
    ncu_sum) NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
             step ncu_masked_sum 240 "${NCU:-ncu}" --clock-control none --kernel-name regex:masked_sum_kernel \
               --launch-skip 3 --launch-count 1 --section WarpStateStats --section SchedulerStats --section Occupancy \
               --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
               $B/bench_encoded_cuda /tmp/qb/s512.h5 ;;  # stall reasons of the encoded masked-sum kernel (BF)
    ncu_src_enc|ncu_src_enc_dose)  # per-instruction stalls of the encoder's encode_reserve: on the sample (after s512), or
      # on the 1e5-count sample of the dose step (written if missing)
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1); F=/tmp/qb/s512.h5; SKIP=76; N=$s
      if [ "$s" = ncu_src_enc_dose ]; then  # QGPU_NCU_DOSE: which dose sample (1e5 unless set); QGPU_NCU_SKIP: launches skipped (8: an encode from dense; 15: a load's)
        D=${QGPU_NCU_DOSE:-1e5}; F=/tmp/qb/dose/dose_${D}_256_192.h5; SKIP=${QGPU_NCU_SKIP:-8}; N=${s}_$D
        [ -f "$F" ] || $B/bench_encoded_dose --backend cuda --dir /tmp/qb/dose --doses $D --reps 1 --keep >"$LOG/dose_write.log" 2>&1
        # the same launch's summary sections first (duration, instructions, occupancy, scheduler, memory)
        step "${N}_details" 200 "${NCU:-ncu}" --clock-control none --kernel-name regex:encode_reserve --launch-skip $SKIP \
          --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
          --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
          --section MemoryWorkloadAnalysis $B/bench_encoded_cuda "$F"
      fi
      step "$N" 300 "${NCU:-ncu}" --clock-control none --kernel-name regex:encode_reserve --launch-skip $SKIP \
        --launch-count 1 --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy \
        --section SourceCounters --page source --print-source sass --csv $B/bench_encoded_cuda "$F" ;;
    ncu_enc) NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)  # the encoder (a 2 GiB batch)
             step ncu_encode 240 "${NCU:-ncu}" --clock-control none --kernel-name regex:encode_reserve \
               --launch-skip 76 --launch-count 1 --section SpeedOfLight --section MemoryWorkloadAnalysis \
               --section WarpStateStats --section SchedulerStats --section Occupancy --section LaunchStats \
               --section ComputeWorkloadAnalysis --section SourceCounters $B/bench_encoded_cuda /tmp/qb/s512.h5 ;;
    ncu_src) NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)  # per-instruction stalls
             step ncu_source 240 "${NCU:-ncu}" --clock-control none --kernel-name regex:masked_sum_kernel \
               --launch-skip 3 --launch-count 1 --section SourceCounters --section WarpStateStats --page source \
               --print-source sass --csv $B/bench_encoded_cuda /tmp/qb/s512.h5 ;;
    ncu_dec|ncu_src_dec)  # the load's bitshuffle+LZ4 decode kernel (bench_decode's first launch of the default variant,
      # the whole sample at once; needs s512): ncu_dec its sections, ncu_src_dec its per-instruction stalls
      NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
      if [ "$s" = ncu_dec ]; then
        step ncu_decode 300 "${NCU:-ncu}" --clock-control none --kernel-name regex:decode_blocks --launch-skip 26 \
          --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy \
          --section LaunchStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis \
          --section InstructionStats $B/bench_decode /tmp/qb/s512.h5
      else
        step ncu_source_decode 300 "${NCU:-ncu}" --clock-control none --kernel-name regex:decode_blocks --launch-skip 26 \
          --launch-count 1 --section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
          $B/bench_decode /tmp/qb/s512.h5
      fi ;;
    sass) sass_of masked_sum_kernelILi1E sass_masked_sum ;;  # the BF kernel's SASS
    sass_enc) sass_of encode_reserveItLb1E sass_encode_reserve ;;  # the encoder's SASS (u16, fused totals)
    scale1024) step bench_scale1024 200 $B/bench_scale /tmp/qb/s1024t.h5 --tile-from /tmp/qb/s512.h5 --factor 2 ;;
    scale4096) step bench_scale4096 540 $B/bench_scale /tmp/qb/s4096.h5 --tile-from /tmp/qb/s512.h5 --factor 8 ;;  # 36.6 GB file
    scale4096basis) step bench_scale4096_basis 540 $B/bench_scale /tmp/qb/s4096.h5 --tile-from /tmp/qb/s512.h5 --factor 8 \
                    --basis-only --no-ssb ;;  # the basis + scan-binned copy load and its queries alone (needs s512)
    scale4096ssb) step bench_scale4096_ssb 540 $B/bench_scale /tmp/qb/s4096.h5 --tile-from /tmp/qb/s512.h5 --factor 8 \
                    --basis-only --ssb ;;  # SSB at 4096^2 (bin 4, 2) on the basis load alone; writes the file if missing
    python) QGPU_PY_LOGS=$LOG/python step python_tests 300 bash scripts/device_python.sh ;;  # the module built there for its python3
    replay) step replay_cuda_decoder 200 $B/replay_cuda_decoder --mutate 300000 --seed 2 ;;
    replay_short) step replay_cuda_decoder 90 $B/replay_cuda_decoder --mutate 30000 --seed 3 ;;
    index) step bench_chunk_index 60 $B/bench_chunk_index /tmp/qb/s512.h5 --reps 21 ;;  # needs s512 first
    s512) step write_s512 300 $B/bench_load /tmp/qb/s512.h5 512 192 uint16 --write-only ;;
    timeline512)  # GPU loads + timelines; then each setting of QGPU_AB (as dose_ab) on the same file
      step bench_load_timeline 200 $B/bench_load /tmp/qb/s512.h5 512 192 uint16 --skip-cpu
      i=0
      for ab in ${QGPU_AB:-}; do
        i=$((i + 1)); echo "ab$i: $ab"
        step bench_load_timeline_ab$i 200 env ${ab//,/ } $B/bench_load /tmp/qb/s512.h5 512 192 uint16 --skip-cpu
      done ;;
    load512) step bench_load 300 $B/bench_load /tmp/qb/s512.h5 512 192 uint16 --reference-rows 32 --direct ;;
    decode) step bench_decode 120 $B/bench_decode /tmp/qb/s512.h5  # (and each setting of QGPU_AB)
      i=0
      for ab in ${QGPU_AB:-}; do
        i=$((i + 1)); step bench_decode_ab$i 120 env ${ab//,/ } $B/bench_decode /tmp/qb/s512.h5
      done ;;
    encoded) step bench_encoded_cuda 300 $B/bench_encoded_cuda /tmp/qb/s512.h5 ;;
    host) step bench_bitshuffle_host 120 $B/bench_bitshuffle_host ;;
    s1024) step write_s1024 420 $B/bench_load /tmp/qb/s1024.h5 1024 192 uint16 --write-only ;;
    load1024) step bench_load1024 300 $B/bench_load /tmp/qb/s1024.h5 1024 192 uint16 --skip-cpu ;;
    live) step bench_live 300 $B/bench_live /tmp/qb/s512.h5 --backend cuda --parse-threads 0,1,2,4 ;;  # issue 28: needs s512 first;
          # rows: memory, sim only, cbor, zmq only, receiver (copy sink) and loopback max per parse_threads 0 (inline),1,2,4
    livemerlin) $B/qgpu sample /tmp/qb/quad.mib --format mib --quad --counter-depth 12 --scan 64 64 >/dev/null 2>&1
                step bench_live_merlin 200 $B/bench_live /tmp/qb/quad.mib --backend cuda --protocol merlin --rates 0,2000,4000 ;;
    queries) step bench_queries 300 $B/bench_queries /tmp/qb/s512.h5 --backend cuda ;;
    vulkan)  # the vulkan backend on NVIDIA's driver (carry .gl: the Vulkan loader, see the device README): which
             # ICD/driver it found (the step stops here, saying so, when none is usable), its tests against the CPU
             # reference and CUDA, then bench_vulkan: load, BF, ADF, CoM, iDPC, render, SSB beside CUDA's in one run
             # (needs s512 first). VkFFT's glslang is linked statically: .gl needs nothing more for iDPC.
      for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
      # NVIDIA's ICD (libGLX_nvidia) needs glvnd: .gl holds libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0
      # libgles2 (apt-get download, the device README); in s9c the loader alone gave VK_ERROR_INCOMPATIBLE_DRIVER.
      ls -l /usr/local/nvidia/share/vulkan/icd.d/ /usr/share/vulkan/icd.d/ /etc/vulkan/icd.d/ 2>&1 | tee "$LOG/vulkan_icd.log"
      export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
      export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
      { echo "VK_DRIVER_FILES=$VK_DRIVER_FILES"; cat "$VK_DRIVER_FILES" 2>&1
        ldconfig -p | grep -E 'libvulkan|libGLX_nvidia|libEGL_nvidia' ; } | tee -a "$LOG/vulkan_icd.log"
      $B/qgpu info /tmp/qb/s512.h5 2>&1 | grep -i vulkan | tee "$LOG/vulkan_device.log"
      # qgpu info prints "vulkan  <adapter> (<type>), driver <driver>, Vulkan <api>" or "vulkan  none: <why>"
      if ! grep -qE '^vulkan +' "$LOG/vulkan_device.log" || grep -qE '^vulkan +none:' "$LOG/vulkan_device.log"; then
        echo "== vulkan FAILED: no usable Vulkan ICD/driver (see vulkan_icd.log, vulkan_device.log)"; save_logs; continue
      fi
      for t in $B/test_device $B/test_detector $B/test_dpc $B/test_io $B/test_display $B/test_ssb $B/test_remote; do
        n=$(basename "$t"); timeout 300 "$t" --gtest_brief=1 --gtest_filter='*ulkan*:*Gpu*' >"$LOG/vk_$n.log" 2>&1
        echo "vulkan $n rc=$? $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOG/vk_$n.log" | tr '\n' ' ')"
        grep -E '^\[  FAILED|Failure|skipped' "$LOG/vk_$n.log" | head -5
      done
      step vk_segments 120 env QGPU_VULKAN_MAX_BUFFER_BYTES=4096 $B/test_vulkan_segments --gtest_brief=1
      step bench_vulkan 420 $B/bench_vulkan /tmp/qb/s512.h5 --backends cuda,vulkan
      step bench_queries_vulkan 200 $B/bench_queries /tmp/qb/s512.h5 --backend vulkan ;;
    webgpu)  # issue 34 item 4: the WebGPU kernels (src/*/webgpu) on NVIDIA's Vulkan driver through Dawn's Node binding,
             # parity with the CPU references + the adapter + median times (carry .devpack-webgpu, .devpack and .gl)
      step webgpu_node 300 bash scripts/device_webgpu.sh $B/qgpu /tmp/qb/webgpu
      grep -E '^(adapter|node |file|FAIL|Vulkan ICD)' "$LOG/webgpu_node.log" | head -12
      # the 512x512x192x192 sample's first 64x64 scan positions (0.6 GB resident: the browser path holds at most 2 GiB)
      if [ -f /tmp/qb/s512.h5 ]; then
        step webgpu_node_s512 300 bash scripts/device_webgpu.sh $B/qgpu /tmp/qb/webgpu /tmp/qb/s512.h5 --scan-region 0,0,64,64
        grep -E '^(adapter|file|FAIL)' "$LOG/webgpu_node_s512.log" | head -8
      fi ;;
    movie) step bench_movie 200 $B/bench_movie /tmp/qb/s512.h5 ;;  # carry .devpack-movie too (the FFmpeg libraries)
    cache) step bench_cache 200 $B/bench_cache /tmp/qb/s512.h5 --backend cuda --out /tmp/qb/products.h5 --reps 2 ;;
    fuzzgpu) step replay_cuda_decoder 200 $B/replay_cuda_decoder --mutate 1000000 --seed 1 ;;
    detector) step bench_detector 200 $B/bench_detector /tmp/qb/s512.h5 ;;
    ssb) step bench_ssb 200 $B/bench_ssb /tmp/qb/s512.h5 ;;
    parallax) step bench_parallax 120 $B/bench_parallax /tmp/qb/s512.h5 512 192 ;;
    formats)  # the npy reader against the floor and numpy + CuPy (19.3 GB .npy of the 512^2 x 192^2 uint16 sample)
      step write_npy512 420 $B/qgpu sample /tmp/qb/s512.npy --format npy --four-d --scan 512 512 --detector 192 192
      step bench_formats_npy 300 $B/bench_formats /tmp/qb/s512.npy --reps 5
      step numpy_npy 300 python3 bench/bench_formats_numpy.py /tmp/qb/s512.npy
      rm -f /tmp/qb/s512.npy ;;
    merlin)  # the Merlin reader against the floor (34.4 GB: 256x256 scan of 12-bit quad 512x512 frames), then `qgpu convert`
      # of it to DECTRIS-style bitshuffle+LZ4 HDF5 (GB/s, output size) and the load of the result against the .mib's
      n=256; [ "$SMALL" = 1 ] && n=8
      step write_mib 420 $B/qgpu sample $QB/q12.mib --format mib --counter-depth 12 --quad --scan $n $n
      # one run: floor, .mib loads, convert, loads of the .h5 (the output is written beside the .mib: 64 GiB disk)
      step bench_formats_mib 420 $B/bench_formats $QB/q12.mib --reps 3 --backend $BK --convert $QB/q12.h5
      step numpy_mib 300 python3 bench/bench_formats_numpy.py $QB/q12.mib --raw uint8 0
      rm -f $QB/q12.mib $QB/q12.hdr $QB/q12.h5 ;;
    dm4)  # the DM4 reader against the floor (4.8 GB: 256x256 scan of 192x192 uint16 frames, Data Order Swapped)
      n=256; [ "$SMALL" = 1 ] && n=8
      step write_dm4 420 $B/qgpu sample $QB/s.dm4 --format dm4 --scan $n $n --detector 192 192
      step bench_formats_dm4 300 $B/bench_formats $QB/s.dm4 --reps 3 --backend $BK
      rm -f $QB/s.dm4 ;;
    empad)  # the EMPAD reader against the floor of its .raw (4.4 GB: 256x256 scan of 130x128 float32 frames)
      n=256; [ "$SMALL" = 1 ] && n=8
      step write_empad 420 $B/qgpu sample $QB/e.xml --format empad --scan $n $n
      step bench_formats_empad 300 $B/bench_formats $QB/e.xml --floor-file $QB/e.raw --reps 3 --backend $BK
      rm -f $QB/e.xml $QB/e.raw ;;
    serve) step bench_serve 200 python3 bench/bench_serve.py $B/qgpu /tmp/qb/s512.h5 ;;  # QGPU_BENCH_SERVE_SKIP=names
    mpi)  # issue 33: mpirun -n 1/2/4 with the ranks sharing the one GPU, products byte-identical (carry .devpack-mpi;
          # needs s512 first). Debian's Open MPI from .devmpi (scripts/device_pack_mpi.sh), relocated by OPAL_PREFIX.
      M=$PWD/.devmpi/usr
      if [ -x "$M/bin/orterun" ]; then
        P=/usr/lib/x86_64-linux-gnu/pmix2  # PMIx looks for its plugins only there
        [ -e "$P/lib/pmix" ] || { mkdir -p "$P" && cp -r "$M/lib/x86_64-linux-gnu/pmix2/." "$P/"; }
        export OPAL_PREFIX=$M PATH=$M/bin:$PATH
        export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$M/lib/x86_64-linux-gnu:$M/lib/x86_64-linux-gnu/openmpi/lib:$PWD/.devmpi/lib
        MPIRUN=$M/bin/orterun
      else MPIRUN=$(command -v mpirun || echo "no-mpirun: carry .devpack-mpi"); fi
      for rep in dense encoded; do
        SHARE_GPU=1 RANKS="1 2 4" REPEAT=2 REPRESENTATION=$rep QGPU=$B/qgpu MPIRUN=$MPIRUN \
          step mpi_$rep 300 bash bench/mpi_scaling.sh /tmp/qb/s512.h5 512 192
      done ;;
    widget)  # issue 29: drag -> BF image through a real kernel (jupyter_client + ipykernel); needs s512 and python first
      python3 -c "import jupyter_client, ipykernel" 2>/dev/null || echo "widget: the device's python3 lacks jupyter_client/ipykernel"
      # carry .pyextra (Debian's pure-Python traitlets, copied by hand) where the image has none: then the comm
      # layer's Python side is timed in-process (no kernel: the image has no pyzmq for its Python 3.12)
      PYTHONPATH=/tmp/qgpu-py${PWD:+:$PWD/.pyextra} step bench_widget 200 python3 bench/bench_widget.py /tmp/qb/s512.h5 --backend cuda --drags 50 ;;
    *) echo "unknown step $s" ;;
  esac
done
save_logs

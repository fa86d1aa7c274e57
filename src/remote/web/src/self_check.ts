// In-page check of the WebGPU path against the CPU reference and the server (used by the e2e test):
// runs the WGSL virtual detector on the whole scan at detector bin 1, and the WGSL colormap on the result.
import { colorizeCpu } from '../../../display/webgpu/colormap';
import { FrameBlock, VirtualDetectorGpu, maskedSumCpu } from '../../../detector/webgpu/virtual_detector';
import { Detector, datasetPath, getBytes, virtualQuery } from './api';
import { BrowserCompute, openDevice } from './gpu_compute';
import { decodePng } from './images';
import type { ViewerState } from './state';

function differingPixels(a: Uint8ClampedArray, b: Uint8ClampedArray): number {
  let n = 0;
  for (let i = 0; i < a.length; i += 4)
    if (a[i] !== b[i] || a[i + 1] !== b[i + 1] || a[i + 2] !== b[i + 2] || a[i + 3] !== b[i + 3]) ++n;
  return n;
}

export async function gpuCheck(state: ViewerState, d?: Detector): Promise<unknown> {
  const ds = state.dataset, det = d ?? state.detector;
  if (!ds || !det) throw new Error('no dataset or detector yet');
  const { device, status } = await openDevice();
  if (!device) return { ran: false, adapter: status };
  const bc = await BrowserCompute.create(device, ds);
  try {
    await bc.load(1);
    const t0 = performance.now();
    const sums = await bc.sums(det);
    const gpuMs = performance.now() - t0;
    const cpu = maskedSumCpu(bc.block!, bc.mask(det));
    const pic = await bc.picture(sums);
    // The WGSL and JS colormaps here are viridis (packedLut's default): the service's PNG of the same name.
    const server = await decodePng((await getBytes(datasetPath(ds.id, `virtual?${virtualQuery(det)}&format=png&colormap=viridis`))).bytes);
    const values = Float32Array.from(sums, (v) => Number(v));
    return {
      ran: true,
      adapter: status,
      query: virtualQuery(det),
      sums: Array.from(sums, String),
      gpuEqualsCpuReference: sums.every((v, i) => v === cpu[i]),
      gpuMs,
      pixels: values.length,
      colormapGpuVsServerPng: differingPixels(pic.rgba, server.rgba),
      colormapCpuVsServerPng: differingPixels(colorizeCpu(values, pic.lo, pic.hi), server.rgba),
    };
  } finally {
    bc.destroy();
  }
}

// The WGSL 64-bit limb arithmetic against BigInt on values that need it: uint32 counts up to 2^32 - 1 times
// weights below 2^19 over 4096 pixels (sums near 2^61), and 70000 frames of 4 pixels with weights below 2^30
// (sums near 2^63; the second dispatch dimension).
export async function wgslLimbCheck(): Promise<unknown> {
  const { device, status } = await openDevice();
  if (!device) return { ran: false, adapter: status };
  let seed = 12345;
  const next = () => (seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0);
  const vd = await VirtualDetectorGpu.create(device);
  const cases = [
    { frames: 37, framePixels: 4096, weightBits: 19 },
    { frames: 70000, framePixels: 4, weightBits: 30 },
  ];
  const results = [];
  try {
    for (const c of cases) {
      const counts = new Uint32Array(c.frames * c.framePixels);
      for (let i = 0; i < counts.length; ++i) counts[i] = i % 7 === 0 ? 0xffffffff : next();
      const weights = new Uint32Array(c.framePixels);
      for (let k = 0; k < weights.length; ++k) weights[k] = k % 5 === 0 ? 0 : next() >>> (32 - c.weightBits);
      weights[1] = 2 ** c.weightBits - 1;
      const block: FrameBlock = { frames: c.frames, framePixels: c.framePixels, counts };
      vd.upload(block);
      const gpu = await vd.maskedSum(weights);
      const cpu = maskedSumCpu(block, weights);
      let mismatches = 0, max = 0n;
      for (let f = 0; f < c.frames; ++f) {
        if (gpu[f] !== cpu[f]) ++mismatches;
        if (cpu[f] > max) max = cpu[f];
      }
      results.push({ ...c, mismatches, maxSum: max.toString() });
    }
  } finally {
    vd.destroy();
    device.destroy();
  }
  return { ran: true, adapter: status, results };
}

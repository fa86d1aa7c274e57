// WebGPU virtual detector over a window of frames (virtual_detector.wgsl), plus the mask geometry and a CPU
// reference with the same integer semantics as detector::virtual_image (exact uint64 sums).
import shaderSource from './virtual_detector.wgsl';
import { compileShader } from '../../core/webgpu/shader';
import wideIntSource from '../../core/webgpu/wide_int.wgsl';
import { recordDispatch } from '../../core/webgpu/dispatch';

export interface FrameBlock {
  frames: number;       // scan positions in the window
  framePixels: number;  // det_rows * det_cols (after binning)
  counts: Uint32Array;  // frames * framePixels, frame-major
}

// 1 where inner^2 <= (r - cr)^2 + (c - cc)^2 <= outer^2, pixel centres at integers (as detector/mask.cpp).
export function ringMask(rows: number, cols: number, cr: number, cc: number, inner: number, outer: number): Uint32Array {
  const w = new Uint32Array(rows * cols);
  for (let r = 0; r < rows; ++r)
    for (let c = 0; c < cols; ++c) {
      const dr = r - cr, dc = c - cc, d2 = dr * dr + dc * dc;
      w[r * cols + c] = d2 >= inner * inner && d2 <= outer * outer ? 1 : 0;
    }
  return w;
}

// CPU reference: exact uint64 masked sums.
export function maskedSumCpu(block: FrameBlock, weights: Uint32Array): BigUint64Array {
  const out = new BigUint64Array(block.frames);
  const nz: number[] = [];
  for (let k = 0; k < weights.length; ++k) if (weights[k] !== 0) nz.push(k);
  for (let f = 0; f < block.frames; ++f) {
    let s = 0n;
    const base = f * block.framePixels;
    for (const k of nz) s += BigInt(block.counts[base + k]) * BigInt(weights[k]);
    out[f] = s;
  }
  return out;
}

export class VirtualDetectorGpu {
  private framesBuffer: GPUBuffer | null = null;
  private block: { frames: number; framePixels: number } | null = null;
  private totals: BigUint64Array | null = null;  // per-frame totals of the frames held (for total-minus-complement)
  lastPlan: 'sparse' | 'total-minus-complement' = 'sparse';

  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<VirtualDetectorGpu> {
    const module = await compileShader(device, 'virtual_detector.wgsl', wideIntSource, shaderSource);
    const pipeline = await device.createComputePipelineAsync({
      layout: 'auto',
      compute: { module, entryPoint: 'masked_sum' },
    });
    return new VirtualDetectorGpu(device, pipeline);
  }

  // Copies a window of frames to the GPU (kept until the next upload).
  upload(block: FrameBlock): void {
    this.framesBuffer?.destroy();
    this.framesBuffer = this.storage(block.counts);
    this.block = { frames: block.frames, framePixels: block.framePixels };
    this.totals = null;
  }

  // Uses frames already on the GPU (u32 per pixel, frame-major), e.g. from the WGSL HDF5 decoder; the buffer
  // is destroyed with this object's next upload/attach/destroy.
  attach(buffer: GPUBuffer, frames: number, framePixels: number): void {
    if (buffer !== this.framesBuffer) this.framesBuffer?.destroy();
    this.framesBuffer = buffer;
    this.block = { frames, framePixels };
    this.totals = null;
  }

  // Exact sums with the plan of detector/plan.cpp: a 0/1 mask covering more than half the detector is summed as
  // frame total minus the sum over its complement (totals computed once per frame set), in exact integers.
  async planned(weights: Uint32Array): Promise<BigUint64Array> {
    let nnz = 0, binary = true;
    for (const w of weights) {
      if (w !== 0) ++nnz;
      if (w > 1) binary = false;
    }
    if (!binary || 2 * nnz <= weights.length || nnz === weights.length) {
      this.lastPlan = 'sparse';
      return this.maskedSum(weights);
    }
    if (!this.totals) this.totals = await this.maskedSum(new Uint32Array(weights.length).fill(1));
    const complement = await this.maskedSum(weights.map((w) => 1 - w));
    this.lastPlan = 'total-minus-complement';
    return this.totals.map((t, f) => t - complement[f]);
  }

  // Exact masked sums of every uploaded frame (weights: framePixels entries).
  async maskedSum(weights: Uint32Array): Promise<BigUint64Array> {
    if (!this.framesBuffer || !this.block) throw new Error('no frame window uploaded');
    const { frames, framePixels } = this.block;
    if (weights.length !== framePixels) throw new Error(`mask has ${weights.length} weights, frames ${framePixels} pixels`);
    const offsets: number[] = [], values: number[] = [];
    for (let k = 0; k < weights.length; ++k)
      if (weights[k] !== 0) {
        offsets.push(k);
        values.push(weights[k]);
      }
    if (offsets.length === 0) throw new Error('the mask covers no detector pixel');
    const groupsX = Math.min(frames, 65535), groupsY = Math.ceil(frames / groupsX);
    const dev = this.device;
    const params = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(params, 0, new Uint32Array([frames, framePixels, offsets.length, groupsX]));
    const offsetBuf = this.storage(new Uint32Array(offsets));
    const weightBuf = this.storage(new Uint32Array(values));
    const sums = dev.createBuffer({ size: frames * 8, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const readback = dev.createBuffer({ size: frames * 8, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    recordDispatch(dev, enc, this.pipeline, [params, this.framesBuffer, offsetBuf, weightBuf, sums], groupsX, groupsY);
    enc.copyBufferToBuffer(sums, 0, readback, 0, frames * 8);
    dev.queue.submit([enc.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const out = new BigUint64Array(readback.getMappedRange().slice(0));  // (lo, hi) little-endian = uint64
    readback.unmap();
    for (const b of [params, offsetBuf, weightBuf, sums, readback]) b.destroy();
    return out;
  }

  destroy(): void {
    this.framesBuffer?.destroy();
    this.framesBuffer = null;
  }

  private storage(data: Uint32Array): GPUBuffer {
    const buf = this.device.createBuffer({
      size: Math.max(16, data.byteLength),
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
      mappedAtCreation: true,
    });
    new Uint32Array(buf.getMappedRange(0, data.byteLength)).set(data);
    buf.unmap();
    return buf;
  }
}

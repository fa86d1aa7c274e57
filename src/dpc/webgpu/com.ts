// WebGPU centre of mass (com.wgsl: exact uint64 sums per frame) and centred DPC, with the CPU reference's
// arithmetic on the host: CoM = float32(double(Sr) / double(S)) (dpc/com_math.hpp; an empty frame gets the
// detector centre), DPC = float32(double(CoM) - mean CoM) with the mean over all positions in double
// (dpc/com.cpp centered_dpc). Equal to the CPU reference bit for bit; the tests allow 1e-5 pixel.
import shaderSource from './com.wgsl';
import { compileShader } from '../../core/webgpu/shader';
import wideIntSource from '../../core/webgpu/wide_int.wgsl';
import { recordDispatch } from '../../core/webgpu/dispatch';

export interface ComMaps {
  row: Float32Array;
  col: Float32Array;
}

export interface Dpc extends ComMaps {
  refRow: number;
  refCol: number;
}

// CoM from the exact sums (S, Sr, Sc per frame, uint64).
export function comFromSums(sums: BigUint64Array, rows: number, cols: number): ComMaps {
  const frames = sums.length / 3;
  const row = new Float32Array(frames), col = new Float32Array(frames);
  const cr = (rows - 1) / 2, cc = (cols - 1) / 2;
  for (let f = 0; f < frames; ++f) {
    const s = sums[3 * f];
    if (s === 0n) {
      row[f] = cr;
      col[f] = cc;
      continue;
    }
    row[f] = Number(sums[3 * f + 1]) / Number(s);  // Number(BigInt) rounds to nearest double, as static_cast<double>
    col[f] = Number(sums[3 * f + 2]) / Number(s);
  }
  return { row, col };
}

// CPU reference of the sums (BigInt), for tests.
export function comSumsCpu(counts: Uint32Array, frames: number, rows: number, cols: number): BigUint64Array {
  const out = new BigUint64Array(3 * frames);
  for (let f = 0; f < frames; ++f) {
    let s = 0n, sr = 0n, sc = 0n;
    for (let r = 0; r < rows; ++r) {
      let rowSum = 0, rowC = 0;
      for (let c = 0; c < cols; ++c) {
        const v = counts[f * rows * cols + r * cols + c];
        rowSum += v;
        rowC += v * c;  // < 2^53 for any frame a browser holds
      }
      s += BigInt(rowSum);
      sr += BigInt(rowSum) * BigInt(r);
      sc += BigInt(rowC);
    }
    out[3 * f] = s;
    out[3 * f + 1] = sr;
    out[3 * f + 2] = sc;
  }
  return out;
}

export function centredDpc(com: ComMaps): Dpc {
  let sr = 0, sc = 0;
  for (let i = 0; i < com.row.length; ++i) {
    sr += com.row[i];
    sc += com.col[i];
  }
  const refRow = sr / com.row.length, refCol = sc / com.col.length;
  return { row: com.row.map((v) => v - refRow), col: com.col.map((v) => v - refCol), refRow, refCol };
}

export class ComGpu {
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<ComGpu> {
    const module = await compileShader(device, 'com.wgsl', wideIntSource, shaderSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'com_sums' } });
    return new ComGpu(device, pipeline);
  }

  // Exact (S, Sr, Sc) of every frame of `frames` (u32 per pixel, frame-major).
  async sums(frames: GPUBuffer, count: number, rows: number, cols: number): Promise<BigUint64Array> {
    const dev = this.device;
    const groupsX = Math.min(count, 65535), groupsY = Math.ceil(count / groupsX);
    const params = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(params, 0, new Uint32Array([count, rows, cols, groupsX]));
    const bytes = count * 24;
    const out = dev.createBuffer({ size: bytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const readback = dev.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    recordDispatch(dev, enc, this.pipeline, [params, frames, out], groupsX, groupsY);
    enc.copyBufferToBuffer(out, 0, readback, 0, bytes);
    dev.queue.submit([enc.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const sums = new BigUint64Array(readback.getMappedRange().slice(0));
    readback.unmap();
    for (const b of [params, out, readback]) b.destroy();
    return sums;
  }

  async com(frames: GPUBuffer, count: number, rows: number, cols: number): Promise<ComMaps> {
    return comFromSums(await this.sums(frames, count, rows, cols), rows, cols);
  }
}

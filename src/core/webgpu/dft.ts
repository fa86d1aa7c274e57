// 2D DFTs on WebGPU (dft.wgsl) for batches of row-major nr x nc complex f32 arrays; used by dpc/webgpu (iDPC)
// and ssb/webgpu. encode2d records a row pass and a column pass into a command encoder (data -> scratch ->
// data), sign -1 forward, +1 inverse (unnormalised).
import shaderSource from './dft.wgsl';
import { recordDispatch } from './dispatch';
import { compileShader } from './shader';

export class Dft2dGpu {
  private twiddles = new Map<number, GPUBuffer>();
  private temps: GPUBuffer[] = [];
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<Dft2dGpu> {
    const module = await compileShader(device, 'dft.wgsl', shaderSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'dft_axis' } });
    return new Dft2dGpu(device, pipeline);
  }

  private twiddle(n: number): GPUBuffer {
    let b = this.twiddles.get(n);
    if (!b) {
      const t = new Float32Array(2 * n);
      for (let m = 0; m < n; ++m) {
        t[2 * m] = Math.cos((2 * Math.PI * m) / n);
        t[2 * m + 1] = Math.sin((2 * Math.PI * m) / n);
      }
      b = this.device.createBuffer({ size: Math.max(16, t.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
      this.device.queue.writeBuffer(b, 0, t);
      this.twiddles.set(n, b);
    }
    return b;
  }

  private pass(enc: GPUCommandEncoder, src: GPUBuffer, dst: GPUBuffer, n: number, lines: number, stride: number,
    lineStride: number, sign: number, batches: number, batchStride: number): void {
    const a = new ArrayBuffer(32);
    const u = new Uint32Array(a);
    u.set([n, lines, stride, lineStride]);
    new Float32Array(a)[4] = sign;
    u[5] = batches;
    u[6] = batchStride;
    const params = this.device.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(params, 0, a);
    this.temps.push(params);
    const count = n * lines * batches, wg = Math.ceil(count / 64), gx = Math.min(wg, 65535);
    recordDispatch(this.device, enc, this.pipeline, [params, src, dst, this.twiddle(n)], gx, Math.ceil(wg / gx));
  }

  // In place on `data` (batches x nr x nc complex), `scratch` of the same size.
  encode2d(enc: GPUCommandEncoder, data: GPUBuffer, scratch: GPUBuffer, nr: number, nc: number, sign: -1 | 1, batches = 1): void {
    this.pass(enc, data, scratch, nc, nr, 1, nc, sign, batches, nr * nc);
    this.pass(enc, scratch, data, nr, nc, nc, 1, sign, batches, nr * nc);
  }

  // Frees the per-call parameter buffers (after the encoded work was submitted and awaited).
  release(): void {
    for (const b of this.temps) b.destroy();
    this.temps = [];
  }
}

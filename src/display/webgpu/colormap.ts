// WebGPU colormap (colormap.wgsl) and its double-precision reference, the formula of display::render.
import shaderSource from './colormap.wgsl';
import { COLORMAP_RGB } from './colormap_tables';
import { compileShader } from '../../core/webgpu/shader';
import { recordDispatch } from '../../core/webgpu/dispatch';

const VIRIDIS_RGB = COLORMAP_RGB.viridis;

// RGBA table packed little-endian (r | g << 8 | b << 16 | a << 24), alpha 255.
export function packedLut(rgb: readonly number[] = VIRIDIS_RGB): Uint32Array<ArrayBuffer> {
  const lut = new Uint32Array(256);
  for (let i = 0; i < 256; ++i) lut[i] = (rgb[3 * i] | (rgb[3 * i + 1] << 8) | (rgb[3 * i + 2] << 16) | (255 << 24)) >>> 0;
  return lut;
}

// floor((s - lo) / (hi - lo) * 255 + 0.5) clamped to 0..255 (0 when hi <= lo), in double as display::render.
export function colorIndex(s: number, lo: number, hi: number): number {
  if (!(hi > lo)) return 0;
  const t = ((s - lo) / (hi - lo)) * 255 + 0.5;
  if (!(t > 0)) return 0;
  if (t >= 255) return 255;
  return Math.floor(t);
}

// CPU reference picture (RGBA bytes) of float values.
export function colorizeCpu(values: Float32Array, lo: number, hi: number, lut = packedLut()): Uint8ClampedArray {
  const out = new Uint32Array(values.length);
  for (let i = 0; i < values.length; ++i) out[i] = Number.isFinite(values[i]) ? lut[colorIndex(values[i], lo, hi)] : 0;
  return new Uint8ClampedArray(out.buffer);
}

export class ColormapGpu {
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline, private lut: GPUBuffer) {}

  static async create(device: GPUDevice, rgb: readonly number[] = VIRIDIS_RGB): Promise<ColormapGpu> {
    const module = await compileShader(device, 'colormap.wgsl', shaderSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'colorize' } });
    const lut = device.createBuffer({ size: 1024, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    device.queue.writeBuffer(lut, 0, packedLut(rgb));
    return new ColormapGpu(device, pipeline, lut);
  }

  // RGBA bytes (4 per value) for the display range [lo, hi] (given as f32).
  async render(values: Float32Array<ArrayBuffer>, lo: number, hi: number): Promise<Uint8ClampedArray> {
    const dev = this.device, n = values.length;
    const params = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    const p = new ArrayBuffer(16);
    new Uint32Array(p, 0, 1)[0] = n;
    new Float32Array(p, 4, 2).set([lo, hi]);
    dev.queue.writeBuffer(params, 0, p);
    const input = dev.createBuffer({ size: Math.max(16, n * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(input, 0, values);
    const output = dev.createBuffer({ size: Math.max(16, n * 4), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC });
    const readback = dev.createBuffer({ size: Math.max(16, n * 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const groups = Math.ceil(n / 256), gx = Math.min(groups, 65535), gy = Math.ceil(groups / gx);
    const enc = dev.createCommandEncoder();
    recordDispatch(dev, enc, this.pipeline, [params, input, this.lut, output], gx, gy);
    enc.copyBufferToBuffer(output, 0, readback, 0, Math.max(16, n * 4));
    dev.queue.submit([enc.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8ClampedArray(readback.getMappedRange(0, n * 4).slice(0));
    readback.unmap();
    for (const b of [params, input, output, readback]) b.destroy();
    return bytes;
  }
}

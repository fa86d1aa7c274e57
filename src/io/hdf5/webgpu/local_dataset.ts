// Frames of an opened acquisition decoded on the GPU: chunk bytes read on demand from the File objects, bitshuffle
// + LZ4 decoded by bitshuffle_lz4.wgsl into one u32-per-pixel buffer (exact for uint8/16/32 counts), with a
// per-chunk status; the CPU reference decoder (bitshuffle_ref.ts) gives the same frames for tests.
import { Acquisition, BITSHUFFLE_FILTER, LoadRequest, admit } from './acquisition';
import binSource from './bin_frames.wgsl';
import { H5FormatError } from './byte_source';
import { BitshuffleDecoderGpu, readBuffer } from './bitshuffle_gpu';
import { ChunkDecodeError, decodeChunkRef } from './bitshuffle_ref';
import { compileShader } from '../../../core/webgpu/shader';
import { recordDispatch } from '../../../core/webgpu/dispatch';

export interface FrameChunks {
  chunks: Uint8Array[];   // stored bytes of each frame's chunk
  filtered: boolean[];    // bitshuffle applied (filter mask bit 0 clear)
}

export function framePixels(acq: Acquisition): number {
  return acq.info.shape[2] * acq.info.shape[3];
}

function checkSupported(acq: Acquisition): void {
  const i = acq.info;
  if (!i.one_frame_per_chunk) throw new H5FormatError(`${i.path}: chunks ${i.chunk_dims.join('x')} are not one frame each; the browser reader needs one frame per chunk`);
  const other = i.filters.filter((f) => f.id !== BITSHUFFLE_FILTER);
  if (other.length) throw new H5FormatError(`${i.path}: filter ${other[0].name || other[0].id} (id ${other[0].id}) is not decoded in the browser (bitshuffle+LZ4 only)`);
  if (i.filters.length && !i.bitshuffle_lz4) throw new H5FormatError(`${i.path}: bitshuffle without LZ4 (e.g. zstd) is not decoded in the browser`);
}

// Stored bytes of frames [first, first + count), read from the files (one read per chunk).
export async function readFrameChunks(acq: Acquisition, first: number, count: number): Promise<FrameChunks> {
  const total = acq.info.shape[0] * acq.info.shape[1];
  if (first < 0 || count < 0 || first + count > total) throw new H5FormatError(`frames ${first}..${first + count} outside 0..${total}`);
  return readChunksOf(acq, Array.from({ length: count }, (_, i) => first + i));
}

// Stored bytes of the listed frames (flat scan indices), in that order. Chunks close together in a file are
// read with one Blob.slice (gaps up to COALESCE_GAP bytes, runs up to COALESCE_MAX bytes), as the C++ loader
// coalesces its preads.
const COALESCE_GAP = 64 * 1024, COALESCE_MAX = 32 * 1024 * 1024;

export async function readChunksOf(acq: Acquisition, list: number[]): Promise<FrameChunks> {
  checkSupported(acq);
  const hasFilter = acq.info.filters.length > 0;
  const where = list.map((f, i) => {
    const part = acq.parts.find((p) => f >= p.firstFrame && f < p.firstFrame + p.frames);
    if (!part) throw new H5FormatError(`frame ${f} lies in no part of the acquisition`);
    const k = f - part.firstFrame;
    const off = part.table.offsets[k], size = part.table.sizes[k];
    if (off < 0) throw new H5FormatError(`frame ${f} (${part.meta.file.name} chunk ${k}) is not written yet`);
    return { i, part, off, size, filtered: hasFilter && (part.table.masks[k] & 1) === 0 };
  });
  const chunks = new Array<Uint8Array>(list.length);
  const byFile = new Map<unknown, typeof where>();
  for (const w of where) {
    const key = w.part.meta.file;
    if (!byFile.has(key)) byFile.set(key, []);
    byFile.get(key)!.push(w);
  }
  for (const ws of byFile.values()) {
    ws.sort((a, b) => a.off - b.off);
    for (let a = 0; a < ws.length; ) {
      let b = a + 1, end = ws[a].off + ws[a].size;
      while (b < ws.length && ws[b].off - end <= COALESCE_GAP && ws[b].off + ws[b].size - ws[a].off <= COALESCE_MAX) {
        end = Math.max(end, ws[b].off + ws[b].size);
        ++b;
      }
      const bytes = await ws[a].part.meta.file.src.read(ws[a].off, end - ws[a].off, `frames ${list[ws[a].i]}.. chunks`);
      for (let k = a; k < b; ++k) chunks[ws[k].i] = bytes.subarray(ws[k].off - ws[a].off, ws[k].off - ws[a].off + ws[k].size);
      a = b;
    }
  }
  return { chunks, filtered: where.map((w) => w.filtered) };
}

function rawFrame(bytes: Uint8Array, elemSize: number, n: number, frame: number): Uint32Array {
  if (bytes.length !== n * elemSize) throw new ChunkDecodeError(`frame ${frame}: unfiltered chunk of ${bytes.length} bytes, ${n * elemSize} expected`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Uint32Array(n);
  for (let i = 0; i < n; ++i) out[i] = elemSize === 1 ? v.getUint8(i) : elemSize === 2 ? v.getUint16(2 * i, true) : v.getUint32(4 * i, true);
  return out;
}

// CPU reference: frames decoded with the TypeScript decoder.
export async function decodeFramesCpu(acq: Acquisition, first: number, count: number): Promise<Uint32Array> {
  const { chunks, filtered } = await readFrameChunks(acq, first, count);
  const n = framePixels(acq);
  const out = new Uint32Array(count * n);
  chunks.forEach((c, i) => {
    try {
      out.set(filtered[i] ? decodeChunkRef(c, acq.elemSize, n, acq.info.bitshuffle_block_elems) : rawFrame(c, acq.elemSize, n, first + i), i * n);
    } catch (e) {
      throw new ChunkDecodeError(`frame ${first + i}: ${e instanceof Error ? e.message : e}`);
    }
  });
  return out;
}

export interface GpuFrames {
  buffer: GPUBuffer;       // count * framePixels u32
  frames: number;
  framePixels: number;
  status: Uint32Array;     // per frame, 0 = ok (bitshuffle_gpu.ts STATUS_TEXT)
  messages: string[];
}

// GPU decode of frames [first, first + count). Refuses (H5FormatError with the options) what exceeds limitBytes.
export async function decodeFramesGpu(device: GPUDevice, decoder: BitshuffleDecoderGpu, acq: Acquisition, first: number,
  count: number, limitBytes: number): Promise<GpuFrames> {
  return decodeListGpu(device, decoder, acq, Array.from({ length: count }, (_, i) => first + i), limitBytes);
}

export async function decodeListGpu(device: GPUDevice, decoder: BitshuffleDecoderGpu, acq: Acquisition, list: number[],
  limitBytes: number): Promise<GpuFrames> {
  const n = framePixels(acq);
  const count = list.length;
  if (count * n * 4 > limitBytes) {
    const a = admit(acq.info, {}, limitBytes);
    throw new H5FormatError(a.ok ? `${count} frames exceed ${limitBytes} bytes` : a.message);
  }
  const { chunks, filtered } = await readChunksOf(acq, list);
  if (filtered.every((f) => f)) {
    const r = await decoder.decode(chunks, acq.elemSize, n, acq.info.bitshuffle_block_elems);
    return { buffer: r.output, frames: count, framePixels: n, status: r.status, messages: r.messages };
  }
  // Unfiltered chunks (no filter, or the filter skipped per chunk): widened on the host.
  const host = new Uint32Array(count * n);
  const status = new Uint32Array(count);
  const messages = new Array<string>(count).fill('');
  chunks.forEach((c, i) => {
    try {
      host.set(filtered[i] ? decodeChunkRef(c, acq.elemSize, n, acq.info.bitshuffle_block_elems) : rawFrame(c, acq.elemSize, n, list[i]), i * n);
    } catch (e) {
      status[i] = 5;
      messages[i] = e instanceof Error ? e.message : String(e);
    }
  });
  const buffer = device.createBuffer({ size: Math.max(16, host.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(buffer, 0, host);
  return { buffer, frames: count, framePixels: n, status, messages };
}

// ---- resident load: scan crop and exact detector bin, decoded batch by batch -----------------------------

export interface ResidentFrames extends GpuFrames {
  shape: [number, number, number, number];  // scan rows, cols, detector rows, cols (after crop and bin)
  request: LoadRequest;
}

const BATCH_BYTES = 64 * 1024 * 1024;  // decoded (unbinned) u32 bytes per batch

export class FrameBinnerGpu {
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}
  static async create(device: GPUDevice): Promise<FrameBinnerGpu> {
    const module = await compileShader(device, 'bin_frames.wgsl', binSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'bin_frames' } });
    return new FrameBinnerGpu(device, pipeline);
  }
  // Bins `frames` frames of src into dst at element offset outOffset; returns true when a sum overflowed u32.
  async run(src: GPUBuffer, dst: GPUBuffer, frames: number, detRows: number, detCols: number, bin: number, outOffset: number): Promise<boolean> {
    const dev = this.device;
    const count = frames * (detRows / bin) * (detCols / bin);
    const wg = Math.ceil(count / 64), gx = Math.min(wg, 65535);
    const params = dev.createBuffer({ size: 32, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(params, 0, new Uint32Array([frames, detRows, detCols, bin, gx, outOffset, 0, 0]));
    const ov = dev.createBuffer({ size: 16, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    dev.queue.writeBuffer(ov, 0, new Uint32Array(4));
    const enc = dev.createCommandEncoder();
    recordDispatch(dev, enc, this.pipeline, [params, src, dst, ov], gx, Math.ceil(wg / gx));
    dev.queue.submit([enc.finish()]);
    const flag = await readBuffer(dev, ov, 16);
    params.destroy();
    ov.destroy();
    return flag[0] !== 0;
  }
}

// Loads the request's frames resident on the GPU (u32 per pixel): scan crop, exact detector bin (count
// preserving), admitted against limitBytes first (refused with the options otherwise); decoded in batches so
// the unbinned frames are never held whole. Any chunk that fails to decode fails the load, naming the frame.
export async function loadResident(device: GPUDevice, decoder: BitshuffleDecoderGpu, binner: FrameBinnerGpu, acq: Acquisition,
  req: LoadRequest, limitBytes: number): Promise<ResidentFrames> {
  const a = admit(acq.info, req, limitBytes);
  if (!a.ok) throw new H5FormatError(a.message);
  const [sr, sc, dr, dc] = acq.info.shape;
  const [r0, c0, rows, cols] = req.scanRegion ?? [0, 0, sr, sc];
  const bin = req.binDetector ?? 1;
  const list: number[] = [];
  for (let r = r0; r < r0 + rows; ++r) for (let c = c0; c < c0 + cols; ++c) list.push(r * sc + c);
  const n = dr * dc, outPixels = (dr / bin) * (dc / bin);
  const out = device.createBuffer({ size: Math.max(16, a.bytes), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  const perBatch = Math.max(1, Math.floor(BATCH_BYTES / (4 * n)));
  const status = new Uint32Array(list.length);
  const messages = new Array<string>(list.length).fill('');
  try {
    for (let i = 0; i < list.length; i += perBatch) {
      const part = list.slice(i, i + perBatch);
      const g = await decodeListGpu(device, decoder, acq, part, Math.max(limitBytes, 4 * n * part.length));
      status.set(g.status, i);
      g.messages.forEach((m, k) => (messages[i + k] = m));
      const bad = [...g.status].findIndex((s) => s !== 0);
      if (bad >= 0) {
        g.buffer.destroy();
        throw new H5FormatError(`frame ${part[bad]} did not decode: ${g.messages[bad]}`);
      }
      if (bin === 1) {
        const enc = device.createCommandEncoder();
        enc.copyBufferToBuffer(g.buffer, 0, out, 4 * i * n, 4 * part.length * n);
        device.queue.submit([enc.finish()]);
      } else if (await binner.run(g.buffer, out, part.length, dr, dc, bin, i * outPixels)) {
        g.buffer.destroy();
        throw new H5FormatError(`detector bin ${bin}: a binned count passes 2^32 - 1 (frames ${part[0]}..${part[part.length - 1]}); choose a smaller bin`);
      }
      g.buffer.destroy();
    }
  } catch (e) {
    out.destroy();
    throw e;
  }
  return { buffer: out, frames: list.length, framePixels: outPixels, status, messages, shape: [rows, cols, dr / bin, dc / bin], request: req };
}

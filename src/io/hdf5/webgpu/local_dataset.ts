// Frames of an opened acquisition decoded on the GPU: chunk bytes read on demand from the File objects, bitshuffle
// + LZ4 decoded by bitshuffle_lz4.wgsl into one u32-per-pixel buffer (exact for uint8/16/32 counts), with a
// per-chunk status; the CPU reference decoder (bitshuffle_ref.ts) gives the same frames for tests.
import { Acquisition, BITSHUFFLE_FILTER, admit } from './acquisition';
import { H5FormatError } from './byte_source';
import { BitshuffleDecoderGpu } from './bitshuffle_gpu';
import { ChunkDecodeError, decodeChunkRef } from './bitshuffle_ref';

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
  checkSupported(acq);
  const total = acq.info.shape[0] * acq.info.shape[1];
  if (first < 0 || count < 0 || first + count > total) throw new H5FormatError(`frames ${first}..${first + count} outside 0..${total}`);
  const chunks: Uint8Array[] = [], filtered: boolean[] = [];
  const hasFilter = acq.info.filters.length > 0;
  for (let f = first; f < first + count; ++f) {
    const part = acq.parts.find((p) => f >= p.firstFrame && f < p.firstFrame + p.frames)!;
    const k = f - part.firstFrame;
    const off = part.table.offsets[k], size = part.table.sizes[k];
    if (off < 0) throw new H5FormatError(`frame ${f} (${part.meta.file.name} chunk ${k}) is not written yet`);
    chunks.push(await part.meta.file.src.read(off, size, `frame ${f} chunk`));
    filtered.push(hasFilter && (part.table.masks[k] & 1) === 0);
  }
  return { chunks, filtered };
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
  const n = framePixels(acq);
  if (count * n * 4 > limitBytes) {
    const a = admit(acq.info, {}, limitBytes);
    throw new H5FormatError(a.ok ? `${count} frames exceed ${limitBytes} bytes` : a.message);
  }
  const { chunks, filtered } = await readFrameChunks(acq, first, count);
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
      host.set(filtered[i] ? decodeChunkRef(c, acq.elemSize, n, acq.info.bitshuffle_block_elems) : rawFrame(c, acq.elemSize, n, first + i), i * n);
    } catch (e) {
      status[i] = 5;
      messages[i] = e instanceof Error ? e.message : String(e);
    }
  });
  const buffer = device.createBuffer({ size: Math.max(16, host.byteLength), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
  device.queue.writeBuffer(buffer, 0, host);
  return { buffer, frames: count, framePixels: n, status, messages };
}

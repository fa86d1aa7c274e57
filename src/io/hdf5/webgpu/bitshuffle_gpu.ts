// WebGPU bitshuffle+LZ4 decoder (bitshuffle_lz4.wgsl): compressed chunks in, u32 elements out (one buffer,
// chunk after chunk), with a status per chunk. The host plans the blocks (planChunk, lengths checked); a chunk
// whose framing is bad gets its status from the host and is not dispatched.
import shaderSource from './bitshuffle_lz4.wgsl';
import { ChunkDecodeError, planChunk } from './bitshuffle_ref';
import { compileShader } from '../../../core/webgpu/shader';
import { recordDispatch } from '../../../core/webgpu/dispatch';

export const STATUS_TEXT = ['ok', 'LZ4 input overrun', 'LZ4 output overrun', 'bad LZ4 match offset', 'decoded size differs', 'bad chunk framing'];
export const MAX_BLOCK_BYTES = 8192;

export interface DecodeResult {
  output: GPUBuffer;          // chunks * chunkElems u32 (caller destroys)
  status: Uint32Array;        // per chunk: index into STATUS_TEXT
  messages: string[];         // per chunk: '' or the reason
  blocks: number;             // blocks dispatched (one workgroup each)
}

export class BitshuffleDecoderGpu {
  private constructor(private device: GPUDevice, private pipeline: GPUComputePipeline) {}

  static async create(device: GPUDevice): Promise<BitshuffleDecoderGpu> {
    const module = await compileShader(device, 'bitshuffle_lz4.wgsl', shaderSource);
    const pipeline = await device.createComputePipelineAsync({ layout: 'auto', compute: { module, entryPoint: 'decode_blocks' } });
    return new BitshuffleDecoderGpu(device, pipeline);
  }

  // chunks: the stored bytes of each chunk; every chunk decodes to chunkElems elements of elemSize bytes.
  async decode(chunks: Uint8Array[], elemSize: number, chunkElems: number, blockElemsDefault: number): Promise<DecodeResult> {
    if (blockElemsDefault * elemSize > MAX_BLOCK_BYTES)
      throw new ChunkDecodeError(`bitshuffle blocks of ${blockElemsDefault * elemSize} bytes exceed the ${MAX_BLOCK_BYTES} the WGSL decoder holds`);
    const n = chunks.length;
    const status = new Uint32Array(n);
    const messages = new Array<string>(n).fill('');
    let total = 0;
    const offsets: number[] = [];
    for (const c of chunks) {
      offsets.push(total);
      total += (c.length + 3) & ~3;
    }
    const input = new Uint8Array(Math.max(16, total));
    const desc: number[] = [];
    chunks.forEach((c, i) => {
      input.set(c, offsets[i]);
      try {
        for (const b of planChunk(c, elemSize, chunkElems, blockElemsDefault)) {
          if (b.kind === 'lz4' && b.nelem * elemSize > MAX_BLOCK_BYTES)
            throw new ChunkDecodeError(`block of ${b.nelem * elemSize} bytes exceeds ${MAX_BLOCK_BYTES}`);
          desc.push(offsets[i] + b.src, b.len, i * chunkElems + b.dstElem, b.nelem, i, b.kind === 'raw' ? 1 : 0, 0, 0);
        }
      } catch (e) {
        status[i] = 5;
        messages[i] = e instanceof Error ? e.message : String(e);
      }
    });
    const dev = this.device;
    const outBytes = Math.max(16, n * chunkElems * 4);
    const output = dev.createBuffer({ size: outBytes, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST });
    const nblocks = desc.length / 8;
    if (nblocks > 0) {
      const groupsX = Math.min(nblocks, 65535), groupsY = Math.ceil(nblocks / groupsX);
      const params = this.upload(new Uint32Array([nblocks, elemSize, groupsX, 0]), GPUBufferUsage.UNIFORM);
      const inBuf = this.upload(new Uint32Array(input.buffer, 0, input.length >> 2), GPUBufferUsage.STORAGE);
      const blkBuf = this.upload(new Uint32Array(desc), GPUBufferUsage.STORAGE);
      const stBuf = this.upload(new Uint32Array(Math.max(4, n)), GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
      const readback = dev.createBuffer({ size: Math.max(16, n * 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
      const enc = dev.createCommandEncoder();
      recordDispatch(dev, enc, this.pipeline, [params, inBuf, blkBuf, output, stBuf], groupsX, groupsY);
      enc.copyBufferToBuffer(stBuf, 0, readback, 0, Math.max(16, n * 4));
      dev.queue.submit([enc.finish()]);
      await readback.mapAsync(GPUMapMode.READ);
      const gpuStatus = new Uint32Array(readback.getMappedRange().slice(0));
      readback.unmap();
      for (const b of [params, inBuf, blkBuf, stBuf, readback]) b.destroy();
      for (let i = 0; i < n; ++i)
        if (status[i] === 0 && gpuStatus[i] !== 0) {
          status[i] = gpuStatus[i];
          messages[i] = STATUS_TEXT[gpuStatus[i]] ?? `status ${gpuStatus[i]}`;
        }
    }
    return { output, status, messages, blocks: nblocks };
  }

  private upload(data: Uint32Array, usage: number): GPUBuffer {
    const buf = this.device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST, mappedAtCreation: true });
    new Uint32Array(buf.getMappedRange(0, data.byteLength)).set(data);
    buf.unmap();
    return buf;
  }
}

export async function readBuffer(device: GPUDevice, buf: GPUBuffer, bytes: number): Promise<Uint32Array> {
  const rb = device.createBuffer({ size: Math.max(16, bytes), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(buf, 0, rb, 0, Math.max(16, bytes) > buf.size ? buf.size : Math.max(16, bytes));
  device.queue.submit([enc.finish()]);
  await rb.mapAsync(GPUMapMode.READ);
  const out = new Uint32Array(rb.getMappedRange().slice(0, bytes));
  rb.unmap();
  rb.destroy();
  return out;
}

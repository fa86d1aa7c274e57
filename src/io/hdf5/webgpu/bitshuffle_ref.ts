// Bitshuffle + LZ4 chunks (HDF5 filter 32008) on the CPU: the reference for the WGSL decoder, and the block
// plan the GPU decoder runs from. Chunk: 12-byte header (uint64 BE uncompressed bytes, uint32 BE block bytes),
// then per full block a uint32 BE compressed length and a raw LZ4 block, then the partial block (n % bs rounded
// down to 8 elements) framed the same, then the last n % 8 elements verbatim (bitshuffle's bshuf_h5filter.c and
// bitshuffle_core.c; our host codec src/io/hdf5/codec is the model). Elements are returned widened to u32.

export class ChunkDecodeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChunkDecodeError';
  }
}

const be32 = (b: Uint8Array, at: number) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;

export interface BlockPlan {
  kind: 'lz4' | 'raw';
  src: number;     // byte offset of the LZ4 block (or raw bytes) in the chunk
  len: number;     // compressed bytes (raw: nelem * elemSize)
  dstElem: number; // first element of the block in the chunk
  nelem: number;
}

// Walks a chunk's block framing; every length is checked against the chunk. Throws ChunkDecodeError.
export function planChunk(chunk: Uint8Array, elemSize: number, nElems: number, blockElemsDefault: number): BlockPlan[] {
  if (chunk.length < 12) throw new ChunkDecodeError(`chunk of ${chunk.length} bytes is shorter than its 12-byte header`);
  const total = Number((BigInt(be32(chunk, 0)) << 32n) | BigInt(be32(chunk, 4)));
  if (total !== nElems * elemSize)
    throw new ChunkDecodeError(`chunk header says ${total} uncompressed bytes, the chunk holds ${nElems * elemSize}`);
  const blockBytes = be32(chunk, 8);
  const bs = blockBytes === 0 ? blockElemsDefault : blockBytes / elemSize;
  if (!Number.isInteger(bs) || bs <= 0 || bs % 8 !== 0) throw new ChunkDecodeError(`chunk block size ${blockBytes} bytes is invalid`);
  const out: BlockPlan[] = [];
  let at = 12, elem = 0;
  const framed = (nelem: number) => {
    if (at + 4 > chunk.length) throw new ChunkDecodeError(`chunk truncated at block ${out.length} (byte ${at})`);
    const len = be32(chunk, at);
    at += 4;
    if (len > chunk.length - at) throw new ChunkDecodeError(`block ${out.length} claims ${len} compressed bytes, ${chunk.length - at} remain`);
    out.push({ kind: 'lz4', src: at, len, dstElem: elem, nelem });
    at += len;
    elem += nelem;
  };
  const full = Math.floor(nElems / bs);
  for (let i = 0; i < full; ++i) framed(bs);
  const partial = nElems % bs - (nElems % bs) % 8;
  if (partial) framed(partial);
  const tail = nElems % 8;
  if (tail) {
    if (at + tail * elemSize > chunk.length) throw new ChunkDecodeError('chunk truncated in its last elements');
    out.push({ kind: 'raw', src: at, len: tail * elemSize, dstElem: elem, nelem: tail });
    at += tail * elemSize;
  }
  return out;
}

// Raw LZ4 block decode into dst (exactly dst.length bytes expected).
export function lz4DecodeBlock(src: Uint8Array, dst: Uint8Array): void {
  let ip = 0, op = 0;
  const n = src.length;
  for (;;) {
    if (ip >= n) throw new ChunkDecodeError('LZ4 block ends inside a sequence');
    const token = src[ip++];
    let lit = token >> 4;
    if (lit === 15) {
      let b;
      do {
        if (ip >= n) throw new ChunkDecodeError('LZ4 literal length runs past the block');
        b = src[ip++];
        lit += b;
      } while (b === 255);
    }
    if (ip + lit > n || op + lit > dst.length) throw new ChunkDecodeError('LZ4 literals run past the block or the output');
    dst.set(src.subarray(ip, ip + lit), op);
    ip += lit;
    op += lit;
    if (ip === n) break;  // last sequence: literals only
    if (ip + 2 > n) throw new ChunkDecodeError('LZ4 match offset truncated');
    const offset = src[ip] | (src[ip + 1] << 8);
    ip += 2;
    if (offset === 0 || offset > op) throw new ChunkDecodeError(`LZ4 match offset ${offset} at output byte ${op} is invalid`);
    let ml = (token & 15) + 4;
    if ((token & 15) === 15) {
      let b;
      do {
        if (ip >= n) throw new ChunkDecodeError('LZ4 match length runs past the block');
        b = src[ip++];
        ml += b;
      } while (b === 255);
    }
    if (op + ml > dst.length) throw new ChunkDecodeError('LZ4 match runs past the output');
    for (let k = 0; k < ml; ++k, ++op) dst[op] = dst[op - offset];
  }
  if (op !== dst.length) throw new ChunkDecodeError(`LZ4 block decoded to ${op} bytes, ${dst.length} expected`);
}

// Bit planes -> elements: value[n] = sum_p ((plane_p[n >> 3] >> (n & 7)) & 1) << p, plane p = N/8 bytes.
export function untransposeBlock(planes: Uint8Array, elemSize: number, nelem: number, out: Uint32Array, dst: number): void {
  const stride = nelem / 8;
  for (let n = 0; n < nelem; ++n) {
    let v = 0;
    const byte = n >> 3, bit = n & 7;
    for (let p = 0; p < 8 * elemSize; ++p) v |= ((planes[p * stride + byte] >> bit) & 1) << p;
    out[dst + n] = v >>> 0;
  }
}

// One chunk decoded to nElems u32 elements (CPU reference).
export function decodeChunkRef(chunk: Uint8Array, elemSize: number, nElems: number, blockElemsDefault: number): Uint32Array {
  const out = new Uint32Array(nElems);
  const scratch = new Uint8Array(blockElemsDefault * elemSize * 8);
  for (const b of planChunk(chunk, elemSize, nElems, blockElemsDefault)) {
    if (b.kind === 'raw') {
      const v = new DataView(chunk.buffer, chunk.byteOffset + b.src, b.len);
      for (let k = 0; k < b.nelem; ++k)
        out[b.dstElem + k] = elemSize === 1 ? v.getUint8(k) : elemSize === 2 ? v.getUint16(2 * k, true) : v.getUint32(4 * k, true);
      continue;
    }
    const planes = b.nelem * elemSize <= scratch.length ? scratch.subarray(0, b.nelem * elemSize) : new Uint8Array(b.nelem * elemSize);
    lz4DecodeBlock(chunk.subarray(b.src, b.src + b.len), planes);
    untransposeBlock(planes, elemSize, b.nelem, out, b.dstElem);
  }
  return out;
}

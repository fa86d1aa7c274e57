// Every chunk's file offset, stored size and filter mask, read from the dataset's own chunk index: version 1
// B-tree (layout v3), and for layout v4 single chunk, implicit, fixed array, extensible array and version 2
// B-tree. A port of our C++ parser (src/io/hdf5/index/), which is tested against the HDF5 library.
import { ByteSource, Cursor, H5FormatError, H5Unsupported, Sizes, UNDEFINED_ADDR, checkChecksum, checkedAdd, checkedMul } from './byte_source';
import { Layout, UNLIMITED } from './object_header';

export interface ChunkTable {
  file: string;
  dims: number[];
  chunkDims: number[];
  grid: number[];             // chunks along each dimension
  offsets: Float64Array;      // absolute byte offset of each chunk (row-major over grid), -1 = not written
  sizes: Float64Array;        // stored bytes (0 = not written)
  masks: Uint32Array;         // filter mask (bit i set: filter i skipped)
  method: string;             // which index was parsed
}

const MAX_CHUNKS = 1 << 26;

class Grid {
  grid: number[] = [];
  maxGrid: number[] = [];  // 0 = unlimited
  offsets: Float64Array;
  sizes: Float64Array;
  masks: Uint32Array;
  constructor(dims: number[], maxDims: number[], chunk: number[], private fileSize: number, private sizes_: Sizes) {
    if (dims.length !== chunk.length) throw new H5FormatError(`dataspace rank ${dims.length} differs from chunk rank ${chunk.length}`);
    let total = 1;
    for (let i = 0; i < dims.length; ++i) {
      this.grid.push(Math.ceil(dims[i] / chunk[i]));
      this.maxGrid.push(maxDims[i] === UNLIMITED ? 0 : Math.ceil(maxDims[i] / chunk[i]));
      total = checkedMul(total, this.grid[i], 'chunk count');
    }
    if (total > MAX_CHUNKS) throw new H5FormatError(`dataset has ${total} chunks, more than the ${MAX_CHUNKS} this reader indexes`);
    this.offsets = new Float64Array(total).fill(-1);
    this.sizes = new Float64Array(total);
    this.masks = new Uint32Array(total);
  }
  get count(): number {
    return this.offsets.length;
  }
  maxCount(): number {
    let n = 1;
    for (const g of this.maxGrid) {
      if (g === 0) throw new H5FormatError('fixed-size chunk index on a dataset with an unlimited dimension');
      n = checkedMul(n, g, 'chunk count of the maximum extent');
    }
    return n;
  }
  put(scaled: number[], addr: number, size: number, mask: number): void {
    if (addr === UNDEFINED_ADDR) return;
    let idx = 0;
    for (let i = 0; i < this.grid.length; ++i) {
      if (scaled[i] >= this.grid[i]) return;  // beyond the current extent
      idx = idx * this.grid[i] + scaled[i];
    }
    this.putIndex(idx, addr, size, mask);
  }
  putIndex(idx: number, addr: number, size: number, mask: number, outsideOk = false): void {
    if (addr === UNDEFINED_ADDR) return;
    if (idx >= this.count) {
      if (outsideOk) return;
      throw new H5FormatError('chunk index entry beyond the dataset extent');
    }
    if (this.sizes[idx] !== 0) throw new H5FormatError(`chunk ${idx} is listed twice`);
    if (size === 0) throw new H5FormatError(`chunk ${idx} has a stored size of 0`);
    const offset = checkedAdd(addr, this.sizes_.base, 'chunk address');
    if (offset > this.fileSize || size > this.fileSize - offset)
      throw new H5FormatError(`chunk ${idx} (byte ${offset}, ${size} bytes) lies beyond the end of the file ` +
        `(${this.fileSize} bytes; truncated?)`);
    this.offsets[idx] = offset;
    this.sizes[idx] = size;
    this.masks[idx] = mask;
  }
  putLinear(idx: number, addr: number, size: number, mask: number): void {
    if (addr === UNDEFINED_ADDR) return;
    const scaled = new Array<number>(this.grid.length);
    for (let i = this.grid.length - 1; i >= 0; --i) {
      if (this.maxGrid[i] === 0) throw new H5FormatError('linear chunk index on a dataset with an unlimited dimension');
      scaled[i] = idx % this.maxGrid[i];
      idx = Math.floor(idx / this.maxGrid[i]);
    }
    if (idx !== 0) throw new H5FormatError('chunk index entry beyond the maximum extent');
    this.put(scaled, addr, size, mask);
  }
}

interface Ctx {
  src: ByteSource;
  s: Sizes;
  layout: Layout;
  grid: Grid;
  chunkBytes: number;
  abs(rel: number): number;
}

function filteredSizeBytes(elemBytes: number, fixed: number, what: string): number {
  if (elemBytes <= fixed || elemBytes - fixed > 8)
    throw new H5FormatError(`${what} element size ${elemBytes} does not fit filtered chunks`);
  return elemBytes - fixed;
}

async function btreeV1(ctx: Ctx): Promise<void> {
  const rank = ctx.layout.chunkDims!.length;
  const keyBytes = 8 + 8 * (rank + 1);
  const seen = new Set<number>();
  const node = async (addr: number, expectLevel: number): Promise<void> => {
    if (seen.has(addr)) throw new H5FormatError('version 1 B-tree nodes form a cycle');
    seen.add(addr);
    if (seen.size > 2 * ctx.grid.count + 1024) throw new H5FormatError('version 1 B-tree has more nodes than the dataset has chunks');
    const head = 8 + 2 * ctx.s.addr;
    // One read for header and entries of a node of up to 64 entries (HDF5's default chunk B-tree has 2K = 64).
    const pre = await ctx.src.readUpTo(ctx.abs(addr), head + 64 * (keyBytes + ctx.s.addr) + keyBytes, 'B-tree node');
    const h = new Cursor(pre, 'B-tree node');
    h.signature('TREE');
    if (h.u8() !== 1) throw new H5FormatError('B-tree node is not a chunk node (type 1)');
    const level = h.u8(), entries = h.u16();
    if (level > 64 || (expectLevel >= 0 && level !== expectLevel))
      throw new H5FormatError(`B-tree node at level ${level} where level ${expectLevel} belongs`);
    const bodyBytes = entries * (keyBytes + ctx.s.addr) + keyBytes;
    const body = head + bodyBytes <= pre.length ? pre.subarray(head, head + bodyBytes)
      : await ctx.src.read(ctx.abs(addr) + head, bodyBytes, 'B-tree node');
    const c = new Cursor(body, 'B-tree node');
    const scaled = new Array<number>(rank);
    const children: number[] = [];
    for (let i = 0; i < entries; ++i) {
      const size = c.u32(), mask = c.u32();
      for (let d = 0; d <= rank; ++d) {
        const off = c.u64();
        if (d === rank) {
          if (off !== 0) throw new H5FormatError('B-tree key has a non-zero element-size offset');
          continue;
        }
        const cd = ctx.layout.chunkDims![d];
        if (off % cd !== 0) throw new H5FormatError('B-tree key offset is not on a chunk boundary');
        scaled[d] = off / cd;
      }
      const child = c.addr(ctx.s);
      if (level === 0) ctx.grid.put(scaled, child, size, mask);
      else {
        if (child === UNDEFINED_ADDR) throw new H5FormatError('B-tree child pointer undefined');
        children.push(child);
      }
    }
    for (const child of children) await node(child, level - 1);
  };
  await node(ctx.layout.indexAddr!, -1);
}

async function fixedArray(ctx: Ctx): Promise<void> {
  const s = ctx.s;
  const hb = await ctx.src.read(ctx.abs(ctx.layout.indexAddr!), 4 + 4 + s.len + s.addr + 4, 'fixed array header');
  const h = new Cursor(hb, 'fixed array header');
  h.signature('FAHD');
  if (h.u8() !== 0) throw new H5Unsupported('fixed array header version');
  checkChecksum(hb, 'fixed array header');
  const client = h.u8(), elemBytes = h.u8(), pageBits = h.u8();
  const nelmts = h.len(s), dblk = h.addr(s);
  if (client > 1) throw new H5FormatError(`fixed array of client ${client} indexes chunks`);
  const sizeBytes = client === 1 ? filteredSizeBytes(elemBytes, s.addr + 4, 'fixed array') : 0;
  if (client === 0 && elemBytes !== s.addr) throw new H5FormatError('fixed array element size does not fit unfiltered chunks');
  if (pageBits === 0 || pageBits > 32) throw new H5FormatError(`fixed array page bits ${pageBits}`);
  if (nelmts !== ctx.grid.maxCount()) throw new H5FormatError(`fixed array has ${nelmts} elements for ${ctx.grid.maxCount()} chunks`);
  if (dblk === UNDEFINED_ADDR) return;
  const decode = (b: Uint8Array, first: number, n: number) => {
    const c = new Cursor(b, 'fixed array elements');
    for (let i = 0; i < n; ++i) {
      const addr = c.addr(s);
      let size = ctx.chunkBytes, mask = 0;
      if (client === 1) {
        size = c.uint(sizeBytes);
        mask = c.u32();
      }
      ctx.grid.putLinear(first + i, addr, size, mask);
    }
  };
  const at = ctx.abs(dblk);
  const head = 6 + s.addr;
  const checkPrefix = (b: Uint8Array) => {
    const c = new Cursor(b, 'fixed array data block');
    c.signature('FADB');
    if (c.u8() !== 0) throw new H5Unsupported('fixed array data block version');
    if (c.u8() !== client) throw new H5FormatError('fixed array data block of another client');
    if (c.addr(s) !== ctx.layout.indexAddr) throw new H5FormatError('fixed array data block names another header');
  };
  const pageN = 2 ** pageBits;
  if (nelmts <= pageN) {
    const b = await ctx.src.read(at, head + checkedMul(nelmts, elemBytes, 'fixed array') + 4, 'fixed array data block');
    checkPrefix(b);
    checkChecksum(b, 'fixed array data block');
    decode(b.subarray(head), 0, nelmts);
    return;
  }
  const npages = Math.ceil(nelmts / pageN);
  const prefix = head + Math.ceil(npages / 8) + 4;
  const pre = await ctx.src.read(at, prefix, 'fixed array data block');
  checkPrefix(pre);
  checkChecksum(pre, 'fixed array data block');
  const pageBytes = pageN * elemBytes + 4;
  const lastN = nelmts - (npages - 1) * pageN;
  const pages = await ctx.src.read(at + prefix, (npages - 1) * pageBytes + lastN * elemBytes + 4, 'fixed array pages');
  for (let p = 0; p < npages; ++p) {
    if (!(pre[head + (p >> 3)] & (0x80 >> (p & 7)))) continue;  // page never written
    const n = p + 1 === npages ? lastN : pageN;
    const page = pages.subarray(p * pageBytes, p * pageBytes + n * elemBytes + 4);
    checkChecksum(page, `fixed array data block page ${p}`);
    decode(page, p * pageN, n);
  }
}

async function extensibleArray(ctx: Ctx): Promise<void> {
  const s = ctx.s;
  const hdrAddr = ctx.layout.indexAddr!;
  const hb = await ctx.src.read(ctx.abs(hdrAddr), 12 + 6 * s.len + s.addr + 4, 'extensible array header');
  const h = new Cursor(hb, 'extensible array header');
  h.signature('EAHD');
  if (h.u8() !== 0) throw new H5Unsupported('extensible array header version');
  checkChecksum(hb, 'extensible array header');
  const client = h.u8(), elemBytes = h.u8(), maxBits = h.u8(), idxBlkElmts = h.u8();
  const minElmts = h.u8(), minPtrs = h.u8(), pageBits = h.u8();
  h.skip(4 * s.len);
  const maxIdx = h.len(s);
  h.len(s);
  const iblock = h.addr(s);
  if (client > 1) throw new H5FormatError(`extensible array of client ${client} indexes chunks`);
  const sizeBytes = client === 1 ? filteredSizeBytes(elemBytes, s.addr + 4, 'extensible array') : 0;
  if (client === 0 && elemBytes !== s.addr) throw new H5FormatError('extensible array element size does not fit unfiltered chunks');
  const pow2 = (v: number) => v > 0 && (v & (v - 1)) === 0;
  const log2 = (v: number) => Math.round(Math.log2(v));
  if (maxBits === 0 || maxBits > 64 || idxBlkElmts === 0 || !pow2(minElmts) || !pow2(minPtrs) || log2(minElmts) > maxBits ||
      pageBits === 0 || pageBits > 32)
    throw new H5FormatError('extensible array header has invalid creation parameters');
  const pageN = 2 ** pageBits;
  const arrOffSize = Math.floor((maxBits + 7) / 8);
  // Unlimited dimension first ("swizzled", H5Dearray.c).
  const rank = ctx.grid.grid.length;
  const unlim = ctx.grid.maxGrid.indexOf(0);
  if (unlim < 0) throw new H5FormatError('extensible array index on a dataset without an unlimited dimension');
  if (ctx.grid.maxGrid.filter((g) => g === 0).length !== 1)
    throw new H5FormatError('extensible array index on a dataset without exactly one unlimited dimension');
  const swGrid = [0, ...ctx.grid.maxGrid.filter((_, i) => i !== unlim)];
  const put = (idx: number, addr: number, size: number, mask: number) => {
    const sw = new Array<number>(rank);
    for (let i = rank - 1; i >= 1; --i) {
      sw[i] = idx % swGrid[i];
      idx = Math.floor(idx / swGrid[i]);
    }
    sw[0] = idx;
    const scaled = new Array<number>(rank);
    scaled[unlim] = sw[0];
    for (let i = 0, k = 1; i < rank; ++i) if (i !== unlim) scaled[i] = sw[k++];
    ctx.grid.put(scaled, addr, size, mask);
  };
  const elements = (b: Uint8Array, first: number, n: number) => {
    const c = new Cursor(b, 'extensible array elements');
    for (let i = 0; i < n && first + i < maxIdx; ++i) {
      const addr = c.addr(s);
      let size = ctx.chunkBytes, mask = 0;
      if (client === 1) {
        size = c.uint(sizeBytes);
        mask = c.u32();
      }
      put(first + i, addr, size, mask);
    }
  };
  const prefix = (c: Cursor, sig: string, what: string) => {
    c.signature(sig);
    if (c.u8() !== 0) throw new H5Unsupported(`${what} version`);
    if (c.u8() !== client) throw new H5FormatError(`${what} of another client`);
    if (c.addr(s) !== hdrAddr) throw new H5FormatError(`${what} names another header`);
  };
  if (iblock === UNDEFINED_ADDR) return;
  const nsblks = 1 + maxBits - log2(minElmts);
  const info: Array<{ ndblks: number; dblkN: number; startIdx: number; startDblk: number }> = [];
  let startIdx = 0, startDblk = 0;
  for (let u = 0; u < nsblks; ++u) {
    const ndblks = 2 ** Math.floor(u / 2), dblkN = 2 ** Math.floor((u + 1) / 2) * minElmts;
    info.push({ ndblks, dblkN, startIdx, startDblk });
    startIdx += ndblks * dblkN;
    startDblk += ndblks;
  }
  const iblockNsblks = 2 * log2(minPtrs);
  if (iblockNsblks > nsblks) throw new H5FormatError('extensible array index block holds more super blocks than exist');
  const ndblkAddrs = 2 * (minPtrs - 1), nsblkAddrs = nsblks - iblockNsblks;
  const ib = await ctx.src.read(ctx.abs(iblock), 6 + s.addr + idxBlkElmts * elemBytes + (ndblkAddrs + nsblkAddrs) * s.addr + 4,
    'extensible array index block');
  const c = new Cursor(ib, 'extensible array index block');
  prefix(c, 'EAIB', 'extensible array index block');
  checkChecksum(ib, 'extensible array index block');
  elements(c.take(idxBlkElmts * elemBytes), 0, idxBlkElmts);
  const dblkAddrs: number[] = [], sblkAddrs: number[] = [];
  for (let i = 0; i < ndblkAddrs; ++i) dblkAddrs.push(c.addr(s));
  for (let i = 0; i < nsblkAddrs; ++i) sblkAddrs.push(c.addr(s));
  const head = 6 + s.addr + arrOffSize;
  for (let u = 0; u < nsblks; ++u) {
    const si = info[u];
    if (idxBlkElmts + si.startIdx >= maxIdx) break;
    const paged = si.dblkN > pageN;
    const npages = paged ? si.dblkN / pageN : 0;
    const initBytes = paged ? Math.ceil(npages / 8) : 0;
    let addrs: number[];
    let pageInit: Uint8Array | null = null;
    if (u < iblockNsblks) {
      if (si.startDblk + si.ndblks > ndblkAddrs) throw new H5FormatError('extensible array index block is short of data blocks');
      addrs = dblkAddrs.slice(si.startDblk, si.startDblk + si.ndblks);
    } else {
      const sb = sblkAddrs[u - iblockNsblks];
      if (sb === UNDEFINED_ADDR) continue;
      const b = await ctx.src.read(ctx.abs(sb), 6 + s.addr + arrOffSize + si.ndblks * (initBytes + s.addr) + 4, 'extensible array super block');
      const sc = new Cursor(b, 'extensible array super block');
      prefix(sc, 'EASB', 'extensible array super block');
      checkChecksum(b, 'extensible array super block');
      if (sc.uint(arrOffSize) !== si.startIdx) throw new H5FormatError('extensible array super block at the wrong array offset');
      pageInit = sc.take(si.ndblks * initBytes);
      addrs = [];
      for (let d = 0; d < si.ndblks; ++d) addrs.push(sc.addr(s));
    }
    for (let d = 0; d < si.ndblks; ++d) {
      const blockOff = si.startIdx + d * si.dblkN;
      if (idxBlkElmts + blockOff >= maxIdx) break;
      if (addrs[d] === UNDEFINED_ADDR) continue;
      const first = idxBlkElmts + blockOff;
      const at = ctx.abs(addrs[d]);
      if (si.dblkN <= pageN) {
        const b = await ctx.src.read(at, head + si.dblkN * elemBytes + 4, 'extensible array data block');
        prefix(new Cursor(b, 'extensible array data block'), 'EADB', 'extensible array data block');
        checkChecksum(b, 'extensible array data block');
        elements(b.subarray(head), first, si.dblkN);
        continue;
      }
      if (!pageInit) throw new H5Unsupported('paged extensible array data block outside a super block');
      const np = si.dblkN / pageN, pageBytes = pageN * elemBytes + 4;
      const b = await ctx.src.read(at, head + 4 + np * pageBytes, 'extensible array data block');
      prefix(new Cursor(b, 'extensible array data block'), 'EADB', 'extensible array data block');
      checkChecksum(b.subarray(0, head + 4), 'extensible array data block');
      for (let p = 0; p < np; ++p) {
        const bit = d * np + p;
        if (!(pageInit[bit >> 3] & (0x80 >> (bit & 7)))) continue;
        if (first + p * pageN >= maxIdx) break;
        const page = b.subarray(head + 4 + p * pageBytes, head + 4 + (p + 1) * pageBytes);
        checkChecksum(page, 'extensible array data block page');
        elements(page, first + p * pageN, pageN);
      }
    }
  }
}

async function btreeV2(ctx: Ctx): Promise<void> {
  const s = ctx.s;
  const PREFIX = 10;
  const hb = await ctx.src.read(ctx.abs(ctx.layout.indexAddr!), PREFIX + 4 + 2 + 2 + 2 + s.addr + 2 + s.len, 'B-tree v2 header');
  const h = new Cursor(hb, 'B-tree v2 header');
  h.signature('BTHD');
  if (h.u8() !== 0) throw new H5Unsupported('version 2 B-tree header version');
  checkChecksum(hb, 'version 2 B-tree header');
  const type = h.u8();
  if (type !== 10 && type !== 11) throw new H5FormatError(`version 2 B-tree of type ${type} indexes chunks`);
  const nodeSize = h.u32(), recSize = h.u16(), depth = h.u16();
  h.skip(2);
  const root = h.addr(s), rootN = h.u16(), total = h.len(s);
  const rank = ctx.layout.chunkDims!.length;
  const fixed = s.addr + 8 * rank + (type === 11 ? 4 : 0);
  let sizeBytes = 0;
  if (type === 11) {
    if (recSize <= fixed || recSize - fixed > 8) throw new H5FormatError('version 2 B-tree record size does not fit its type');
    sizeBytes = recSize - fixed;
  } else if (recSize !== fixed) throw new H5FormatError('version 2 B-tree record size does not fit its type');
  if (depth > 32 || nodeSize <= PREFIX + recSize || nodeSize > 1 << 24) throw new H5FormatError('version 2 B-tree node size or depth');
  const encSize = (v: number) => Math.floor(Math.floor(Math.log2(v)) / 8) + 1;
  const maxNrec = [Math.floor((nodeSize - PREFIX) / recSize)];
  const cumMax = [maxNrec[0]];
  const cumSize = [0];
  const maxNrecSize = encSize(maxNrec[0]);
  const ptrBytes = (d: number) => s.addr + maxNrecSize + cumSize[d - 1];
  for (let d = 1; d <= depth; ++d) {
    const ptr = ptrBytes(d);
    if (nodeSize < PREFIX + ptr) throw new H5FormatError('version 2 B-tree node size too small for its depth');
    maxNrec.push(Math.floor((nodeSize - (PREFIX + ptr)) / (recSize + ptr)));
    cumMax.push(checkedAdd(checkedMul(maxNrec[d] + 1, cumMax[d - 1], 'B-tree v2'), maxNrec[d], 'B-tree v2'));
    cumSize.push(encSize(cumMax[d]));
  }
  if (root === UNDEFINED_ADDR) {
    if (total !== 0) throw new H5FormatError('version 2 B-tree without a root holds records');
    return;
  }
  let records = 0;
  const seen = new Set<number>();
  const node = async (addr: number, nrec: number, d: number): Promise<void> => {
    if (seen.has(addr)) throw new H5FormatError('version 2 B-tree nodes form a cycle');
    seen.add(addr);
    if (nrec > maxNrec[d]) throw new H5FormatError('version 2 B-tree node holds more records than fit');
    const leaf = d === 0;
    const bytes = PREFIX + nrec * recSize + (leaf ? 0 : (nrec + 1) * ptrBytes(d));
    const b = await ctx.src.read(ctx.abs(addr), bytes, 'B-tree v2 node');
    const c = new Cursor(b, 'B-tree v2 node');
    c.signature(leaf ? 'BTLF' : 'BTIN');
    if (c.u8() !== 0) throw new H5Unsupported('version 2 B-tree node version');
    if (c.u8() !== type) throw new H5FormatError('version 2 B-tree node of another tree type');
    checkChecksum(b, 'version 2 B-tree node');
    const scaled = new Array<number>(rank);
    for (let i = 0; i < nrec; ++i) {
      const a = c.addr(s);
      let size = ctx.chunkBytes, mask = 0;
      if (type === 11) {
        size = c.uint(sizeBytes);
        mask = c.u32();
      }
      for (let k = 0; k < rank; ++k) scaled[k] = c.u64();
      if (++records > total) throw new H5FormatError('version 2 B-tree holds more records than its header says');
      ctx.grid.put(scaled, a, size, mask);
    }
    if (leaf) return;
    const kids: Array<[number, number]> = [];
    for (let i = 0; i <= nrec; ++i) {
      const child = c.addr(s), n = c.uint(maxNrecSize);
      if (d > 1) c.skip(cumSize[d - 1]);
      if (child === UNDEFINED_ADDR) throw new H5FormatError('version 2 B-tree child pointer undefined');
      kids.push([child, n]);
    }
    for (const [child, n] of kids) await node(child, n, d - 1);
  };
  await node(root, rootN, depth);
  if (records !== total) throw new H5FormatError(`version 2 B-tree holds ${records} records, its header says ${total}`);
}

function singleChunk(ctx: Ctx): void {
  const filtered = (ctx.layout.flags! & 0x2) !== 0;
  if (ctx.grid.count > 1) throw new H5FormatError(`single-chunk index on a dataset of ${ctx.grid.count} chunks`);
  ctx.grid.put(ctx.grid.grid.map(() => 0), ctx.layout.indexAddr!, filtered ? ctx.layout.singleSize! : ctx.chunkBytes,
    filtered ? ctx.layout.singleMask! : 0);
}

function implicitIndex(ctx: Ctx): void {
  ctx.grid.maxCount();
  const g = ctx.grid.grid, mg = ctx.grid.maxGrid;
  const sc = g.map(() => 0);
  for (let n = 0; n < ctx.grid.count; ++n) {
    let idx = 0;
    for (let i = 0; i < g.length; ++i) idx = idx * mg[i] + sc[i];
    ctx.grid.put(sc, checkedAdd(ctx.layout.indexAddr!, checkedMul(idx, ctx.chunkBytes, 'implicit index'), 'implicit index'), ctx.chunkBytes, 0);
    for (let i = g.length - 1; i >= 0; --i) {
      if (++sc[i] < g[i]) break;
      sc[i] = 0;
    }
  }
}

const METHOD: Record<string, string> = {
  btree_v1: 'version 1 B-tree', single: 'single chunk', implicit: 'implicit', fixed_array: 'fixed array',
  extensible_array: 'extensible array', btree_v2: 'version 2 B-tree',
};

export async function readChunkTable(src: ByteSource, s: Sizes, layout: Layout, dims: number[], maxDims: number[]): Promise<ChunkTable> {
  if (layout.layoutClass !== 'chunked') throw new H5FormatError('dataset is not chunked');
  const chunkDims = layout.chunkDims!;
  const grid = new Grid(dims, maxDims, chunkDims, src.size, s);
  let chunkBytes = layout.elementSize!;
  for (const d of chunkDims) chunkBytes = checkedMul(chunkBytes, d, 'chunk bytes');
  const ctx: Ctx = { src, s, layout, grid, chunkBytes, abs: (rel) => checkedAdd(s.base, rel, 'chunk index address') };
  if (layout.indexAddr !== UNDEFINED_ADDR) {
    switch (layout.index) {
      case 'btree_v1': await btreeV1(ctx); break;
      case 'fixed_array': await fixedArray(ctx); break;
      case 'extensible_array': await extensibleArray(ctx); break;
      case 'btree_v2': await btreeV2(ctx); break;
      case 'single': singleChunk(ctx); break;
      case 'implicit': implicitIndex(ctx); break;
      default: throw new H5Unsupported(`chunk index ${layout.index}`);
    }
  }
  return { file: src.name, dims, chunkDims, grid: grid.grid, offsets: grid.offsets, sizes: grid.sizes, masks: grid.masks,
    method: `parsed: ${METHOD[layout.index!]}` };
}

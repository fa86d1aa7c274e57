// Dense link storage of a group (more links than fit compactly: HDF5 moves them after 8 by default, so an
// EIGER/ARINA master with more than 8 data files has it): link messages stored as objects of a fractal heap
// ("FRHP", direct blocks "FHDB", indirect blocks "FHIB") and found through the version 2 B-tree name index
// (record type 5: name hash, heap ID). Format: HDF5 File Format Specification v3, "Fractal Heap" and
// "Version 2 B-trees"; sizes as H5HFdtable.c / H5HFhdr.c compute them.
import { ByteSource, Cursor, H5FormatError, H5Unsupported, Sizes, UNDEFINED_ADDR, checkChecksum, checkedAdd } from './byte_source';
import { Link, decodeLink } from './object_header';

const log2floor = (v: number) => Math.floor(Math.log2(v));
const encSize = (v: number) => Math.floor(log2floor(v) / 8) + 1;

// Every record (raw bytes) of a version 2 B-tree.
export async function walkBtreeV2(src: ByteSource, s: Sizes, addr: number, what: string, onRecord: (rec: Uint8Array) => void): Promise<void> {
  const abs = (rel: number) => checkedAdd(s.base, rel, what);
  const PREFIX = 10;
  const hb = await src.read(abs(addr), PREFIX + 4 + 2 + 2 + 2 + s.addr + 2 + s.len, `${what} header`);
  const h = new Cursor(hb, `${what} header`);
  h.signature('BTHD');
  if (h.u8() !== 0) throw new H5Unsupported(`${what}: version 2 B-tree header version`);
  checkChecksum(hb, `${what} header`);
  const type = h.u8(), nodeSize = h.u32(), recSize = h.u16(), depth = h.u16();
  h.skip(2);
  const root = h.addr(s), rootN = h.u16(), total = h.len(s);
  if (depth > 32 || recSize === 0 || nodeSize <= PREFIX + recSize || nodeSize > 1 << 24) throw new H5FormatError(`${what}: node size or depth`);
  const maxNrec = [Math.floor((nodeSize - PREFIX) / recSize)];
  const cumMax = [maxNrec[0]];
  const cumSize = [0];
  const maxNrecSize = encSize(maxNrec[0]);
  const ptrBytes = (d: number) => s.addr + maxNrecSize + cumSize[d - 1];
  for (let d = 1; d <= depth; ++d) {
    maxNrec.push(Math.floor((nodeSize - (PREFIX + ptrBytes(d))) / (recSize + ptrBytes(d))));
    cumMax.push((maxNrec[d] + 1) * cumMax[d - 1] + maxNrec[d]);
    cumSize.push(encSize(cumMax[d]));
  }
  if (root === UNDEFINED_ADDR) return;
  let records = 0;
  const seen = new Set<number>();
  const node = async (at: number, nrec: number, d: number): Promise<void> => {
    if (seen.has(at)) throw new H5FormatError(`${what}: nodes form a cycle`);
    seen.add(at);
    if (nrec > maxNrec[d]) throw new H5FormatError(`${what}: node holds more records than fit`);
    const leaf = d === 0;
    const b = await src.read(abs(at), PREFIX + nrec * recSize + (leaf ? 0 : (nrec + 1) * ptrBytes(d)), `${what} node`);
    const c = new Cursor(b, `${what} node`);
    c.signature(leaf ? 'BTLF' : 'BTIN');
    if (c.u8() !== 0) throw new H5Unsupported(`${what}: node version`);
    if (c.u8() !== type) throw new H5FormatError(`${what}: node of another tree type`);
    checkChecksum(b, `${what} node`);
    for (let i = 0; i < nrec; ++i) {
      if (++records > total) throw new H5FormatError(`${what}: more records than its header says`);
      onRecord(c.take(recSize));
    }
    if (leaf) return;
    const kids: Array<[number, number]> = [];
    for (let i = 0; i <= nrec; ++i) {
      const child = c.addr(s), n = c.uint(maxNrecSize);
      if (d > 1) c.skip(cumSize[d - 1]);
      kids.push([child, n]);
    }
    for (const [child, n] of kids) await node(child, n, d - 1);
  };
  await node(root, rootN, depth);
  if (records !== total) throw new H5FormatError(`${what}: ${records} records, its header says ${total}`);
}

interface Heap {
  idLen: number;
  filtered: boolean;
  checksumDirect: boolean;
  width: number;
  startSize: number;
  maxDirect: number;
  offSize: number;   // bytes of a heap offset
  lenSize: number;   // bytes of a managed object length in a heap ID
  rootAddr: number;
  rootRows: number;
  blocks: Array<{ off: number; size: number; addr: number }>;  // every direct block
}

function rowSize(h: Heap, r: number): number {
  return r === 0 ? h.startSize : h.startSize * 2 ** (r - 1);
}

async function readHeap(src: ByteSource, s: Sizes, addr: number, what: string): Promise<Heap> {
  const abs = (rel: number) => checkedAdd(s.base, rel, what);
  const b = await src.readUpTo(abs(addr), 4 + 1 + 2 + 2 + 1 + 4 + 12 * s.len + 3 * s.addr + 2 * 4 + 64, `${what} header`);
  const c = new Cursor(b, `${what} header`);
  c.signature('FRHP');
  if (c.u8() !== 0) throw new H5Unsupported(`${what}: fractal heap version`);
  const idLen = c.u16(), filterLen = c.u16(), flags = c.u8();
  const maxManaged = c.u32();
  c.len(s); c.addr(s); c.len(s); c.addr(s);  // huge object id / B-tree, free space, free space manager
  c.len(s); c.len(s); c.len(s); c.len(s); c.len(s); c.len(s); c.len(s); c.len(s);
  const width = c.u16(), startSize = c.len(s), maxDirect = c.len(s), maxHeapBits = c.u16();
  c.u16();  // starting rows of the root indirect block
  const rootAddr = c.addr(s), rootRows = c.u16();
  if (filterLen) throw new H5Unsupported(`${what}: filtered fractal heap`);
  checkChecksum(b.subarray(0, c.pos + 4), `${what} header`);
  const pow2 = (v: number) => v > 0 && (v & (v - 1)) === 0;
  if (!pow2(width) || !pow2(startSize) || !pow2(maxDirect) || maxHeapBits === 0 || maxHeapBits > 64)
    throw new H5FormatError(`${what}: fractal heap doubling table is invalid`);
  const offSize = Math.ceil(maxHeapBits / 8);
  const lenSize = Math.min(Math.ceil(log2floor(maxDirect) / 8), encSize(maxManaged));
  const h: Heap = { idLen, filtered: false, checksumDirect: (flags & 0x2) !== 0, width, startSize, maxDirect, offSize, lenSize,
    rootAddr, rootRows, blocks: [] };
  if (rootAddr === UNDEFINED_ADDR) return h;
  if (rootRows === 0) h.blocks.push({ off: 0, size: startSize, addr: rootAddr });
  else await indirect(src, s, h, rootAddr, rootRows, 0, what, new Set());
  return h;
}

async function indirect(src: ByteSource, s: Sizes, h: Heap, addr: number, nrows: number, blockOff: number, what: string, seen: Set<number>): Promise<void> {
  if (seen.has(addr) || seen.size > 4096) throw new H5FormatError(`${what}: indirect blocks form a cycle`);
  seen.add(addr);
  const maxDirectRows = log2floor(h.maxDirect) - log2floor(h.startSize) + 2;
  const entries = nrows * h.width;
  const b = await src.read(checkedAdd(s.base, addr, what), 4 + 1 + s.addr + h.offSize + entries * s.addr + 4, `${what} indirect block`);
  const c = new Cursor(b, `${what} indirect block`);
  c.signature('FHIB');
  if (c.u8() !== 0) throw new H5Unsupported(`${what}: indirect block version`);
  c.addr(s);
  if (c.uint(h.offSize) !== blockOff) throw new H5FormatError(`${what}: indirect block at the wrong heap offset`);
  checkChecksum(b, `${what} indirect block`);
  let off = blockOff;
  const firstRowBits = log2floor(h.startSize) + log2floor(h.width);
  for (let r = 0; r < nrows; ++r) {
    const size = rowSize(h, r);
    for (let col = 0; col < h.width; ++col, off += size) {
      const child = c.addr(s);
      if (child === UNDEFINED_ADDR) continue;
      if (r < maxDirectRows) h.blocks.push({ off, size, addr: child });
      else await indirect(src, s, h, child, log2floor(size) - firstRowBits + 1, off, what, seen);
    }
  }
}

async function heapObject(src: ByteSource, s: Sizes, h: Heap, id: Uint8Array, what: string): Promise<Uint8Array> {
  const c = new Cursor(id, `${what} heap ID`);
  const flags = c.u8();
  if (flags >> 6 !== 0) throw new H5Unsupported(`${what}: heap ID version ${flags >> 6}`);
  const type = (flags >> 4) & 3;
  if (type === 2) {  // tiny: stored in the ID
    const n = (flags & 0x0f) + 1;
    return c.take(n);
  }
  if (type !== 0) throw new H5Unsupported(`${what}: huge fractal heap objects`);
  const off = c.uint(h.offSize), len = c.uint(h.lenSize);
  const blk = h.blocks.find((x) => off >= x.off && off < x.off + x.size);
  if (!blk) throw new H5FormatError(`${what}: heap object at offset ${off} lies in no direct block`);
  if (off + len > blk.off + blk.size) throw new H5FormatError(`${what}: heap object runs past its direct block`);
  const head = await src.read(checkedAdd(s.base, blk.addr, what), 5, `${what} direct block`);
  new Cursor(head, `${what} direct block`).signature('FHDB');
  return src.read(checkedAdd(s.base, blk.addr, what) + (off - blk.off), len, `${what} object`);
}

// Links of a group stored densely (link info message: fractal heap + name index B-tree).
export async function denseLinks(src: ByteSource, s: Sizes, heapAddr: number, nameIndex: number, out: Map<string, Link>): Promise<void> {
  const what = `${src.name}: dense link storage`;
  const heap = await readHeap(src, s, heapAddr, what);
  const ids: Uint8Array[] = [];
  await walkBtreeV2(src, s, nameIndex, `${what} name index`, (rec) => ids.push(rec.slice(4, 4 + heap.idLen)));
  for (const id of ids) {
    const l = decodeLink(await heapObject(src, s, heap, id, what), s);
    out.set(l.name, l);
  }
}

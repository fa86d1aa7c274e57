// HDF5 superblock (versions 0-3) and object headers (versions 1 and 2, continuation blocks followed), with the
// messages a 4D-STEM reader needs decoded: dataspace, datatype, data layout, filter pipeline, links, link info,
// symbol table, attributes. Layout facts: HDF5 File Format Specification version 3 ("Disk Format Level 0/2").
import { ByteSource, Cursor, H5FormatError, H5Unsupported, Sizes, UNDEFINED_ADDR, checkChecksum, checkedAdd } from './byte_source';

export const MSG = {
  dataspace: 0x1, linkInfo: 0x2, datatype: 0x3, layout: 0x8, filters: 0xb, attribute: 0xc, link: 0x6,
  continuation: 0x10, symbolTable: 0x11, attributeInfo: 0x15,
} as const;

export interface Superblock {
  version: number;
  sizes: Sizes;
  rootAddr: number;       // root group object header (relative address)
  eofAddr: number;
}

const SIGNATURE = [0x89, 0x48, 0x44, 0x46, 0x0d, 0x0a, 0x1a, 0x0a];

export async function readSuperblock(src: ByteSource): Promise<Superblock> {
  // The signature sits at 0, 512, 1024, 2048, ... (after a user block).
  for (let at = 0; at + 8 <= src.size; at = at === 0 ? 512 : at * 2) {
    const b = await src.readUpTo(at, 256, 'superblock');
    if (!SIGNATURE.every((v, i) => b[i] === v)) continue;
    const c = new Cursor(b, `${src.name}: superblock`, 8);
    const version = c.u8();
    if (version === 0 || version === 1) {
      c.skip(4);  // free-space, root symbol table, reserved, shared header versions
      const addr = c.u8(), len = c.u8();
      c.skip(1 + 2 + 2 + 4 + (version === 1 ? 4 : 0));
      const sizes: Sizes = { addr, len, base: 0 };
      checkSizes(src, sizes);
      const base = c.addr(sizes);
      c.addr(sizes);  // free space info
      const eofAddr = c.addr(sizes);
      c.addr(sizes);  // driver info
      c.addr(sizes);  // root symbol table entry: link name offset
      const rootAddr = c.addr(sizes);
      sizes.base = base === UNDEFINED_ADDR ? at : base;
      return { version, sizes, rootAddr, eofAddr };
    }
    if (version === 2 || version === 3) {
      const addr = c.u8(), len = c.u8();
      c.skip(1);  // flags
      const sizes: Sizes = { addr, len, base: 0 };
      checkSizes(src, sizes);
      const base = c.addr(sizes);
      c.addr(sizes);  // superblock extension
      const eofAddr = c.addr(sizes);
      const rootAddr = c.addr(sizes);
      checkChecksum(b.subarray(0, c.pos + 4), `${src.name}: superblock`);
      sizes.base = base === UNDEFINED_ADDR ? at : base;
      return { version, sizes, rootAddr, eofAddr };
    }
    throw new H5Unsupported(`${src.name}: superblock version ${version}`);
  }
  throw new H5FormatError(`${src.name} is not an HDF5 file (no HDF5 signature found)`);
}

function checkSizes(src: ByteSource, s: Sizes): void {
  for (const v of [s.addr, s.len])
    if (![2, 4, 8].includes(v)) throw new H5FormatError(`${src.name}: superblock gives ${v}-byte addresses or lengths`);
}

export interface Message {
  type: number;
  flags: number;
  data: Uint8Array;
}

const MAX_BLOCKS = 4096;

// Every message of the object header at relative address `addr`.
export async function readObjectHeader(src: ByteSource, sizes: Sizes, addr: number): Promise<Message[]> {
  const out: Message[] = [];
  const pending: Array<[number, number]> = [];
  const seen = new Set<number>([addr]);
  const abs = (rel: number) => checkedAdd(sizes.base, rel, 'object header address');
  const what = `${src.name}: object header at ${addr}`;
  const keep = (type: number, flags: number, data: Uint8Array) => {
    if (type === MSG.continuation) {
      const c = new Cursor(data, `${what}: continuation message`);
      const a = c.addr(sizes), l = c.len(sizes);
      if (a === UNDEFINED_ADDR || l === 0) throw new H5FormatError(`${what}: continuation points nowhere`);
      pending.push([a, l]);
    } else {
      out.push({ type, flags, data });
    }
  };
  const v1Messages = (b: Uint8Array) => {
    const c = new Cursor(b, `${what} (v1)`);
    while (c.remaining >= 8) {
      const type = c.u16(), size = c.u16(), flags = c.u8();
      c.skip(3);
      keep(type, flags, c.take(size));
    }
  };
  let crtOrder = false;
  const v2Messages = (b: Uint8Array) => {
    const head = crtOrder ? 6 : 4;
    const c = new Cursor(b, `${what} (v2)`);
    while (c.remaining >= head) {
      const type = c.u8(), size = c.u16(), flags = c.u8();
      if (crtOrder) c.skip(2);
      keep(type, flags, c.take(size));
    }
  };
  const first = await src.read(abs(addr), Math.min(6, src.size - Math.min(src.size, abs(addr))), what);
  if (first.length < 6) throw new H5FormatError(`${what} lies beyond the end of the file`);
  const v2 = first[0] === 0x4f && first[1] === 0x48 && first[2] === 0x44 && first[3] === 0x52;  // OHDR
  if (v2) {
    if (first[4] !== 2) throw new H5Unsupported(`object header version ${first[4]}`);
    const flags = first[5];
    if (flags & 0xc0) throw new H5FormatError(`${what} has unknown flags`);
    crtOrder = (flags & 0x04) !== 0;
    const prefix = 6 + (flags & 0x20 ? 16 : 0) + (flags & 0x10 ? 4 : 0);
    const sizeBytes = 1 << (flags & 0x03);
    const pre = await src.read(abs(addr), prefix + sizeBytes, what);
    const chunk0 = new Cursor(pre, what, prefix).uint(sizeBytes);
    const block = await src.read(abs(addr), checkedAdd(prefix + sizeBytes + 4, chunk0, what), what);
    checkChecksum(block, what);
    v2Messages(block.subarray(prefix + sizeBytes, prefix + sizeBytes + chunk0));
  } else if (first[0] === 1) {
    const pre = await src.read(abs(addr), 16, what);
    const len = new Cursor(pre, what, 8).u32();
    v1Messages(await src.read(abs(addr) + 16, len, what));
  } else {
    throw new H5Unsupported(`${what}: object header version ${first[0]}`);
  }
  while (pending.length) {
    const [a, l] = pending.pop()!;
    if (seen.has(a)) throw new H5FormatError(`${what}: continuation blocks form a cycle`);
    seen.add(a);
    if (seen.size > MAX_BLOCKS) throw new H5FormatError(`${what}: too many continuation blocks`);
    const block = await src.read(abs(a), l, `${what}: continuation block`);
    if (v2) {
      const c = new Cursor(block, `${what}: continuation block`);
      c.signature('OCHK');
      checkChecksum(block, `${what}: continuation block`);
      v2Messages(block.subarray(4, block.length - 4));
    } else {
      v1Messages(block);
    }
  }
  return out;
}

// ---- message decoders -------------------------------------------------------------------------------------

export const UNLIMITED = Number.POSITIVE_INFINITY;

export interface Dataspace {
  dims: number[];
  maxDims: number[];  // UNLIMITED for an unlimited dimension
}

export function decodeDataspace(data: Uint8Array, sizes: Sizes): Dataspace {
  const c = new Cursor(data, 'dataspace message');
  const version = c.u8();
  if (version < 1 || version > 2) throw new H5Unsupported(`dataspace message version ${version}`);
  const rank = c.u8(), flags = c.u8();
  if (rank > 32) throw new H5FormatError(`dataspace has rank ${rank}`);
  if (version === 1) c.skip(5);
  else {
    const type = c.u8();
    if (type === 2) return { dims: [0], maxDims: [0] };  // null dataspace: no elements
    if (type === 0) return { dims: [], maxDims: [] };    // scalar
    if (type !== 1) throw new H5Unsupported(`dataspace of type ${type}`);
  }
  const dims: number[] = [];
  for (let i = 0; i < rank; ++i) dims.push(c.len(sizes));
  let maxDims = dims.slice();
  if (flags & 1) {
    maxDims = [];
    for (let i = 0; i < rank; ++i) {
      const d = c.len(sizes);
      maxDims.push(d === UNDEFINED_ADDR ? UNLIMITED : d);
    }
  }
  for (const d of dims) if (d === UNDEFINED_ADDR) throw new H5FormatError('dataspace dimension is all ones');
  return { dims, maxDims };
}

export type NumberKind = 'uint' | 'int' | 'float' | 'string' | 'other';

export interface Datatype {
  kind: NumberKind;
  size: number;      // bytes per element
  bigEndian: boolean;
  bitOffset: number; // integers: the value's first bit in the element (0 for plain counts)
  precision: number; // integers: the value's bits (8 x size for plain counts)
}

export function decodeDatatype(data: Uint8Array): Datatype {
  const c = new Cursor(data, 'datatype message');
  const cv = c.u8();
  const cls = cv & 0x0f;
  const bits0 = c.u8();
  c.skip(2);
  const size = c.u32();
  const bigEndian = (bits0 & 1) !== 0;
  const plain = { bitOffset: 0, precision: 8 * size };
  if (cls === 0) {  // fixed-point properties: bit offset, bit precision
    const bitOffset = c.u16(), precision = c.u16();
    return { kind: bits0 & 0x08 ? 'int' : 'uint', size, bigEndian, bitOffset, precision };
  }
  if (cls === 1) return { kind: 'float', size, bigEndian, ...plain };
  if (cls === 3) return { kind: 'string', size, bigEndian: false, ...plain };
  return { kind: 'other', size, bigEndian, ...plain };
}

export type LayoutClass = 'compact' | 'contiguous' | 'chunked' | 'virtual';
export type IndexType = 'btree_v1' | 'single' | 'implicit' | 'fixed_array' | 'extensible_array' | 'btree_v2';

export interface Layout {
  version: number;
  layoutClass: LayoutClass;
  // contiguous
  address?: number;
  size?: number;
  // compact
  compact?: Uint8Array;
  // chunked
  chunkDims?: number[];
  elementSize?: number;
  index?: IndexType;
  indexAddr?: number;
  flags?: number;
  singleSize?: number;
  singleMask?: number;
}

const INDEX_TYPES: IndexType[] = ['single', 'implicit', 'fixed_array', 'extensible_array', 'btree_v2'];

export function decodeLayout(data: Uint8Array, sizes: Sizes): Layout {
  const c = new Cursor(data, 'data layout message');
  const version = c.u8();
  if (version < 3 || version > 4) throw new H5Unsupported(`data layout message version ${version}`);
  const cls = c.u8();
  const classes: LayoutClass[] = ['compact', 'contiguous', 'chunked', 'virtual'];
  if (cls > 3) throw new H5FormatError(`unknown layout class ${cls}`);
  const l: Layout = { version, layoutClass: classes[cls] };
  if (l.layoutClass === 'compact') {
    const n = c.u16();
    l.compact = c.take(n);
    return l;
  }
  if (l.layoutClass === 'contiguous') {
    l.address = c.addr(sizes);
    l.size = c.len(sizes);
    return l;
  }
  if (l.layoutClass === 'virtual') return l;
  const split = (all: number[]) => {
    if (all.length < 2) throw new H5FormatError(`layout message has ${all.length} chunk dimensions`);
    if (all.some((d) => d <= 0)) throw new H5FormatError('layout message has a zero chunk dimension');
    l.chunkDims = all.slice(0, -1);
    l.elementSize = all[all.length - 1];
  };
  if (version === 3) {
    const ndims = c.u8();
    l.indexAddr = c.addr(sizes);
    const all: number[] = [];
    for (let i = 0; i < ndims; ++i) all.push(c.u32());
    split(all);
    l.index = 'btree_v1';
    return l;
  }
  l.flags = c.u8();
  if (l.flags & ~0x3) throw new H5FormatError('layout message has unknown flags');
  const ndims = c.u8(), enc = c.u8();
  if (enc < 1 || enc > 8) throw new H5FormatError(`layout message encodes chunk dimensions in ${enc} bytes`);
  const all: number[] = [];
  for (let i = 0; i < ndims; ++i) all.push(c.uint(enc));
  split(all);
  const type = c.u8();
  if (type < 1 || type > 5) throw new H5Unsupported(`chunk index type ${type}`);
  l.index = INDEX_TYPES[type - 1];
  if (l.index === 'single' && l.flags & 0x2) {
    l.singleSize = c.len(sizes);
    l.singleMask = c.u32();
  } else if (l.index === 'fixed_array') c.skip(1);
  else if (l.index === 'extensible_array') c.skip(5);
  else if (l.index === 'btree_v2') c.skip(6);
  l.indexAddr = c.addr(sizes);
  return l;
}

export interface Filter {
  id: number;
  name: string;
  flags: number;
  cdValues: number[];
}

export function decodeFilters(data: Uint8Array): Filter[] {
  const c = new Cursor(data, 'filter pipeline message');
  const version = c.u8();
  const n = c.u8();
  if (version === 1) c.skip(6);
  else if (version !== 2) throw new H5Unsupported(`filter pipeline message version ${version}`);
  const out: Filter[] = [];
  for (let i = 0; i < n; ++i) {
    const id = c.u16();
    const nameLen = version === 1 || id >= 256 ? c.u16() : 0;
    const flags = c.u16(), nvalues = c.u16();
    let name = '';
    if (nameLen) {
      const raw = c.take(version === 1 ? (nameLen + 7) & ~7 : nameLen);
      name = new TextDecoder().decode(raw.subarray(0, raw.indexOf(0) >= 0 ? raw.indexOf(0) : raw.length));
    }
    const cdValues: number[] = [];
    for (let k = 0; k < nvalues; ++k) cdValues.push(c.u32());
    if (version === 1 && nvalues % 2) c.skip(4);
    out.push({ id, name, flags, cdValues });
  }
  return out;
}

export type Link =
  | { name: string; kind: 'hard'; addr: number }
  | { name: string; kind: 'soft'; target: string }
  | { name: string; kind: 'external'; file: string; target: string };

export function decodeLink(data: Uint8Array, sizes: Sizes): Link {
  const c = new Cursor(data, 'link message');
  if (c.u8() !== 1) throw new H5Unsupported('link message version');
  const flags = c.u8();
  const type = flags & 0x8 ? c.u8() : 0;
  if (flags & 0x4) c.skip(8);
  if (flags & 0x10) c.skip(1);
  const nameLen = c.uint(1 << (flags & 3));
  const name = new TextDecoder().decode(c.take(nameLen));
  if (type === 0) return { name, kind: 'hard', addr: c.addr(sizes) };
  if (type === 1) return { name, kind: 'soft', target: new TextDecoder().decode(c.take(c.u16())) };
  if (type === 64) {
    const info = new Cursor(c.take(c.u16()), `external link '${name}'`);
    info.u8();  // version and flags
    const file = info.cstring();
    return { name, kind: 'external', file, target: info.cstring() };
  }
  throw new H5Unsupported(`link '${name}' of type ${type}`);
}

export interface Attribute {
  name: string;
  type: Datatype;
  space: Dataspace;
  raw: Uint8Array;
}

export function decodeAttribute(data: Uint8Array, sizes: Sizes): Attribute {
  const c = new Cursor(data, 'attribute message');
  const version = c.u8();
  if (version < 1 || version > 3) throw new H5Unsupported(`attribute message version ${version}`);
  const flags = c.u8();
  if (flags & 0x3) throw new H5Unsupported('attribute with a shared datatype or dataspace');
  const nameSize = c.u16(), typeSize = c.u16(), spaceSize = c.u16();
  if (version === 3) c.skip(1);
  const pad = (n: number) => (version === 1 ? (n + 7) & ~7 : n);
  const nameBytes = c.take(pad(nameSize));
  const name = new TextDecoder().decode(nameBytes.subarray(0, Math.max(0, nameSize - 1)));
  const type = decodeDatatype(c.take(pad(typeSize)));
  const space = decodeDataspace(c.take(pad(spaceSize)), sizes);
  return { name, type, space, raw: c.bytes.subarray(c.pos) };
}

// Numbers of an integer or float array in little- or big-endian storage.
export function decodeNumbers(raw: Uint8Array, type: Datatype, count: number, what: string): number[] {
  if (type.kind !== 'uint' && type.kind !== 'int' && type.kind !== 'float')
    throw new H5FormatError(`${what} is not numeric`);
  if (raw.length < count * type.size) throw new H5FormatError(`${what} holds ${raw.length} bytes for ${count} values`);
  const v = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const le = !type.bigEndian;
  const out: number[] = [];
  for (let i = 0; i < count; ++i) {
    const o = i * type.size;
    if (type.kind === 'float') {
      if (type.size === 4) out.push(v.getFloat32(o, le));
      else if (type.size === 8) out.push(v.getFloat64(o, le));
      else throw new H5Unsupported(`${what}: float of ${type.size} bytes`);
    } else if (type.size === 1) out.push(type.kind === 'int' ? v.getInt8(o) : v.getUint8(o));
    else if (type.size === 2) out.push(type.kind === 'int' ? v.getInt16(o, le) : v.getUint16(o, le));
    else if (type.size === 4) out.push(type.kind === 'int' ? v.getInt32(o, le) : v.getUint32(o, le));
    else if (type.size === 8) out.push(Number(type.kind === 'int' ? v.getBigInt64(o, le) : v.getBigUint64(o, le)));
    else throw new H5Unsupported(`${what}: integer of ${type.size} bytes`);
  }
  return out;
}

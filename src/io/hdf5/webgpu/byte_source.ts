// Bytes of a local file read on demand (File/Blob.slice), and a little-endian cursor with checked reads.
// Every size from the file is checked against the bytes at hand: a short or corrupt file raises H5FormatError
// naming what was being read, never a crash or a silently wrong value.

export class H5FormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'H5FormatError';
  }
}

export class H5Unsupported extends H5FormatError {
  constructor(what: string) {
    super(`unsupported HDF5 feature: ${what}`);
    this.name = 'H5Unsupported';
  }
}

export const UNDEFINED_ADDR = -1;  // all-ones address ("undefined") as read by Cursor.addr

// Reads byte ranges of one file. `Blob` is what a file picker or drop gives (File extends Blob).
export class ByteSource {
  readonly size: number;
  reads = 0;
  bytesRead = 0;
  constructor(readonly name: string, private blob: Blob) {
    this.size = blob.size;
  }

  async read(offset: number, length: number, what: string): Promise<Uint8Array> {
    if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0)
      throw new H5FormatError(`${this.name}: ${what} at an invalid position (${offset}, ${length} bytes)`);
    if (offset + length > this.size)
      throw new H5FormatError(`${this.name}: ${what} (byte ${offset}, ${length} bytes) lies beyond the end of the file ` +
        `(${this.size} bytes; truncated?)`);
    ++this.reads;
    this.bytesRead += length;
    return new Uint8Array(await this.blob.slice(offset, offset + length).arrayBuffer());
  }

  // Up to `length` bytes (fewer at the end of the file).
  async readUpTo(offset: number, length: number, what: string): Promise<Uint8Array> {
    return this.read(offset, Math.max(0, Math.min(length, this.size - offset)), what);
  }
}

export interface Sizes {
  addr: number;  // bytes of a file address (superblock "size of offsets")
  len: number;   // bytes of a length
  base: number;  // base address (user block)
}

export function checkedAdd(a: number, b: number, what: string): number {
  const s = a + b;
  if (!Number.isSafeInteger(s)) throw new H5FormatError(`${what}: size overflows`);
  return s;
}

export function checkedMul(a: number, b: number, what: string): number {
  const s = a * b;
  if (!Number.isSafeInteger(s)) throw new H5FormatError(`${what}: size overflows`);
  return s;
}

export class Cursor {
  pos = 0;
  private view: DataView;
  constructor(readonly bytes: Uint8Array, readonly what: string, start = 0) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }
  get remaining(): number {
    return this.bytes.length - this.pos;
  }
  private need(n: number): number {
    if (n < 0 || this.pos + n > this.bytes.length)
      throw new H5FormatError(`${this.what} is truncated (needs ${n} bytes at ${this.pos} of ${this.bytes.length})`);
    const at = this.pos;
    this.pos += n;
    return at;
  }
  skip(n: number): void {
    this.need(n);
  }
  u8(): number {
    return this.view.getUint8(this.need(1));
  }
  u16(): number {
    return this.view.getUint16(this.need(2), true);
  }
  u32(): number {
    return this.view.getUint32(this.need(4), true);
  }
  // Unsigned little-endian of n bytes (1..8). All-ones of 8 bytes reads as UNDEFINED_ADDR; other values above
  // 2^53 raise (no file this reader serves has them).
  uint(n: number): number {
    if (n < 1 || n > 8) throw new H5FormatError(`${this.what}: field of ${n} bytes`);
    const at = this.need(n);
    let allOnes = true;
    for (let i = 0; i < n; ++i) if (this.bytes[at + i] !== 0xff) allOnes = false;
    if (allOnes) return UNDEFINED_ADDR;
    let v = 0;
    for (let i = n - 1; i >= 0; --i) v = v * 256 + this.bytes[at + i];
    if (!Number.isSafeInteger(v)) throw new H5FormatError(`${this.what}: value beyond 2^53 at byte ${at}`);
    return v;
  }
  u64(): number {
    return this.uint(8);
  }
  addr(s: Sizes): number {
    return this.uint(s.addr);
  }
  len(s: Sizes): number {
    return this.uint(s.len);
  }
  take(n: number): Uint8Array {
    const at = this.need(n);
    return this.bytes.subarray(at, at + n);
  }
  signature(sig: string): void {
    const at = this.need(4);
    const got = String.fromCharCode(...this.bytes.subarray(at, at + 4));
    if (got !== sig) throw new H5FormatError(`${this.what}: signature '${got}' where '${sig}' belongs`);
  }
  cstring(): string {
    let end = this.pos;
    while (end < this.bytes.length && this.bytes[end] !== 0) ++end;
    if (end >= this.bytes.length) throw new H5FormatError(`${this.what}: unterminated string`);
    const s = new TextDecoder().decode(this.bytes.subarray(this.pos, end));
    this.pos = end + 1;
    return s;
  }
  f32(): number {
    return this.view.getFloat32(this.need(4), true);
  }
  f64(): number {
    return this.view.getFloat64(this.need(8), true);
  }
}

// Jenkins lookup3 hashlittle, as H5_checksum_lookup3 (metadata checksums of format version 2+ structures).
export function lookup3(bytes: Uint8Array, initval = 0): number {
  let a = (0xdeadbeef + bytes.length + initval) >>> 0;
  let b = a, c = a;
  const rot = (x: number, k: number) => ((x << k) | (x >>> (32 - k))) >>> 0;
  let i = 0, length = bytes.length;
  const k = (o: number) => bytes[i + o] | (bytes[i + o + 1] << 8) | (bytes[i + o + 2] << 16) | (bytes[i + o + 3] << 24);
  while (length > 12) {
    a = (a + (k(0) >>> 0)) >>> 0;
    b = (b + (k(4) >>> 0)) >>> 0;
    c = (c + (k(8) >>> 0)) >>> 0;
    a = (a - c) >>> 0; a ^= rot(c, 4); c = (c + b) >>> 0;
    b = (b - a) >>> 0; b ^= rot(a, 6); a = (a + c) >>> 0;
    c = (c - b) >>> 0; c ^= rot(b, 8); b = (b + a) >>> 0;
    a = (a - c) >>> 0; a ^= rot(c, 16); c = (c + b) >>> 0;
    b = (b - a) >>> 0; b ^= rot(a, 19); a = (a + c) >>> 0;
    c = (c - b) >>> 0; c ^= rot(b, 4); b = (b + a) >>> 0;
    a >>>= 0; b >>>= 0; c >>>= 0;
    length -= 12;
    i += 12;
  }
  const t = (o: number, sh: number) => (o < length ? bytes[i + o] << sh : 0) >>> 0;
  if (length === 0) return c >>> 0;
  c = (c + t(8, 0) + t(9, 8) + t(10, 16) + t(11, 24)) >>> 0;
  b = (b + t(4, 0) + t(5, 8) + t(6, 16) + t(7, 24)) >>> 0;
  a = (a + t(0, 0) + t(1, 8) + t(2, 16) + t(3, 24)) >>> 0;
  c ^= b; c = (c - rot(b, 14)) >>> 0;
  a ^= c; a = (a - rot(c, 11)) >>> 0;
  b ^= a; b = (b - rot(a, 25)) >>> 0;
  c ^= b; c = (c - rot(b, 16)) >>> 0;
  a ^= c; a = (a - rot(c, 4)) >>> 0;
  b ^= a; b = (b - rot(a, 14)) >>> 0;
  c ^= b; c = (c - rot(b, 24)) >>> 0;
  return c >>> 0;
}

// A metadata block whose last 4 bytes are the lookup3 checksum of the rest.
export function checkChecksum(block: Uint8Array, what: string): void {
  if (block.length < 4) throw new H5FormatError(`${what} is too short for its checksum`);
  const n = block.length - 4;
  const stored = (block[n] | (block[n + 1] << 8) | (block[n + 2] << 16) | (block[n + 3] << 24)) >>> 0;
  if (lookup3(block.subarray(0, n)) !== stored) throw new H5FormatError(`checksum mismatch in ${what}`);
}

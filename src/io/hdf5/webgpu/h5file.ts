// One HDF5 file opened from a File/Blob: group navigation (symbol-table groups and link-message groups), soft
// and external links (across the files the user picked together), dataset metadata, attributes and small
// contiguous/compact datasets. Chunk data is read on demand through the chunk table (chunk_index.ts).
import { ByteSource, Cursor, H5FormatError, H5Unsupported, Sizes, UNDEFINED_ADDR, checkedAdd, checkedMul } from './byte_source';
import { ChunkTable, readChunkTable } from './chunk_index';
import { denseLinks } from './dense_links';
import {
  Attribute, Dataspace, Datatype, Filter, Layout, Link, MSG, Message, Superblock, decodeAttribute, decodeDataspace,
  decodeDatatype, decodeFilters, decodeLayout, decodeLink, decodeNumbers, readObjectHeader, readSuperblock,
} from './object_header';

export interface DatasetMeta {
  file: H5File;
  path: string;             // path inside `file` (links followed)
  space: Dataspace;
  type: Datatype;
  layout: Layout;
  filters: Filter[];
  attributes: Attribute[];
}

export interface ObjectRef {
  file: H5File;
  addr: number;
  path: string;
}

// Opens files by the names external links give (relative names: the files picked together, matched by base name).
export type FileResolver = (name: string, from: H5File) => Promise<H5File>;

const MAX_LINK_HOPS = 32;

export class H5File {
  private headers = new Map<number, Promise<Message[]>>();
  private constructor(readonly src: ByteSource, readonly superblock: Superblock, readonly resolver: FileResolver | null) {}

  get name(): string {
    return this.src.name;
  }
  get sizes(): Sizes {
    return this.superblock.sizes;
  }

  static async open(src: ByteSource, resolver: FileResolver | null = null): Promise<H5File> {
    return new H5File(src, await readSuperblock(src), resolver);
  }

  header(addr: number): Promise<Message[]> {
    let h = this.headers.get(addr);
    if (!h) {
      h = readObjectHeader(this.src, this.sizes, addr);
      this.headers.set(addr, h);
    }
    return h;
  }

  // The links of the group whose object header is at addr, by name.
  async links(addr: number): Promise<Map<string, Link>> {
    const msgs = await this.header(addr);
    const out = new Map<string, Link>();
    const st = msgs.find((m) => m.type === MSG.symbolTable);
    if (st) {
      const c = new Cursor(st.data, 'symbol table message');
      await this.symbolTableLinks(c.addr(this.sizes), c.addr(this.sizes), out);
    }
    for (const m of msgs) if (m.type === MSG.link) {
      const l = decodeLink(m.data, this.sizes);
      out.set(l.name, l);
    }
    const li = msgs.find((m) => m.type === MSG.linkInfo);
    if (li) {
      const c = new Cursor(li.data, 'link info message');
      c.u8();
      const flags = c.u8();
      if (flags & 1) c.skip(8);
      const heap = c.addr(this.sizes);
      const nameIndex = c.addr(this.sizes);
      if (heap !== UNDEFINED_ADDR) await denseLinks(this.src, this.sizes, heap, nameIndex, out);
    }
    return out;
  }

  private async symbolTableLinks(btree: number, heapAddr: number, out: Map<string, Link>): Promise<void> {
    const s = this.sizes;
    const abs = (rel: number) => checkedAdd(s.base, rel, 'group address');
    const hb = await this.src.read(abs(heapAddr), 8 + 2 * s.len + s.addr, 'local heap');
    const hc = new Cursor(hb, 'local heap');
    hc.signature('HEAP');
    hc.skip(4);
    const dataSize = hc.len(s);
    hc.len(s);
    const heap = await this.src.read(abs(hc.addr(s)), dataSize, 'local heap data');
    const nameAt = (off: number) => {
      if (off >= heap.length) throw new H5FormatError('symbol table name beyond the local heap');
      return new Cursor(heap, 'local heap name', off).cstring();
    };
    const seen = new Set<number>();
    const node = async (addr: number): Promise<void> => {
      if (seen.has(addr) || seen.size > 100000) throw new H5FormatError('group B-tree nodes form a cycle');
      seen.add(addr);
      const pre = await this.src.read(abs(addr), 8 + 2 * s.addr, 'group B-tree node');
      const c = new Cursor(pre, 'group B-tree node');
      const sig = String.fromCharCode(...pre.subarray(0, 4));
      if (sig === 'SNOD') {
        const n = new Cursor(await this.src.read(abs(addr), 8, 'symbol table node'), 'symbol table node', 6).u16();
        const entry = 2 * s.addr + 24;
        const b = await this.src.read(abs(addr) + 8, n * entry, 'symbol table node');
        const e = new Cursor(b, 'symbol table node');
        for (let i = 0; i < n; ++i) {
          const name = nameAt(e.addr(s));
          const obj = e.addr(s);
          const cache = e.u32();
          e.skip(4);
          const scratch = e.take(16);
          if (cache === 2) out.set(name, { name, kind: 'soft', target: nameAt(new Cursor(scratch, 'soft link').u32()) });
          else out.set(name, { name, kind: 'hard', addr: obj });
        }
        return;
      }
      c.signature('TREE');
      if (c.u8() !== 0) throw new H5FormatError('group B-tree node is not a group node (type 0)');
      c.u8();
      const entries = c.u16();
      const body = await this.src.read(abs(addr) + 8 + 2 * s.addr, entries * (s.len + s.addr) + s.len, 'group B-tree node');
      const b = new Cursor(body, 'group B-tree node');
      const kids: number[] = [];
      for (let i = 0; i < entries; ++i) {
        b.len(s);
        kids.push(b.addr(s));
      }
      for (const k of kids) await node(k);
    };
    await node(btree);
  }

  // Follows `path` from the root; soft links are resolved in their file, external links through the resolver.
  async resolve(path: string, hops = 0): Promise<ObjectRef> {
    if (hops > MAX_LINK_HOPS) throw new H5FormatError(`${this.name}: more than ${MAX_LINK_HOPS} links followed for '${path}'`);
    const parts = path.split('/').filter((p) => p && p !== '.');
    let addr = this.superblock.rootAddr;
    let here = '';
    for (let i = 0; i < parts.length; ++i) {
      const links = await this.links(addr);
      const l = links.get(parts[i]);
      if (!l) throw new H5FormatError(`${this.name}: no object '${here}/${parts[i]}' (looking for '${path}')`);
      const rest = parts.slice(i + 1).join('/');
      if (l.kind === 'soft') {
        const target = l.target.startsWith('/') ? l.target : `${here}/${l.target}`;
        return this.resolve(`${target}/${rest}`, hops + 1);
      }
      if (l.kind === 'external') {
        if (!this.resolver) throw new H5FormatError(`${this.name}: '${here}/${l.name}' links to '${l.file}', and no other file was given`);
        const other = await this.resolver(l.file, this);
        return other.resolve(`${l.target}/${rest}`, hops + 1);
      }
      addr = l.addr;
      here = `${here}/${parts[i]}`;
    }
    return { file: this, addr, path: here || '/' };
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.resolve(path);
      return true;
    } catch (e) {
      if (e instanceof H5FormatError && /no object/.test(e.message)) return false;
      throw e;
    }
  }

  // The link itself (not followed) of `path`'s last component.
  async link(path: string): Promise<Link | undefined> {
    const i = path.lastIndexOf('/');
    const parent = await this.resolve(path.slice(0, i) || '/');
    return (await parent.file.links(parent.addr)).get(path.slice(i + 1));
  }

  async dataset(path: string): Promise<DatasetMeta> {
    const ref = await this.resolve(path);
    const msgs = await ref.file.header(ref.addr);
    const one = (type: number, what: string) => {
      const m = msgs.find((x) => x.type === type);
      if (!m) throw new H5FormatError(`${ref.file.name}: '${ref.path}' is not a dataset (no ${what} message)`);
      if (m.flags & 0x2) throw new H5Unsupported(`${ref.file.name}: '${ref.path}' has a shared ${what} message`);
      return m.data;
    };
    const s = ref.file.sizes;
    const fm = msgs.find((m) => m.type === MSG.filters);
    return {
      file: ref.file, path: ref.path,
      space: decodeDataspace(one(MSG.dataspace, 'dataspace'), s),
      type: decodeDatatype(one(MSG.datatype, 'datatype')),
      layout: decodeLayout(one(MSG.layout, 'data layout'), s),
      filters: fm ? decodeFilters(fm.data) : [],
      attributes: msgs.filter((m) => m.type === MSG.attribute).map((m) => decodeAttribute(m.data, s)),
    };
  }

  async attributes(path: string): Promise<Attribute[]> {
    const ref = await this.resolve(path);
    const msgs = await ref.file.header(ref.addr);
    return msgs.filter((m) => m.type === MSG.attribute).map((m) => decodeAttribute(m.data, ref.file.sizes));
  }

  // Values of a small numeric dataset (contiguous or compact layout, or chunked without filters).
  async readSmall(meta: DatasetMeta, maxElements = 1 << 24): Promise<number[]> {
    const count = meta.space.dims.reduce((a, b) => checkedMul(a, b, 'dataset size'), 1);
    if (count > maxElements) throw new H5FormatError(`${meta.path}: ${count} elements, more than ${maxElements} read whole`);
    const bytes = checkedMul(count, meta.type.size, 'dataset bytes');
    const l = meta.layout;
    let raw: Uint8Array;
    if (l.layoutClass === 'compact') raw = l.compact!;
    else if (l.layoutClass === 'contiguous') {
      if (l.address === UNDEFINED_ADDR) raw = new Uint8Array(bytes);  // never written: fill value 0
      else raw = await meta.file.src.read(checkedAdd(meta.file.sizes.base, l.address!, 'dataset address'), bytes, meta.path);
    } else if (l.layoutClass === 'chunked' && meta.filters.length === 0 && meta.space.dims.length <= 1) {
      const t = await this.chunkTable(meta);
      raw = new Uint8Array(bytes);
      const per = l.chunkDims![0] ?? 1;
      for (let i = 0; i < t.offsets.length; ++i) {
        if (t.offsets[i] < 0) continue;
        const n = Math.min(per, count - i * per) * meta.type.size;
        raw.set(await meta.file.src.read(t.offsets[i], n, meta.path), i * per * meta.type.size);
      }
    } else throw new H5Unsupported(`${meta.path}: reading a ${l.layoutClass} dataset whole`);
    return decodeNumbers(raw, meta.type, count, meta.path);
  }

  chunkTable(meta: DatasetMeta): Promise<ChunkTable> {
    return readChunkTable(meta.file.src, meta.file.sizes, meta.layout, meta.space.dims, meta.space.maxDims);
  }
}

export function attributeValues(a: Attribute): number[] | string {
  const n = a.space.dims.reduce((x, y) => x * y, 1);
  if (a.type.kind === 'string') {
    const raw = a.raw.subarray(0, a.type.size);
    const z = raw.indexOf(0);
    return new TextDecoder().decode(z >= 0 ? raw.subarray(0, z) : raw);
  }
  return decodeNumbers(a.raw, a.type, n, `attribute '${a.name}'`);
}

// A picked set of files: external links resolve to the file of the same base name.
export class FileSet {
  private opened = new Map<string, Promise<H5File>>();
  constructor(private blobs: Map<string, Blob>) {}

  static fromFiles(files: Iterable<File>): FileSet {
    const m = new Map<string, Blob>();
    for (const f of files) m.set(f.name, f);
    return new FileSet(m);
  }

  names(): string[] {
    return [...this.blobs.keys()];
  }

  open(name: string): Promise<H5File> {
    const base = name.split(/[\\/]/).pop()!;
    let f = this.opened.get(base);
    if (!f) {
      const blob = this.blobs.get(base);
      if (!blob) throw new H5FormatError(`file '${name}' is linked but was not picked (pick it together with the master)`);
      f = H5File.open(new ByteSource(base, blob), (n) => this.open(n));
      this.opened.set(base, f);
    }
    return f;
  }
}

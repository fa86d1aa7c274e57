// A 4D-STEM acquisition opened from local files in the browser: discovery of the dataset (EIGER/ARINA master
// with data_NNNNNN links, or one file), scan shape, pixel mask, calibration and readiness, reported with the same
// fields as `qgpu info --json` (src/io/hdf5/file_info.cpp), and the chunk tables of every part.
import { H5FormatError, H5Unsupported } from './byte_source';
import { ChunkTable } from './chunk_index';
import { DatasetMeta, FileSet, H5File, attributeValues } from './h5file';
import { Filter } from './object_header';

export const DEFAULT_DATASET_PATHS = ['/entry/data/data', '/entry/data/data_000001', '/data', '/4DSTEM/data'];
const DETECTOR_SPECIFIC = '/entry/instrument/detector/detectorSpecific';
export const BITSHUFFLE_FILTER = 32008;

export type DTypeName = 'uint8' | 'uint16' | 'uint32';

export interface Part {
  file: string;
  dataset_path: string;
  first_frame: number;
  frames: number;
}

// Same names and meaning as FileInfo::to_json (qgpu info --json), without would_load.
export interface AcquisitionInfo {
  path: string;
  dataset_path: string;
  dtype: DTypeName;
  byte_order: 'little' | 'big';  // as stored (big only for uint8: wider big-endian counts are refused)
  precision: number;             // bits of the count: 8 x size (others are refused)
  bit_offset: number;            // 0
  stored_dims: number[];
  chunk_dims: number[];
  filters: Array<{ id: number; name: string; cd_values: number[] }>;
  shape: [number, number, number, number];
  scan_shape_source: string;
  one_frame_per_chunk: boolean;
  bitshuffle_lz4: boolean;
  bitshuffle_block_elems: number;
  source_kind: string;
  parts: Part[];
  ntrigger: number;
  nimages: number;
  pixel_mask: { present: boolean; bad_pixels: number };
  chunks_expected: number;
  chunks_written: number;
  ready: boolean;
  calibration: Record<string, number>;
}

export interface Acquisition {
  info: AcquisitionInfo;
  parts: Array<{ meta: DatasetMeta; table: ChunkTable; firstFrame: number; frames: number }>;
  badPixels: number[];   // flat detector indices where pixel_mask > 0
  elemSize: number;
}

const FILTER_NAMES: Record<number, string> = { 1: 'deflate', 2: 'shuffle', 3: 'fletcher32', 32008: 'bitshuffle', 32004: 'lz4', 32015: 'zstd' };

export function defaultBlockElems(elemSize: number): number {
  return Math.max(Math.floor(8192 / elemSize / 8) * 8, 128);
}

// The count dtype, or a clear refusal: not uint8/16/32; a count of fewer bits than the element or not at bit 0
// (precision / bit offset); counts stored big-endian (the WGSL decoder writes the stored bytes as they are: a
// big-endian uint16 would read byte-swapped, so it is refused; one byte has no order).
function dtypeOf(meta: DatasetMeta): DTypeName {
  const t = meta.type, where = `${meta.file.name} ${meta.path}`, bits = 8 * t.size;
  if (t.kind !== 'uint' || !(t.size === 1 || t.size === 2 || t.size === 4))
    throw new H5FormatError(`${where}: dtype ${t.bigEndian ? 'big-endian ' : ''}${t.kind}${bits} ` +
      'is not a count type (uint8/16/32)');
  if (t.bitOffset !== 0 || t.precision !== bits)
    throw new H5Unsupported(`${where}: uint${bits} elements whose count is ${t.precision} bits (precision) at bit offset ` +
      `${t.bitOffset}, not all ${bits} bits; the browser reader reads plain counts only: open the file with ` +
      '`qgpu serve --backend cpu` (HDF5 converts it)');
  if (t.bigEndian && t.size > 1)
    throw new H5Unsupported(`${where}: uint${bits} counts stored big-endian; the browser reader decodes little-endian ` +
      'counts only: open the file with `qgpu serve`, which reads either byte order');
  return (['', 'uint8', 'uint16', '', 'uint32'] as const)[t.size] as DTypeName;
}

async function scalarOf(file: H5File, path: string): Promise<number> {
  if (!(await file.exists(path))) return 0;
  const v = await file.readSmall(await file.dataset(path), 1);
  return v.length ? v[0] : 0;
}

function sameFilters(a: Filter[], b: Filter[]): boolean {
  return JSON.stringify(a.map((f) => [f.id, f.cdValues])) === JSON.stringify(b.map((f) => [f.id, f.cdValues]));
}

// Opens the acquisition of the picked files. `master`: the file to start from (default: the one others link to,
// else the only one). scanShape: given (rows, cols) overrides the file's.
export async function openAcquisition(set: FileSet, master?: string, datasetPath = '', scanShape?: [number, number]): Promise<Acquisition> {
  const names = set.names();
  if (!names.length) throw new H5FormatError('no file given');
  const start = master ?? pickMaster(names);
  const file = await set.open(start);
  let path = datasetPath;
  if (!path) {
    for (const p of DEFAULT_DATASET_PATHS) if (await file.exists(p)) { path = p; break; }
    if (!path) throw new H5FormatError(`${start}: no 4D-STEM dataset at ${DEFAULT_DATASET_PATHS.join(', ')} (give a dataset path)`);
  }
  // Multi-file: data_000001, data_000002, ... without gaps.
  const partPaths: string[] = [];
  let kind = 'dataset';
  const numbered = /^(.*\/data_)(\d{6})$/.exec(path);
  if (numbered && numbered[2] === '000001') {
    for (let i = 1; ; ++i) {
      const p = `${numbered[1]}${String(i).padStart(6, '0')}`;
      const link = await file.link(p).catch(() => undefined);
      if (!link) break;
      partPaths.push(p);
    }
    kind = 'linked files';
  } else {
    partPaths.push(path);
    const link = await file.link(path).catch(() => undefined);
    if (link?.kind === 'external') kind = 'external link';
  }
  const parts: Acquisition['parts'] = [];
  let frames = 0, written = 0, expected = 0;
  let first: DatasetMeta | null = null;
  for (const p of partPaths) {
    const meta = await file.dataset(p);
    const dims = meta.space.dims;
    if (dims.length !== 3 && dims.length !== 4) throw new H5FormatError(`${meta.file.name} ${meta.path}: rank ${dims.length}, not 3 or 4`);
    if (meta.layout.layoutClass !== 'chunked') throw new H5FormatError(`${meta.file.name} ${meta.path}: ${meta.layout.layoutClass} layout; this reader reads chunked datasets`);
    dtypeOf(meta);
    if (first) {
      const same = meta.type.size === first.type.size && meta.space.dims.slice(-2).join() === first.space.dims.slice(-2).join() &&
        meta.layout.chunkDims!.join() === first.layout.chunkDims!.join() && sameFilters(meta.filters, first.filters);
      if (!same) throw new H5FormatError(`part ${p} (${meta.file.name}) differs from the first part in dtype, detector shape, chunking or filters`);
    } else first = meta;
    const table = await file.chunkTable(meta);
    const n = dims.length === 4 ? dims[0] * dims[1] : dims[0];
    parts.push({ meta, table, firstFrame: frames, frames: n });
    frames += n;
    expected += table.offsets.length;
    for (const s of table.sizes) if (s > 0) ++written;
  }
  const meta = first!;
  const dims = meta.space.dims;
  const det: [number, number] = [dims[dims.length - 2], dims[dims.length - 1]];
  const chunk = meta.layout.chunkDims!;
  const bs = meta.filters.find((f) => f.id === BITSHUFFLE_FILTER);
  const elemSize = meta.type.size;
  const bslz4 = !!bs && bs.cdValues.length >= 5 && bs.cdValues[4] === 2;
  const blockElems = bslz4 ? (bs!.cdValues[3] || defaultBlockElems(elemSize)) : 0;
  // Scan shape (as io/hdf5/scan_shape.cpp).
  const ntrigger = await scalarOf(file, `${DETECTOR_SPECIFIC}/ntrigger`).catch(() => 0);
  const nimages = await scalarOf(file, `${DETECTOR_SPECIFIC}/nimages`).catch(() => 0);
  const attr = meta.attributes.find((a) => a.name === 'scan_shape');
  const attrV = attr ? attributeValues(attr) : [];
  const [rows, cols, source] = resolveScanShape(frames, dims, Array.isArray(attrV) ? attrV : [], ntrigger, nimages, scanShape, `${start} ${path}`);
  // Pixel mask.
  let badPixels: number[] = [];
  let maskPresent = false;
  const maskPath = `${DETECTOR_SPECIFIC}/pixel_mask`;
  if (await file.exists(maskPath).catch(() => false)) {
    const mm = await file.dataset(maskPath);
    if (mm.space.dims.join() !== det.join())
      throw new H5FormatError(`${start} ${maskPath}: shape ${mm.space.dims.join('x')} differs from the detector ${det.join('x')}`);
    const v = await file.readSmall(mm);
    maskPresent = true;
    badPixels = [];
    v.forEach((x, i) => { if (x > 0) badPixels.push(i); });
  }
  const calibration: Record<string, number> = {};
  if (await file.exists('/entry/calibration').catch(() => false))
    for (const a of await file.attributes('/entry/calibration')) {
      const v = attributeValues(a);
      if (Array.isArray(v) && v.length === 1) calibration[a.name] = v[0];
    }
  const oneFramePerChunk = chunk.length === dims.length && chunk.slice(0, -2).every((c) => c === 1) &&
    chunk[chunk.length - 2] === det[0] && chunk[chunk.length - 1] === det[1];
  const info: AcquisitionInfo = {
    path: start, dataset_path: path, dtype: dtypeOf(meta), byte_order: meta.type.bigEndian ? 'big' : 'little',
    precision: meta.type.precision, bit_offset: meta.type.bitOffset, stored_dims: partPaths.length > 1 ? [frames, ...det] : dims.slice(),
    chunk_dims: chunk.slice(),
    filters: meta.filters.map((f) => ({ id: f.id, name: FILTER_NAMES[f.id] ?? f.name, cd_values: f.cdValues })),
    shape: [rows, cols, det[0], det[1]], scan_shape_source: source, one_frame_per_chunk: oneFramePerChunk,
    bitshuffle_lz4: bslz4, bitshuffle_block_elems: blockElems, source_kind: kind,
    parts: parts.map((p) => ({ file: p.meta.file.name, dataset_path: p.meta.path, first_frame: p.firstFrame, frames: p.frames })),
    ntrigger, nimages, pixel_mask: { present: maskPresent, bad_pixels: badPixels.length },
    chunks_expected: expected, chunks_written: written, ready: written === expected, calibration,
  };
  return { info, parts, badPixels, elemSize };
}

// The picked file no other picked file is a data file of: prefer a name with 'master', else one without '_data_'.
function pickMaster(names: string[]): string {
  return names.find((n) => /master/i.test(n)) ?? names.find((n) => !/_data_\d+/.test(n)) ?? names[0];
}

export function resolveScanShape(frames: number, dims: number[], attribute: number[], ntrigger: number, nimages: number,
  given: [number, number] | undefined, where: string): [number, number, string] {
  if (ntrigger > 0 || nimages > 0) {
    const t = ntrigger > 0 ? ntrigger : 1, n = nimages > 0 ? nimages : 1;
    if (!(t * n === frames || (ntrigger > 0 && t === frames) || (nimages > 0 && n === frames)))
      throw new H5FormatError(`${where}: the master's metadata announces ntrigger ${t} x nimages ${n} = ${t * n} frames but ` +
        `the data hold ${frames} (a data file missing or an acquisition cut short)`);
  }
  if (given) {
    if (given[0] * given[1] !== frames || frames === 0)
      throw new H5FormatError(`given scan shape ${given[0]}x${given[1]} does not match the ${frames} frames of ${where}`);
    return [given[0], given[1], 'given'];
  }
  if (dims.length === 4) return [dims[0], dims[1], 'dataset dims'];
  if (attribute.length === 2 && attribute[0] > 0 && attribute[1] > 0) {
    if (attribute[0] * attribute[1] !== frames)
      throw new H5FormatError(`${where} attribute scan_shape ${attribute[0]}x${attribute[1]} does not match its ${frames} frames`);
    return [attribute[0], attribute[1], 'attribute scan_shape'];
  }
  if (ntrigger > 1 && nimages > 1 && ntrigger * nimages === frames) return [ntrigger, nimages, 'metadata ntrigger x nimages'];
  const side = Math.round(Math.sqrt(frames));
  if (side > 0 && side * side === frames) return [side, side, 'square frame count'];
  throw new H5FormatError(`${where} has ${frames} frames, no scan_shape attribute and no square scan: give a scan shape`);
}

// ---- memory policy ----------------------------------------------------------------------------------------

export interface LoadRequest {
  scanRegion?: [number, number, number, number];  // r0, c0, rows, cols
  binDetector?: number;                            // exact integer sum over bin x bin pixels
}

// Decoded frames are held as u32 per pixel on the GPU (exact for uint8/16/32 counts). A request is admitted when
// its resident bytes fit under `limitBytes` (default: 80% of the adapter's maxBufferSize, also capped at 2 GiB)
// and refused otherwise, with the options that would fit: a scan crop, an exact detector bin, or the product
// cache written by `qgpu cache`.
export function admit(info: AcquisitionInfo, req: LoadRequest, limitBytes: number): { ok: true; bytes: number } | { ok: false; message: string } {
  const [sr, sc, dr, dc] = info.shape;
  const region = req.scanRegion ?? [0, 0, sr, sc];
  const bin = req.binDetector ?? 1;
  if (region[0] < 0 || region[1] < 0 || region[2] <= 0 || region[3] <= 0 || region[0] + region[2] > sr || region[1] + region[3] > sc)
    throw new H5FormatError(`scan region ${region.join(' ')} lies outside the ${sr}x${sc} scan`);
  if (!Number.isInteger(bin) || bin < 1 || dr % bin || dc % bin)
    throw new H5FormatError(`detector bin ${bin} does not divide the ${dr}x${dc} detector exactly`);
  const frames = region[2] * region[3];
  const bytes = frames * (dr / bin) * (dc / bin) * 4;
  if (bytes <= limitBytes) return { ok: true, bytes };
  const gb = (b: number) => `${(b / 1e9).toFixed(2)} GB`;
  const binFit = [2, 4, 8, 16].find((b) => dr % b === 0 && dc % b === 0 && frames * (dr / b) * (dc / b) * 4 <= limitBytes);
  const side = Math.floor(Math.sqrt(limitBytes / (dr * dc * 4)));
  const options = [
    side >= 1 ? `a scan crop of up to ${Math.min(side, sr)}x${Math.min(side, sc)} positions` : '',
    binFit ? `an exact detector bin of ${binFit} (${dr / binFit}x${dc / binFit}, counts summed: ${gb(frames * (dr / binFit) * (dc / binFit) * 4)})` : '',
    'the product cache (qgpu cache FILE -o products.h5, then open products.h5 with qgpu serve)',
  ].filter(Boolean);
  return {
    ok: false,
    message: `${region[2]}x${region[3]}x${dr / bin}x${dc / bin} frames need ${gb(bytes)} on the GPU as 32-bit counts, more than ` +
      `the ${gb(limitBytes)} this browser allows; choose ${options.join(', or ')}`,
  };
}

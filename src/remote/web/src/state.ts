// The viewer's state, exposed on window.qgpuViewer for tests and scripting.
import type { DatasetInfo, Detector } from './api';
import type { GpuStatus } from './gpu_compute';
import { DEFAULT_LOOK, Look } from './render';

export type ProductId = 'virtual' | 'com' | 'dpc' | 'idpc' | 'ssb';
export const PRODUCTS: { id: ProductId; label: string }[] = [
  { id: 'virtual', label: 'virtual detector' },
  { id: 'com', label: 'centre of mass' },
  { id: 'dpc', label: 'centred DPC' },
  { id: 'idpc', label: 'iDPC' },
  { id: 'ssb', label: 'SSB phase' },
];

export interface ViewerState {
  ready: boolean;
  dataset: DatasetInfo | null;
  detector: Detector | null;
  product: ProductId;
  look: Look;
  defocus: number;          // SSB defocus (angstrom)
  ssbBin: number;           // SSB preview detector bin
  fft: boolean;             // the FFT panel is shown
  pattern: 'mean' | 'max';  // the detector-space picture
  meanVersion: number;
  virtualVersion: number;   // bumps each time a real-space image is drawn (any product)
  virtualQuery: string;     // the request (path and query) of the real-space image shown
  virtualSource: 'server' | 'browser' | '';
  busy: boolean;            // a real-space image is wanted or in flight
  loading: string[];        // what is loading now (shown in the header)
  online: boolean;
  frame: { row: number; col: number; version: number; bytes: Uint8Array | null };
  gpu: GpuStatus | null;
  errors: string[];
  requests: string[];       // every API request the page sent (path and query), in order
  sessions: number;         // dataset sessions opened (one per dataset switch)
  python: string;           // the `quantem.gpu` code of the image shown
  cachedProduct: string;    // product cache: the cached product the virtual image shown came from
  liveFrames: number;       // a live dataset: the frames received when the images were last redrawn
  scanBinOverride: number | null;  // the URL's scanbin=N (validated against the scan by chooseScanBin), else null
  scanBin: number;          // the display scan bin of the dataset's virtual images and CoM (scan_bin.ts; 1: none)
  scanBinNote: string;      // why the override was not taken, or why a large scan stays unbinned
  gpuCheck: (d?: Detector) => Promise<unknown>;
  wgslLimbCheck: () => Promise<unknown>;
}

export const state: ViewerState = {
  ready: false, dataset: null, detector: null, product: 'virtual', look: { ...DEFAULT_LOOK }, defocus: 0, ssbBin: 4,
  fft: false, pattern: 'mean', meanVersion: 0, virtualVersion: 0, virtualQuery: '', virtualSource: '', busy: false, loading: [],
  online: true, frame: { row: -1, col: -1, version: 0, bytes: null }, gpu: null, errors: [], requests: [],
  sessions: 0, python: '', cachedProduct: '', liveFrames: 0, scanBinOverride: null, scanBin: 1, scanBinNote: '',
  gpuCheck: () => Promise.reject(new Error('not ready')),
  wgslLimbCheck: () => Promise.reject(new Error('not ready')),
};
(window as unknown as { qgpuViewer: ViewerState }).qgpuViewer = state;

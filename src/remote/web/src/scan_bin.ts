// The display scan bin of a large scan: virtual images and the CoM of a served dataset are asked for as the exact
// sums (CoM) of b x b blocks of scan positions (`scan_bin=b`), so that a 4096 x 4096 scan moves and draws
// 1024 x 1024 values at drag speed instead of 16.7M. No DOM here: tests import it alone (tests/remote/e2e).

export const SCAN_BIN_LIMIT = 1024;  // the largest side (in displayed pixels) drawn without binning

export interface ScanBinChoice {
  bin: number;   // b: 1 = every scan position
  note: string;  // why an override was not taken, or why a large scan stays unbinned ('' when nothing to say)
}

// The bin of a scan of rows x cols positions: `override` when it is a positive integer dividing both sides (1 =
// full resolution), else the smallest divisor b of both with max(rows, cols) / b <= limit (1 when the scan is
// already that small, and 1 when no common divisor gets there: full resolution, said in the note). A bin leaving
// fewer than limit / 4 pixels on the long side (a prime side: 1031 x 1031 would be one pixel) counts as none.
export function chooseScanBin(rows: number, cols: number, override?: number | null, limit = SCAN_BIN_LIMIT): ScanBinChoice {
  if (!(Number.isInteger(rows) && Number.isInteger(cols) && rows > 0 && cols > 0))
    throw new Error(`scan bin: the scan shape ${rows} x ${cols} is not two positive integers`);
  let note = '';
  if (override !== undefined && override !== null) {
    if (Number.isInteger(override) && override >= 1 && rows % override === 0 && cols % override === 0)
      return { bin: override, note: '' };
    note = `scanbin=${override} ignored: not a positive integer dividing both scan sides ${rows} × ${cols}; `;
  }
  const side = Math.max(rows, cols);
  if (side <= limit) return { bin: 1, note: note ? `${note}full resolution` : '' };
  for (let b = 2; b <= Math.min(rows, cols) && side / b >= limit / 4; ++b)
    if (rows % b === 0 && cols % b === 0 && side / b <= limit) return { bin: b, note: note ? `${note}automatic bin ${b}` : '' };
  return { bin: 1, note: `${note}no common divisor of ${rows} and ${cols} takes the scan to ${limit / 4}..${limit} pixels ` +
    'a side: full resolution' };
}

// A full-resolution position mask (1 = set) binned to b x b blocks: a block is set when any position in it is.
export function binMask(mask: Uint8Array, rows: number, cols: number, b: number): Uint8Array {
  if (b === 1) return mask;
  const br = rows / b, bc = cols / b;
  const out = new Uint8Array(br * bc);
  for (let r = 0; r < rows; ++r) {
    const o = Math.floor(r / b) * bc, row = r * cols;
    for (let c = 0; c < cols; ++c) if (mask[row + c]) out[o + Math.floor(c / b)] = 1;
  }
  return out;
}

// The full-scan position a click on pixel (row, col) of a b-binned picture picks: the centre of its block.
export const blockCentre = (row: number, col: number, b: number): [number, number] =>
  [row * b + Math.floor(b / 2), col * b + Math.floor(b / 2)];

// Unit test of the viewer's display scan bin (src/remote/web/src/scan_bin.ts): the module is bundled here with the
// viewer's esbuild (no DOM needed) and checked against a brute-force reference and hand-worked cases.
// Usage: node scan_bin.test.mjs [--web src/remote/web]   (ends with `scan_bin unit: N passed, M failed`)
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Runner, assert } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const { values: opt } = parseArgs({ options: { web: { type: 'string', default: join(here, '../../../src/remote/web') } } });
const { build } = await import(pathToFileURL(join(opt.web, 'node_modules/esbuild/lib/main.js')).href);
const out = await build({ entryPoints: [join(opt.web, 'src/scan_bin.ts')], bundle: true, format: 'esm', write: false, logLevel: 'error' });
const m = await import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString('base64')}`);
const { chooseScanBin, binMask, blockCentre, SCAN_BIN_LIMIT } = m;
const run = new Runner();

// The reference: every b from 1 up, the first dividing both sides whose long side lands in [limit/4, limit].
function reference(rows, cols, limit = 1024) {
  const side = Math.max(rows, cols);
  if (side <= limit) return 1;
  for (let b = 1; b <= side; ++b) {
    const binned = side / b;
    if (rows % b === 0 && cols % b === 0 && binned <= limit && binned >= limit / 4) return b;
  }
  return 1;
}

await run.check('hand-worked automatic bins', () => {
  const cases = [[16, 16, 1], [1024, 1024, 1], [1024, 7, 1], [2048, 2048, 2], [4096, 4096, 4], [2048, 1536, 2],
    [1100, 2200, 4], [128, 1040, 2], [1025, 1025, 1], [1030, 1030, 2], [3000, 3000, 3], [1031, 1031, 1], [2062, 2062, 1], [4096, 4095, 1]];
  for (const [r, c, want] of cases) {
    const got = chooseScanBin(r, c);
    assert(got.bin === want, `${r} x ${c}: bin ${got.bin}, want ${want}`);
    assert((got.note !== '') === (want === 1 && Math.max(r, c) > SCAN_BIN_LIMIT), `${r} x ${c}: note '${got.note}'`);
  }
  assert(/full resolution/.test(chooseScanBin(1031, 1031).note), 'a prime side says full resolution');
});

await run.check('automatic bin equals the brute-force reference (sides 1..5000, sampled)', () => {
  let n = 0;
  for (let r = 1; r <= 5000; r += 37)
    for (let c = 1; c <= 5000; c += 53) {
      const got = chooseScanBin(r, c).bin, want = reference(r, c);
      assert(got === want, `${r} x ${c}: bin ${got}, reference ${want}`);
      ++n;
    }
  for (const s of [1025, 1536, 2048, 3072, 4096, 8192]) assert(chooseScanBin(s, s).bin === reference(s, s), `${s}`);
  return `${n} shapes`;
});

await run.check('an override is taken when it divides both sides, else the automatic bin with a note', () => {
  assert(chooseScanBin(2048, 1536, 4).bin === 4 && chooseScanBin(2048, 1536, 4).note === '', 'override 4');
  assert(chooseScanBin(2048, 1536, 1).bin === 1, 'override 1: full resolution');
  assert(chooseScanBin(16, 16, 8).bin === 8, 'a small scan may be binned when asked');
  for (const bad of [3, 0, -2, 2.5, NaN, 4096]) {
    const got = chooseScanBin(2048, 1536, bad);
    assert(got.bin === 2, `override ${bad}: bin ${got.bin}`);
    assert(got.note.startsWith(`scanbin=${bad} ignored`) && /automatic bin 2/.test(got.note), `override ${bad}: note '${got.note}'`);
  }
  const small = chooseScanBin(16, 16, 3);
  assert(small.bin === 1 && /ignored.*full resolution/.test(small.note), `16 x 16, override 3: ${JSON.stringify(small)}`);
  let threw = false;
  try { chooseScanBin(0, 16); } catch { threw = true; }
  assert(threw, 'a zero scan side is an error');
});

await run.check('binMask: a block is set when any of its positions is; blockCentre', () => {
  const rows = 6, cols = 8, b = 2, mask = new Uint8Array(rows * cols);
  for (const p of [0, 11, 47]) mask[p] = 1;  // (0,0) (1,3) (5,7)
  const got = Array.from(binMask(mask, rows, cols, b));
  const want = new Array(12).fill(0);
  want[0] = 1; want[1] = 1; want[11] = 1;  // blocks (0,0) (0,1) (2,3) of the 3 x 4 picture
  assert(JSON.stringify(got) === JSON.stringify(want), `binned ${got}`);
  assert(binMask(mask, rows, cols, 1) === mask, 'bin 1 keeps the mask');
  assert(JSON.stringify(blockCentre(10, 100, 2)) === '[21,201]', `${blockCentre(10, 100, 2)}`);
  assert(JSON.stringify(blockCentre(3, 0, 5)) === '[17,2]', `${blockCentre(3, 0, 5)}`);
  assert(JSON.stringify(blockCentre(7, 9, 1)) === '[7,9]', 'bin 1');
});

console.log(`scan_bin unit: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);

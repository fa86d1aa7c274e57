// Browser end-to-end test of scan positions without a frame: a Direct Electron custom scan (an MRC movie with its
// info.txt and a scan-coordinates csv that never lists some positions), written here byte by byte, served by
// `qgpu serve`. The dataset's metadata names the missing positions; the viewer draws them hatched (a layer over
// the picture, the picture itself transparent there), with the legend line "N positions missing" and "missing" in
// the hover readout, and leaves them out of the display range; scanned positions keep their values.
// Usage: node missing.e2e.mjs --qgpu BUILD/qgpu --web src/remote/web/dist [--out DIR]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { DE_SCAN, Runner, assert, launchBrowser, startServer, tempDir, writeDeCustomScan } from './harness.mjs';
import { pageState, panelValues } from './tool_checks.mjs';

const { values: opt } = parseArgs({
  options: { qgpu: { type: 'string' }, web: { type: 'string' }, out: { type: 'string', default: 'out' } },
});
if (!opt.qgpu || !opt.web) throw new Error('usage: missing.e2e.mjs --qgpu PATH --web DIR [--out DIR]');
mkdirSync(opt.out, { recursive: true });
const run = new Runner();
const tmp = tempDir('qgpu-missing-e2e-');
let server, browser;

const { ROWS, COLS, MISSING } = DE_SCAN;

try {
  const movie = writeDeCustomScan(tmp);
  server = await startServer(opt.qgpu, [movie], opt.web, join(opt.out, 'serve_missing.log'));
  browser = await launchBrowser();
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const shot = (name) => page.screenshot({ path: join(opt.out, `${name}.png`), fullPage: true });

  await run.check('the service names the missing positions of the DE custom scan', async () => {
    const list = await (await fetch(`${server.url}api/datasets`)).json();
    const md = list.datasets[0].metadata;
    assert(md.missing === MISSING.length, `missing ${md.missing}`);
    assert(JSON.stringify(md.missing_positions) === JSON.stringify(MISSING), `missing_positions ${JSON.stringify(md.missing_positions)}`);
  });

  await run.check('the image draws them hatched with the legend "5 positions missing", not as zero counts', async () => {
    await page.goto(server.url);
    await page.waitForFunction(() => window.qgpuViewer?.ready && window.qgpuViewer.virtualVersion > 0 && !window.qgpuViewer.busy,
      null, { timeout: 30000 });
    const legend = page.locator('#real-missing');
    assert(await legend.isVisible(), 'no legend line');
    const text = await legend.textContent();
    assert(/^5 positions missing \(no frame\)/.test(text), `legend: ${text}`);
    const values = await panelValues(page, 'real');
    const got = await page.evaluate(({ rows, cols }) => {
      const pic = document.getElementById('real').getContext('2d').getImageData(0, 0, cols, rows).data;
      const layer = document.getElementById('real-missing-layer');
      const k = layer.width / cols;
      const lay = layer.getContext('2d').getImageData(0, 0, layer.width, layer.height).data;
      const out = [];
      for (let p = 0; p < rows * cols; ++p) {
        const r = Math.floor(p / cols), c = p % cols;
        const o = 4 * ((r * k + Math.floor(k / 2)) * layer.width + c * k + Math.floor(k / 2));
        out.push({ picAlpha: pic[4 * p + 3], layerAlpha: lay[o + 3] });
      }
      return { out, k, size: [layer.width, layer.height] };
    }, { rows: ROWS, cols: COLS });
    assert(got.size[0] === COLS * got.k && got.size[1] === ROWS * got.k && got.k >= 1, `layer ${got.size} k ${got.k}`);
    for (let p = 0; p < ROWS * COLS; ++p) {
      const miss = MISSING.includes(p), x = got.out[p];
      assert(miss ? x.picAlpha === 0 && x.layerAlpha === 255 : x.picAlpha === 255 && x.layerAlpha === 0,
        `position ${p} (${miss ? 'missing' : 'scanned'}): picture alpha ${x.picAlpha}, hatch alpha ${x.layerAlpha}`);
      // the values kept for the readout and .npy: the service's sums (0 where missing, positive elsewhere)
      assert(miss ? values[p] === 0 : values[p] > 0, `value at ${p}: ${values[p]}`);
    }
    await shot('missing_positions');
    return `hatch scale ${got.k}`;
  });

  await run.check('the display range leaves the missing positions out (colourbar from the smallest scanned sum)', async () => {
    const lo = await page.evaluate(() => document.getElementById('real-colorbar').firstElementChild.textContent);
    const values = await panelValues(page, 'real');
    const smallest = Math.min(...values.filter((v, i) => !MISSING.includes(i)));
    assert(Number(lo) === smallest && smallest > 0, `colourbar starts at ${lo}, the smallest scanned value is ${smallest}`);
  });

  await run.check('hovering a missing position says "missing", a scanned one its value', async () => {
    const box = await page.locator('#real').boundingBox();
    const at = async (p) => {
      const r = Math.floor(p / COLS), c = p % COLS;
      await page.mouse.move(box.x + ((c + 0.5) / COLS) * box.width, box.y + ((r + 0.5) / ROWS) * box.height);
      return page.locator('#real-readout').textContent();
    };
    const m = await at(10), s = await at(12);
    const v = (await panelValues(page, 'real'))[12];
    assert(/^\(1, 2\) missing/.test(m), `readout over (1, 2): ${m}`);
    assert(s.startsWith(`(1, 4) = ${v}`), `readout over (1, 4): ${s} (value ${v})`);
    await page.mouse.click(box.x + ((2 + 0.5) / COLS) * box.width, box.y + ((1 + 0.5) / ROWS) * box.height);
    await page.waitForFunction(() => /^scan \(1, 2\)/.test(document.getElementById('frame-text').textContent), null,
      { timeout: 20000 });
    const f = await page.locator('#frame-text').textContent();
    assert(/^scan \(1, 2\): missing, no frame/.test(f), `frame text: ${f}`);
    await shot('missing_positions_frame');
    return `"${m}"`;
  });

  await run.check('no page errors', async () => {
    const s = await pageState(page);
    assert(!pageErrors.length, pageErrors.join('; '));
    assert(s.ready, 'viewer not ready');
  });
} catch (e) {
  run.failed++;
  console.log(`FAIL missing e2e setup: ${e instanceof Error ? e.stack : e}`);
} finally {
  await browser?.context.close();
  await server?.stop();
}
console.log(`missing e2e: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);

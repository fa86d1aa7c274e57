// Browser end-to-end test of the display scan bin (src/remote/web/src/scan_bin.ts): a sample whose scan is wider
// than 1024 positions (128 x 1040, detector 16 x 16: the viewer bins it 2 x 2) and a small one (16 x 16: never
// binned), served by `qgpu serve`. Checks that virtual images (GET and a POSTed mask) and the CoM are asked with
// scan_bin and drawn at rows/b x cols/b with values equal to the block sums of the full-resolution answer, that the
// panel says "binned", that a click picks the centre position of the block (the frame request's row/col) and the
// keys step a block, that the CoM, DPC, iDPC and SSB slider come binned (SSB: low-pass), that scanbin=N overrides (and a bad N falls back with a note),
// and that the small dataset is unchanged.
// Usage: node scanbin.e2e.mjs --qgpu BUILD/qgpu --web src/remote/web/dist [--out DIR] [--shots DIR]
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Runner, assert, launchBrowser, startServer, tempDir, writeSample } from './harness.mjs';
import { panelValues } from './tool_checks.mjs';

const { values: opt } = parseArgs({
  options: { qgpu: { type: 'string' }, web: { type: 'string' }, out: { type: 'string', default: 'out' }, shots: { type: 'string' } },
});
if (!opt.qgpu || !opt.web) throw new Error('usage: scanbin.e2e.mjs --qgpu PATH --web DIR [--out DIR] [--shots DIR]');
mkdirSync(opt.out, { recursive: true });
const shots = opt.shots ?? opt.out;
mkdirSync(shots, { recursive: true });
const run = new Runner();
const tmp = tempDir('qgpu-scanbin-e2e-');
const ROWS = 128, COLS = 1040, B = 2;
let server, browser;

// b x b block sums of a full-resolution image (rows x cols, row-major): the independent reference.
function blockSums(v, rows, cols, b) {
  const out = new Array((rows / b) * (cols / b)).fill(0);
  for (let r = 0; r < rows; ++r) for (let c = 0; c < cols; ++c) out[Math.floor(r / b) * (cols / b) + Math.floor(c / b)] += v[r * cols + c];
  return out.map((x) => Math.fround(x));
}

try {
  const big = join(tmp, 'wide.h5'), small = join(tmp, 'small.h5');
  writeSample(opt.qgpu, big, [ROWS, COLS], [16, 16]);
  writeSample(opt.qgpu, small, [16, 16], [16, 16]);
  server = await startServer(opt.qgpu, [big, small], opt.web, join(opt.out, 'serve_scanbin.log'));
  const base = server.url;
  browser = await launchBrowser();
  const page = browser.context.pages()[0] ?? (await browser.context.newPage());
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const st = () => page.evaluate(() => ({ ...window.qgpuViewer, frame: { ...window.qgpuViewer.frame, bytes: null },
    gpuCheck: undefined, wgslLimbCheck: undefined }));
  const idle = (after) => page.waitForFunction((v) => window.qgpuViewer.virtualVersion > v && !window.qgpuViewer.busy,
    after, { timeout: 30000 });
  const canvas = (id) => page.evaluate((id) => [document.getElementById(id).height, document.getElementById(id).width], id);
  const open = async (hash) => {
    await page.goto('about:blank');
    await page.goto(`${base}${hash}`);
    await page.waitForFunction(() => window.qgpuViewer?.ready && window.qgpuViewer.virtualVersion > 0 && !window.qgpuViewer.busy,
      null, { timeout: 60000 });
    return st();
  };

  await run.check('a 128 x 1040 scan: the virtual image is asked with scan_bin=2 and drawn 64 x 520, as block sums', async () => {
    const s = await open('#ds=wide');
    assert(s.scanBin === B && s.scanBinNote === '', `scanBin ${s.scanBin}, note '${s.scanBinNote}'`);
    const req = s.requests.filter((r) => r.includes('/virtual?'));
    assert(req.length && req.every((r) => r.includes(`scan_bin=${B}`)), `virtual requests: ${req.join(' | ')}`);
    const [h, w] = await canvas('real');
    assert(h === ROWS / B && w === COLS / B, `canvas ${h} x ${w}`);
    const text = await page.locator('#real-text').textContent();
    assert(text.includes(`binned ${B}×${B} scan positions (exact sums): 64×520 of 128×1040`), `panel text: ${text}`);
    const title = await page.locator('#real-panel h2 span').first().textContent();
    assert(title.includes(`(binned ${B}×${B})`), `title: ${title}`);
    // the reference: the full-resolution answer of the same query, summed in 2 x 2 blocks here
    const q = req[req.length - 1].replace(/^GET /, '').replace(/&scan_bin=\d+/, '');
    const res = await fetch(`${base}${q.slice(1)}`);
    assert(res.ok && res.headers.get('X-Shape') === `${ROWS},${COLS}`, `full answer ${res.status} ${res.headers.get('X-Shape')}`);
    const full = Array.from(new BigUint64Array(await res.arrayBuffer()), Number);
    const want = blockSums(full, ROWS, COLS, B), got = await panelValues(page, 'real');
    assert(got.length === want.length, `${got.length} values`);
    const bad = got.findIndex((v, i) => v !== want[i]);
    assert(bad < 0, `value ${bad}: ${got[bad]}, block sum ${want[bad]}`);
    assert(want.some((v) => v > 0), 'the reference is all zero');
    await page.screenshot({ path: join(shots, 'scanbin_wide.png'), fullPage: true });
    return `${req.length} requests, ${got.length} values`;
  });

  await run.check('a click on a binned pixel (10, 100) asks the frame of its block centre (21, 201); the cursor and keys follow', async () => {
    const box = await page.locator('#real').boundingBox();
    const h = ROWS / B, w = COLS / B;
    // the picture is 64 rows in ~55 screen pixels: the pixel under the (integer) pointer is the page's own, (10 +- 1, 100)
    const x = Math.round(box.x + ((100 + 0.5) / w) * box.width), y = Math.round(box.y + ((10 + 0.5) / h) * box.height);
    const [pr, pc] = await page.evaluate(({ x, y }) => window.qgpuPanels.real.pixelAt({ clientX: x, clientY: y }), { x, y });
    assert(Math.abs(pr - 10) <= 1 && pc === 100, `pixel under the pointer (${pr}, ${pc})`);
    const [fr, fc] = [pr * B + 1, pc * B + 1];
    await page.mouse.click(x, y);
    await page.waitForFunction((t) => document.getElementById('frame-text').textContent.startsWith(t), `scan (${fr}, ${fc})`, { timeout: 20000 })
      .catch(async (e) => { throw new Error(`${e.message}: frame text '${await page.locator('#frame-text').textContent()}'`); });
    let s = await st();
    assert(s.requests.some((r) => r.includes(`/frame?row=${fr}&col=${fc}&`)), `frame requests: ${s.requests.filter((r) => r.includes('frame')).join(' | ')}`);
    const cursor = await page.evaluate(() => {
      const c = document.querySelector('#real-panel .cursor');
      return [parseFloat(c.style.left), parseFloat(c.style.top)];
    });
    assert(Math.abs(cursor[0] - ((pc + 0.5) / w) * 100) < 1e-3 && Math.abs(cursor[1] - ((pr + 0.5) / h) * 100) < 1e-3, `cursor at ${cursor}`);
    await page.keyboard.press('ArrowRight');  // one picture pixel: B positions
    await page.waitForFunction((t) => document.getElementById('frame-text').textContent.startsWith(t), `scan (${fr}, ${fc + B})`, { timeout: 20000 })
      .catch(async (e) => { throw new Error(`${e.message}: frame text '${await page.locator('#frame-text').textContent()}'`); });
    s = await st();
    assert(s.frame.row === fr && s.frame.col === fc + B, `after ArrowRight: ${s.frame.row}, ${s.frame.col}`);
    await page.mouse.move(x, y);
    const readout = await page.locator('#real-readout').textContent();
    assert(readout.startsWith(`(${pr}, ${pc}) = `) && readout.includes(`scan rows ${pr * B}..${pr * B + 1}, cols 200..201`), `readout: ${readout}`);
    await page.screenshot({ path: join(shots, 'scanbin_wide_click.png'), fullPage: true });
  });

  await run.check('a rectangle (POSTed mask) is binned too; so are the CoM, the DPC, the iDPC and the SSB slider', async () => {
    let s = await st();
    await page.selectOption('#kind', 'rectangle');
    await idle(s.virtualVersion);
    s = await st();
    const post = s.requests.filter((r) => r.startsWith('POST ') && r.includes('/virtual?'));
    assert(post.length && post.every((r) => r.includes(`scan_bin=${B}`)), `POST requests: ${post.join(' | ')}`);
    let [h, w] = await canvas('real');
    assert(h === ROWS / B && w === COLS / B, `rectangle canvas ${h} x ${w}`);
    await page.selectOption('#kind', 'quadrants');  // segmented DPC: 4 POSTed masks, 3 panels
    await idle(s.virtualVersion);
    s = await st();
    const quads = s.requests.filter((r) => r.startsWith('POST ') && r.includes('/virtual?'));
    assert(quads.length >= post.length + 4 && quads.every((r) => r.includes(`scan_bin=${B}`)), `POST requests: ${quads.length}`);
    for (const id of ['real', 'real2', 'real3']) {
      [h, w] = await canvas(id);
      assert(h === ROWS / B && w === COLS / B, `quadrants ${id} canvas ${h} x ${w}`);
    }
    await page.selectOption('#product', 'com');
    await idle(s.virtualVersion);
    s = await st();
    assert(s.requests.some((r) => r.includes(`/com?format=f32&scan_bin=${B}`)), 'no binned com request');
    for (const id of ['real', 'real2']) {
      [h, w] = await canvas(id);
      assert(h === ROWS / B && w === COLS / B, `CoM ${id} canvas ${h} x ${w}`);
    }
    const com = await page.locator('#real-text').textContent();
    assert(com.includes(`binned ${B}×${B} scan positions (the CoM of each block)`), `CoM text: ${com}`);
    await page.selectOption('#product', 'dpc');
    await idle(s.virtualVersion);
    s = await st();
    assert(s.requests.some((r) => r.includes(`/dpc?format=f32&scan_bin=${B}`)), 'no binned dpc request');
    [h, w] = await canvas('real');
    assert(h === ROWS / B && w === COLS / B, `dpc canvas ${h} x ${w}`);
    const dpc = await page.locator('#real-text').textContent();
    assert(dpc.includes(`binned ${B}×${B} scan positions (from the CoM of each block)`), `dpc text: ${dpc}`);
    // the cursor of a binned picture sits on the block of the position
    const left = await page.evaluate(() => parseFloat(document.querySelector('#real-panel .cursor').style.left));
    assert(Math.abs(left - ((Math.floor(s.frame.col / B) + 0.5) / (COLS / B)) * 100) < 1e-3 && s.frame.col === 203,
      `dpc cursor at ${left}%, col ${s.frame.col}`);
    await page.selectOption('#product', 'idpc');
    await idle(s.virtualVersion);
    s = await st();
    assert(s.requests.some((r) => r.includes(`/idpc?format=f32&scan_bin=${B}`)), 'no binned idpc request');
    [h, w] = await canvas('real');
    assert(h === ROWS / B && w === COLS / B, `idpc canvas ${h} x ${w}`);
    // the SSB slider comes binned (the low-pass answer on the binned grid), and says so
    await page.selectOption('#product', 'ssb');
    await idle(s.virtualVersion);
    s = await st();
    assert(s.requests.some((r) => /\/ssb\?format=f32&bin=\d+&defocus=[-\d.]+&scan_bin=2$/.test(r)), `no binned ssb request: ${s.requests.filter((r) => r.includes('/ssb')).join(' | ')}`);
    [h, w] = await canvas('real');
    assert(h === ROWS / B && w === COLS / B, `ssb canvas ${h} x ${w}`);
    const ssb = await page.locator('#real-text').textContent();
    assert(ssb.includes(`binned ${B}×${B} scan positions (low-pass`), `ssb text: ${ssb}`);
  });

  await run.check('the scale bar uses step x 2 per binned pixel; the FFT panel the binned shape and step x 2', async () => {
    const list = await (await fetch(`${base}api/datasets`)).json();
    const step = list.datasets.find((d) => d.id === 'wide').metadata.calibration.scan_step_angstrom;
    assert(step > 0, `scan step ${step}`);
    await open('#ds=wide&fft=1');
    const bar = await page.evaluate(() => {
      const b = document.querySelector('#real-panel .scalebar'), f = document.querySelector('#fft-panel .scalebar');
      return { label: b.dataset.length, width: parseFloat(b.style.width), fLabel: f.dataset.length, fWidth: parseFloat(f.style.width) };
    });
    // the bar's length in Å over the picture's width in Å (binned: 520 pixels of 2 x step each)
    const [value, unit] = bar.label.split(' ');
    const angstrom = Number(value) * (unit === 'nm' ? 10 : 1);
    const want = (angstrom / (step * B * (COLS / B))) * 100;
    assert(Math.abs(bar.width - want) < 1e-3, `scale bar ${bar.label} ${bar.width}%, want ${want}%`);
    // (the FFT checkbox holds the id 'fft': the panel's canvas by its section)
    const [fh, fw] = await page.evaluate(() => { const c = document.querySelector('#fft-panel .stack canvas'); return [c.height, c.width]; });
    assert(fh === ROWS / B && fw === COLS / B, `FFT canvas ${fh} x ${fw}`);
    const fWant = (Number(bar.fLabel.split(' ')[0]) / (1 / (step * B * (COLS / B)))) / (COLS / B) * 100;
    assert(Math.abs(bar.fWidth - fWant) < 1e-3, `FFT scale bar ${bar.fLabel} ${bar.fWidth}%, want ${fWant}%`);
    const title = await page.locator('#fft-panel h2 span').first().textContent();
    assert(title.includes('binned 2×2'), `FFT title: ${title}`);
    return `${bar.label}, ${bar.fLabel}`;
  });

  await run.check('scanbin=4 overrides; scanbin=3 (not a divisor) falls back to 2 with a note on the panel', async () => {
    let s = await open('#ds=wide&scanbin=4');
    assert(s.scanBin === 4 && s.requests.some((r) => r.includes('scan_bin=4')), `scanBin ${s.scanBin}`);
    let [h, w] = await canvas('real');
    assert(h === ROWS / 4 && w === COLS / 4, `canvas ${h} x ${w}`);
    assert(s.scanBinOverride === 4, `override ${s.scanBinOverride}`);
    s = await open('#ds=wide&scanbin=3');
    assert(s.scanBin === 2 && s.requests.some((r) => r.includes('scan_bin=2')) && !s.requests.some((r) => r.includes('scan_bin=3')),
      `scanBin ${s.scanBin}`);
    const text = await page.locator('#real-text').textContent();
    assert(text.includes('scanbin=3 ignored') && text.includes('automatic bin 2'), `panel text: ${text}`);
    [h, w] = await canvas('real');
    assert(h === ROWS / 2 && w === COLS / 2, `canvas ${h} x ${w}`);
  });

  await run.check('a 16 x 16 scan is not binned: no scan_bin, a 16 x 16 picture, no "binned"', async () => {
    const s = await open('#ds=small');
    assert(s.scanBin === 1, `scanBin ${s.scanBin}`);
    assert(!s.requests.some((r) => r.includes('scan_bin')), `requests: ${s.requests.filter((r) => r.includes('scan_bin')).join(' | ')}`);
    const [h, w] = await canvas('real');
    assert(h === 16 && w === 16, `canvas ${h} x ${w}`);
    const text = await page.locator('#real-text').textContent();
    assert(!text.includes('binned'), `text: ${text}`);
    const box = await page.locator('#real').boundingBox();
    await page.mouse.click(box.x + (5.5 / 16) * box.width, box.y + (3.5 / 16) * box.height);
    await page.waitForFunction(() => /^scan \(3, 5\)/.test(document.getElementById('frame-text').textContent), null, { timeout: 20000 });
    await page.screenshot({ path: join(shots, 'scanbin_small.png'), fullPage: true });
  });

  await run.check('no page errors', async () => {
    const s = await st();
    assert(!pageErrors.length, pageErrors.join('; '));
    assert(!s.errors.length, `viewer errors: ${s.errors.join('; ')}`);
  });
} catch (e) {
  run.failed++;
  console.log(`FAIL scanbin e2e setup: ${e instanceof Error ? e.stack : e}`);
} finally {
  await browser?.context.close();
  await server?.stop();
}
console.log(`scanbin e2e: ${run.passed} passed, ${run.failed} failed`);
process.exit(run.failed ? 1 : 0);

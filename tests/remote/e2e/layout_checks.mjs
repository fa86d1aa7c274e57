// Viewer checks of issue 27 (item 7), each at several window widths, on a page of their own: the default ADF ring
// and colormap are the service's (= the CLI's), the SSB controls show on the SSB product only, "fit C1" keeps its
// label, the loading text never moves the panels (a drag ends where it was meant to), and the annotated PNG export
// ("figure": integer nearest upscale, scale bar, colourbar) holds the picture. Screenshots go to opt.out.
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { assert } from './harness.mjs';
import { pageState, panelValues, waitIdle } from './tool_checks.mjs';

export const WIDTHS = [900, 1280, 1600, 1920];

function readNpyU64(path) {
  const b = readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const out = [];
  for (let o = 10 + hlen; o < b.length; o += 8) out.push(Number(b.readBigUInt64LE(o)));
  return out;
}

export async function layoutChecks({ run, context, base, opt, h5, tmp }) {
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  const state = () => pageState(page);
  const idle = (v) => waitIdle(page, v);
  const shot = (name) => page.screenshot({ path: join(opt.out, `${name}.png`), fullPage: true });
  const ds0 = 'e2e_sample';
  const product = async (id) => {
    const s0 = await state();
    if (s0.product === id) return s0;
    await page.selectOption('#product', id);
    await idle(s0.virtualVersion);
    return state();
  };
  const r2 = (x) => Math.round(x * 100) / 100;
  try {
    await page.setViewportSize({ width: 1600, height: 900 });
    await page.goto(base);
    await page.waitForFunction(() => window.qgpuViewer?.ready && !window.qgpuViewer.busy && window.qgpuViewer.virtualVersion > 0,
      null, { timeout: 30000 });

    await run.check('default look: the ADF ring is the service\'s default_adf_radii (= qgpu image --adf), the colormap its default', async () => {
      const list = await (await fetch(`${base}api/datasets`)).json();
      const fit = await (await fetch(`${base}api/datasets/${ds0}/disk_fit`)).json();
      let s = await state();
      assert(list.defaults?.colormap === 'inferno' && s.look.colormap === list.defaults.colormap &&
        (await page.inputValue('#colormap')) === list.defaults.colormap, `colormap: page ${s.look.colormap}, service ${list.defaults?.colormap}`);
      assert(fit.adf_inner > 0 && fit.adf_outer > fit.adf_inner, `disk_fit ring ${fit.adf_inner}..${fit.adf_outer}`);
      assert(s.detector.inner === r2(fit.adf_inner) && s.detector.outer === r2(fit.adf_outer),
        `page ring ${s.detector.inner}..${s.detector.outer}, service ${fit.adf_inner}..${fit.adf_outer}`);
      // The same ring as the C++ rule: inner 1.2 r, outer min(3 r, distance to the nearest detector edge).
      const edge = Math.min(fit.center_row, 31 - fit.center_row, fit.center_col, 31 - fit.center_col);
      assert(Math.abs(fit.adf_inner - 1.2 * fit.radius) < 1e-9 && Math.abs(fit.adf_outer - Math.min(3 * fit.radius, edge)) < 1e-9,
        `ring ${fit.adf_inner}..${fit.adf_outer} vs r ${fit.radius}, edge ${edge}`);
      // The page's annulus image at that ring equals the CLI's default ADF image.
      await page.selectOption('#kind', 'annulus');
      await idle(s.virtualVersion);
      s = await state();
      const out = join(tmp, 'cli_adf');
      execFileSync(opt.qgpu, ['image', h5, '--adf', '--backend', 'cpu', '-o', out], { stdio: 'pipe', timeout: 120000 });
      const cli = readNpyU64(join(out, 'adf.npy'));
      const got = await panelValues(page, 'real');
      assert(JSON.stringify(got) === JSON.stringify(cli), `page ADF (${s.virtualQuery}) != qgpu image --adf: ${got.slice(0, 4)} vs ${cli.slice(0, 4)}`);
      await shot('default_adf_inferno');
      return `${s.virtualQuery}, ${list.defaults.colormap}`;
    });

    await run.check('SSB controls show on the SSB product only, at every width', async () => {
      const seen = [];
      for (const width of WIDTHS) {
        await page.setViewportSize({ width, height: 900 });
        for (const id of ['virtual', 'com', 'dpc', 'idpc', 'ssb']) {
          await product(id);
          const visible = await page.locator('#ssb-controls').isVisible();
          assert(visible === (id === 'ssb'), `width ${width}, product ${id}: SSB controls visible ${visible}`);
          if (id === 'ssb' || id === 'virtual') await shot(`ssb_controls_${id}_${width}`);
        }
        seen.push(width);
        await product('virtual');
      }
      return `widths ${seen.join(', ')}`;
    }, 180000);

    await run.check('"fit C1" sets C1 and keeps its label, twice', async () => {
      let s = await product('ssb');
      const fit = await (await fetch(`${base}api/datasets/${ds0}/ssb_fit?bin=4`)).json();
      for (let i = 0; i < 2; ++i) {
        await page.click('#ssb-fit');
        await page.waitForFunction(() => !document.getElementById('ssb-fit').disabled && !window.qgpuViewer.busy, null, { timeout: 60000 });
        const label = await page.textContent('#ssb-fit');
        s = await state();
        assert(label === 'fit C1', `label after fit ${i + 1}: '${label}'`);
        assert(s.defocus === Math.round(fit.defocus_angstrom), `C1 ${s.defocus} vs fit ${fit.defocus_angstrom}`);
      }
      await product('virtual');
    });

    await run.check('the loading text never moves the panels: a slow drag ends where it was meant to, at every width', async () => {
      const notes = [];
      await product('virtual');
      await page.route('**/virtual?*', async (route) => {
        await new Promise((r) => setTimeout(r, 400));
        await route.continue().catch(() => {});  // an aborted (superseded) request
      });
      try {
        for (const width of WIDTHS) {
          await page.setViewportSize({ width, height: 900 });
          await page.waitForFunction(() => !window.qgpuViewer.busy && document.getElementById('loading').textContent === '');
          const s0 = await state();
          const box0 = await page.locator('#overlay').boundingBox();
          const panels0 = await page.locator('#panels').boundingBox();
          const at = (row, col) => [box0.x + ((col + 0.5) / 32) * box0.width, box0.y + ((row + 0.5) / 32) * box0.height];
          const [x, y] = at(s0.detector.cr, s0.detector.cc);
          const [x2, y2] = at(s0.detector.cr + 6, s0.detector.cc - 5);
          await page.mouse.move(x, y);
          await page.mouse.down();
          await page.mouse.move(x + (x2 - x) / 4, y + (y2 - y) / 4, { steps: 2 });
          await page.waitForFunction(() => document.getElementById('loading').textContent !== '', null, { timeout: 5000 });
          const mid = await page.locator('#panels').boundingBox();
          await page.mouse.move(x2, y2, { steps: 6 });
          await page.mouse.up();
          await idle(s0.virtualVersion);
          const s = await state();
          assert(mid.y === panels0.y && mid.x === panels0.x, `width ${width}: the panels moved by ${mid.y - panels0.y} px while loading`);
          const moved = [s.detector.cr - s0.detector.cr, s.detector.cc - s0.detector.cc];
          assert(Math.abs(moved[0] - 6) < 0.6 && Math.abs(moved[1] + 5) < 0.6, `width ${width}: the drag moved the centre by ${moved}, (6, -5) meant`);
          notes.push(`${width}: (${moved.map((m) => m.toFixed(2)).join(', ')})`);
          if (width === 1600) {
            // mid-drag picture with the loading text up
            await page.mouse.move(x2, y2);
            await page.mouse.down();
            await page.mouse.move(x, y, { steps: 3 });
            await shot(`loading_mid_drag_${width}`);
            await page.mouse.up();
            await page.waitForFunction(() => !window.qgpuViewer.busy && document.getElementById('loading').textContent === '');
          } else {
            // back to where it started
            await page.mouse.move(x2, y2);
            await page.mouse.down();
            await page.mouse.move(x, y, { steps: 3 });
            await page.mouse.up();
            await page.waitForFunction(() => !window.qgpuViewer.busy && document.getElementById('loading').textContent === '');
          }
        }
      } finally {
        await page.unroute('**/virtual?*');
      }
      return notes.join('; ');
    }, 180000);

    await run.check('figure export: the picture upscaled (nearest), the scale bar at its calibrated length, the colourbar', async () => {
      await page.setViewportSize({ width: 1600, height: 900 });
      const s0 = await product('virtual');
      await page.selectOption('#kind', 'disk');
      await idle(s0.virtualVersion);
      const r = await page.evaluate(async () => {
        const p = window.qgpuPanels.real;
        const k = p.figureScale();
        const blob = await p.figureBlob();
        const bitmap = await createImageBitmap(blob, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
        const c = document.createElement('canvas');
        c.width = bitmap.width;
        c.height = bitmap.height;
        const g = c.getContext('2d');
        g.drawImage(bitmap, 0, 0);
        const fig = g.getImageData(0, 0, c.width, c.height).data;
        const src = p.canvas.getContext('2d').getImageData(0, 0, p.canvas.width, p.canvas.height).data;
        const bar = document.querySelector('#real-panel .colorbar canvas').getContext('2d').getImageData(0, 0, 256, 1).data;
        const bytes = new Uint8Array(await blob.arrayBuffer());
        let b64 = '';
        for (let i = 0; i < bytes.length; i += 32768) b64 += String.fromCharCode(...bytes.subarray(i, i + 32768));
        return { k, w: c.width, h: c.height, rows: p.canvas.height, cols: p.canvas.width, fig: Array.from(fig), src: Array.from(src),
          bar: Array.from(bar), label: document.querySelector('#real-panel .scalebar').textContent, png: btoa(b64) };
      });
      writeFileSync(join(opt.out, 'figure_real.png'), Buffer.from(r.png, 'base64'));
      const { k, w, rows, cols } = r;
      assert(k >= 2 && Number.isInteger(k) && w === cols * k && r.h > rows * k, `figure ${w}x${r.h}, scale ${k}, image ${cols}x${rows}`);
      const px = (x, y) => r.fig.slice(4 * (y * w + x), 4 * (y * w + x) + 3).join();
      // Scale bar: the white run on the bar's middle line, as long as the label's length in scan steps x k.
      const ds = (await (await fetch(`${base}api/datasets`)).json()).datasets.find((d) => d.id === ds0);
      const step = ds.metadata.calibration.scan_step_angstrom;
      const m = r.label.match(/^([0-9.]+) (Å|nm)$/);
      assert(m, `scale bar label '${r.label}'`);
      const length = Math.round((Number(m[1]) * (m[2] === 'nm' ? 10 : 1)) / step * k);
      let barRow = -1, run0 = -1, runLen = 0;
      for (let y = rows * k - 1; y >= 0 && barRow < 0; --y) {
        let x = 0;
        while (x < w && px(x, y) !== '255,255,255') ++x;
        let e = x;
        while (e < w && px(e, y) === '255,255,255') ++e;
        if (e - x >= 3) [barRow, run0, runLen] = [y, x, e - x];
      }
      assert(barRow > rows * k * 0.8 && runLen === length, `scale bar: ${runLen} px at row ${barRow}, ${length} px (${r.label} at ${step} Å/px x ${k}) expected`);
      // Elsewhere (away from the bar and its label) each image pixel is the canvas pixel at (y / k, x / k).
      let differing = 0;
      for (let y = 0; y < rows * k; ++y) for (let x = 0; x < w; ++x) {
        if (y > barRow - 40 && x < run0 + runLen + 4) continue;
        const i = 4 * (Math.floor(y / k) * cols + Math.floor(x / k));
        if (px(x, y) !== r.src.slice(i, i + 3).join()) ++differing;
      }
      assert(differing === 0, `${differing} figure pixels differ from the upscaled canvas`);
      // Colourbar strip: at the middle of each of its 256 steps, the colormap colour of that step.
      const y = rows * k + 4;
      let wrong = 0;
      for (let i = 0; i < 256; ++i) if (px(Math.floor(((i + 0.5) * w) / 256), y) !== r.bar.slice(4 * i, 4 * i + 3).join()) ++wrong;
      assert(wrong === 0, `${wrong} of 256 colourbar steps differ`);
      return `${w}x${r.h} (x${k}), scale bar ${r.label} = ${runLen} px`;
    });
    await run.check('the layout-check page reported no error', async () => {
      const errors = (await state()).errors;
      assert(!errors.length && !pageErrors.length, `errors: ${JSON.stringify([...errors, ...pageErrors])}`);
    });
  } finally {
    await page.close();
  }
}

// Viewer checks of signed and float data (issue 26 point 5), on a server and page of their own: a float32 and an
// int16 .npy (written by numpy) open, the real-space image is the service's float64 / int64 sums (format=u64 carries
// their dtype in X-DType), the mean pattern is drawn, and the WebGPU frame window (unsigned counts only) is offered
// as off with the reason. Screenshots go to opt.out.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { assert, startServer } from './harness.mjs';
import { pageState, panelValues, serverValues } from './tool_checks.mjs';

export async function dtypeChecks({ run, context, opt, tmp }) {
  const f32 = join(tmp, 'e2e_float.npy'), i16 = join(tmp, 'e2e_int16.npy');
  execFileSync(process.env.PYTHON ?? '/usr/bin/python3', ['-c', `
import numpy as np
rng = np.random.default_rng(3)
rr, cc = np.mgrid[:24, :24]
disk = ((rr - 11.5) ** 2 + (cc - 12) ** 2 <= 25)
a = np.where(disk, 50.0, 1.5)[None, None] + rng.normal(0, 1, (10, 12, 24, 24))
np.save(${JSON.stringify(f32)}, a.astype('<f4'))
np.save(${JSON.stringify(i16)}, (a * 40 - 300).astype('>i2'))
`], { stdio: 'pipe', timeout: 60000 });
  const server = await startServer(opt.qgpu, [f32, i16], opt.web, join(opt.out, 'serve_dtypes.log'));
  const base = server.url;
  const page = await context.newPage();
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    for (const [id, dtype, sums] of [['e2e_float', 'float32', 'float64'], ['e2e_int16', 'int16', 'int64']]) {
      await run.check(`${dtype} data: the page shows the service's ${sums} sums and its mean pattern`, async () => {
        await page.goto(`${base}#ds=${id}`);
        await page.waitForFunction(() => window.qgpuViewer?.ready && !window.qgpuViewer.busy && window.qgpuViewer.virtualVersion > 0,
          null, { timeout: 30000 });
        let s = await pageState(page);
        if (s.dataset.id !== id) {
          await page.selectOption('#dataset', id);
          await page.waitForFunction((want) => window.qgpuViewer.dataset?.id === want && window.qgpuViewer.ready &&
            !window.qgpuViewer.busy && window.qgpuViewer.virtualVersion > 0, id, { timeout: 30000 });
          s = await pageState(page);
        }
        assert(s.dataset.dtype === dtype, `dataset dtype ${s.dataset.dtype}`);
        const raw = await fetch(`${base}api/datasets/${id}/virtual?${s.virtualQuery}&format=u64`);
        assert(raw.headers.get('X-DType') === sums, `X-DType ${raw.headers.get('X-DType')}`);
        const want = await serverValues(base, id, `virtual?${s.virtualQuery}&format=json`);
        const got = await panelValues(page, 'real');
        assert(JSON.stringify(got) === JSON.stringify(want), `page values != service values for ${s.virtualQuery}`);
        assert(want.some((v) => v !== Math.round(v)) === (sums === 'float64'), 'float sums keep their fractions');
        const pattern = await panelValues(page, 'pattern');
        assert(pattern && pattern.length === 24 * 24 && pattern.some((v) => v !== 0), 'mean pattern drawn');
        const box = await page.locator('#browser-compute');
        assert(await box.isDisabled(), 'browser compute offered for non-count data');
        assert((await box.getAttribute('title')).includes(dtype), `browser compute title: ${await box.getAttribute('title')}`);
        await page.screenshot({ path: join(opt.out, `viewer_${dtype}.png`), fullPage: true });
      });
    }
    await run.check('signed and float data: the page reported no error', async () => {
      const s = await pageState(page);
      assert(s.errors.length === 0 && pageErrors.length === 0, `errors: ${JSON.stringify([...s.errors, ...pageErrors])}`);
    });
  } finally {
    await page.close().catch(() => {});
    server.stop();
  }
}

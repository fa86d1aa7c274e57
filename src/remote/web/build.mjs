// Bundles the viewer into dist/: app.js + index.html + style.css (the server viewer, an ES module), widget.js (the
// notebook widget, an ES module with style.css inside), and
// local.html (the local-file page, no server) as ONE self-contained file: its bundle inlined as a classic script
// and style.css inlined, so that it also works opened from disk (file://), where Chromium refuses module scripts
// and other files. WGSL files are bundled as text.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, 'dist');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const common = { bundle: true, target: 'es2022', minify: false, loader: { '.wgsl': 'text' }, logLevel: 'warning' };

await build({ ...common, entryPoints: [join(here, 'src/main.ts')], format: 'esm', sourcemap: true, outfile: join(out, 'app.js') });
for (const f of ['index.html', 'style.css']) copyFileSync(join(here, f), join(out, f));
// The notebook widget (qgpu.widget.Show4D): one ES module for anywidget, the viewer's panels and its style sheet in it.
await build({ ...common, entryPoints: [join(here, 'src/widget.ts')], format: 'esm', outfile: join(out, 'widget.js'),
  loader: { ...common.loader, '.css': 'text' } });

const local = await build({ ...common, entryPoints: [join(here, 'src/local/main.ts')], format: 'iife', write: false,
  outfile: 'local.js' });
const js = local.outputFiles[0].text.replace(/<\/(script)/gi, '<\\/$1');  // no early end of the inline script
const css = readFileSync(join(here, 'style.css'), 'utf8');
const page = readFileSync(join(here, 'local.html'), 'utf8');
const markers = ['<link rel="stylesheet" href="style.css">', '<script type="module" src="local.js"></script>'];
for (const m of markers) if (!page.includes(m)) throw new Error(`local.html: '${m}' not found to inline`);
// Replacement functions: the bundle's text may hold `$&` and the like.
writeFileSync(join(out, 'local.html'), page.replace(markers[0], () => `<style>\n${css}</style>`)
  .replace(markers[1], () => `<script>\n${js}</script>`));
console.log('viewer built in ' + out);

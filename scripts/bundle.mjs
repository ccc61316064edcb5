// Bundles a TypeScript Node entry (CLI, benchmark) into .build/<name>.mjs with esbuild: WGSL files
// inlined as text, Dawn (`webgpu`) and Playwright (`playwright-core`, which cannot be bundled) left external.
// The same bundle runs here and on the GPU machine (there, both come from .devcarry/node_modules/).
// Usage: node scripts/bundle.mjs bench/kernels.ts [outdir]
import { build } from 'esbuild';
import { basename } from 'node:path';

const [entry, outdir = '.build'] = process.argv.slice(2);
if (!entry) {
  console.error('usage: node scripts/bundle.mjs ENTRY.ts [OUTDIR]');
  process.exit(2);
}
const outfile = `${outdir}/${basename(entry).replace(/\.ts$/, '.mjs')}`;
await build({
  entryPoints: [entry],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  outfile,
  external: ['webgpu', 'playwright-core'],
  loader: { '.wgsl': 'text' },
  // CommonJS dependencies (TensorFlow.js) call require(); give the ESM bundle one.
  banner: { js: "import { createRequire as __cr } from 'module'; const require = __cr(import.meta.url);" },
  logLevel: 'warning',
});
console.log(outfile);

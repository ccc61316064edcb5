// `npm run bench:dispatch`: what one dispatch costs, in Node (Dawn) and in headless Chromium on the same
// machine, through the engine's own Gpu.run (bench/dispatch-cost.ts: encode on the JS thread, end to end,
// and one submit-and-wait round trip). The browser side is bench/dispatch-page.ts, bundled here with
// esbuild (WGSL as text, as the Node bundles) and served by vite preview; Chromium is launched as
// bench:browser and the e2e suite launch it (scripts/chromium-launch.ts picks the GPU flags
// where a GPU is present, SwiftShader otherwise). Each side names the adapter it got, and the
// ratios say what the browser's extra process (its GPU process behind an IPC channel) costs per dispatch.
// The page runs on the main thread; the lab's engine runs in a Worker, which goes through the same channel.
// The page is served cross-origin isolated (COOP/COEP headers), so Chromium's performance.now() is precise to
// 5 µs instead of 100 µs.
// Options: --n 2000 (dispatches per rep) --reps 5 --machine NAME (default: from the Node adapter)
//          --out bench/results/dispatch/dispatch-<machine>.json --port 4181 --no-browser

import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { build } from 'esbuild';
import { chromium } from '@playwright/test';
import { preview } from 'vite';
import { chromiumLaunch } from '../scripts/chromium-launch.ts';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import type { AdapterSummary } from '../src/gpu/gpu.ts';
import { type DispatchCost, dispatchCost } from './dispatch-cost.ts';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const n = Number(arg('n', '2000'));
const reps = Number(arg('reps', '5'));
const PAGE_DIR = '.build/dispatch-page';

const adapterName = (a: AdapterSummary): string =>
  [a.vendor, a.architecture, a.device, a.description].filter(Boolean).join(' / ') || 'unknown';

const load0 = loadavg()[0]; // other work on the machine moves these timings (SwiftShader shares the CPUs): recorded with them
const gpu = await acquireNodeGpu({ log: console.log });
const node = await dispatchCost(gpu, n, reps);
const machine = arg(
  'machine',
  (gpu.adapter.description || gpu.adapter.architecture || gpu.adapter.vendor || 'unknown')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, ''),
);

async function inChromium(): Promise<{ browser: string; cost: DispatchCost }> {
  await build({
    entryPoints: ['bench/dispatch-page.ts'],
    bundle: true,
    platform: 'browser',
    format: 'esm',
    target: 'es2022',
    outfile: `${PAGE_DIR}/dispatch-page.js`,
    loader: { '.wgsl': 'text' },
    logLevel: 'warning',
  });
  writeFileSync(
    `${PAGE_DIR}/index.html`,
    '<!doctype html><meta charset="utf-8"><title>bench:dispatch</title><script type="module" src="./dispatch-page.js"></script>\n',
  );
  const server = await preview({
    build: { outDir: PAGE_DIR },
    preview: {
      port: Number(arg('port', '4181')),
      host: '127.0.0.1',
      strictPort: false,
      headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' },
    },
    logLevel: 'warn',
  });
  const url = server.resolvedUrls?.local[0] ?? 'http://127.0.0.1:4181/';
  const { executablePath, args } = chromiumLaunch();
  const browser = await chromium.launch({ executablePath, args });
  try {
    const page = await browser.newPage();
    await page.goto(`${url}?n=${n}&reps=${reps}`);
    const handle = await page.waitForFunction(() => (window as unknown as { dispatchCost?: unknown }).dispatchCost, null, {
      timeout: 600_000,
    });
    const result = (await handle.jsonValue()) as DispatchCost | { error: string };
    if ('error' in result) throw new Error(`bench:dispatch in Chromium: ${result.error}`);
    return { browser: browser.version(), cost: result };
  } finally {
    await browser.close();
    await new Promise<void>((r) => server.httpServer.close(() => r()));
  }
}

const chrome = process.argv.includes('--no-browser') ? null : await inChromium();
const us = (ms: number) => `${(ms * 1000).toFixed(1)} µs`;
const row = (name: string, c: DispatchCost) =>
  `| ${name} | ${adapterName(c.adapter)}${c.cpuAdapter ? ' (CPU)' : ''} | ${us(c.encodeMsPerDispatch)} | ${us(c.endToEndMsPerDispatch)} | ${c.roundTripMs.toFixed(3)} ms |`;
const load: [number, number] = [load0, loadavg()[0]];
console.log(
  `\none dispatch (${n} per rep, median of ${reps}; ${cpus()[0]?.model ?? '?'}, ${cpus().length} logical CPUs; 1-minute load average ${load[0].toFixed(1)} -> ${load[1].toFixed(1)})`,
);
console.log('| where | adapter | encode (JS thread) | end to end | one dispatch + submit + wait |\n|---|---|---|---|---|');
console.log(row('Node (Dawn)', node));
let ratios: Record<string, number> | null = null;
if (chrome) {
  console.log(row(`Chromium ${chrome.browser}`, chrome.cost));
  const c = chrome.cost;
  ratios = {
    encode: c.encodeMsPerDispatch / node.encodeMsPerDispatch,
    endToEnd: c.endToEndMsPerDispatch / node.endToEndMsPerDispatch,
    roundTrip: c.roundTripMs / node.roundTripMs,
  };
  console.log(`| Chromium / Node | | ${ratios.encode.toFixed(2)}x | ${ratios.endToEnd.toFixed(2)}x | ${ratios.roundTrip.toFixed(2)}x |`);
}
const out = arg('out', `bench/results/dispatch/dispatch-${machine}.json`);
mkdirSync('bench/results/dispatch', { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      what: 'cost of one dispatch through Gpu.run: encode on the JS thread, end to end (encode + submit + wait) per dispatch, one-dispatch round trip',
      date: new Date().toISOString(),
      machine,
      cpu: `${cpus()[0]?.model ?? '?'}, ${cpus().length} logical CPUs`,
      dispatchesPerRep: n,
      reps,
      loadAvg1m: load,
      node,
      chromium: chrome && { version: chrome.browser, ...chrome.cost },
      chromiumOverNode: ratios,
    },
    null,
    1,
  )}\n`,
);
console.log(`wrote ${out}`);
process.exit(0);

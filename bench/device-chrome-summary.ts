// The side-by-side table of bench/device-chrome.sh: per run, one MARFT iteration in the lab in Chromium
// (bench:browser) and in Node through Dawn (bench:iteration), same machine, same call, each figure with the
// adapter it ran on. Reads the per-run JSON files both benchmarks wrote, merges them into OUT/browser.json
// and OUT/iteration.json, and prints the table (the script tees it into OUT/summary.txt).
// Usage: node summary.mjs JSON_DIR OUT_DIR [RUN ...] (the table's order; default: the files')

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AdapterSummary } from '../src/gpu/gpu.ts';
import { adapterLabel } from '../scripts/chromium-launch.ts';

const [dir, out, ...order] = process.argv.slice(2);
if (!dir || !out) {
  console.error('usage: node summary.mjs JSON_DIR OUT_DIR');
  process.exit(2);
}

interface Seconds {
  rollout: number;
  score: number;
  advantages: number;
  update: number;
  total: number;
}
interface BrowserFile {
  browser: string;
  launch: { reason: string };
  results: Array<{ run: string; episodes: number; adapterLabel: string; timed: Seconds; warmup: Seconds }>;
}
interface NodeFile {
  adapter: AdapterSummary;
  rows: Array<Record<string, number | string>>;
}

const read = <T>(prefix: string): Array<[string, T]> =>
  readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.json'))
    .sort()
    .map((f) => [f.slice(prefix.length, -'.json'.length), JSON.parse(readFileSync(join(dir, f), 'utf8')) as T]);
const browser = read<BrowserFile>('browser-');
const node = read<NodeFile>('iteration-');
writeFileSync(join(out, 'browser.json'), `${JSON.stringify(Object.fromEntries(browser), null, 1)}\n`);
writeFileSync(join(out, 'iteration.json'), `${JSON.stringify(Object.fromEntries(node), null, 1)}\n`);

const f = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '–' : x.toFixed(x >= 100 ? 0 : 2));
const runs = [...new Set([...order, ...browser.map(([r]) => r), ...node.map(([r]) => r)])].filter(
  (r) => browser.some(([b]) => b === r) || node.some(([n]) => n === r),
);
console.log(`One timed MARFT iteration (critic warm-up 0), the trainer's own seconds; Chromium: ${browser[0]?.[1].browser ?? '–'}`);
console.log(
  '| run | episodes | Chrome: adapter | rollout s | update s | total s | Node/Dawn: adapter | rollout s | update s | total s | Node / Chrome |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|');
for (const run of runs) {
  const b = browser.find(([r]) => r === run)?.[1].results.at(-1);
  const file = node.find(([r]) => r === run)?.[1];
  const n = file?.rows[0];
  const nodeOn = file ? adapterLabel(file.adapter).label : '–';
  const nt = n?.totalS as number | undefined;
  console.log(
    `| ${run} | ${b?.episodes ?? n?.episodes ?? '–'} | ${b?.adapterLabel ?? 'not run'} | ${f(b?.timed.rollout)} | ${f(b?.timed.update)} | ${f(b?.timed.total)} | ${nodeOn} | ${f(n?.rolloutS as number)} | ${f(n?.updateS as number)} | ${f(nt)} | ${b && nt ? `${(nt / b.timed.total).toFixed(2)}x` : '–'} |`,
  );
}

// `npm run bench:browser`: the wall time of one MARFT iteration of the classroom preset in the lab, in
// headless Chromium (on SwiftShader where there is no GPU), with its phase split and per-kernel GPU time.
// It builds the app (vite build), serves it (vite preview), opens /?config=classroom in Debian's Chromium
// with the launch flags of playwright.config.ts (plus --enable-webgpu-developer-features, so Chrome does not
// round GPU timestamps to 0.1 ms), and drives the UI as a user would:
//   1. Step: the first iteration (warm-up: the browser compiles every pipeline on first use),
//   2. Step: the timed iteration,
//   3. "Profile next iteration" + Step: the profiled iteration (every dispatch in a pass of its own, so it
//      runs slower; its per-kernel GPU times are read from the Profile panel's table); with a list of
//      episode counts, only for the last one.
// The critic warm-up is set to 0, so every measured iteration has the policy update of the classroom run's
// steady state (its first 2 iterations train the critic only). --episodes N runs N episodes instead of the
// preset's (SwiftShader is slow); the JSON then names the episode count and the script prints a per-phase
// linear extrapolation to the preset's count, labelled as such, when it has measured two episode counts
// (--episodes 1,2,4).
// Each step also records the CPU seconds of this process and its children (Chromium's processes: on
// SwiftShader the GPU process does the GPU's work), which moves far less than wall time with other load on
// the machine, and the dispatches of the profiled iteration (its kernel table's calls). --dist also serves
// another checkout's build (e.g. an older commit's dist/, built there) through this driver, for before/after.
// Options: --episodes N (default: the preset's; or a list: 1,2,4) --no-build --dist dist (the build folder) --port 4180
//          --out bench/results/browser-classroom.json --iteration-timeout-min 60

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { type Page, chromium } from '@playwright/test';
import { preview } from 'vite';
import playwrightConfig from '../playwright.config.ts';
import { formatKernelTable, kernelRows } from '../src/common/profile-table.ts';
import { presetRunConfig } from '../src/config/run-presets.ts';
import { treeCpuSeconds } from './cpu-time.ts';

const argv = process.argv.slice(2);
const arg = (n: string, d: string): string => { const i = argv.indexOf(`--${n}`); return i >= 0 ? argv[i + 1] : d; };
const CLASSROOM_EPISODES = (presetRunConfig('classroom')!.rollout as { episodes: number }).episodes;
const episodeCounts = arg('episodes', String(CLASSROOM_EPISODES)).split(',').map(Number);
if (episodeCounts.some((e) => !Number.isInteger(e) || e < 1)) throw new Error(`--episodes must be positive integers, got ${arg('episodes', '')}`);
const out = arg('out', 'bench/results/browser-classroom.json');
const iterationTimeout = Number(arg('iteration-timeout-min', '60')) * 60_000;
const distDir = arg('dist', 'dist');

interface Seconds { rollout: number; score: number; advantages: number; update: number; total: number }
interface Measured {
  episodes: number;
  /** The trainer's own times (IterationMetrics.seconds) of the warm-up, timed and profiled iterations. */
  warmup: Seconds;
  timed: Seconds;
  /** Only for the last episode count. */
  profiled: Seconds | null;
  /** Click on Step to the run paused again, checkpoint to OPFS included. */
  wallS: { warmup: number; timed: number; profiled: number | null };
  /** CPU seconds of this process and Chromium's during the same spans (null off Linux). */
  cpuS: { warmup: number | null; timed: number | null; profiled: number | null };
  /** Dispatches of the profiled iteration (the sum of its kernel table's calls). */
  profiledDispatches: number | null;
  kernels: Array<{ key: string; calls: number; ms: number }>;
  kernelsUnavailable: string | null;
  /** The machine's 1-minute load average before and after (other work on the machine slows SwiftShader). */
  loadAvg1m: [number, number];
}

function cpuName(): string {
  const info = readFileSync('/proc/cpuinfo', 'utf8');
  const field = (k: string) => new RegExp(`^${k}\\s*:\\s*(.*)$`, 'm').exec(info)?.[1]?.trim() ?? '?';
  return `${field('model name')} (family ${field('cpu family')} model ${field('model')}), ${cpus().length} logical CPUs at ${Math.round(Number(field('cpu MHz')))} MHz`;
}

async function lastSeconds(page: Page, iteration: number): Promise<Seconds> {
  const stats = page.getByTestId('last-iteration');
  await stats.and(page.locator(`[data-iteration="${iteration}"]`)).waitFor({ timeout: iterationTimeout });
  return JSON.parse((await stats.getAttribute('data-seconds'))!) as Seconds;
}

/** Presses Step and waits for the run to pause after iteration `iteration`; wall seconds and the trainer's times. */
async function step(page: Page, iteration: number, label: string): Promise<{ wall: number; cpu: number | null; seconds: Seconds }> {
  const c0 = treeCpuSeconds();
  const t0 = performance.now();
  await page.getByTestId('step-training').click();
  const seconds = await lastSeconds(page, iteration);
  await page.locator(`[data-testid="run-status"][data-state="paused"][data-iteration="${iteration + 1}"]`).waitFor({ timeout: iterationTimeout });
  const wall = (performance.now() - t0) / 1000;
  const c1 = treeCpuSeconds();
  const cpu = c0 === null || c1 === null ? null : c1 - c0;
  console.log(`  ${label}: iteration ${iteration}: ${seconds.total.toFixed(2)} s (rollout ${seconds.rollout.toFixed(2)}, score ${seconds.score.toFixed(2)}, advantages ${seconds.advantages.toFixed(3)}, update ${seconds.update.toFixed(2)}); ${wall.toFixed(1)} s from Step to paused${cpu === null ? '' : `, ${cpu.toFixed(1)} CPU s`}`);
  return { wall, cpu, seconds };
}

async function measure(page: Page, url: string, episodes: number, profile: boolean): Promise<Measured> {
  const load0 = loadavg()[0];
  await page.goto(`${url}?config=classroom`);
  await page.getByTestId('gpu-status').and(page.locator('[data-state="ready"]')).waitFor({ timeout: 120_000 });
  await page.getByTestId('tab-build').click();
  await page.getByTestId('field-rollout.episodes').fill(String(episodes));
  await page.getByTestId('field-schedule.criticWarmup').fill('0');
  await page.getByTestId('config-status').and(page.locator('[data-valid="true"]')).waitFor();
  await page.getByTestId('model-status').and(page.locator('[data-state="ready"]')).waitFor({ timeout: 120_000 });
  console.log(`classroom preset, ${episodes} episodes:`);
  const warmup = await step(page, 0, 'warm-up (pipelines compile)');
  const timed = await step(page, 1, 'timed');
  if (!profile) {
    return {
      episodes, warmup: warmup.seconds, timed: timed.seconds, profiled: null, wallS: { warmup: warmup.wall, timed: timed.wall, profiled: null },
      cpuS: { warmup: warmup.cpu, timed: timed.cpu, profiled: null }, profiledDispatches: null, kernels: [], kernelsUnavailable: null, loadAvg1m: [load0, loadavg()[0]],
    };
  }
  await page.getByTestId('tab-train').click();
  await page.getByTestId('profile-next').check();
  await page.getByTestId('profile-panel').and(page.locator('[data-armed="true"]')).waitFor();
  const profiled = await step(page, 2, 'profiled');
  await page.getByTestId('profile-result').and(page.locator('[data-iteration="2"]')).waitFor({ timeout: 60_000 });
  const unavailable = page.getByTestId('profile-kernels-unavailable');
  const kernelsUnavailable = (await unavailable.count()) ? await unavailable.textContent() : null;
  const kernels = await page.getByTestId('kernel-row').evaluateAll((rows) => rows.map((r) => ({
    key: r.getAttribute('data-kernel')!, calls: Number(r.getAttribute('data-calls')), ms: Number(r.getAttribute('data-ms')),
  })));
  return {
    episodes, warmup: warmup.seconds, timed: timed.seconds, profiled: profiled.seconds,
    wallS: { warmup: warmup.wall, timed: timed.wall, profiled: profiled.wall }, cpuS: { warmup: warmup.cpu, timed: timed.cpu, profiled: profiled.cpu },
    profiledDispatches: kernels.length ? kernels.reduce((n, k) => n + k.calls, 0) : null, kernels, kernelsUnavailable, loadAvg1m: [load0, loadavg()[0]],
  };
}

const PHASES = ['rollout', 'score', 'advantages', 'update', 'total'] as const;

/** Per-phase least-squares line a + b * episodes through the timed iterations, evaluated at `at`. */
function extrapolate(ms: Measured[], at: number): Seconds {
  const xs = ms.map((m) => m.episodes);
  const mx = xs.reduce((a, x) => a + x, 0) / xs.length;
  const fit = (ys: number[]) => {
    const my = ys.reduce((a, y) => a + y, 0) / ys.length;
    const b = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / xs.reduce((a, x) => a + (x - mx) ** 2, 0);
    return my + b * (at - mx);
  };
  return Object.fromEntries(PHASES.map((p) => [p, fit(ms.map((m) => m.timed[p]))])) as unknown as Seconds;
}

if (!argv.includes('--no-build')) {
  console.log('building the lab (vite build)…');
  const b = spawnSync('npx', ['vite', 'build', '--logLevel', 'warn', '--outDir', distDir, '--emptyOutDir'], { stdio: 'inherit' });
  if (b.status !== 0) process.exit(b.status ?? 1);
}
const server = await preview({ build: { outDir: distDir }, preview: { port: Number(arg('port', '4180')), host: '127.0.0.1', strictPort: false }, logLevel: 'warn' });
const url = server.resolvedUrls?.local[0] ?? 'http://127.0.0.1:4180/';
const launch = playwrightConfig.use?.launchOptions ?? {};
const browser = await chromium.launch({ ...launch, args: [...(launch.args ?? []), '--enable-webgpu-developer-features'] });
const results: Measured[] = [];
const browserVersion = browser.version();
let adapter: unknown = null;
try {
  for (const [i, episodes] of episodeCounts.entries()) {
    const context = await browser.newContext(); // a fresh OPFS and a fresh pipeline cache per count
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    results.push(await measure(page, url, episodes, i === episodeCounts.length - 1));
    adapter ??= await page.evaluate(async () => {
      const a = await navigator.gpu.requestAdapter();
      return a ? { ...Object.fromEntries(['vendor', 'architecture', 'device', 'description'].map((k) => [k, (a.info as unknown as Record<string, string>)[k]])), features: [...a.features].sort() } : null;
    });
    if (errors.length) console.log(`  page errors: ${errors.join(' | ')}`);
    await context.close();
  }
} finally {
  await browser.close();
  await new Promise<void>((r) => server.httpServer.close(() => r()));
}

const last = results[results.length - 1];
const byOp = kernelRows(last.kernels, 'op');
console.log(`\nGPU time of the profiled iteration (${last.episodes} episodes) per kernel:`);
if (last.kernelsUnavailable) console.log(`  ${last.kernelsUnavailable}`);
console.log(formatKernelTable(kernelRows(last.kernels), 20));
console.log('per op:');
console.log(formatKernelTable(byOp, 20));
if (last.profiledDispatches !== null) console.log(`dispatches in the profiled iteration: ${last.profiledDispatches} (${(last.profiledDispatches / last.episodes).toFixed(0)} per episode)`);

const f = (x: number) => x.toFixed(x >= 100 ? 0 : 2);
console.log('\n| episodes | iteration | rollout s | score s | advantages s | update s | total s | Step → paused s | CPU s |\n|---|---|---|---|---|---|---|---|---|');
for (const m of results) {
  for (const [name, s, w, c] of [['warm-up', m.warmup, m.wallS.warmup, m.cpuS.warmup], ['timed', m.timed, m.wallS.timed, m.cpuS.timed], ['profiled', m.profiled, m.wallS.profiled, m.cpuS.profiled]] as const) {
    if (!s || w === null) continue;
    console.log(`| ${m.episodes} | ${name} | ${f(s.rollout)} | ${f(s.score)} | ${f(s.advantages)} | ${f(s.update)} | ${f(s.total)} | ${f(w)} | ${c === null ? '–' : f(c)} |`);
  }
}
let extrapolated: Seconds | null = null;
const counts = new Set(results.map((m) => m.episodes));
if (!counts.has(CLASSROOM_EPISODES) && counts.size >= 2) {
  extrapolated = extrapolate(results, CLASSROOM_EPISODES);
  console.log(`| **${CLASSROOM_EPISODES} (extrapolated, linear per phase)** | timed | ${PHASES.map((p) => f(extrapolated![p])).join(' | ')} | – | – |`);
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, `${JSON.stringify({
  what: 'one MARFT iteration of the classroom preset in the lab (headless Chromium), critic warm-up 0',
  date: new Date().toISOString(), cpu: cpuName(), browser: browserVersion, adapter, dist: distDir, classroomEpisodes: CLASSROOM_EPISODES,
  results, kernelsByOp: byOp, extrapolated: extrapolated && { episodes: CLASSROOM_EPISODES, seconds: extrapolated, how: 'least-squares line per phase through the timed iterations' },
}, null, 1)}\n`);
console.log(`\nwrote ${out}`);
process.exit(0);

// `npm run bench:browser`: the wall time of one MARFT iteration in the lab, in headless Chromium, with its
// phase split and per-kernel GPU time, for the preset runs and for bench:iteration's random models, each
// figure labelled with the WebGPU adapter the lab's engine got (its gpu-status data-adapter): "GPU (nvidia
// NVIDIA H200)", or "SwiftShader (CPU)" whatever the flags asked for (scripts/chromium-launch.ts adapterLabel).
// Chromium is launched as the e2e suite launches it (scripts/chromium-launch.ts: $CHROME or Debian's
// chromium; the GPU flags where a GPU is present, SwiftShader's elsewhere). The built lab is served by
// bench/lab-server.ts (node:http, no vite), so the bundle of this file (scripts/bundle.mjs, playwright-core
// left external) runs on the GPU machine: bench/device-chrome.sh.
// Each run opens the lab with its config as a ?config= link (bench/bench-configs.ts: the same config that
// bench:iteration times in Node), and drives the UI as a user would:
//   0. the kernel warm-up the lab runs after the model loads (a thrown-away iteration that makes the
//      pipelines; by default on a hardware adapter only, --warmup on|off sets the page's ?warmup=), waited
//      for as a user who looks at the builder for a moment,
//   1. Step: the first iteration (without a warm-up, the pipelines are made inside it),
//   2. Step: the timed iteration,
//   3. "Profile next iteration" + Step: the profiled iteration (every dispatch in a pass of its own, so it
//      runs slower; its per-kernel GPU times are read from the Profile panel's table); with a list of
//      episode counts, only for the last one.
//   then, with --wall N (default 5; 0 = off), what a user waits for in a run: Continue until N more
//   iterations, timed from the click to the run paused again (every checkpoint on the run's cadence, the
//   metrics, the charts and the inspector's updates included), beside the trainer's own seconds of those
//   iterations (each iteration's, as the page shows them): wall per iteration and its ratio to the trainer's.
//   The warm-up step against the timed one is the cold start (coldRatio: first iteration over a warm one).
// Runs: a preset run's name (classroom, lab, duo-token, ...: its own config, critic warm-up 0 so every
// measured iteration has the policy update of the run's steady state), or a random model's shape
// (smollm2-135m, tiny: bench:iteration's 2-agent token-level config, --new tokens per agent). The lab takes
// a model only as the built-in one, a folder the user picks, or a Hub download; a random model goes the Hub
// way: this process serves it (lab-server.ts benchModelFolder: random BF16 weights, the built-in tokenizer
// padded to the vocab) as a local Hub on the lab's own origin, and the UI downloads it (?hub=, honoured for
// loopback origins). Unlike bench:iteration (synthetic tokenizer, no end token), the lab's tokenizer has an
// end token; with random weights it is drawn about once in 49152 tokens, so actions run to --new all the same.
// --episodes N runs N episodes instead of the run's own (SwiftShader is slow); with two or more counts
// (--episodes 1,2,4) the script prints a per-phase linear extrapolation to the preset's count, labelled so.
// Each step also records the CPU seconds of this process and its children (Chromium's processes), and the
// dispatches of the profiled iteration (its kernel table's calls).
// --expect gpu: exit 3 unless every figure came from a hardware adapter (the GPU machine: a SwiftShader run
// must not pass for a GPU one). Without it, a software adapter under the GPU flags is only warned about.
// Options: --runs classroom (a comma list) --episodes N|1,2,4 (default: the run's own; random models 8)
//          --new 128 --agents 2 (random models) --no-build --dist dist (the build folder) --port 0
//          --out bench/results/cpu-fallback/browser-classroom.json --iteration-timeout-min 60 --expect gpu|any --wall 5
//          --revisit 1|0 --warmup auto|on|off

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname } from 'node:path';
import { type Page, chromium } from 'playwright-core';
import type { AdapterSummary } from '../src/gpu/gpu.ts';
import type { RunConfig } from '../src/config/run-config.ts';
import { PRESET_RUNS } from '../src/config/run-presets.ts';
import { formatKernelTable, kernelRows } from '../src/common/profile-table.ts';
import { encodeConfigLink } from '../src/ui/config-io.ts';
import { adapterLabel, chromiumLaunch } from '../scripts/chromium-launch.ts';
import { presetBenchConfig, presetEpisodes, randomModelBenchConfig } from './bench-configs.ts';
import { treeCpuSeconds } from './cpu-time.ts';
import { type HubRepos, benchModelFolder, serveLab } from './lab-server.ts';
import { BENCH_MODELS } from './random-model.ts';

const argv = process.argv.slice(2);
const arg = (n: string, d: string): string => {
  const i = argv.indexOf(`--${n}`);
  return i >= 0 ? argv[i + 1] : d;
};
const runNames = arg('runs', 'classroom').split(',');
for (const r of runNames) {
  if (!Object.hasOwn(PRESET_RUNS, r) && !Object.hasOwn(BENCH_MODELS, r)) {
    throw new Error(
      `--runs ${r}: neither a preset run (${Object.keys(PRESET_RUNS).join(', ')}) nor a random model (${Object.keys(BENCH_MODELS).join(', ')})`,
    );
  }
}
const isPreset = (r: string) => Object.hasOwn(PRESET_RUNS, r);
const episodesArg = argv.includes('--episodes') ? arg('episodes', '').split(',').map(Number) : null;
if (episodesArg?.some((e) => !Number.isInteger(e) || e < 1))
  throw new Error(`--episodes must be positive integers, got ${arg('episodes', '')}`);
const maxNew = Number(arg('new', '128'));
const agentsN = Number(arg('agents', '2')) as 1 | 2 | 3 | 4;
const out = arg('out', 'bench/results/cpu-fallback/browser-classroom.json');
const wallN = Number(arg('wall', '5'));
const revisitOn = arg('revisit', '1') !== '0';
/** The lab's ?warmup= (the kernel warm-up after the model loads): auto (the lab's default), on or off. */
const warmUpArg = arg('warmup', 'auto');
if (!['auto', 'on', 'off'].includes(warmUpArg)) throw new Error(`--warmup must be auto, on or off, got ${warmUpArg}`);
const iterationTimeout = Number(arg('iteration-timeout-min', '60')) * 60_000;
const distDir = arg('dist', 'dist');
const expect = arg('expect', 'any');
if (!['gpu', 'any'].includes(expect)) throw new Error(`--expect must be gpu or any, got ${expect}`);
/** The random models' local Hub repo (its OPFS folder: bench--<shape>). */
const hubRepo = (shape: string) => `bench/${shape}`;

interface Seconds {
  rollout: number;
  score: number;
  advantages: number;
  update: number;
  total: number;
}
interface Measured {
  run: string;
  episodes: number;
  /** The adapter the lab's engine got, and the label every figure of this run carries. */
  adapter: AdapterSummary | null;
  adapterLabel: string;
  /** The trainer's own times (IterationMetrics.seconds) of the warm-up, timed and profiled iterations. */
  warmup: Seconds;
  timed: Seconds;
  /** Only for the last episode count. */
  profiled: Seconds | null;
  /** Click on Step to the run paused again, on the page's clock (its checkpoint is written after, see split). */
  wallS: { warmup: number; timed: number; profiled: number | null };
  /** The page clock's split of the warm-up and timed steps. */
  split: { warmup: StepSplit; timed: StepSplit };
  /** CPU seconds of this process and Chromium's during the same spans (null off Linux). */
  cpuS: { warmup: number | null; timed: number | null; profiled: number | null };
  /** --wall: N iterations after Continue, wall per iteration and the trainer's own per iteration (null: not run). */
  wall: { iterations: number; wallS: number; trainerS: number; ratio: number } | null;
  /**
   * --revisit: the page opened again in the same browser (its OPFS, so the kernel cache the runs wrote, and
   * the browser's own shader caches): pipelines prepared while the model loaded, then Step at once.
   */
  revisit: { prepared: number; first: StepSplit; firstTrainer: number; warm: StepSplit; warmTrainer: number } | null;
  /** The kernel warm-up after the model loaded (waited for before the first Step): pipelines made and its seconds; null: none ran. */
  warmUp: { made: number; seconds: number } | null;
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

/** Seconds from the Step click (page clock) to: the iteration's point shown, the run paused, its checkpoint written. */
interface StepSplit {
  point: number;
  paused: number;
  saved: number;
}

/**
 * Presses Step and waits for the run to pause after iteration `iteration`, then for its checkpoint (written
 * after the run shows paused); wall seconds, the trainer's times, and the split timed on the page's clock.
 */
async function step(
  page: Page,
  iteration: number,
  label: string,
  on: string,
): Promise<{ wall: number; cpu: number | null; seconds: Seconds; split: StepSplit }> {
  // the page's own clock marks each change of the run status, the last iteration and the checkpoint's write
  await page.evaluate(() => {
    const marks: Array<[number, string]> = [];
    const w = window as unknown as { stepMarks: typeof marks; stepObserver?: MutationObserver };
    w.stepObserver?.disconnect();
    w.stepMarks = marks;
    const seen = (sel: string, attr: string) => document.querySelector(sel)?.getAttribute(attr) ?? '';
    w.stepObserver = new MutationObserver(() => {
      const t = performance.now();
      // with the iteration: a mutation right after the click still sees the previous step's paused state
      marks.push([t, `state=${seen('[data-testid="run-status"]', 'data-state')}:${seen('[data-testid="run-status"]', 'data-iteration')}`]);
      marks.push([t, `point=${seen('[data-testid="last-iteration"]', 'data-iteration')}`]);
      marks.push([t, `saving=${seen('[data-testid="last-checkpoint"]', 'data-saving')}`]);
    });
    w.stepObserver.observe(document.body, { subtree: true, childList: true, attributes: true });
    marks.push([performance.now(), 'click']);
  });
  const c0 = treeCpuSeconds();
  await page.getByTestId('step-training').click();
  const seconds = await lastSeconds(page, iteration);
  await page
    .locator(`[data-testid="run-status"][data-state="paused"][data-iteration="${iteration + 1}"]`)
    .waitFor({ timeout: iterationTimeout });
  const c1 = treeCpuSeconds();
  const cpu = c0 === null || c1 === null ? null : c1 - c0;
  await page.locator('[data-testid="last-checkpoint"][data-saving="true"]').waitFor({ state: 'detached', timeout: 120_000 });
  const marks = await page.evaluate(() => (window as unknown as { stepMarks: Array<[number, string]> }).stepMarks);
  const at = (what: string, after = 0) => {
    const m = marks.find(([t, w]) => w === what && t >= after);
    return m ? m[0] : NaN;
  };
  const click = at('click');
  const paused = at(`state=paused:${iteration + 1}`, click);
  const split = {
    point: (at(`point=${iteration}`, click) - click) / 1000,
    paused: (paused - click) / 1000,
    // no write after the pause (the cadence had just written this iteration): saved when paused
    saved: ((marks.some(([t, w]) => w === 'saving=true' && t >= click) ? at('saving=false', paused) : paused) - click) / 1000,
  };
  const wall = split.paused; // the page's clock: Playwright's polling would add up to a tenth of a second or more
  console.log(
    `  [${on}] ${label}: iteration ${iteration}: ${seconds.total.toFixed(2)} s (rollout ${seconds.rollout.toFixed(2)}, score ${seconds.score.toFixed(2)}, advantages ${seconds.advantages.toFixed(3)}, update ${seconds.update.toFixed(2)}); ${wall.toFixed(1)} s from Step to paused${cpu === null ? '' : `, ${cpu.toFixed(1)} CPU s`}; page clock from Step: point shown ${split.point.toFixed(2)} s, paused ${split.paused.toFixed(2)} s, checkpoint written ${split.saved.toFixed(2)} s`,
  );
  return { wall, cpu, seconds, split };
}

/**
 * Continue until `n` more iterations after `from` (the run paused there): wall seconds from the click to the
 * run paused again, and the trainer's own seconds of each of those iterations (as the page shows them).
 */
async function continuous(page: Page, from: number, n: number, on: string): Promise<NonNullable<Measured['wall']>> {
  await page.getByTestId('tab-train').click();
  await page.getByTestId('until').fill(String(from + n));
  // on the page's clock: the click, each iteration's trainer seconds, and the run halted at from + n
  await page.evaluate((end) => {
    const seen = new Map<number, number>();
    const w = window as unknown as { wallSeconds: Map<number, number>; wallClick: number; wallHalted: number };
    w.wallSeconds = seen;
    w.wallHalted = NaN;
    new MutationObserver(() => {
      const el = document.querySelector('[data-testid="last-iteration"]');
      if (el) seen.set(Number(el.getAttribute('data-iteration')), (JSON.parse(el.getAttribute('data-seconds')!) as Seconds).total);
      const st = document.querySelector('[data-testid="run-status"]');
      const state = st?.getAttribute('data-state');
      if (Number.isNaN(w.wallHalted) && (state === 'paused' || state === 'done') && st?.getAttribute('data-iteration') === String(end))
        w.wallHalted = performance.now();
    }).observe(document.body, { subtree: true, childList: true, attributes: true });
    w.wallClick = performance.now();
  }, from + n);
  await page.getByTestId('start-training').click();
  // at its target the run is done (paused only when the target is below the run's own iterations)
  const halted = ['paused', 'done'].map((st) => `[data-testid="run-status"][data-state="${st}"][data-iteration="${from + n}"]`).join(', ');
  await page.locator(halted).waitFor({ timeout: iterationTimeout * n });
  const wall = await page.evaluate(() => {
    const w = window as unknown as { wallClick: number; wallHalted: number };
    return (w.wallHalted - w.wallClick) / 1000;
  });
  const secs = await page.evaluate(() => [...(window as unknown as { wallSeconds: Map<number, number> }).wallSeconds.entries()]);
  const mine = secs.filter(([it]) => it >= from && it < from + n).map(([, s]) => s);
  if (mine.length !== n) throw new Error(`--wall: saw the trainer's seconds of ${mine.length} of ${n} iterations`);
  const trainer = mine.reduce((a, b) => a + b, 0);
  console.log(
    `  [${on}] ${n} iterations after Continue: ${(wall / n).toFixed(3)} s each from the click to halted (page clock), the trainer's own ${(trainer / n).toFixed(3)} s (${(wall / trainer).toFixed(2)}x)`,
  );
  return { iterations: n, wallS: wall / n, trainerS: trainer / n, ratio: wall / trainer };
}

/**
 * Opens the lab at `config` and waits for its model (a random one downloaded through the Hub panel) and for
 * the kernel warm-up that follows it, as a user who looks at the builder for a moment before pressing Step.
 */
async function openRun(
  page: Page,
  url: string,
  run: string,
  config: RunConfig,
): Promise<{ on: string; adapter: AdapterSummary | null; warmUp: Measured['warmUp'] }> {
  const hub = isPreset(run) ? '' : `&hub=${encodeURIComponent(new URL(url).origin)}`;
  const warm = warmUpArg === 'auto' ? '' : `&warmup=${warmUpArg}`;
  await page.goto(`${url}?config=${encodeConfigLink(config)}${hub}${warm}`);
  const status = page.getByTestId('gpu-status');
  await status.and(page.locator('[data-state="ready"], [data-state="error"]')).waitFor({ timeout: 120_000 });
  if ((await status.getAttribute('data-state')) === 'error') throw new Error(`the lab got no WebGPU device: ${await status.textContent()}`);
  const adapter = JSON.parse((await status.getAttribute('data-adapter')) ?? 'null') as AdapterSummary | null;
  await page.getByTestId('tab-build').click();
  if (!isPreset(run)) await downloadRandomModel(page, run);
  await page.getByTestId('config-status').and(page.locator('[data-valid="true"]')).waitFor();
  await page.getByTestId('model-status').and(page.locator('[data-state="ready"]')).waitFor({ timeout: 600_000 });
  // the page shows 'preparing' in the same update as the model ready, so this does not pass before it starts
  const kernels = page.getByTestId('kernels-status');
  await kernels.and(page.locator('[data-state="preparing"]')).waitFor({ state: 'detached', timeout: 600_000 });
  const warmUp = (await kernels.count())
    ? { made: Number(await kernels.getAttribute('data-made')), seconds: Number(await kernels.getAttribute('data-seconds')) }
    : null;
  if (warmUp) console.log(`  kernel warm-up after the model loaded: ${warmUp.made} pipelines in ${warmUp.seconds.toFixed(2)} s`);
  return { on: adapterLabel(adapter).label, adapter, warmUp };
}

/** --revisit: the lab opened again in the same browser, Step pressed as soon as the model is ready. */
async function revisit(page: Page, url: string, m: Measured, config: RunConfig): Promise<NonNullable<Measured['revisit']>> {
  await openRun(page, url, m.run, config);
  const prepared = Number(await page.getByTestId('model-status').getAttribute('data-kernels-prepared'));
  console.log(`  [${m.adapterLabel}] revisit: ${prepared} kernels from the earlier runs prepared while the model loaded`);
  const first = await step(page, 0, 'revisit, first iteration', m.adapterLabel);
  const warm = await step(page, 1, 'revisit, next iteration', m.adapterLabel);
  return { prepared, first: first.split, firstTrainer: first.seconds.total, warm: warm.split, warmTrainer: warm.seconds.total };
}

/** A random model into the lab through the Hub panel, from the local Hub on the lab's origin. */
async function downloadRandomModel(page: Page, shape: string): Promise<void> {
  const t0 = performance.now();
  await page.getByText('Download from the Hugging Face Hub…').click();
  await page.getByTestId('hub-repo').fill(hubRepo(shape));
  await page.getByTestId('hub-list').click();
  await page.getByTestId('hub-download').waitFor({ timeout: 60_000 });
  await page.getByTestId('hub-download').click();
  await page.getByTestId('hub-listing').waitFor({ state: 'detached', timeout: 600_000 });
  const err = page.getByTestId('hub-error');
  if (await err.count()) throw new Error(`the lab could not download the random model ${shape}: ${await err.textContent()}`);
  console.log(`  ${shape}: downloaded into the lab from the local Hub in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

async function measure(page: Page, url: string, run: string, config: RunConfig, profile: boolean): Promise<Measured> {
  const load0 = loadavg()[0];
  const episodes = config.rollout.episodes;
  const { on, adapter, warmUp } = await openRun(page, url, run, config);
  console.log(`${run}, ${episodes} episodes, on ${on}:`);
  const warmup = await step(page, 0, 'warm-up (pipelines compile)', on);
  const timed = await step(page, 1, 'timed', on);
  const wall = wallN > 0 ? await continuous(page, 2, wallN, on) : null;
  const next = 2 + (wall?.iterations ?? 0);
  const common = {
    run,
    episodes,
    adapter,
    adapterLabel: on,
    wall,
    split: { warmup: warmup.split, timed: timed.split },
    revisit: null,
    warmUp,
  };
  if (!profile) {
    return {
      ...common,
      warmup: warmup.seconds,
      timed: timed.seconds,
      profiled: null,
      wallS: { warmup: warmup.wall, timed: timed.wall, profiled: null },
      cpuS: { warmup: warmup.cpu, timed: timed.cpu, profiled: null },
      profiledDispatches: null,
      kernels: [],
      kernelsUnavailable: null,
      loadAvg1m: [load0, loadavg()[0]],
    };
  }
  await page.getByTestId('tab-train').click();
  await page.getByTestId('profile-next').check();
  await page.getByTestId('profile-panel').and(page.locator('[data-armed="true"]')).waitFor();
  const profiled = await step(page, next, 'profiled', on);
  await page
    .getByTestId('profile-result')
    .and(page.locator(`[data-iteration="${next}"]`))
    .waitFor({ timeout: 60_000 });
  const unavailable = page.getByTestId('profile-kernels-unavailable');
  const kernelsUnavailable = (await unavailable.count()) ? await unavailable.textContent() : null;
  const kernels = await page.getByTestId('kernel-row').evaluateAll((rows) =>
    rows.map((r) => ({
      key: r.getAttribute('data-kernel')!,
      calls: Number(r.getAttribute('data-calls')),
      ms: Number(r.getAttribute('data-ms')),
    })),
  );
  return {
    ...common,
    warmup: warmup.seconds,
    timed: timed.seconds,
    profiled: profiled.seconds,
    wallS: { warmup: warmup.wall, timed: timed.wall, profiled: profiled.wall },
    cpuS: { warmup: warmup.cpu, timed: timed.cpu, profiled: profiled.cpu },
    profiledDispatches: kernels.length ? kernels.reduce((n, k) => n + k.calls, 0) : null,
    kernels,
    kernelsUnavailable,
    loadAvg1m: [load0, loadavg()[0]],
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

/** The run's config for `episodes` (null: its own count). */
function runConfig(run: string, episodes: number | null): RunConfig {
  if (isPreset(run)) return presetBenchConfig(run, episodes ?? undefined);
  return randomModelBenchConfig({ agents: agentsN, maxNew, episodes: episodes ?? 8 });
}

if (!argv.includes('--no-build')) {
  console.log('building the lab (vite build)…');
  const b = spawnSync('npx', ['vite', 'build', '--logLevel', 'warn', '--outDir', distDir, '--emptyOutDir'], { stdio: 'inherit' });
  if (b.status !== 0) process.exit(b.status ?? 1);
}
const shapes = runNames.filter((r) => !isPreset(r));
const hub: HubRepos = {};
for (const s of shapes) {
  const t0 = performance.now();
  hub[hubRepo(s)] = benchModelFolder(s, `${distDir}/models/marft-tiny`);
  console.log(
    `random model ${s}: ${(hub[hubRepo(s)]['model.safetensors'].length / 2 ** 20).toFixed(0)} MiB of BF16 weights, made in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
}
const server = await serveLab(distDir, Number(arg('port', '0')), hub);
const launch = chromiumLaunch(process.env, undefined, { developerFeatures: true });
console.log(
  `Chromium: ${launch.executablePath ?? "Playwright's own"}; ${launch.gpuFlags ? 'GPU' : 'SwiftShader'} flags (${launch.reason}): ${launch.args.join(' ')}`,
);
const browser = await chromium.launch({ executablePath: launch.executablePath, args: launch.args });
const results: Measured[] = [];
const browserVersion = browser.version();
try {
  for (const run of runNames) {
    const counts = episodesArg ?? [null];
    for (const [i, episodes] of counts.entries()) {
      // a fresh OPFS and a fresh pipeline cache per count. The locale: headless shell under LANG=C.UTF-8 says
      // "en-US@posix", which Intl refuses (the page fails to start).
      const context = await browser.newContext({ locale: 'en-US' });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('pageerror', (e) => errors.push(e.message));
      const config = runConfig(run, episodes);
      const failed = (e: Error) => {
        throw new Error(`${run}: ${e.message}${errors.length ? `\npage errors: ${errors.join(' | ')}` : ''}`);
      };
      const m = await measure(page, server.url, run, config, i === counts.length - 1).catch(failed);
      if (revisitOn) m.revisit = await revisit(page, server.url, m, config).catch(failed);
      results.push(m);
      if (errors.length) console.log(`  page errors: ${errors.join(' | ')}`);
      await context.close();
    }
  }
} finally {
  await browser.close();
  await server.close();
}

const f = (x: number) => x.toFixed(x >= 100 ? 0 : 2);
const extrapolated: Array<{ run: string; episodes: number; seconds: Seconds; how: string }> = [];
for (const run of runNames) {
  const rs = results.filter((m) => m.run === run);
  const last = rs[rs.length - 1];
  const byOp = kernelRows(last.kernels, 'op');
  console.log(`\n${run}: GPU time of the profiled iteration (${last.episodes} episodes) per kernel, on ${last.adapterLabel}:`);
  if (last.kernelsUnavailable) console.log(`  ${last.kernelsUnavailable}`);
  console.log(formatKernelTable(kernelRows(last.kernels), 20));
  console.log('per op:');
  console.log(formatKernelTable(byOp, 20));
  if (last.profiledDispatches !== null)
    console.log(
      `dispatches in the profiled iteration: ${last.profiledDispatches} (${(last.profiledDispatches / last.episodes).toFixed(0)} per episode)`,
    );
  const own = isPreset(run) ? presetEpisodes(run) : 8;
  const counts = new Set(rs.map((m) => m.episodes));
  if (!counts.has(own) && counts.size >= 2)
    extrapolated.push({
      run,
      episodes: own,
      seconds: extrapolate(rs, own),
      how: 'least-squares line per phase through the timed iterations',
    });
}

console.log(`\nOne MARFT iteration in the lab (headless ${browserVersion}), critic warm-up 0; the trainer's own times:`);
console.log(
  '| run | adapter | episodes | iteration | rollout s | score s | advantages s | update s | total s | Step → paused s | CPU s |\n|---|---|---|---|---|---|---|---|---|---|---|',
);
for (const m of results) {
  for (const [name, s, w, c] of [
    ['warm-up', m.warmup, m.wallS.warmup, m.cpuS.warmup],
    ['timed', m.timed, m.wallS.timed, m.cpuS.timed],
    ['profiled', m.profiled, m.wallS.profiled, m.cpuS.profiled],
  ] as const) {
    if (!s || w === null) continue;
    console.log(
      `| ${m.run} | ${m.adapterLabel} | ${m.episodes} | ${name} | ${f(s.rollout)} | ${f(s.score)} | ${f(s.advantages)} | ${f(s.update)} | ${f(s.total)} | ${f(w)} | ${c === null ? '–' : f(c)} |`,
    );
  }
}
console.log(
  '\nWhat a user waits for: the first iteration against a warm one (Step → paused), and a continuous run (Continue until N more):',
);
console.log(
  `(a fresh browser profile; ?warmup=${warmUpArg}: the kernel warm-up after the model loaded, waited for before the first Step, its pipelines and seconds)`,
);
console.log(
  '| run | adapter | episodes | kernel warm-up | first Step → paused s | warm Step → paused s | cold ratio | Step → paused − trainer s | N | wall per iteration s | trainer per iteration s | wall ratio |\n|---|---|---|---|---|---|---|---|---|---|---|---|',
);
for (const m of results) {
  const w = m.wall;
  const wu = m.warmUp ? `${m.warmUp.made} in ${f(m.warmUp.seconds)} s` : 'none';
  console.log(
    `| ${m.run} | ${m.adapterLabel} | ${m.episodes} | ${wu} | ${f(m.wallS.warmup)} | ${f(m.wallS.timed)} | ${f(m.wallS.warmup / m.wallS.timed)} | ${f(m.wallS.timed - m.timed.total)} | ${w?.iterations ?? '–'} | ${w ? f(w.wallS) : '–'} | ${w ? f(w.trainerS) : '–'} | ${w ? f(w.ratio) : '–'} |`,
  );
}
console.log("\nStep on the page's clock (seconds from the click): the iteration's point shown, the run paused, its checkpoint written:");
console.log('| run | adapter | step | trainer s | point shown s | paused s | checkpoint written s |\n|---|---|---|---|---|---|---|');
for (const m of results) {
  for (const [name, s, sp] of [
    ['first', m.warmup, m.split.warmup],
    ['warm', m.timed, m.split.timed],
  ] as const) {
    console.log(`| ${m.run} | ${m.adapterLabel} | ${name} | ${f(s.total)} | ${f(sp.point)} | ${f(sp.paused)} | ${f(sp.saved)} |`);
  }
}
if (results.some((m) => m.revisit)) {
  console.log(
    '\nThe lab opened again in the same browser (--revisit): kernels prepared from the cache while the model loaded, Step at once:',
  );
  console.log(
    '| run | adapter | kernels prepared | first: trainer s | first: Step → paused s | next: trainer s | next: Step → paused s | first ÷ next (Step → paused) |\n|---|---|---|---|---|---|---|---|',
  );
  for (const m of results) {
    const r = m.revisit;
    if (r)
      console.log(
        `| ${m.run} | ${m.adapterLabel} | ${r.prepared} | ${f(r.firstTrainer)} | ${f(r.first.paused)} | ${f(r.warmTrainer)} | ${f(r.warm.paused)} | ${f(r.first.paused / r.warm.paused)} |`,
      );
  }
}
for (const e of extrapolated) {
  const on = results.find((m) => m.run === e.run)!.adapterLabel;
  console.log(
    `| **${e.run}** | ${on} | **${e.episodes} (extrapolated, linear per phase)** | timed | ${PHASES.map((p) => f(e.seconds[p])).join(' | ')} | – | – |`,
  );
}
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  `${JSON.stringify(
    {
      what: 'one MARFT iteration in the lab (headless Chromium), critic warm-up 0, per run (a preset run or a random model)',
      date: new Date().toISOString(),
      cpu: cpuName(),
      browser: browserVersion,
      launch: { executablePath: launch.executablePath ?? null, args: launch.args, gpuFlags: launch.gpuFlags, reason: launch.reason },
      dist: distDir,
      runs: runNames,
      results,
      extrapolated,
    },
    null,
    1,
  )}\n`,
);
console.log(`\nwrote ${out}`);

// A figure is labelled by its adapter above; here the run as a whole is refused if it was meant for a GPU.
const notGpu = results.filter((m) => adapterLabel(m.adapter).kind !== 'gpu');
if (notGpu.length && (launch.gpuFlags || expect === 'gpu')) {
  console.log(
    `\nbench:browser: ${launch.gpuFlags ? `the GPU flags were chosen (${launch.reason}), but ` : ''}${notGpu.length} of ${results.length} runs got ${[...new Set(notGpu.map((m) => m.adapterLabel))].join(', ')}: ` +
      `these are not GPU figures (VK_ICD_FILENAMES=${process.env.VK_ICD_FILENAMES ?? 'unset'}). On the GPU machine, source .devchrome/app/env.sh first: ` +
      'it points Vulkan at the NVIDIA driver and sets CHROME and CHROME_GPU_FLAGS.',
  );
  if (expect === 'gpu') process.exit(3);
}
process.exit(0);

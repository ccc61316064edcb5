// `npm run bench:soak`: does the engine hold its memory and speed over a long run? Three parts, in one
// process, on the lab's own Session and Run (the code the lab and the CLI use):
//   train    a run config (default configs/duo-action.json) for --iterations in one run folder, resumed
//            from that folder when it already has checkpoints (so a soak longer than one run on a GPU machine
//            goes on where the last run stopped; --budget-s pauses it cleanly at an iteration boundary);
//   switch   --switches model loads alternating between two folders of the built-in model;
//   resume   --resumes times: a new Run resumes the soak run's latest checkpoint and trains one iteration.
// Per iteration / switch / resume it appends one JSON line to --log: the buffer pool's bytes in use,
// allocated and peak (per iteration), the device caches' sizes (pipelines, uniform buffers, bind groups), the JS heap,
// tokens/s, the iteration's dispatches, readbacks and submits, and the newest checkpoint's size. bench/soak-report.ts turns the log into figures and a plot.
// Run it with node --expose-gc so the heap and rss figures are measured after a collection.
// Options: --config FILE --run DIR --log FILE --iterations 300 --budget-s 0 (none) --switches 50 --resumes 50 --parts train,switch,resume

import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { ensureVulkanEnv } from '../src/gpu/node.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import { Run } from '../src/marft/run.ts';
import { nodeStore } from '../src/platform/storage/node.ts';
import { type Counts, counts, since } from './counters.ts';
import { builtinModelDir, checkpointSource, nodeSession, readRunConfig } from '../src/cli/platform.ts';

await ensureVulkanEnv();
const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
const runDir = resolve(arg('run', '.build/soak/run'));
const logFile = resolve(arg('log', '.build/soak/soak.jsonl'));
const iterations = Number(arg('iterations', '300'));
const budgetS = Number(arg('budget-s', '0'));
const parts = arg('parts', 'train,switch,resume').split(',');
mkdirSync(dirname(runDir), { recursive: true });
mkdirSync(dirname(logFile), { recursive: true });
const t0 = performance.now();
const log = (line: Record<string, unknown>): void =>
  appendFileSync(logFile, `${JSON.stringify({ ...line, t: +((performance.now() - t0) / 1000).toFixed(2) })}\n`);

/** What the engine holds now: the pool's bytes, the device caches, the JS heap. */
function memory(gpu: Gpu): Record<string, unknown> {
  (globalThis as { gc?: () => void }).gc?.(); // with node --expose-gc: the heap and rss without garbage not yet collected
  const { bytesInUse, bytesAllocated, peakBytes, buffers } = gpu.pool.stats;
  const { heapUsed, rss } = process.memoryUsage();
  return { bytesInUse, bytesAllocated, peakBytes, buffers, ...gpu.cacheSizes, heapUsed, rss };
}

function dirBytes(dir: string): number {
  return readdirSync(dir, { withFileTypes: true }).reduce(
    (s, e) => s + (e.isDirectory() ? dirBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size),
    0,
  );
}

/** The newest checkpoint folder of the soak run and its size on disk. */
function newestCheckpoint(): { name: string; bytes: number } | null {
  if (!existsSync(runDir)) return null;
  const names = readdirSync(runDir)
    .filter((n) => n.startsWith('ckpt-'))
    .sort();
  const name = names.at(-1);
  return name ? { name, bytes: dirBytes(join(runDir, name)) } : null;
}

const session = nodeSession((l) => console.error(l));

if (parts.includes('train')) {
  const store = nodeStore(dirname(runDir));
  let last: Counts | null = null; // counters at the previous iteration's end (the first line counts from the model load)
  const run: Run = new Run(
    session,
    store,
    {
      onIteration: ({ metrics }) => {
        const gpu = run.model!.gpu;
        const work = since(gpu, last ?? { dispatches: 0, reads: 0, submits: 0, copies: 0, passes: 0 });
        last = counts(gpu);
        log({
          part: 'train',
          iteration: metrics.iteration,
          tokensPerSecond: metrics.tokensPerSecond,
          seconds: metrics.seconds.total,
          tokens: Object.values(metrics.agents).reduce((s, a) => s + a.tokens, 0),
          accuracy: metrics.accuracy,
          checkpointBytes: newestCheckpoint()?.bytes ?? 0,
          ...work,
          ...memory(gpu),
        });
        gpu.pool.resetPeak(); // peakBytes is each iteration's own
        if (metrics.iteration % 10 === 0)
          console.error(
            `iteration ${metrics.iteration}: ${metrics.tokensPerSecond.toFixed(0)} tok/s, pool ${(gpu.pool.stats.bytesInUse / 2 ** 20).toFixed(1)} MiB in use`,
          );
        if (budgetS > 0 && (performance.now() - t0) / 1000 > budgetS) run.pause();
      },
    },
    { keep: 2 },
  );
  if (newestCheckpoint()) {
    await run.resume(checkpointSource(runDir), basename(runDir));
    console.error(`resumed ${runDir} at iteration ${run.iteration}`);
    run.train(iterations);
  } else {
    await run.start(readRunConfig(arg('config', 'configs/duo-action.json')), { id: basename(runDir), until: iterations });
  }
  const status = await run.wait();
  const reached = run.iteration;
  console.error(`train: ${status} at iteration ${reached} of ${iterations}`);
  run.close();
  if (reached < iterations) process.exit(0); // the next call goes on from the checkpoint
}

if (parts.includes('switch')) {
  // two folders of the same model: the session loads (and releases) one whole model per switch
  const a = builtinModelDir();
  const b = resolve(dirname(runDir), 'model-copy');
  cpSync(a, b, { recursive: true });
  const n = Number(arg('switches', '50'));
  for (let i = 0; i < n; i++) {
    const m = await session.load(i % 2 ? b : a);
    log({ part: 'switch', index: i, ...memory(m.gpu) });
  }
}

if (parts.includes('resume')) {
  const n = Number(arg('resumes', '50'));
  const store = nodeStore(resolve(dirname(runDir), 'resumes'));
  for (let i = 0; i < n; i++) {
    const run = new Run(session, store, {}, { keep: 1 });
    await run.resume(checkpointSource(runDir), `r${i}`);
    run.step();
    await run.wait();
    const gpu = run.model!.gpu;
    const iteration = run.iteration;
    run.close();
    log({ part: 'resume', index: i, iteration, ...memory(gpu) });
  }
}
console.error(`soak done in ${((performance.now() - t0) / 1000).toFixed(0)} s; log ${logFile}`);
process.exit(0);

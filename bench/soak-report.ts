// `npm run bench:soak-report`: turns a soak log (bench/soak.ts, one JSON line per iteration, model switch
// and resume) into the figures RELIABILITY.md shows (bench/results/soak/soak.md) and a plot (docs/soak.svg):
// live GPU memory flat after warm-up (within 1 %), no slowdown (the last 50 iterations' median time against
// iterations 10-59's, within 5 %), the device caches bounded, and the same memory over model switches and resumes.
// Options: --log bench/results/soak/soak.jsonl --md bench/results/soak/soak.md --svg docs/soak.svg --device "NVIDIA H200" --note TEXT

import { readFileSync, writeFileSync } from 'node:fs';
import { H, W, panel } from './svg-panel.ts';

const arg = (n: string, d: string): string => {
  const i = process.argv.indexOf(`--${n}`);
  return i > 0 ? process.argv[i + 1] : d;
};
type Line = Record<string, number | string>;
const lines = readFileSync(arg('log', 'bench/results/soak/soak.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as Line);
const part = (p: string) => lines.filter((l) => l.part === p);
const train = part('train');
const WARMUP = 10;
const steady = train.slice(WARMUP);
const num = (ls: Line[], k: string) => ls.map((l) => Number(l[k]));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const MiB = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
/** max/min - 1 of a series, as a percentage. */
const spread = (xs: number[]) => (Math.max(...xs) / Math.min(...xs) - 1) * 100;

/** pass null: a figure shown, not judged. */
interface Check {
  what: string;
  figure: string;
  pass: boolean | null;
}
const checks: Check[] = [];
const flat = (name: string, ls: Line[], k: string, label: string) => {
  const xs = num(ls, k);
  const s = spread(xs);
  checks.push({
    what: `${name}: ${label}`,
    figure: `${MiB(Math.min(...xs))} to ${MiB(Math.max(...xs))} (spread ${s.toFixed(2)} %)`,
    pass: s <= 1,
  });
};
flat(`training, iterations ${WARMUP}-${train.length - 1}`, steady, 'bytesInUse', 'GPU bytes in use between iterations');
flat(`training, iterations ${WARMUP}-${train.length - 1}`, steady, 'bytesAllocated', 'GPU bytes the pool holds between iterations');
const peaks = num(steady, 'peakBytes');
checks.push({
  what: 'training: peak GPU bytes within an iteration',
  figure: `${MiB(Math.min(...peaks))} to ${MiB(Math.max(...peaks))} (varies with the episodes' lengths)`,
  pass: Math.max(...peaks) <= 1.5 * mean(peaks),
});
// throughput: the median iteration time of the last 50 iterations against iterations 10-59 (the same episodes
// lengths on average); tokens/s varies iteration to iteration with the episodes' lengths and the host's load
// (an A/B of old and new builds on one machine, bench/results/soak/ab/, spread 14-17 k tokens/s for either)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const [t0, t1] = [median(num(train.slice(WARMUP, WARMUP + 50), 'seconds')), median(num(train.slice(-50), 'seconds'))];
checks.push({
  what: 'training: iteration time (median), last 50 iterations against iterations 10-59',
  figure: `${t1.toFixed(3)} s against ${t0.toFixed(3)} s (${((t1 / t0 - 1) * 100).toFixed(1)} %)`,
  pass: t1 <= 1.05 * t0,
});
const [k0, k1] = [median(num(train.slice(WARMUP, WARMUP + 50), 'tokensPerSecond')), median(num(train.slice(-50), 'tokensPerSecond'))];
checks.push({
  what: 'training: generated tokens/s of the rollout (median), the same windows',
  figure: `${k1.toFixed(0)} against ${k0.toFixed(0)} (${((k1 / k0 - 1) * 100).toFixed(1)} %)`,
  pass: null,
});
// Does the long-lived process slow down? A control (bench/results/soak/control/, one run on the GPU machine): the same
// config trained long in one process, then a fresh process resumes that run's last checkpoint for 25
// iterations; a process that had decayed (caches, pool, heap) would be slower than the fresh one at the
// same point of the run, while tokens/s moves with the run's state (the episodes' lengths) in both.
const control = (f: string): Line[] => {
  try {
    return readFileSync(`bench/results/soak/control/${f}.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line)
      .filter((l) => l.part === 'train');
  } catch {
    return [];
  }
};
const [longRun, fresh] = [control('long'), control('fresh')];
if (longRun.length && fresh.length) {
  const [kl, kf] = [median(num(longRun.slice(-25), 'tokensPerSecond')), median(num(fresh.slice(-25), 'tokensPerSecond'))];
  checks.push({
    what: `control, one run on the GPU machine: rollout tokens/s (median) of a process ${longRun.length} iterations old (its last 25) against a fresh process resuming its run (the next 25)`,
    figure: `${kl.toFixed(0)} against ${kf.toFixed(0)} (${((kl / kf - 1) * 100).toFixed(1)} %)`,
    pass: kl >= 0.95 * kf,
  });
}
// pipelines: one per kernel variant (a shape class first seen makes one), so after warm-up only a few appear
const pipes = num(lines, 'pipelines');
const grew = lines.filter((l, i) => i > 0 && pipes[i] > pipes[i - 1]).map((l) => `${l.part} ${l.iteration ?? l.index}`);
const after = pipes.at(-1)! - pipes[WARMUP];
checks.push({
  what: 'every part: compute pipelines',
  figure: `${pipes[WARMUP]} after warm-up, ${pipes.at(-1)} at the end (new ones at ${grew.join(', ')})`,
  pass: after <= 5,
});
// the per-dispatch caches are bounded maps (src/gpu/gpu.ts) that start over when full
for (const [k, cap] of [
  ['uniformBuffers', 4096],
  ['bindGroups', 8192],
] as const) {
  const xs = num(lines, k);
  checks.push({ what: `every part: ${k} cached`, figure: `at most ${Math.max(...xs)} (bound ${cap})`, pass: Math.max(...xs) <= cap });
}
const ck = num(steady, 'checkpointBytes');
checks.push({ what: 'training: checkpoint size', figure: `${MiB(Math.min(...ck))} to ${MiB(Math.max(...ck))}`, pass: spread(ck) <= 10 });
for (const p of ['switch', 'resume'] as const) {
  const ls = part(p);
  if (!ls.length) continue;
  const name = p === 'switch' ? `${ls.length} model switches` : `${ls.length} resumes (each trains one iteration)`;
  flat(name, ls, 'bytesInUse', 'GPU bytes in use after each');
  flat(name, ls, 'bytesAllocated', 'GPU bytes the pool holds after each');
  const rss = num(ls, 'rss');
  checks.push({
    what: `${name}: process RSS after a collection`,
    figure: `${MiB(rss[0])} first, ${MiB(Math.max(...rss))} at most, ${MiB(rss.at(-1)!)} last`,
    pass: null,
  });
}

const device = arg('device', 'NVIDIA H200 (Dawn over Vulkan)');
const note = arg('note', '');
const md = [
  `Soak on the GPU machine (${device}): \`configs/duo-action.json\` (2 agents, 128 episodes an iteration, the built-in model) for ${train.length} iterations in one run, then ${part('switch').length} model switches and ${part('resume').length} resumes in the same process (\`bench/soak.ts\`; log \`bench/results/soak/soak.jsonl\`; \`npm run bench:soak-report\` makes this table and the plot).${note ? ` ${note}` : ''}`,
  '',
  '| what | figure | verdict |',
  '| --- | --- | --- |',
  ...checks.map((c) => `| ${c.what} | ${c.figure} | ${c.pass === null ? 'figure' : c.pass ? 'pass' : 'FAIL'} |`),
  '',
  '![soak: GPU memory and tokens/s per iteration](docs/soak.svg)',
  '',
].join('\n');
writeFileSync(arg('md', 'bench/results/soak/soak.md'), md);

// The plot: GPU bytes in use, the iteration's peak, and tokens/s against the iteration, two panels.
const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${2 * H}" font-family="sans-serif">
<rect width="100%" height="100%" fill="white"/>
${panel(
  0,
  `iteration (0-${train.length - 1})`,
  [
    { values: num(train, 'peakBytes'), color: '#d95f02', label: 'peak GPU bytes in the iteration' },
    { values: num(train, 'bytesInUse'), color: '#1b9e77', label: 'GPU bytes in use after it' },
  ],
  MiB,
)}
${panel(H, `iteration (0-${train.length - 1})`, [{ values: num(train, 'tokensPerSecond'), color: '#7570b3', label: 'generated tokens/s' }], (v) => v.toFixed(0))}
</svg>
`;
writeFileSync(arg('svg', 'docs/soak.svg'), svg);
console.log(md);
if (checks.some((c) => c.pass === false)) process.exitCode = 1;

// `npm run bench:lora-sweep`: the LoRA kernels at training / scoring shapes, the old 16x16 'tiles' path
// against the 'groups' path (kernels/lora/groups.ts) that replaced it as the GPU default for T > ROWS_T.
//   Shapes: micro-batches of B*T = 1344 rows (B = 8 x T = 168, B = 4 x T = 336) of a SmolLM2-135M-shaped
//   model, R = 8, S = 2 slots, q (576 -> 576) and v (576 -> 192), slots alternating 0, 1 (or 0, 1, -1).
//   Every groups tuning is first checked against the tiles on the device (h, y, dx, dA, dB, one forward and
//   backward on fresh copies); then every kernel is timed by GPU timestamps (Gpu.startProfile: each dispatch
//   in a pass of its own, so a figure includes a pass's fixed cost: the 'floor' row, a near-empty dispatch).
//   Dawn quantises timestamps unless asked not to; this sweep asks (allow_unsafe_apis) and says whether it
//   took. Figures are the mean over all calls, unbiased either way.
// Options: --quick (tiny shapes, a smoke test on SwiftShader), --rounds 10, --reps 50 (calls a round).
// Results, NVIDIA H200 (Dawn over Vulkan, driver 580.159.04, timestamps unquantised), GPU us a call, mean of the
// 8 cases (500 calls each); tiles' reduce_dAdB runs only at B = 8 (8.4 us there):
//   | kernel(s)                          | tiles (old)                                   | groups r4w128c32 (new)                   |
//   | forward                            | 43.3 = forward_h 29.3 + forward_y 14.0        | 15.6 = forward_group (1 dispatch, not 2) |
//   | backward, dx and weight gradients  | 73.0 = dh 16.9 + dAdB 39.2 + reduce 4.2 + dx 12.7 | 40.8 = dh_group 11.3 + grads 15.4 + reduce_grads 14.1 |
// Per case, forward 37.5-55.2 -> 13.6-17.6, backward 56.4-91.9 -> 39.0-42.9. Tunings (fwd / bwd): rows 1 w64
// 23.3 / 46.6, rows 2 w128 16.5 / 42.4, rows 4 w64 18.9 / 41.6, rows 4 w256 15.1 / 41.6, rows 4 w512 23.1 / 49.3;
// chunk 16 / 64 / 128: grads + reduce 32.8 / 31.6 / 41.2 against 29.5 at 32. A kernel with little to do (tiles'
// reduce_dAdB: 18k threads, two loads each) measures 8.4 us here, so a profiled pass carries several us of fixed
// cost (that run took the floor row first, on a cold GPU: 10.4 us; it now runs last).

import { type GroupTuning, defaultTuning, loraBackwardGroups, loraForwardGroups } from '../kernels/lora/groups.ts';
import type { LoraDims } from '../kernels/lora/kernel.ts';
import { loraBackward, loraForward } from '../kernels/lora/lora.ts';
import { Rng } from '../src/common/rng.ts';
import { acquireFrom } from '../src/gpu/device.ts';
import type { Gpu } from '../src/gpu/gpu.ts';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import type { Tensor } from '../src/gpu/tensor.ts';

await ensureVulkanEnv();
const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const quick = process.argv.includes('--quick');
const rounds = Number(arg('rounds') ?? (quick ? 2 : 10));
const reps = Number(arg('reps') ?? (quick ? 2 : 50));

/** A device whose timestamps Dawn does not quantise, when the instance accepts the toggles; else the usual one. */
async function unquantised(): Promise<{ gpu: Gpu; note: string }> {
  try {
    const webgpu = await import('webgpu');
    Object.assign(globalThis, webgpu.globals);
    const inst = webgpu.create([
      'backend=vulkan',
      'enable-dawn-features=allow_unsafe_apis',
      'disable-dawn-features=timestamp_quantization',
    ]);
    const gpu = await acquireFrom(inst, { log: console.log });
    (gpu as Gpu & { instance?: unknown }).instance = inst; // keeps the instance alive beside its device
    return { gpu, note: 'timestamp_quantization disabled (asked)' };
  } catch (e) {
    return { gpu: await acquireNodeGpu({ log: console.log }), note: `default device (toggles refused: ${(e as Error).message})` };
  }
}
const { gpu, note } = await unquantised();
const device = gpu.adapter.description || gpu.adapter.vendor;
console.log(`device: ${device}; ${note}; timestamps ${gpu.hasTimestamps ? 'yes' : 'no'}`);
if (!gpu.hasTimestamps) {
  console.log('this sweep times kernels by GPU timestamps, which the device lacks');
  process.exit(1);
}

interface Case {
  name: string;
  d: LoraDims;
  slots: number[];
}
const cases: Case[] = [];
const modules: Array<[string, number, number]> = quick
  ? [['q', 40, 24]]
  : [
      ['q', 576, 576],
      ['v', 576, 192],
    ];
for (const [B, T] of quick
  ? [[3, 21]]
  : [
      [8, 168],
      [4, 336],
    ]) {
  for (const [mod, IN, OUT] of modules) {
    for (const withBare of [false, true]) {
      const slots = Array.from({ length: B }, (_, b) => (withBare ? [0, 1, -1][b % 3] : b % 2));
      cases.push({ name: `${mod} B=${B} T=${T}${withBare ? ' -1' : ''}`, d: { B, T, S: 2, R: 8, IN, OUT }, slots });
    }
  }
}

const DEF = defaultTuning(8);
const tname = (t: GroupTuning) => `r${t.rows}w${t.threads}c${t.chunk}`;
/** Row-group shapes (rows x threads, chunk 32), then chunk sizes at the default row group. */
const shapes: GroupTuning[] = quick
  ? [DEF, { rows: 2, threads: 128, chunk: 32 }]
  : [1, 2, 4].flatMap((rows) =>
      [64, 128, 256, 512].filter((n) => n <= gpu.limits.maxComputeInvocationsPerWorkgroup).map((threads) => ({ rows, threads, chunk: 32 })),
    );
const chunks: GroupTuning[] = quick ? [] : [16, 64, 128].map((chunk) => ({ ...DEF, chunk }));

function values(n: number, seed: number, scale = 1): Float32Array {
  const rng = new Rng(seed);
  return Float32Array.from({ length: n }, () => (rng.next() * 2 - 1) * scale);
}

/** Each kernel's mean GPU ms a call over rounds * reps calls (after a warm-up), and their sum. */
async function profile(fn: () => void): Promise<{ kernels: Map<string, number>; total: number }> {
  fn();
  await gpu.sync(); // warm-up: pipelines built, buffers touched
  const sum = new Map<string, number>();
  for (let r = 0; r < rounds; r++) {
    gpu.startProfile();
    for (let i = 0; i < reps; i++) fn();
    for (const t of await gpu.stopProfile()) sum.set(t.key.split('/').pop()!, (sum.get(t.key.split('/').pop()!) ?? 0) + t.ms);
  }
  const kernels = new Map([...sum].map(([k, ms]) => [k, ms / (rounds * reps)]));
  return { kernels, total: [...kernels.values()].reduce((a, b) => a + b, 0) };
}

/** Worst |got - want| / (1e-4 (1 + |want|)) (<= 1 passes). */
async function worst(got: Tensor, want: Float32Array): Promise<number> {
  const x = await gpu.read(got);
  let w = 0;
  for (let i = 0; i < x.length; i++) w = Math.max(w, Math.abs(x[i] - want[i]) / (1e-4 * (1 + Math.abs(want[i]))));
  return w;
}

const us = (ms: number) => (ms * 1000).toFixed(1);
const list = (p: { kernels: Map<string, number> }) => [...p.kernels].map(([k, ms]) => `${k} ${us(ms)}`).join(', ');
let failed = false;

const summary = new Map<string, { fwd: number; bwd: number; n: number; kernels: Map<string, number> }>();
const note1 = (key: string, fwd: number, bwd: number, kernels: Map<string, number>) => {
  const e = summary.get(key) ?? { fwd: 0, bwd: 0, n: 0, kernels: new Map() };
  e.fwd += fwd;
  e.bwd += bwd;
  e.n++;
  for (const [k, v] of kernels) e.kernels.set(k, (e.kernels.get(k) ?? 0) + v);
  summary.set(key, e);
};
const table: string[] = [];

for (const c of cases) {
  const { d } = c;
  const M = d.B * d.T;
  const t = {
    slots: gpu.upload(Int32Array.from(c.slots), [d.B], 'i32', 'sweep.slots'),
    x: gpu.upload(values(M * d.IN, 1), [M, d.IN], 'f32', 'sweep.x'),
    A: gpu.upload(values(d.S * d.R * d.IN, 2, 1 / Math.sqrt(d.IN)), [d.S, d.R, d.IN], 'f32', 'sweep.A'),
    Bw: gpu.upload(values(d.S * d.OUT * d.R, 3, 0.3), [d.S, d.OUT, d.R], 'f32', 'sweep.Bw'),
    dy: gpu.upload(values(M * d.OUT, 4), [M, d.OUT], 'f32', 'sweep.dy'),
  };
  const init = {
    y: values(M * d.OUT, 5),
    dx: values(M * d.IN, 6),
    dA: values(d.S * d.R * d.IN, 7, 0.1),
    dB: values(d.S * d.OUT * d.R, 8, 0.1),
  };
  const outs = () => ({
    y: gpu.upload(init.y, [M, d.OUT], 'f32', 'sweep.y'),
    h: gpu.tensor([M, d.R], 'f32', 'sweep.h'),
    dx: gpu.upload(init.dx, [M, d.IN], 'f32', 'sweep.dx'),
    dA: gpu.upload(init.dA, [d.S, d.R, d.IN], 'f32', 'sweep.dA'),
    dB: gpu.upload(init.dB, [d.S, d.OUT, d.R], 'f32', 'sweep.dB'),
  });
  const scale = 2;
  type Outs = ReturnType<typeof outs>;
  const fwdOld = (o: Outs) => () => loraForward(gpu, o.y, o.h, t.x, t.slots, t.A, t.Bw, d.T, scale, 'tiles');
  const bwdOld = (o: Outs) => () => loraBackward(gpu, o.dx, o.dA, o.dB, t.dy, t.x, o.h, t.slots, t.A, t.Bw, d.T, scale, 'tiles');
  const fwdNew = (o: Outs, tu: GroupTuning) => () => loraForwardGroups(gpu, o.y, o.h, t.x, t.slots, t.A, t.Bw, d, scale, tu);
  const bwdNew = (o: Outs, tu: GroupTuning) => () =>
    loraBackwardGroups(gpu, o.dx, o.dA, o.dB, t.dy, t.x, o.h, t.slots, t.A, t.Bw, d, scale, tu);

  // correctness on the device: the tiles' results, then each tuning's (and the public launcher's) on fresh copies
  const ref = outs();
  fwdOld(ref)();
  bwdOld(ref)();
  const want: Record<string, Float32Array> = {};
  for (const k of ['h', 'y', 'dx', 'dA', 'dB'] as const) want[k] = (await gpu.read(ref[k])) as Float32Array;
  const checks: string[] = [];
  for (const tu of [undefined, ...shapes, ...chunks]) {
    const o = outs();
    if (tu) {
      fwdNew(o, tu)();
      bwdNew(o, tu)();
    } else {
      loraForward(gpu, o.y, o.h, t.x, t.slots, t.A, t.Bw, d.T, scale, 'groups');
      loraBackward(gpu, o.dx, o.dA, o.dB, t.dy, t.x, o.h, t.slots, t.A, t.Bw, d.T, scale, 'groups');
    }
    let w = 0;
    for (const k of ['h', 'y', 'dx', 'dA', 'dB'] as const) w = Math.max(w, await worst(o[k], want[k]));
    if (!(w <= 1)) {
      failed = true;
      checks.push(`${tu ? tname(tu) : 'launcher'} FAILED ${w.toExponential(1)}`);
    } else checks.push(w.toExponential(1));
    gpu.release(...Object.values(o));
  }
  console.log(
    `${c.name}: groups vs tiles, worst error / tolerance over h, y, dx, dA, dB (launcher, then each tuning): ${checks.join(' ')}`,
  );

  const fo = await profile(fwdOld(ref));
  const bo = await profile(bwdOld(ref));
  note1('tiles', fo.total, bo.total, new Map([...fo.kernels, ...bo.kernels]));
  const rows: string[] = [];
  for (const tu of [...shapes, ...chunks]) {
    const f = chunks.includes(tu) ? null : await profile(fwdNew(ref, tu));
    const b = await profile(bwdNew(ref, tu));
    note1(tname(tu), f?.total ?? NaN, b.total, new Map([...(f?.kernels ?? []), ...b.kernels]));
    rows.push(`  ${tname(tu)}: fwd ${f ? us(f.total) : '-'}, bwd ${us(b.total)} (${list(b)})`);
  }
  table.push(`${c.name}: tiles fwd ${us(fo.total)} (${list(fo)}), bwd ${us(bo.total)} (${list(bo)})\n${rows.join('\n')}`);
  console.log(table[table.length - 1]);
  gpu.release(...Object.values(t), ...Object.values(ref));
}

// The fixed cost of a profiled pass: one workgroup with next to nothing to do (measured last, on a warm GPU).
{
  const d: LoraDims = { B: 1, T: 1, S: 1, R: 8, IN: 4, OUT: 4 };
  const [s, x, A, Bw, y, h] = [
    gpu.upload(Int32Array.from([0]), [1], 'i32', 'f.s'),
    gpu.zeros([1, 4], 'f32', 'f.x'),
    gpu.zeros([1, 8, 4], 'f32', 'f.A'),
    gpu.zeros([1, 4, 8], 'f32', 'f.Bw'),
    gpu.zeros([1, 4], 'f32', 'f.y'),
    gpu.zeros([1, 8], 'f32', 'f.h'),
  ];
  console.log(`floor (a near-empty dispatch): ${us((await profile(() => loraForwardGroups(gpu, y, h, x, s, A, Bw, d, 1, DEF))).total)} us`);
  gpu.release(s, x, A, Bw, y, h);
}

console.log(`\nLoRA kernels on ${device}, mean GPU us a call over the ${cases.length} cases (${rounds * reps} calls each; ${note}):`);
console.log('| path | fwd | bwd | kernels |\n|---|---|---|---|');
for (const [k, e] of summary) {
  console.log(
    `| ${k} | ${Number.isNaN(e.fwd) ? '-' : us(e.fwd / e.n)} | ${us(e.bwd / e.n)} | ${[...e.kernels].map(([n, v]) => `${n} ${us(v / e.n)}`).join(', ')} |`,
  );
}
if (failed) {
  console.log('\nFAILED: a groups tuning disagrees with the tiles on this device');
  process.exit(1);
}

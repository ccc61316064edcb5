// `npm run bench:matmul-sweep`: every candidate matmul variant on the products of a SmolLM2-135M training
// step, to fill chooseVariant's PICKS table (kernels/matmul/variants.ts) from measurements.
//   Shapes: for each Linear (out, in) and token count T, the forward out (T, out) = x (T, in) . W^T ('nt',
//   M = T, N = out, K = in), the input gradient dX (T, in) = dY (T, out) . W ('nn', M = T, N = in, K = out) and
//   the weight gradient dW (out, in) = dY^T . X ('tn', M = out, N = in, K = T: few output tiles, long K, where
//   split-K variants '<tile>:k<S>' compete); plus 4096^3 and 2048^3 ('nn', PyTorch's usual yardstick).
//   Variants: the current default (chooseVariant with an empty PICKS table), every tile of TILES that fits
//   the device's workgroup memory, split-K variants '<tile>:k<S>' where the product has few output tiles,
//   and each of these with vec4 loads '<tile>:v4[:k<S>]' where they apply (not for 'nt'), and with 8 x 4
//   threads a warp '<tile>[:v4]:w[:k<S>]' where that changes the tile's layout.
// First every variant is checked against the float64 reference on edge shapes (4-aligned M and N for
// ':v4', so the vec4 loads run), for every transpose;
// a variant that fails is reported and left out of the timing. Then each (shape, variant) is timed on the
// same inputs after a warm-up: the median of `--rounds` rounds of wall time (submit + wait around many calls)
// and, where the device has timestamp queries, of GPU time (kernelMatmul's conventions). TFLOP/s come from
// the GPU time when present (else wall). It prints one table per shape, a summary (default vs best), and
// the PICKS rows to paste where a variant beats the default by --min-gain (default 5 %).
// Options:
//   --out FILE          writes every row, the summary and the picks as JSON
//   --quick             one tiny shape and a few variants (a smoke test, e.g. on SwiftShader)
//   --list              prints the products and their candidate variants, and stops
//   --tokens 1365,4096  token counts T        --only q/o,k/v,qkv,gate/up,gate+up,down,lm_head,cube   what to sweep
//                       (cube: 4096^3 and 2048^3; cube4096 or cube2048: one of them)
//   --variants a,b      only these variants (plus the default)      --rounds 5   --round-ms 30
//   --dtype f32|bf16    storage of the weight operand of the forward and dX products (default f32)
//   --peer FILE         PyTorch figures (bench/baselines/kernels.py --out, nn at the same MxNxK), as ratios

import { readFileSync, writeFileSync } from 'node:fs';
import { type MatmulBenchRow, type SweepResult, benchMatmul, pickLine, sweepPicks } from '../kernels/matmul/matmul.bench.ts';
import { matmul } from '../kernels/matmul/matmul.ts';
import { PICKS } from '../kernels/matmul/picks.ts';
import { type MatmulVariant, TILES, type TileName, tileSharedBytes, tiledVariant, warpLayout } from '../kernels/matmul/tile.ts';
import { chooseVariant } from '../kernels/matmul/variants.ts';
import { matmulRef } from '../kernels/matmul/matmul.ref.ts';
import type { WeightDType } from '../kernels/common.ts';
import { acquireNodeGpu, ensureVulkanEnv } from '../src/gpu/node.ts';
import { counts, countsLine } from './counters.ts';

await ensureVulkanEnv();

const arg = (name: string): string | undefined => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : undefined;
};
const list = (s: string | undefined): string[] | undefined => s?.split(',').filter(Boolean);
const quick = process.argv.includes('--quick');
const dtype = (arg('dtype') ?? 'f32') as WeightDType;
const rounds = Number(arg('rounds') ?? (quick ? 2 : 5));
const roundMs = Number(arg('round-ms') ?? (quick ? 5 : 30));
const minGain = Number(arg('min-gain') ?? 0.05);

const gpu = await acquireNodeGpu({ log: console.log });
const shared = gpu.limits.maxComputeWorkgroupStorageSize;
console.log(
  `device: ${gpu.adapter.description || gpu.adapter.vendor}; workgroup memory ${shared} bytes; timestamps ${gpu.hasTimestamps ? 'yes (TFLOP/s from GPU time)' : 'no (TFLOP/s from wall time)'}; subgroups ${gpu.hasSubgroups ? 'yes' : 'no'}`,
);
if (PICKS.length) console.log(`note: PICKS already holds ${PICKS.length} row(s); 'default' below is the rule without them`);

// ---- the products ------------------------------------------------------------------------------------

type Trans = 'nn' | 'nt' | 'tn' | 'tt';
interface Product {
  /** e.g. 'q/o fwd T=1365'. */
  name: string;
  trans: Trans;
  M: number;
  N: number;
  K: number;
  /** Which dim is the token count (its PICKS range is widened to a bucket of token counts); none for cubes. */
  tokenDim?: 'M' | 'K';
  /** Storage of B (the weight, for fwd and dX). */
  bDtype: WeightDType;
}

/**
 * SmolLM2-135M's Linears: (out, in) of W (hidden 576, intermediate 1536, 9 q heads and 3 kv heads of 64, vocab 49152),
 * and the fused q/k/v and gate+up weights the decoder concatenates at load.
 */
const LINEARS: Array<[name: string, out: number, inp: number]> = [
  ['q/o', 576, 576],
  ['k/v', 192, 576],
  ['qkv', 960, 576],
  ['gate/up', 1536, 576],
  ['gate+up', 3072, 576],
  ['down', 576, 1536],
  ['lm_head', 49152, 576],
];
const tokens = (list(arg('tokens')) ?? (quick ? ['1100'] : ['1365', '4096'])).map(Number);
const only = list(arg('only'));
const products: Product[] = [];
if (quick) {
  products.push({ name: `quick fwd T=${tokens[0]}`, trans: 'nt', M: tokens[0], N: 40, K: 72, tokenDim: 'M', bDtype: dtype });
  products.push({ name: `quick dW T=${tokens[0]}`, trans: 'tn', M: 40, N: 72, K: tokens[0], tokenDim: 'K', bDtype: 'f32' });
} else {
  // the cubes first: they are the yardstick, and a run cut short keeps them
  for (const n of [4096, 2048]) {
    if (only && !only.includes('cube') && !only.includes(`cube${n}`)) continue;
    products.push({ name: `cube ${n}`, trans: 'nn', M: n, N: n, K: n, bDtype: 'f32' });
  }
  for (const [name, out, inp] of LINEARS) {
    if (only && !only.includes(name)) continue;
    for (const T of tokens) {
      products.push({ name: `${name} fwd T=${T}`, trans: 'nt', M: T, N: out, K: inp, tokenDim: 'M', bDtype: dtype });
      products.push({ name: `${name} dX T=${T}`, trans: 'nn', M: T, N: inp, K: out, tokenDim: 'M', bDtype: dtype });
      products.push({ name: `${name} dW T=${T}`, trans: 'tn', M: out, N: inp, K: T, tokenDim: 'K', bDtype: 'f32' });
    }
  }
}

if (!arg('peer') && !quick) {
  console.log(
    `PyTorch figures for --peer: python3 bench/baselines/kernels.py --matmul ${[...new Set(products.map((p) => `${p.M}x${p.N}x${p.K}`))].join(',')} --out torch.json`,
  );
}

// ---- the variants ------------------------------------------------------------------------------------

const fits = (v: MatmulVariant) => {
  const t = tiledVariant(v);
  return !t || tileSharedBytes(t.tile) <= shared;
};
// every tile of TILES but those for few rows or columns (decode, value heads) and the smallest
const TILED: TileName[] = quick ? ['mid'] : (Object.keys(TILES) as TileName[]).filter((t) => !['small', 'rows', 'cols'].includes(t));
const SPLIT_TILES: TileName[] = quick ? ['mid'] : ['mid', 'mid8', 'n96s'];
const chosenVariants = list(arg('variants')) as MatmulVariant[] | undefined;
const defaultOf = (p: Product): MatmulVariant =>
  chooseVariant({ M: p.M, N: p.N, K: p.K, transA: p.trans[0] === 't', transB: p.trans[1] === 't' }, shared, []);

/** The candidates for one product: the default first, then tiles, then splits where output tiles are few. */
function candidates(p: Product): MatmulVariant[] {
  const out = new Set<MatmulVariant>([defaultOf(p)]);
  const add = (v: MatmulVariant) => {
    if (fits(v) && (!chosenVariants || chosenVariants.includes(v))) out.add(v);
  };
  // ':v4' reads A as vec4 with transA (M % 4 == 0) and an f32 B without transB (N % 4 == 0): not for 'nt'
  const v4 = (p.trans[0] === 't' && p.M % 4 === 0) || (p.trans[1] === 'n' && p.bDtype === 'f32' && p.N % 4 === 0);
  type Unsplit = `${TileName}${'' | ':v4'}${'' | ':w'}`;
  const forms = (t: TileName): Unsplit[] =>
    (v4 ? ([t, `${t}:v4`] as const) : ([t] as const)).flatMap((v): Unsplit[] => (warpLayout(TILES[t]) ? [v, `${v}:w`] : [v]));
  for (const t of TILED) forms(t).forEach(add);
  // Split K where 64x64 output tiles are few (at most 2 per SM of a 132-SM H200) and K is long: the weight
  // gradients (K = tokens), lm_head's dX (K = 49152), the K = 1536 products at T = 1365.
  if (Math.ceil(p.M / 64) * Math.ceil(p.N / 64) <= 264 && p.K >= 1024) {
    for (const t of SPLIT_TILES) {
      for (const s of quick ? [2] : [2, 4, 8, 16]) {
        if (p.K / s < 128 || (s === 16 && t !== 'mid')) continue;
        for (const v of forms(t)) if (v === t || t !== 'n96s') add(`${v}:k${s}`);
      }
    }
  }
  return [...out];
}

// ---- correctness first: every variant against the float64 reference ------------------------------------

/** Seeded values in [-1, 1). */
function values(n: number, seed: number): Float32Array {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2147483648 - 1;
  }
  return out;
}

/** Max |error| / tolerance of one variant on one edge shape (<= 1 passes); f32 operands. */
async function checkVariant(v: MatmulVariant, trans: Trans, [M, N, K]: [number, number, number]): Promise<number> {
  const [ta, tb] = [trans[0] === 't', trans[1] === 't'];
  const a = values(M * K, 1 + M);
  const b = values(K * N, 2 + N);
  const tA = gpu.upload(a, ta ? [K, M] : [M, K], 'f32', 'sweep.a');
  const tB = gpu.upload(b, tb ? [N, K] : [K, N], 'f32', 'sweep.b');
  const tC = gpu.tensor([M, N], 'f32', 'sweep.c');
  matmul(gpu, tC, tA, tB, { transA: ta, transB: tb, variant: v });
  const got = (await gpu.read(tC)) as Float32Array;
  gpu.release(tA, tB, tC);
  const ref = matmulRef(a, b, { M, N, K, transA: ta, transB: tb });
  let worst = 0;
  for (let i = 0; i < ref.length; i++) {
    const tol = 1e-4 * Math.max(1, Math.sqrt(K) / 4) + 1e-4 * Math.abs(ref[i]);
    const e = Math.abs(got[i] - ref[i]) / tol;
    worst = Math.max(worst, Number.isNaN(e) ? Infinity : e);
  }
  return worst;
}

const allVariants = [...new Set(products.flatMap(candidates))];
if (process.argv.includes('--list')) {
  for (const p of products) console.log(`${p.name} (${p.trans} ${p.M}x${p.N}x${p.K}): ${candidates(p).join(' ')}`);
  console.log(
    `${products.length} products, ${products.reduce((s, p) => s + candidates(p).length, 0)} (product, variant) pairs, ${allVariants.length} variants`,
  );
  process.exit(0);
}
const failed = new Map<MatmulVariant, string>();
console.log(
  `\nchecking ${allVariants.length} variants x ${quick ? 'the timed' : '4'} transposes against the float64 reference (edge shapes, f32)`,
);
for (const v of allVariants) {
  const t = tiledVariant(v)?.tile ?? TILES.mid;
  // partial tiles in M and N, K not a multiple of BK (nor of the split's slices)
  const shape: [number, number, number] = tiledVariant(v)?.vec4
    ? [t.bm + 36, t.bn + 12, 8 * t.bk + 5]
    : [t.bm + 37, t.bn + 13, 8 * t.bk + 5];
  // --quick: only the transposes it times (SwiftShader compiles slowly)
  for (const trans of quick ? [...new Set(products.map((p) => p.trans))] : (['nn', 'nt', 'tn', 'tt'] as const)) {
    const worst = await checkVariant(v, trans, shape);
    if (!(worst <= 1)) failed.set(v, `${trans} ${shape.join('x')}: error ${worst.toFixed(1)}x the tolerance`);
  }
}
console.log(failed.size ? [...failed].map(([v, why]) => `  FAILED ${v}: ${why} (left out)`).join('\n') : '  all passed');

// ---- timing ----------------------------------------------------------------------------------------------

const peer: { device: string; rows: Array<{ op: string; shape: string; gflops: number }> } | null = arg('peer')
  ? JSON.parse(readFileSync(arg('peer')!, 'utf8'))
  : null;
const peerTflops = (p: Product) => (peer?.rows.find((r) => r.op === 'matmul' && r.shape === `${p.M}x${p.N}x${p.K}`)?.gflops ?? NaN) / 1000;

interface Timed {
  variant: MatmulVariant;
  key: string;
  ms: number;
  gpuMs?: number;
  tflops: number;
}
interface Result {
  product: Product;
  default: MatmulVariant;
  rows: Timed[];
  best: Timed;
  defaultRow: Timed;
  torchTflops: number;
}
const results: Result[] = [];
const sweepResult = (r: Result): SweepResult => ({
  ...r.product,
  default: { variant: r.default, tflops: r.defaultRow.tflops },
  best: { variant: r.best.variant, tflops: r.best.tflops },
});
/** Each picks row's provenance starts with this: the GPU, the date, the sweep's output. */
const origin = `${gpu.adapter.description || gpu.adapter.vendor}, ${new Date().toISOString().slice(0, 10)}, ${arg('out') ?? 'bench/matmul-sweep.ts'}`;
/** Writes --out (after every product too, so a run cut short keeps what it measured: partial true). */
function writeOut(partial: boolean, picks?: ReturnType<typeof sweepPicks>): void {
  if (!arg('out')) return;
  writeFileSync(
    arg('out')!,
    JSON.stringify(
      {
        adapter: gpu.adapter,
        sharedBytes: shared,
        timestamps: gpu.hasTimestamps,
        dtype,
        rounds,
        roundMs,
        partial,
        failed: Object.fromEntries(failed),
        results: results.map((r) => ({ ...r.product, default: r.default, best: r.best.variant, torchTflops: r.torchTflops, rows: r.rows })),
        picks: picks ?? sweepPicks(results.map(sweepResult), tokens, minGain, origin),
      },
      (_k, v) => (v === Infinity ? 'Infinity' : v),
      1,
    ),
  );
}
const fmt = (x: number, d = 1) => (!Number.isFinite(x) ? '' : x >= 1 || x === 0 ? x.toFixed(d) : x.toPrecision(2));
const t0 = performance.now();
// The GPU's clocks ramp up over the first second or more of work: warm up on the first product for 2 s, else
// its default (timed first) reads low (3.3 against 17 TFLOP/s on an H200; 19.2 against 43.6 at 4096^3 after
// a warm-up of rounds x round-ms, bench/results/kernels/matmul-k-step/5-steps).
for (const until = performance.now() + 2000; products.length && performance.now() < until;) {
  await benchMatmul(gpu, [[products[0].M, products[0].N, products[0].K]], {
    transA: products[0].trans[0] === 't',
    transB: products[0].trans[1] === 't',
    rounds,
    roundMs,
  });
}
for (const p of products) {
  const variants = candidates(p).filter((v) => !failed.has(v));
  const bench: MatmulBenchRow[] = await benchMatmul(gpu, [[p.M, p.N, p.K]], {
    transA: p.trans[0] === 't',
    transB: p.trans[1] === 't',
    bDtype: p.bDtype,
    variants,
    rounds,
    roundMs,
    timestamps: true,
  });
  const flops = 2 * p.M * p.N * p.K;
  const rows: Timed[] = bench.map((r, i) => ({
    variant: variants[i],
    key: r.variant,
    ms: r.ms,
    ...(r.gpuMs === undefined ? {} : { gpuMs: r.gpuMs }),
    tflops: flops / ((r.gpuMs ?? r.ms) * 1e9),
  }));
  const best = rows.reduce((x, y) => (y.tflops > x.tflops ? y : x));
  const res: Result = { product: p, default: variants[0], rows, best, defaultRow: rows[0], torchTflops: peerTflops(p) };
  results.push(res);
  console.log(
    `\n[${results.length}/${products.length}, ${((performance.now() - t0) / 1000).toFixed(0)} s] ${p.name}: ${p.trans} M=${p.M} N=${p.N} K=${p.K}${p.bDtype === 'f32' ? '' : ` (B ${p.bDtype})`}${Number.isFinite(res.torchTflops) ? `, PyTorch fp32 ${fmt(res.torchTflops)} TFLOP/s` : ''}`,
  );
  console.log('| variant | program | TFLOP/s | GPU ms | wall ms | vs default |\n|---|---|---|---|---|---|');
  for (const r of [...rows].sort((x, y) => y.tflops - x.tflops)) {
    const tag = r === rows[0] ? ' (default)' : '';
    console.log(
      `| ${r.variant}${tag}${r === best ? ' **best**' : ''} | ${r.key} | ${fmt(r.tflops)} | ${fmt(r.gpuMs ?? NaN, 4)} | ${fmt(r.ms, 4)} | ${fmt(r.tflops / rows[0].tflops, 2)} |`,
    );
  }
  writeOut(true);
}
console.log(
  `\ntimed ${results.reduce((s, r) => s + r.rows.length, 0)} (shape, variant) pairs in ${((performance.now() - t0) / 1000).toFixed(0)} s`,
);

// ---- summary and the PICKS rows ----------------------------------------------------------------------------

console.log('\nsummary (TFLOP/s; vs torch: PyTorch fp32 at the same MxNxK, measured nn)');
console.log(
  '| product | trans | MxNxK | default | TFLOP/s | best | TFLOP/s | gain | vs torch before | after |\n|---|---|---|---|---|---|---|---|---|---|',
);
for (const r of results) {
  const p = r.product;
  console.log(
    `| ${p.name} | ${p.trans} | ${p.M}x${p.N}x${p.K} | ${r.default} | ${fmt(r.defaultRow.tflops)} | ${r.best.variant} | ${fmt(r.best.tflops)} | ${fmt(r.best.tflops / r.defaultRow.tflops, 2)}x | ${fmt(r.defaultRow.tflops / r.torchTflops, 2)} | ${fmt(r.best.tflops / r.torchTflops, 2)} |`,
  );
}

// A training step's matmul time per token count: 30 layers of 2 q/o, 2 k/v, 2 gate/up and 1 down (each fwd,
// dX and dW), plus lm_head once ('qkv' and 'gate+up', the fused alternatives to q, k, v and to gate, up, are left out).
const perStep: Record<string, number> = { 'q/o': 60, 'k/v': 60, 'gate/up': 60, down: 30, lm_head: 1 };
for (const T of quick ? [] : tokens) {
  let [before, after] = [0, 0];
  for (const r of results) {
    const [lin, , t] = r.product.name.split(' ');
    if (t !== `T=${T}` || !(lin in perStep)) continue;
    const ms = (x: Timed) => x.gpuMs ?? x.ms;
    before += perStep[lin] * ms(r.defaultRow);
    after += perStep[lin] * ms(r.best);
  }
  if (before)
    console.log(
      `one training step's matmuls at T=${T} (30 layers + lm_head, fwd + dX + dW): ${before.toFixed(1)} ms with the defaults, ${after.toFixed(1)} ms with the best variants`,
    );
}

const rowsToPaste = sweepPicks(results.map(sweepResult), tokens, minGain, origin);
console.log(
  `\nPICKS rows for kernels/matmul/picks.ts (products where the best beats the default by >= ${minGain * 100} %; paste inside \`export const PICKS: readonly Pick[] = [...]\`):`,
);
if (!rowsToPaste.length) console.log('  (none: the default rule stands)');
for (const row of rowsToPaste) console.log(`  ${pickLine(row)}`);
console.log(`this run: ${countsLine(counts(gpu))}`);
writeOut(false, rowsToPaste);
process.exit(0);

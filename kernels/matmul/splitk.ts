// The split-K path of the tiled kernel: K cut into slices whose partial products (matmul.wgsl's split
// pass) go to a per-device workspace, then summed in slice order by splitk.wgsl, which applies alpha, the
// bias and accumulate. For products with few output tiles and a long K (weight gradients, K = tokens).

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import { type Tensor, numel } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { type MatmulCall, type MatmulDims, productChoices, productUniforms, splitSum, tiled } from './kernel.ts';
import splitkSource from './splitk.wgsl';
import type { TileConfig } from './tile.ts';
import { type Layout, matmulProgram } from './tiled.ts';

/** A K split as launched: `splits` slices of `kLen` (a multiple of BK; the last slice may be shorter). */
export interface Split {
  splits: number;
  kLen: number;
}

/**
 * The split of K into (at most) `want` slices, or null to run unsplit: one slice, an empty product, or a
 * workspace (batch * splits partial (M, N) products) or z grid (batch * splits) beyond the device's limits.
 */
export function splitK(gpu: Gpu, t: TileConfig, d: MatmulDims, want: number): Split | null {
  if (want <= 1 || d.M === 0 || d.N === 0 || d.batch === 0) return null;
  const kLen = Math.ceil(Math.ceil(d.K / want) / t.bk) * t.bk;
  const splits = Math.ceil(d.K / kLen);
  if (splits <= 1) return null;
  const words = d.batch * splits * d.M * d.N;
  if (d.batch * splits > 65535 || words * 4 > gpu.limits.maxStorageBufferBindingSize || words > 0xffffffff) return null;
  return { splits, kLen };
}

const workspaces = new WeakMap<Gpu, Tensor>();

/**
 * The split-K workspace of at least `words` f32, grown by doubling; kept per device and never returned to
 * the pool (as reduce's scratch), so a later upload cannot overwrite it before the passes run. Split
 * products recorded one after the other share it: dispatches run in order.
 */
function workspace(gpu: Gpu, words: number): Tensor {
  const t = workspaces.get(gpu);
  if (t && numel(t.shape) >= words) return t;
  const cap = Math.floor(gpu.limits.maxStorageBufferBindingSize / 4);
  const fresh = gpu.tensor([Math.max(words, Math.min(cap, 2 * (t ? numel(t.shape) : 0)))], 'f32', 'matmul.splitk');
  const w = { ...fresh, pooled: false };
  workspaces.set(gpu, w);
  return w;
}

const splitkKey = (accumulate: boolean, bias: boolean): string => `matmul:splitk${accumulate ? ':acc' : ''}${bias ? ':bias' : ''}`;

const splitkProgram = programFactory(splitkKey, (accumulate: boolean, bias: boolean) =>
  splitSum.program(
    splitkKey(accumulate, bias),
    () =>
      fillTemplate(splitkSource, {
        BIAS_DECL: bias ? '@group(0) @binding(3) var<storage, read> bias: array<f32>;' : '',
        EPILOGUE: [...(bias ? ['x += bias[e % u.N];'] : []), ...(accumulate ? ['x += c[ci];'] : [])].map((l) => `  ${l}`).join('\n'),
      }),
    'reduce',
  ),
);

/**
 * Records a split-K product: the partial products of the K slices into the workspace (batch * splits
 * workgroup layers), then their sum in slice order with alpha, bias and accumulate into out. Returns the
 * partial pass's key (it ends in ':k').
 */
export function launchSplit(gpu: Gpu, c: MatmulCall, tile: TileConfig, pairB: boolean, layout: Layout, sp: Split): string {
  const { out, a, b, bias, d } = c;
  // the partial pass has no epilogue: the sum applies alpha, the bias and accumulate
  const program = matmulProgram(gpu, tile, { ...productChoices(c), accumulate: false, bias: false, pairB, split: true, ...layout });
  const MN = d.M * d.N;
  const w = workspace(gpu, d.batch * sp.splits * MN);
  tiled.run(gpu, {
    program,
    bindings: { a, b, c: w },
    uniforms: { ...productUniforms(d), strideC: MN, alpha: 1, offC: 0, kLen: sp.kLen, splits: sp.splits },
    workgroups: [Math.ceil(d.N / tile.bn), Math.ceil(d.M / tile.bm), d.batch * sp.splits],
  });
  splitSum.run(gpu, {
    program: splitkProgram(d.accumulate, Boolean(bias)),
    bindings: { w, c: out, bias },
    uniforms: { MN, N: d.N, splits: sp.splits, batch: d.batch, strideC: d.strideC, offC: d.offsetC, alpha: d.alpha },
    workgroups: grid1d(Math.ceil((d.batch * MN) / 256)),
  });
  return program.key;
}

// The critic's value head on the base model's final hidden state: an MLP C -> H1 -> ... -> 1 with ReLU
// (the original MARFT code uses hidden sizes [1024, 512]; [] is a linear head). One head shared by all
// agents (CTDE), or one head per agent: forward computes every head on every row, values (S, N), and the
// caller reads the head of each row's agent (the head is small next to the trunk).
// Shapes: hN (N, C); per head s and layer j: W (out_j, in_j), b (out_j), saved z_j (N, out_j).
// With a FiniteWatch, forward counts the non-finite values of each layer's pre-activation z_j: ReLU's
// max(NaN, 0) may give 0 on some adapters, so a NaN weight in a hidden layer would leave finite values.

import { reluBackward, reluForward } from '../../kernels/elementwise/elementwise.ts';
import { matmul, matmulBackward } from '../../kernels/matmul/matmul.ts';
import type { Gpu } from '../gpu/gpu.ts';
import { shapeError } from '../gpu/errors.ts';
import { type Tensor, view } from '../gpu/tensor.ts';
import { Rng } from '../common/rng.ts';
import { type FiniteWatch, watchFinite } from './finite-watch.ts';

export interface HeadLayer {
  W: Tensor;
  b: Tensor;
  dW: Tensor;
  db: Tensor;
}

export interface ValueHead {
  C: number;
  hidden: number[];
  heads: HeadLayer[][]; // [S][layer]
}

export interface ValueHeadState {
  N: number;
  /** values (S, N): head s's value of every row. */
  values: Tensor;
  /** Saved per head: the input of each layer (x_0 = hN) and pre-activations z. */
  xs: Tensor[][];
  zs: Tensor[][];
}

export function createValueHead(gpu: Gpu, C: number, hidden: number[], S: number, seed: number): ValueHead {
  const rng = new Rng(seed);
  const dims = [C, ...hidden, 1];
  const heads: HeadLayer[][] = [];
  for (let s = 0; s < S; s++) {
    const layers: HeadLayer[] = [];
    for (let j = 0; j + 1 < dims.length; j++) {
      const [IN, OUT] = [dims[j], dims[j + 1]];
      const bound = 1 / Math.sqrt(IN); // torch.nn.Linear's default init
      const r = rng.fork(`head${s}.${j}`);
      const w = Float32Array.from({ length: OUT * IN }, () => r.uniform(-bound, bound));
      const b = Float32Array.from({ length: OUT }, () => r.uniform(-bound, bound));
      layers.push({
        W: gpu.upload(w, [OUT, IN], 'f32', `value.${s}.${j}.weight`),
        b: gpu.upload(b, [OUT], 'f32', `value.${s}.${j}.bias`),
        dW: gpu.zeros([OUT, IN], 'f32', `value.${s}.${j}.weight.grad`),
        db: gpu.zeros([OUT], 'f32', `value.${s}.${j}.bias.grad`),
      });
    }
    heads.push(layers);
  }
  return { C, hidden: [...hidden], heads };
}

export function valueHeadParams(h: ValueHead): Array<{ param: Tensor; grad: Tensor }> {
  return h.heads.flat().flatMap((l) => [
    { param: l.W, grad: l.dW },
    { param: l.b, grad: l.db },
  ]);
}

/** Slots a watch needs for valueHeadForward: one per layer of every head. */
export const valueHeadWatchSlots = (h: ValueHead): number => h.heads.length * (h.hidden.length + 1);

/** The place a watch names for head s, layer j (the output layer's z is the value). */
export const valueLayerName = (h: ValueHead, s: number, j: number): string =>
  `critic head ${s} ${j === h.hidden.length ? 'output' : `hidden layer ${j} (pre-ReLU)`} value.${s}.${j}`;

export function valueHeadForward(gpu: Gpu, head: ValueHead, hN: Tensor, watch?: FiniteWatch): ValueHeadState {
  const [N, C] = hN.shape;
  if (hN.dtype !== 'f32' || hN.shape.length !== 2 || C !== head.C)
    shapeError('valueHeadForward', `hN must be (N, ${head.C}) f32, got [${hN.shape.join(', ')}] ${hN.dtype}`);
  const S = head.heads.length;
  const values = gpu.tensor([S, N], 'f32', 'values');
  const st: ValueHeadState = { N, values, xs: [], zs: [] };
  head.heads.forEach((layers, s) => {
    const xs: Tensor[] = [hN];
    const zs: Tensor[] = [];
    layers.forEach((l, j) => {
      const OUT = l.W.shape[0];
      const last = j === layers.length - 1;
      const z = gpu.tensor([N, OUT], 'f32', `value.z${j}`);
      matmul(gpu, z, xs[j], l.W, { transB: true, bias: l.b });
      if (watch) watchFinite(gpu, watch, valueLayerName(head, s, j), z);
      zs.push(z);
      if (last) {
        gpu.copy(z, values, N * 4, 0, s * N * 4);
      } else {
        const x = gpu.tensor([N, OUT], 'f32', `value.x${j + 1}`);
        reluForward(gpu, x, z);
        xs.push(x);
      }
    });
    st.xs.push(xs);
    st.zs.push(zs);
  });
  return st;
}

/**
 * Given dvalues (S, N), accumulates the heads' parameter gradients and writes (=) dhN (N, C), the sum over
 * heads of the gradient on the hidden state, for the decoder's backward (null: the trunk is frozen).
 */
export function valueHeadBackward(gpu: Gpu, head: ValueHead, st: ValueHeadState, dvalues: Tensor, dhN: Tensor | null, ones: Tensor): void {
  const { N } = st;
  const S = head.heads.length;
  if (dvalues.shape[0] !== S || dvalues.shape[1] !== N)
    shapeError('valueHeadBackward', `dvalues must be (${S}, ${N}), got [${dvalues.shape.join(', ')}]`);
  if (ones.shape.length !== 2 || ones.shape[0] !== 1 || ones.shape[1] !== N) shapeError('valueHeadBackward', `ones must be (1, ${N})`);
  if (dhN) gpu.fill(dhN, 0);
  head.heads.forEach((layers, s) => {
    let dz = gpu.tensor([N, 1], 'f32', 'value.dz');
    gpu.copy(dvalues, dz, N * 4, s * N * 4, 0);
    for (let j = layers.length - 1; j >= 0; j--) {
      const l = layers[j];
      const x = st.xs[s][j];
      matmul(gpu, view(l.db, [1, l.db.shape[0]]), ones, dz, { accumulate: true });
      const dx = j > 0 ? gpu.tensor(x.shape, 'f32', 'value.dx') : dhN;
      matmulBackward(gpu, dx, l.dW, dz, x, l.W, { transB: true, accumulateDB: true, accumulateDA: j === 0 });
      gpu.release(dz);
      if (j === 0) break;
      dz = gpu.tensor(x.shape, 'f32', 'value.dz');
      reluBackward(gpu, dz, dx!, st.zs[s][j - 1]);
      gpu.release(dx!);
    }
  });
}

export function releaseValueHeadState(gpu: Gpu, st: ValueHeadState): void {
  gpu.release(st.values, ...st.zs.flat(), ...st.xs.flatMap((xs) => xs.slice(1)));
}

export function releaseValueHead(gpu: Gpu, h: ValueHead): void {
  for (const { param, grad } of valueHeadParams(h)) gpu.release(param, grad);
}

// The register-blocked backward of the tiled path (backward.wgsl): its programs per BlockedBackward
// (variants.ts), the choice that settles on what the device fits, the scratch it takes, and its dispatches.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import { type KernelProgram, defineKernel } from '../program.ts';
import backwardSource from './backward.wgsl';
import { type Dims, TYPES, UNIFORMS, backwardPath, main, uniforms, withRealRange } from './kernel.ts';
import type { AttentionPrograms } from './tiled.ts';
import { type BackwardVariant, type BlockedBackward, backwardChoice, backwardName, blockedUnfit } from './variants.ts';

/** backward.wgsl: the blocked backward (out and lse only read, by the fused prep). */
const blocked = defineKernel({
  name: 'attention.blocked',
  bindings: ['q', 'k', 'v', 'mask', 'out', 'lse', 'dout', 'ld', 'dq', 'pk', 'pv', 'dk', 'dv', 'dsg'],
  uniforms: UNIFORMS,
  types: { ...TYPES, out: 'read array<vec4f>', lse: 'read array<f32>' },
  entries: {
    backwardDkDvBlocked: ['q', 'k', 'v', 'mask', 'dout', 'ld', 'pk', 'pv', 'dsg?'],
    backwardDkDvReduce: ['pk', 'pv', 'dk', 'dv'],
    backwardDqBlocked: ['q', 'k', 'v', 'mask', 'out?', 'lse?', 'dout', 'ld', 'dq'],
    backwardDqFromDs: ['k', 'v', 'mask', 'dq', 'dsg'],
  },
});

interface BlockedPrograms {
  dkdv: KernelProgram<'backwardDkDvBlocked'>;
  reduce: KernelProgram<'backwardDkDvReduce'>;
  dq: KernelProgram<'backwardDqBlocked'>;
  dqFromDs: KernelProgram<'backwardDqFromDs'>;
}

const DS_STORE = [
  'if (r < rB) {',
  '  let a = (((b * u.NKV + kvh) * R + r) * u.Tk + jA);',
  '  if (jA < u.Tk) { dsg[a] = ds.x; }',
  '  if (jA + 1u < u.Tk) { dsg[a + 1u] = ds.y; }',
  '  if (jA + 2u < u.Tk) { dsg[a + 2u] = ds.z; }',
  '  if (jA + 3u < u.Tk) { dsg[a + 3u] = ds.w; }',
  '}',
];
const blockedPrograms = programFactory(
  (HS: number, v: BlockedBackward) => `${HS}:${backwardName({ ...v, split: 1 })}`,
  (HS: number, v: BlockedBackward): BlockedPrograms => {
    const prep = v.fusePrep
      ? [
          'let L = lse[hIndex(b, kvh, r)];',
          'let a = qIndex(b, kvh, r);',
          'var acc = vec4f(0.0);',
          'for (var d = 0u; d < HS4; d++) { acc = fma(dout[a + d], out[a + d], acc); }',
          '// A fully masked row keeps a huge lse: every p it produces is masked to 0 anyway.',
          'let x = vec2f(select(L * LOG2E, LSE_MASKED, L <= NEG_HALF), (acc.x + acc.y) + (acc.z + acc.w));',
          'qLD[lr] = x;',
          'if (r0 + lr < R) { ld[hIndex(b, kvh, r)] = x; }',
        ]
      : ['qLD[lr] = ld[hIndex(b, kvh, r)];'];
    const code = () =>
      fillTemplate(withRealRange(backwardSource), {
        HEADER: blocked.header(),
        HS4: String(HS / 4),
        K_BK: String(v.kBK),
        K_BQ: String(v.kBQ),
        K_W: String(v.kW),
        Q_BR: String(v.qBR),
        Q_BC: String(v.qBC),
        Q_W: String(v.qW),
        PREP: prep.map((l) => `    ${l}`).join('\n'),
        DS_STORE: v.ds ? DS_STORE.map((l) => `      ${l}`).join('\n') : '',
        PF: String(Boolean(v.pf)),
      });
    const key = `attention:bwd:hs${HS}:${backwardName({ ...v, split: 1 })
      .slice('blocked:'.length)
      .replace(':s1', '')}`;
    return {
      dkdv: blocked.program(key, code, 'backwardDkDvBlocked'),
      reduce: blocked.program(key, code, 'backwardDkDvReduce'),
      dq: blocked.program(key, code, 'backwardDqBlocked'),
      dqFromDs: blocked.program(key, code, 'backwardDqFromDs'),
    };
  },
);

/** The most scratch (B*NH*T*T floats) a backward's 'ds' variant may take; past it the no-scratch kernel runs. */
export const DS_SCRATCH_MAX = 512 * 2 ** 20;

type BackwardLimits = Parameters<typeof blockedUnfit>[2] & Pick<GPUSupportedLimits, 'maxStorageBufferBindingSize' | 'maxBufferSize'>;

/**
 * The backward variant that runs: without dS scratch past DS_SCRATCH_MAX (a browser's GPU memory) or the
 * binding limits, and 'v1' where the blocked variant does not fit the device.
 */
export function settleBackward(v: BackwardVariant, dsBytes: number, HS: number, limits: BackwardLimits): BackwardVariant {
  if (v === 'v1') return v;
  const fits =
    v.ds && dsBytes > Math.min(DS_SCRATCH_MAX, limits.maxStorageBufferBindingSize, limits.maxBufferSize) ? { ...v, ds: false } : v;
  return blockedUnfit(HS, fits, limits) === null ? fits : 'v1';
}

/**
 * Bytes of each scratch tensor attentionBackward takes from the pool for these dims (self-attention, T
 * queries and keys) on a device, with the choices it makes: the tiled path's ld, and the blocked variant's
 * split partials of dk and dv and its dS scratch. For a memory plan of what a training step holds at once.
 */
export function backwardScratch(
  d: { B: number; NH: number; NKV: number; T: number; HS: number },
  device: { cpu: boolean; limits: BackwardLimits },
): number[] {
  // the direct and register paths (defaultPath) take none
  if (device.cpu && backwardPath('regs', device.limits) !== 'tiled') return [];
  const dsBytes = d.B * d.NH * d.T * d.T * 4;
  const variant = settleBackward(backwardChoice(d.T, d.HS), dsBytes, d.HS, device.limits);
  const out = [d.B * d.NH * d.T * 2 * 4];
  if (variant === 'v1') return out;
  if (variant.split > 1) out.push(...[0, 1].map(() => variant.split * d.B * d.T * d.NKV * d.HS * 4));
  if (variant.ds) out.push(dsBytes);
  return out;
}

export interface BackwardTensors {
  dq: Tensor;
  dk: Tensor;
  dv: Tensor;
  dout: Tensor;
  q: Tensor;
  k: Tensor;
  v: Tensor;
  out: Tensor;
  lse: Tensor;
  ld: Tensor;
  mask: Tensor;
}

/** The blocked backward: [prep,] dq (which computes ld when fused), dk/dv [, the sum of its splits]; with ds: prep, dk/dv (storing dS) [, sum], dq. */
export function blockedBackward(gpu: Gpu, v1: AttentionPrograms, v: BlockedBackward, d: Dims, t: BackwardTensors): void {
  const p = blockedPrograms(d.HS, v);
  const u = uniforms(d, v.split);
  const R = d.Tq * (d.NH / d.NKV);
  if (!v.fusePrep) {
    main.run(gpu, {
      program: v1.prep,
      bindings: { out: t.out, lse: t.lse, dout: t.dout, ld: t.ld },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
    });
  }
  const dqGrid: [number, number, number] = [Math.ceil(R / v.qBR), d.NKV, d.B];
  if (!v.ds) {
    blocked.run(gpu, {
      program: p.dq,
      bindings: {
        q: t.q,
        k: t.k,
        v: t.v,
        mask: t.mask,
        out: v.fusePrep ? t.out : null,
        lse: v.fusePrep ? t.lse : null,
        dout: t.dout,
        ld: t.ld,
        dq: t.dq,
      },
      uniforms: u,
      workgroups: dqGrid,
    });
  }
  const kShape = [v.split, d.B, d.Tcap, d.NKV, d.HS];
  const pk = v.split > 1 ? gpu.tensor(kShape, 'f32', 'attention.pdk') : t.dk;
  const pv = v.split > 1 ? gpu.tensor(kShape, 'f32', 'attention.pdv') : t.dv;
  const ds = v.ds ? gpu.tensor([d.B, d.NKV, R, d.Tk], 'f32', 'attention.ds') : undefined;
  blocked.run(gpu, {
    program: p.dkdv,
    bindings: { q: t.q, k: t.k, v: t.v, mask: t.mask, dout: t.dout, ld: t.ld, pk, pv, dsg: ds },
    uniforms: u,
    workgroups: [Math.ceil(d.Tcap / v.kBK) * v.split, d.NKV, d.B],
  });
  if (v.split > 1) {
    blocked.run(gpu, {
      program: p.reduce,
      bindings: { pk, pv, dk: t.dk, dv: t.dv },
      uniforms: u,
      workgroups: grid1d(Math.ceil((d.B * d.Tcap * d.NKV * (d.HS / 4)) / 64)),
    });
    gpu.release(pk, pv);
  }
  if (ds) {
    blocked.run(gpu, {
      program: p.dqFromDs,
      bindings: { k: t.k, v: t.v, mask: t.mask, dq: t.dq, dsg: ds },
      uniforms: u,
      workgroups: dqGrid,
    });
    gpu.release(ds);
  }
}

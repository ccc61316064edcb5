// The barrier-free paths for CPU adapters (Gpu.cpu): direct.wgsl's kernels with the work on a row's vec4s
// filled in as loops ('direct') or unrolled, the head's vectors in named registers ('regs'); their
// programs per head size and their dispatches.

import type { Gpu } from '../../src/gpu/gpu.ts';
import { grid1d, programFactory } from '../../src/gpu/program.ts';
import type { Tensor } from '../../src/gpu/tensor.ts';
import { fillTemplate } from '../common.ts';
import source from './direct.wgsl';
import { type AttentionPath, type Dims, main, uniforms } from './kernel.ts';

const ind = (w: number, lines: string[]) => lines.map((l) => ' '.repeat(w) + l).join('\n');

/** direct.wgsl for the 'direct' path: the work on a row as loops over its HS4 vec4s, accumulators in private arrays. */
function directSourceOf(HS: number): string {
  const loop = 'for (var d = 0u; d < HS4; d++)';
  return fillTemplate(source, {
    HEADER: main.header(),
    HS4: String(HS / 4),
    PATH: 'Direct',
    FWD_INIT: ind(2, ['var o: array<vec4f, HS4>;']),
    FWD_SCORE: ind(4, ['let s = dot4(qb, kb) * u.scale2;']),
    FWD_ACC: ind(4, [`${loop} { o[d] = fma(vec4f(p), v[kb + d], o[d] * alpha); }`]),
    FWD_STORE: ind(2, [`${loop} { out[qb + d] = o[d] * inv; }`]),
    DQ_INIT: ind(2, ['let D = rowD(qb);', 'var g: array<vec4f, HS4>;']),
    DQ_KEY: ind(4, [
      'let p = exp2(dot4(qb, kb) * u.scale2 - L2);',
      'let ds = p * (dotDv(qb, kb) - D);',
      `${loop} { g[d] = fma(vec4f(ds), k[kb + d], g[d]); }`,
    ]),
    DQ_STORE: ind(2, [`${loop} { dq[qb + d] = g[d] * u.scale; }`]),
    KV_INIT: ind(2, ['var gk: array<vec4f, HS4>;', 'var gv: array<vec4f, HS4>;']),
    KV_LOAD: '',
    KV_QUERY: ind(8, [
      'let p = exp2(dot4(qb, kb) * u.scale2 - lse2(b, h, i));',
      'let ds = p * (dotDv(qb, kb) - rowD(qb));',
      `${loop} {`,
      '  gv[d] = fma(vec4f(p), dout[qb + d], gv[d]);',
      '  gk[d] = fma(vec4f(ds), q[qb + d], gk[d]);',
      '}',
    ]),
    KV_STORE: ind(2, [`${loop} {`, '  dk[kb + d] = gk[d] * u.scale;', '  dv[kb + d] = gv[d];', '}']),
  });
}

/** The barrier-free kernels of the 'direct' path, for CPU adapters (Gpu.cpu). */
export const directPrograms = programFactory(
  (HS: number) => `${HS}`,
  (HS: number) => {
    const key = `attention:direct:hs${HS}`;
    const code = () => directSourceOf(HS);
    return {
      fwd: main.program(key, code, 'forwardDirect'),
      dkdv: main.program(key, code, 'backwardDkDvDirect'),
      dq: main.program(key, code, 'backwardDqDirect'),
    };
  },
);

/** direct.wgsl for the 'regs' path and head size HS: every loop over the HS / 4 vec4s of a row unrolled. */
export function regsSourceOf(HS: number): string {
  const n = HS / 4;
  const ds = Array.from({ length: n }, (_, d) => d);
  const dot = (x: string, y: string) => [
    `var ${x}${y}4 = ${x}0 * ${y}0;`,
    ...ds.slice(1).map((d) => `${x}${y}4 = fma(${x}${d}, ${y}${d}, ${x}${y}4);`),
  ];
  const load = (name: string, buf: string, base: string) => ds.map((d) => `let ${name}${d} = ${buf}[${base} + ${d}u];`);
  return fillTemplate(source, {
    HEADER: main.header(),
    HS4: String(n),
    PATH: 'Regs',
    FWD_INIT: ind(2, [...load('q', 'q', 'qb'), ...ds.map((d) => `var o${d} = vec4f(0.0);`)]),
    FWD_SCORE: ind(4, [...load('k', 'k', 'kb'), ...dot('q', 'k'), 'let s = hsum(qk4) * u.scale2;']),
    FWD_ACC: ind(
      4,
      ds.map((d) => `o${d} = fma(vec4f(p), v[kb + ${d}u], o${d} * alpha);`),
    ),
    FWD_STORE: ind(
      2,
      ds.map((d) => `out[qb + ${d}u] = o${d} * inv;`),
    ),
    // D = rowsum(dout * out) of the thread's own query row, as direct.wgsl's rowD.
    DQ_INIT: ind(2, [
      ...load('q', 'q', 'qb'),
      ...load('e', 'dout', 'qb'),
      ...load('f', 'out', 'qb'),
      ...dot('e', 'f'),
      'let D = hsum(ef4);',
      ...ds.map((d) => `var g${d} = vec4f(0.0);`),
    ]),
    DQ_KEY: ind(4, [
      ...load('k', 'k', 'kb'),
      ...load('w', 'v', 'kb'),
      ...dot('q', 'k'),
      ...dot('e', 'w'),
      'let p = exp2(hsum(qk4) * u.scale2 - L2);',
      'let ds = p * (hsum(ew4) - D);',
      ...ds.map((d) => `g${d} = fma(vec4f(ds), k${d}, g${d});`),
    ]),
    DQ_STORE: ind(
      2,
      ds.map((d) => `dq[qb + ${d}u] = g${d} * u.scale;`),
    ),
    KV_INIT: ind(
      2,
      ds.flatMap((d) => [`var gk${d} = vec4f(0.0);`, `var gv${d} = vec4f(0.0);`]),
    ),
    KV_LOAD: ind(4, [...load('k', 'k', 'kb'), ...load('w', 'v', 'kb')]),
    KV_QUERY: ind(8, [
      ...load('q', 'q', 'qb'),
      ...load('e', 'dout', 'qb'),
      ...load('f', 'out', 'qb'),
      ...dot('e', 'f'),
      ...dot('q', 'k'),
      ...dot('e', 'w'),
      'let p = exp2(hsum(qk4) * u.scale2 - lse2(b, h, i));',
      'let ds = p * (hsum(ew4) - hsum(ef4));',
      ...ds.flatMap((d) => [`gv${d} = fma(vec4f(p), e${d}, gv${d});`, `gk${d} = fma(vec4f(ds), q${d}, gk${d});`]),
    ]),
    KV_STORE: ind(
      2,
      ds.flatMap((d) => [`dk[kb + ${d}u] = gk${d} * u.scale;`, `dv[kb + ${d}u] = gv${d};`]),
    ),
  });
}

export const regsPrograms = programFactory(
  (HS: number) => `${HS}`,
  (HS: number) => {
    const key = `attention:regs:hs${HS}`;
    const code = () => regsSourceOf(HS);
    return {
      fwd: main.program(key, code, 'forwardRegs'),
      dkdv: main.program(key, code, 'backwardDkDvRegs'),
      dq: main.program(key, code, 'backwardDqRegs'),
    };
  },
);

const programsOf = (path: Exclude<AttentionPath, 'tiled'>, HS: number) => (path === 'regs' ? regsPrograms : directPrograms)(HS);

/** The forward of a barrier-free path: a thread per query row. */
export function directForward(
  gpu: Gpu,
  path: Exclude<AttentionPath, 'tiled'>,
  d: Dims,
  t: { q: Tensor; k: Tensor; v: Tensor; mask: Tensor; out: Tensor; lse: Tensor },
): void {
  main.run(gpu, {
    program: programsOf(path, d.HS).fwd,
    bindings: { q: t.q, k: t.k, v: t.v, mask: t.mask, out: t.out, lse: t.lse },
    uniforms: uniforms(d),
    workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
  });
}

/** The backward of a barrier-free path: dk and dv a thread per key, then dq a thread per query row. */
export function directBackward(
  gpu: Gpu,
  path: Exclude<AttentionPath, 'tiled'>,
  d: Dims,
  t: { dq: Tensor; dk: Tensor; dv: Tensor; dout: Tensor; q: Tensor; k: Tensor; v: Tensor; out: Tensor; lse: Tensor; mask: Tensor },
): void {
  const p = programsOf(path, d.HS);
  const u = uniforms(d);
  const { q, k, v, mask, out, lse, dout } = t;
  main.run(gpu, {
    program: p.dkdv,
    bindings: { q, k, v, mask, out, lse, dout, dk: t.dk, dv: t.dv },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.B * d.Tcap * d.NKV) / 64)),
  });
  main.run(gpu, {
    program: p.dq,
    bindings: { q, k, v, mask, out, lse, dout, dq: t.dq },
    uniforms: u,
    workgroups: grid1d(Math.ceil((d.B * d.Tq * d.NH) / 64)),
  });
}

// The LoRA kernels' names: lora.wgsl (tiles, rows, direct, wide) and groups.wgsl share one uniform layout
// and one set of bindings, written into both modules by header(), and one packing of those uniforms.

import { defineKernel } from '../program.ts';

// The bindings of one step's entry points, the same in each form (tiles, rows, direct, wide, groups).
const H = ['slots', 'x', 'A', 'h'] as const;
const Y = ['slots', 'Bw', 'h', 'y'] as const;
const DH = ['slots', 'Bw', 'dy', 'dh'] as const;
const DX = ['slots', 'A', 'dh', 'dx'] as const;
const GRAD = ['slots', 'x', 'h', 'dy', 'dh'] as const;

export const lora = defineKernel({
  name: 'lora',
  bindings: ['slots', 'x', 'A', 'Bw', 'h', 'y', 'dy', 'dh', 'dx', 'dA', 'dB', 'part'],
  uniforms: {
    B: 'u32',
    T: 'u32',
    S: 'u32',
    R: 'u32',
    IN: 'u32',
    OUT: 'u32',
    scale: 'f32',
    P: 'u32', // lora.wgsl: parts the tiled weight gradients split the sequences into
    CH: 'u32',
    CT: 'u32',
    DX: 'u32', // groups.wgsl: rows a chunk, chunks a sequence, whether dx is written
  },
  types: {
    slots: 'read array<i32>',
    x: 'read array<f32>',
    A: 'read array<f32>',
    Bw: 'read array<f32>',
    h: 'read_write array<f32>',
    y: 'read_write array<f32>',
    dy: 'read array<f32>',
    dh: 'read_write array<f32>',
    dx: 'read_write array<f32>',
    dA: 'read_write array<f32>',
    dB: 'read_write array<f32>',
    part: 'read_write array<f32>',
  },
  entries: {
    forward_h: H,
    forward_h_rows: H,
    forward_h_direct: H,
    forward_h_wide: H,
    forward_y: Y,
    forward_y_rows: Y,
    forward_y_wide: Y,
    backward_dh: DH,
    backward_dh_direct: DH,
    backward_dh_wide: DH,
    backward_dh_group: DH,
    backward_dx: DX,
    backward_dx_direct: DX,
    backward_dx_wide: DX,
    // dB's and dA's loops are one function (slotRowsDot) that names both pairs of operands: all four bound
    backward_dB_direct: [...GRAD, 'dB'],
    backward_dB_wide: [...GRAD, 'dB'],
    backward_dA_direct: [...GRAD, 'dA'],
    backward_dA_wide: [...GRAD, 'dA'],
    backward_dAdB: [...GRAD, 'dA', 'dB', 'part'],
    reduce_dAdB: ['slots', 'dA', 'dB', 'part'],
    forward_group: ['slots', 'x', 'A', 'Bw', 'h', 'y'],
    backward_grads: ['slots', 'x', 'A', 'h', 'dy', 'dh', 'dx', 'part'],
    reduce_grads: ['slots', 'dA', 'dB', 'part'],
  },
});

/** A call's dims (checked by lora.ts): B sequences of T rows, S adapter slots of rank R, IN inputs, OUT outputs. */
export interface LoraDims {
  B: number;
  T: number;
  S: number;
  R: number;
  IN: number;
  OUT: number;
}

/** A dispatch's uniforms: the dims and scale, and the tiles' gradient parts P or the groups' CH, CT and DX. */
export const loraUniforms = (d: LoraDims, scale: number, more: { P?: number; CH?: number; CT?: number; DX?: number } = {}) => ({
  B: d.B,
  T: d.T,
  S: d.S,
  R: d.R,
  IN: d.IN,
  OUT: d.OUT,
  scale,
  P: more.P ?? 1,
  CH: more.CH ?? 0,
  CT: more.CT ?? 0,
  DX: more.DX ?? 0,
});

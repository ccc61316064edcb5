// The LoRA kernels' names: lora.wgsl (tiles, rows, direct, wide) and groups.wgsl share one uniform layout
// and one set of bindings, written into both modules by header().

import { defineKernel } from '../program.ts';

export const lora = defineKernel({
  name: 'lora',
  bindings: ['slots', 'x', 'A', 'Bw', 'h', 'y', 'dy', 'dh', 'dx', 'dA', 'dB', 'part'],
  uniforms: {
    B: 'u32', T: 'u32', S: 'u32', R: 'u32', IN: 'u32', OUT: 'u32', scale: 'f32',
    P: 'u32', // lora.wgsl: parts the tiled weight gradients split the sequences into
    CH: 'u32', CT: 'u32', DX: 'u32', // groups.wgsl: rows a chunk, chunks a sequence, whether dx is written
  },
  types: {
    slots: 'read array<i32>', x: 'read array<f32>', A: 'read array<f32>', Bw: 'read array<f32>',
    h: 'read_write array<f32>', y: 'read_write array<f32>', dy: 'read array<f32>', dh: 'read_write array<f32>',
    dx: 'read_write array<f32>', dA: 'read_write array<f32>', dB: 'read_write array<f32>', part: 'read_write array<f32>',
  },
  entries: {
    forward_h: ['slots', 'x', 'A', 'h'],
    forward_h_rows: ['slots', 'x', 'A', 'h'],
    forward_h_direct: ['slots', 'x', 'A', 'h'],
    forward_h_wide: ['slots', 'x', 'A', 'h'],
    forward_y: ['slots', 'Bw', 'h', 'y'],
    forward_y_rows: ['slots', 'Bw', 'h', 'y'],
    forward_y_wide: ['slots', 'Bw', 'h', 'y'],
    backward_dh: ['slots', 'Bw', 'dy', 'dh'],
    backward_dh_direct: ['slots', 'Bw', 'dy', 'dh'],
    backward_dh_wide: ['slots', 'Bw', 'dy', 'dh'],
    backward_dx: ['slots', 'A', 'dh', 'dx'],
    backward_dx_direct: ['slots', 'A', 'dh', 'dx'],
    backward_dx_wide: ['slots', 'A', 'dh', 'dx'],
    // dB's and dA's loops are one function (slotRowsDot) that names both pairs of operands: all four bound
    backward_dB_direct: ['slots', 'x', 'h', 'dy', 'dh', 'dB'],
    backward_dB_wide: ['slots', 'x', 'h', 'dy', 'dh', 'dB'],
    backward_dA_direct: ['slots', 'x', 'h', 'dy', 'dh', 'dA'],
    backward_dA_wide: ['slots', 'x', 'h', 'dy', 'dh', 'dA'],
    backward_dAdB: ['slots', 'x', 'h', 'dy', 'dh', 'dA', 'dB', 'part'],
    reduce_dAdB: ['slots', 'dA', 'dB', 'part'],
    forward_group: ['slots', 'x', 'A', 'Bw', 'h', 'y'],
    backward_dh_group: ['slots', 'Bw', 'dy', 'dh'],
    backward_grads: ['slots', 'x', 'A', 'h', 'dy', 'dh', 'dx', 'part'],
    reduce_grads: ['slots', 'dA', 'dB', 'part'],
  },
});

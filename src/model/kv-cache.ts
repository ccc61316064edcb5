// The KV cache of generation: keys and values of earlier positions, per layer.

import type { Gpu } from '../gpu/gpu.ts';
import type { Tensor } from '../gpu/tensor.ts';
import type { ModelConfig } from './config.ts';

/**
 * Keys and values of earlier positions, per layer (B, Tcap, NKV, HS), for generation. mask (B, Tcap) marks
 * the real positions (prompt padding 0; every later position 1); `length` positions are filled.
 */
export interface KvCache {
  B: number;
  capacity: number;
  length: number;
  k: Tensor[];
  v: Tensor[];
  mask: Tensor;
  /**
   * `length` on the GPU, (1) i32, kept equal to it by its owner before each forward. Where given, the decode
   * kernels (RoPE + append, attention) read it instead of a uniform, so a decode step's dispatches are the
   * same at every step and a Gpu recording of one replays them (Decoder.replaysDecode).
   */
  lengthGpu?: Tensor;
}

export function createKvCache(
  gpu: Gpu,
  config: ModelConfig,
  B: number,
  capacity: number,
  promptMask: Int32Array,
  promptLen: number,
): KvCache {
  const { numKvHeads: NKV, headDim: HS, numLayers: L } = config;
  const mask = new Int32Array(B * capacity).fill(1);
  for (let b = 0; b < B; b++) for (let t = 0; t < promptLen; t++) mask[b * capacity + t] = promptMask[b * promptLen + t];
  return {
    B,
    capacity,
    length: 0,
    k: Array.from({ length: L }, (_, l) => gpu.tensor([B, capacity, NKV, HS], 'f32', `kv.k${l}`)),
    v: Array.from({ length: L }, (_, l) => gpu.tensor([B, capacity, NKV, HS], 'f32', `kv.v${l}`)),
    mask: gpu.upload(mask, [B, capacity], 'i32', 'kv.mask'),
  };
}

export function releaseKvCache(gpu: Gpu, c: KvCache): void {
  gpu.release(...c.k, ...c.v, c.mask);
}

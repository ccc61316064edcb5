// What a decoder's training step takes from the buffer pool beyond its activations and their gradients,
// for a memory plan (src/marft/plan.ts): the attention backward's scratch per layer, as the kernel chooses
// it for the shape and the device (kernels/attention backwardScratch).

import { backwardScratch } from '../../kernels/attention/attention.ts';
import type { ModelConfig } from './config.ts';

/** Device limits that decide the attention backward's variant (WebGPU's names). */
export interface ScratchLimits {
  maxBufferSize: number;
  maxStorageBufferBindingSize: number;
  maxComputeWorkgroupStorageSize: number;
  maxComputeInvocationsPerWorkgroup: number;
  maxComputeWorkgroupSizeX: number;
  maxStorageBuffersPerShaderStage: number;
}

/** Bytes of each scratch tensor one layer's attention backward holds for B sequences of T tokens. */
export function attentionBackwardScratch(c: ModelConfig, B: number, T: number, device: { cpu: boolean; limits: ScratchLimits }): number[] {
  return backwardScratch({ B, NH: c.numHeads, NKV: c.numKvHeads, T, HS: c.headDim }, device);
}

// Logits of one sequence with an optional PEFT adapter in a LoRA set of its own, made for the call and
// released after it: what `marft logits --adapter` prints, and what the lab compares an ONNX export of an
// agent with. The adapter is applied unmerged, by the LoRA kernels.

import type { Decoder } from './decoder.ts';
import { type LoraSet, createLoraSet, releaseLoraSet, setLoraSlot } from './lora-set.ts';
import type { PeftAdapter } from './peft.ts';

/** (T, V) logits of `ids` (one sequence, positions 0..T-1, no padding) with `adapter` (null: the base model). */
export async function sequenceLogits(decoder: Decoder, ids: ArrayLike<number>, adapter: PeftAdapter | null): Promise<Float32Array> {
  const gpu = decoder.gpu;
  let lora: LoraSet | null = null;
  try {
    if (adapter) {
      const c = adapter.config;
      lora = createLoraSet(
        gpu,
        decoder.config,
        { r: c.r, alpha: c.loraAlpha, targets: c.targetModules, slots: 1, useRslora: c.useRslora },
        0,
      );
      setLoraSlot(gpu, lora, 0, adapter);
    }
    const st = decoder.forward({ B: 1, T: ids.length, ids: Int32Array.from(ids), adapters: lora, slots: Int32Array.of(lora ? 0 : -1) });
    try {
      return await gpu.readF32(st.logits!);
    } finally {
      decoder.release(st);
    }
  } finally {
    if (lora) releaseLoraSet(gpu, lora);
  }
}

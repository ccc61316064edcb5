// LoRA merging on the CPU: W' = W + scale * B @ A, accumulated in float64 and rounded once to f32, and
// written transposed (IN, OUT), the layout an ONNX MatMul(x, W^T) wants. Also the base weights as f32
// whatever their stored dtype (f32, f16, bf16).
// Shapes: W (OUT, IN) torch Linear layout; A (R, IN); B (OUT, R) — PEFT's lora_A / lora_B.

import { fail } from '../errors.ts';
import { type LinearModule, type ModelConfig, linearDims } from '../config.ts';
import type { PeftAdapter } from '../peft.ts';
import { loraScale } from '../peft.ts';
import { tensorToFloat32, type TensorView } from '../safetensors.ts';

export interface LoraFactors {
  A: Float32Array;
  B: Float32Array;
  r: number;
  scale: number;
}

/** (IN, OUT) = (W + scale * B A)^T in f32; W (OUT, IN) f32; without `lora`, just the transpose. */
export function mergeTransposed(W: Float32Array, OUT: number, IN: number, lora: LoraFactors | null): Float32Array {
  if (W.length !== OUT * IN) throw new Error(`mergeTransposed: W has ${W.length} values, OUT*IN = ${OUT * IN}`);
  const out = new Float32Array(IN * OUT);
  const row = new Float64Array(IN);
  const R = lora?.r ?? 0;
  if (lora && (lora.A.length !== R * IN || lora.B.length !== OUT * R)) {
    throw new Error(`mergeTransposed: A has ${lora.A.length} values (want ${R * IN}), B ${lora.B.length} (want ${OUT * R})`);
  }
  for (let o = 0; o < OUT; o++) {
    row.fill(0);
    if (lora) {
      for (let r = 0; r < R; r++) {
        const b = lora.B[o * R + r];
        if (b === 0) continue;
        const a0 = r * IN;
        for (let i = 0; i < IN; i++) row[i] += b * lora.A[a0 + i];
      }
    }
    const s = lora?.scale ?? 0;
    const w0 = o * IN;
    for (let i = 0; i < IN; i++) out[i * OUT + o] = W[w0 + i] + s * row[i];
  }
  return out;
}

/** The adapter's factors for layer l, module m, or null when it does not adapt that module. */
export function loraFactors(adapter: PeftAdapter | null, l: number, m: LinearModule): LoraFactors | null {
  if (!adapter) return null;
  const ab = adapter.layers[l]?.[m];
  if (!ab) return null;
  return { A: ab.A, B: ab.B, r: adapter.config.r, scale: loraScale(adapter.config) };
}

/** Checks an adapter against the base model (layer count, module dims) before merging. */
export function checkAdapterFits(config: ModelConfig, adapter: PeftAdapter, where = 'adapter_model.safetensors'): void {
  if (adapter.layers.length > config.numLayers)
    fail('PEFT_INVALID', where, `${adapter.layers.length} layers of adapters for a ${config.numLayers}-layer model`);
  adapter.layers.forEach((layer, l) => {
    for (const [m, ab] of Object.entries(layer) as Array<[LinearModule, { A: Float32Array; B: Float32Array }]>) {
      const d = linearDims(config, m);
      const r = adapter.config.r;
      if (ab.A.length !== r * d.in || ab.B.length !== d.out * r) {
        fail(
          'PEFT_INVALID',
          where,
          `layer ${l} ${m}: A has ${ab.A.length} values and B ${ab.B.length}; the model needs [${r}, ${d.in}] and [${d.out}, ${r}]`,
        );
      }
    }
  });
}

/** A weight as f32, failing with TENSOR_MISSING naming the tensor. */
export function weightF32(weights: ReadonlyMap<string, TensorView>, name: string, where: string): Float32Array {
  const t = weights.get(name);
  if (!t) fail('TENSOR_MISSING', where, `tensor "${name}" is missing`);
  return tensorToFloat32(t);
}

// Files written by Python (safetensors, transformers, peft on the GPU machine, kept in fixtures/parity/):
// our reader accepts them and our writers reproduce them byte for byte — model.safetensors in F32, BF16 and
// F16, and adapter_model.safetensors through readPeftAdapter -> writePeftAdapter. CPU only.

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadModelFiles } from './folder.ts';
import { nodeModelFiles } from './node-files.ts';
import { readPeftAdapter, writePeftAdapter } from './peft.ts';
import { parseSafetensors, writeSafetensors, type FloatDType } from './safetensors.ts';

const ROOT = new URL('../../fixtures/parity/', import.meta.url).pathname;
const NAMES = ['llama-tiny', 'llama-tiny-bf16', 'qwen2-tiny', 'qwen2-tiny-f16'];
const bytesOf = (p: string): Uint8Array => new Uint8Array(readFileSync(p));
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && Buffer.compare(Buffer.from(a), Buffer.from(b)) === 0;

describe('files written by Python', () => {
  for (const name of NAMES) {
    it(`${name}: model.safetensors re-written byte for byte, adapter read and re-written byte for byte`, async () => {
      const dir = `${ROOT}${name}`;
      const bytes = bytesOf(`${dir}/model.safetensors`);
      const st = parseSafetensors(bytes, `${name}/model.safetensors`);
      const again = writeSafetensors(
        [...st.tensors].map(([n, t]) => ({ name: n, dtype: t.dtype as FloatDType, shape: t.shape, data: t.data })),
        st.metadata ?? undefined,
      );
      expect(sameBytes(again, bytes)).toBe(true);

      const model = await loadModelFiles(await nodeModelFiles(dir));
      expect(model.report.ok).toBe(true);
      const adapterBytes = bytesOf(`${dir}/adapter/adapter_model.safetensors`);
      const adapter = readPeftAdapter(
        { 'adapter_config.json': readFileSync(`${dir}/adapter/adapter_config.json`, 'utf8'), 'adapter_model.safetensors': adapterBytes },
        model.config,
      );
      expect(adapter.notes).toEqual([]);
      expect(sameBytes(writePeftAdapter(adapter, model.config)['adapter_model.safetensors'], adapterBytes)).toBe(true);
    });
  }
});

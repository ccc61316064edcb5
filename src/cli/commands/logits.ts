// marft logits --model DIR [--adapter DIR] --ids 1,2,3 [--f32]
// Prints the logits of every position as JSON, one row per position, to compare with transformers.

import { acquireNodeGpu } from '../../gpu/node.ts';
import { createLoraSet, setLoraSlot } from '../../model/lora-set.ts';
import { loadAdapterFiles, loadDecoder } from '../../model/load.ts';
import { nodeModelFiles } from '../../model/node-files.ts';
import { parse, parseIds, required } from '../args.ts';

export const usage = 'marft logits --model DIR [--adapter DIR] --ids 1,2,3 [--f32]';

export async function logitsCommand(argv: string[]): Promise<void> {
  const a = parse(argv, { model: { type: 'string' }, adapter: { type: 'string' }, ids: { type: 'string' }, f32: { type: 'boolean' } });
  const ids = parseIds(required(a.ids, 'ids'));
  const gpu = await acquireNodeGpu({ log: (l) => console.error(l) });
  const { decoder, model } = await loadDecoder(gpu, await nodeModelFiles(required(a.model, 'model')), { trainable: Boolean(a.f32) });
  let slots: Int32Array | undefined;
  if (typeof a.adapter === 'string') {
    const adapter = await loadAdapterFiles(await nodeModelFiles(a.adapter), model.config);
    const c = adapter.config;
    decoder.lora = createLoraSet(gpu, model.config, { r: c.r, alpha: c.loraAlpha, targets: c.targetModules, slots: 1, useRslora: c.useRslora }, 0);
    setLoraSlot(gpu, decoder.lora, 0, adapter);
    slots = Int32Array.of(0);
  }
  const st = decoder.forward({ B: 1, T: ids.length, ids: Int32Array.from(ids), slots });
  const logits = await gpu.readF32(st.logits!);
  const V = model.config.vocabSize;
  const rows = Array.from({ length: ids.length }, (_, t) => Array.from(logits.subarray(t * V, (t + 1) * V)));
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

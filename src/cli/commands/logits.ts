// marft logits --model DIR [--adapter DIR] --ids 1,2,3 [--f32] [--limits default|adapter]
// Prints the logits of every position as JSON, one row per position, to compare with transformers.

import { acquireNodeGpu } from '../../gpu/node.ts';
import { loadAdapterFiles, loadDecoder } from '../../model/load.ts';
import { sequenceLogits } from '../../model/logits.ts';
import { nodeModelFiles } from '../../model/node-files.ts';
import { LIMITS_FLAG, parse, parseIds, parseLimits, required } from '../args.ts';

export const usage = 'marft logits --model DIR [--adapter DIR] --ids 1,2,3 [--f32] [--limits default|adapter]';

export async function logitsCommand(argv: string[]): Promise<void> {
  const a = parse(argv, {
    model: { type: 'string' },
    adapter: { type: 'string' },
    ids: { type: 'string' },
    f32: { type: 'boolean' },
    ...LIMITS_FLAG,
  });
  const ids = parseIds(required(a.ids, 'ids'));
  const gpu = await acquireNodeGpu({ log: (l) => console.error(l), limits: parseLimits(a.limits) });
  const { decoder, model } = await loadDecoder(gpu, await nodeModelFiles(required(a.model, 'model')), { trainable: Boolean(a.f32) });
  const adapter = typeof a.adapter === 'string' ? await loadAdapterFiles(await nodeModelFiles(a.adapter), model.config) : null;
  const logits = await sequenceLogits(decoder, ids, adapter);
  const V = model.config.vocabSize;
  const rows = Array.from({ length: ids.length }, (_, t) => Array.from(logits.subarray(t * V, (t + 1) * V)));
  process.stdout.write(`${JSON.stringify(rows)}\n`);
}

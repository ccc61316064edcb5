// marft export --checkpoint DIR --out FILE.zip
// The checkpoint's adapters as PEFT folders, one per agent (agents/<role>/adapter_config.json and
// adapter_model.safetensors), plus the run config, zipped.

import { writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { loadCheckpoint, readCheckpointFiles } from '../../marft/checkpoint.ts';
import { exportAdapters } from '../../marft/export.ts';
import { parseConfig } from '../../marft/config.ts';
import { nodeStore } from '../../marft/storage/node.ts';
import { zipFiles } from '../../marft/zip.ts';
import { parse, required } from '../args.ts';
import { openSession } from '../session.ts';

export const usage = 'marft export --checkpoint DIR --out FILE.zip';

export async function exportCommand(argv: string[]): Promise<void> {
  const a = parse(argv, { checkpoint: { type: 'string' }, out: { type: 'string' }, format: { type: 'string' } });
  const full = resolve(required(a.checkpoint, 'checkpoint'));
  const out = required(a.out, 'out');
  const store = nodeStore(dirname(full));
  const config = parseConfig(new TextDecoder().decode((await readCheckpointFiles(store, basename(full))).files['config.json']), { checkEnv: false });
  const s = await openSession(config, (l) => console.error(l));
  const state = await loadCheckpoint(s.gpu, store, basename(full), s.model.config);
  const files = await exportAdapters(s.gpu, state, { baseModel: s.modelDir });
  writeFileSync(out, zipFiles(files));
  console.error(`wrote ${out}: ${Object.keys(files).length} files (${Object.keys(files).filter((f) => f.endsWith('.safetensors')).length} adapters)`);
}

// Records the lab's bundled demo run into public/demo/: the duo preset as the lab starts it (configs/lab.json,
// its seed, 0) with fewer iterations, one turn and shorter outputs, trained in Node through the same Run as the lab and the CLI, on whatever
// WebGPU adapter Dawn finds (SwiftShader on a machine without a GPU; the built-in model is tiny). It writes
// the latest checkpoint as checkpoint.zip (run config, adapters, critic, optimiser, metric history) and the
// last iteration's episodes, inspected under each credit method, as episodes.json (src/marft/demo-run.ts).
// The adapters name the base model "marft-tiny" as the lab's do, not this machine's folder.
// Usage: node scripts/bundle.mjs scripts/make-demo-run.ts && node .build/make-demo-run.mjs [--iterations 3] [--out public/demo]

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { BUILTIN_MODEL, parseRunConfig } from '../src/config/run-config.ts';
import { presetRunConfig } from '../src/config/run-presets.ts';
import { acquireNodeGpu, resetNodeGpu } from '../src/gpu/node.ts';
import { builtinModelDir } from '../src/cli/platform.ts';
import { nodeSandbox } from '../src/platform/sandbox/node.ts';
import { exportCheckpointZip } from '../src/marft/checkpoint/checkpoint.ts';
import { DEMO_CHECKPOINT_FILE, DEMO_EPISODES_FILE, DEMO_RUN_ID, type DemoEpisodes, recordDemoEpisodes } from '../src/marft/demo-run.ts';
import { Run } from '../src/marft/run.ts';
import { Session } from '../src/marft/session.ts';
import { nodeModelFiles } from '../src/model/node-files.ts';
import { nodeStore } from '../src/platform/storage/node.ts';

const { values: a } = parseArgs({
  options: { iterations: { type: 'string', default: '3' }, out: { type: 'string', default: 'public/demo' } },
});
const iterations = Number(a.iterations);
if (!Number.isInteger(iterations) || iterations < 1) throw new Error(`--iterations must be a positive integer, got ${a.iterations}`);
const out = resolve(a.out);
const log = (l: string) => console.error(l);

// one turn and 24-token outputs (the lab's: two turns of 48): about a quarter of the lab's generation on SwiftShader
const lab = presetRunConfig('lab') as { graph: { agents: Array<{ maxNewTokens: number }> }; rollout: Record<string, unknown> };
for (const agent of lab.graph.agents) agent.maxNewTokens = 24;
const config = parseRunConfig({ ...lab, iterations, rollout: { ...lab.rollout, horizon: 1 } });
const session = new Session({
  device: (fresh) => {
    if (fresh) resetNodeGpu();
    return acquireNodeGpu({ log });
  },
  model: async () => ({ files: await nodeModelFiles(builtinModelDir()), name: BUILTIN_MODEL, baseModel: BUILTIN_MODEL }),
  refuse: (_code, _message, cause) => cause,
  sandbox: nodeSandbox,
});
const work = mkdtempSync(join(tmpdir(), 'marft-demo-'));
let record: DemoEpisodes | null = null;
const run: Run = new Run(
  session,
  nodeStore(work),
  {
    onStatus: () => {},
    onProgress: (e) => log(`iteration ${e.iteration}: ${e.phase} ${e.detail}`),
    onLoaded: () => {},
    onNotice: (n) => log(`${n.code}: ${n.message}`),
    onIteration: (e) => {
      log(`iteration ${e.metrics.iteration}: accuracy ${e.metrics.accuracy.toFixed(3)}`);
      const last = run.last!;
      const m = run.model!;
      record = recordDemoEpisodes({ ...last, decode: (ids) => m.tokenizer.decode(ids, { skipSpecialTokens: false }) }, e.episodes);
    },
  },
  { keep: 1 },
);

await run.start(config, { id: DEMO_RUN_ID, until: iterations });
await run.wait();
if (!record || run.iteration !== iterations) throw new Error(`the demo run stopped at iteration ${run.iteration} of ${iterations}`);
mkdirSync(out, { recursive: true });
writeFileSync(join(out, DEMO_CHECKPOINT_FILE), await exportCheckpointZip(nodeStore(work), DEMO_RUN_ID));
writeFileSync(join(out, DEMO_EPISODES_FILE), `${JSON.stringify(record)}\n`);
rmSync(work, { recursive: true, force: true });
log(`wrote ${out}/${DEMO_CHECKPOINT_FILE} and ${DEMO_EPISODES_FILE} (${iterations} iterations, seed ${config.seed})`);
process.exit(0);

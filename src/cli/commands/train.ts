// marft train --config FILE [--iterations N] [--out DIR] [--resume DIR] [--json] [--keep K] [--init-adapter ROLE=DIR ...] [--profile]
// Trains a LaMAS with MARFT, saving a checkpoint after every iteration. With no --config: the default
// 2-agent preset on the built-in model. A resumed run continues the iteration count, the RNG and the
// metric history exactly (--resume takes a run folder, a checkpoint folder or a checkpoint zip). Guard: a run whose policy steps are skipped (non-finite) for 3 iterations in a
// row is rolled back to its last good checkpoint, and a lost GPU device resumes from it on a new device
// (src/marft/run-loop.ts). --init-adapter (repeatable) starts a new run from PEFT
// adapters made elsewhere, each loaded into its agent's slot (rank, alpha and targets must match the config).
// --profile times the last iteration's GPU work per kernel (timestamp queries; every dispatch in a pass of
// its own, so that iteration runs slower) and prints the table after it (on stderr with --json).

import { basename, dirname, resolve } from 'node:path';
import { readFileSync } from 'node:fs';
import { checkpointZipStore, loadCheckpoint, readCheckpointFiles } from '../../marft/checkpoint/checkpoint.ts';
import { parseRunConfig } from '../../config/run-config.ts';
import { runLoop } from '../../marft/run-loop.ts';
import { type TrainState, createTrainState } from '../../marft/state.ts';
import { resetNodeGpu } from '../../gpu/node.ts';
import { formatKernelTable, kernelRows, phaseRows } from '../../common/profile-table.ts';
import type { KernelTime } from '../../common/profile-table.ts';
import { nodeStore } from '../../platform/storage/node.ts';
import { initAgentAdapters, parseInitAdapters } from '../../marft/checkpoint/init-adapter.ts';
import { loadAdapterFiles } from '../../model/load.ts';
import { nodeModelFiles } from '../../model/node-files.ts';
import { UsageError, parse } from '../args.ts';
import { ProgressBar, iterationLine } from '../progress.ts';
import { type Session, openSession, readRunConfig } from '../session.ts';

export const usage = 'marft train [--config FILE] [--iterations N] [--out DIR] [--resume DIR] [--json] [--keep K] [--init-adapter ROLE=DIR ...] [--profile]';

const ROLLBACK_AFTER = 3;

export async function trainCommand(argv: string[]): Promise<void> {
  const a = parse(argv, {
    config: { type: 'string' }, iterations: { type: 'string' }, out: { type: 'string' }, resume: { type: 'string' },
    json: { type: 'boolean' }, keep: { type: 'string' }, 'init-adapter': { type: 'string', multiple: true }, profile: { type: 'boolean' },
  });
  const initSpecs = parseInitAdapters((a['init-adapter'] as unknown as string[] | undefined) ?? []);
  if (initSpecs.length && a.resume) throw new UsageError('--init-adapter starts a new run; it cannot be combined with --resume');
  const log = (l: string) => console.error(l);
  const resumeDir = typeof a.resume === 'string' ? resolve(a.resume) : null;
  // a checkpoint zip (downloaded from the browser lab) resumes too; its run continues in --out or beside it
  const resumeZip = resumeDir?.endsWith('.zip') ?? false;
  const resumeStore = resumeDir ? (resumeZip ? checkpointZipStore(new Uint8Array(readFileSync(resumeDir))) : nodeStore(dirname(resumeDir))) : null;
  const resumeName = resumeDir && !resumeZip ? basename(resumeDir) : '';
  // a resumed run keeps the checkpoint's own run config
  const config = resumeDir
    ? parseRunConfig(new TextDecoder().decode((await readCheckpointFiles(resumeStore!, resumeName)).files['config.json']), { checkEnv: false })
    : readRunConfig(a.config as string | undefined);
  const s = await openSession(config, log);
  let state: TrainState = resumeDir
    ? await loadCheckpoint(s.gpu, resumeStore!, resumeName, s.model.config)
    : createTrainState(s.gpu, s.model.config, config);
  if (initSpecs.length) {
    const adapters = [];
    for (const { role, dir } of initSpecs) adapters.push({ role, adapter: await loadAdapterFiles(await nodeModelFiles(resolve(dir)), s.model.config), where: dir });
    initAgentAdapters(s.gpu, state, s.model.config, adapters);
    log(`initial adapters: ${initSpecs.map(({ role, dir }) => `${role} <- ${dir}`).join(', ')}`);
  }
  const outDir = resolve(typeof a.out === 'string' ? a.out : (resumeZip ? resumeDir!.slice(0, -4) : resumeDir) ?? `runs/run-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  const store = nodeStore(dirname(outDir));
  const runName = basename(outDir);
  const total = typeof a.iterations === 'string' ? state.iteration + Number(a.iterations) : state.config.iterations;
  if (!Number.isInteger(total) || total < state.iteration) throw new Error(`--iterations must be a non-negative integer, got ${a.iterations}`);
  const keep = typeof a.keep === 'string' ? Number(a.keep) : 3;
  log(`training ${state.config.graph.agents.map((x) => x.role).join(' -> ')} on ${s.modelDir}, iterations ${state.iteration}..${total - 1}, checkpoints in ${outDir}`);
  const bar = new ProgressBar(total, state.iteration);
  if (a.profile && !s.gpu.hasTimestamps) {
    log(`--profile: this GPU (${s.gpu.adapter.description || s.gpu.adapter.vendor || 'unknown adapter'}) lacks the WebGPU feature timestamp-query, so per-kernel times are unavailable; training without them`);
  }
  const profiles: Array<{ iteration: number; kernels: KernelTime[]; seconds: Record<string, number> }> = [];
  // The loop checkpoints every good iteration, rolls back after ROLLBACK_AFTER iterations in a row with
  // non-finite skips, and on a lost device reopens the model on a new one and resumes from the last checkpoint.
  const toRunSession = (x: Session) => ({ gpu: x.gpu, decoder: x.decoder, tokenizer: x.tokenizer, model: x.model.config });
  const done = await runLoop(toRunSession(s), state, {
    store, dir: runName, baseModel: s.modelDir, keep, until: total, rollbackAfter: ROLLBACK_AFTER,
    reopen: async (reason) => {
      log(`GPU device lost (${reason}): reopening the model on a new device and resuming from the last checkpoint in ${outDir}`);
      resetNodeGpu();
      return toRunSession(await openSession(state.config, log));
    },
    onProgress: (phase, d, ctx) => bar.update(ctx.state.iteration, `${phase}: ${d}`),
    profile: a.profile ? (it) => it === total - 1 : undefined,
    onProfile: (iteration, kernels) => { if (kernels) profiles.push({ iteration, kernels, seconds: {} }); },
    onIteration: ({ metrics }) => {
      bar.clear();
      const p = profiles.find((x) => x.iteration === metrics.iteration);
      if (p) p.seconds = metrics.seconds;
      if (a.json) process.stdout.write(`${JSON.stringify(metrics)}\n`);
      else console.log(iterationLine(metrics));
    },
    onEvent: (e) => {
      if (e.kind === 'rollback') log(`${ROLLBACK_AFTER} iterations in a row with skipped non-finite steps: rolled back to the last checkpoint in ${outDir} (iteration ${e.to})`);
      if (e.kind === 'recovered') log(`resumed at iteration ${e.iteration} after the device loss`);
    },
  });
  state = done.state;
  const p = profiles.at(-1);
  if (p) {
    const out = a.json ? log : (l: string) => console.log(l);
    const phases = phaseRows(p.seconds).map((r) => `${r.phase} ${r.seconds.toFixed(2)} s (${(r.share * 100).toFixed(0)}%)`).join(', ');
    out(`iteration ${p.iteration} while profiled (every dispatch in a pass of its own): ${(p.seconds.total ?? 0).toFixed(2)} s wall; ${phases}`);
    out('per-kernel GPU time:');
    out(formatKernelTable(kernelRows(p.kernels), 25));
  }
  log(`done: ${state.iteration} iterations; last checkpoint in ${outDir}`);
}

// marft train --config FILE [--iterations N] [--out DIR] [--resume DIR] [--json] [--keep K] [--init-adapter ROLE=DIR ...] [--profile] [--progress]
// Trains a LaMAS with MARFT, saving a checkpoint after every iteration. With no --config: the default
// 2-agent preset on the built-in model. A resumed run continues the iteration count, the RNG and the
// metric history exactly (--resume takes a run folder, a checkpoint folder or a checkpoint zip). The run is
// src/marft/run.ts's Run, as in the lab, with the run config's runLoop policy: a run whose steps are skipped
// (non-finite) for runLoop.rollbackAfter iterations in a row is rolled back to its last good checkpoint, and
// a lost GPU device resumes from it on a new device; --keep K overrides runLoop.keepCheckpoints. --init-adapter (repeatable) starts a new run from PEFT
// adapters made elsewhere, each loaded into its agent's slot (rank, alpha and targets must match the config).
// --profile times the last iteration's GPU work per kernel (timestamp queries; every dispatch in a pass of
// its own, so that iteration runs slower) and prints the table after it (on stderr with --json).
// Ctrl-C (SIGINT) stops within seconds as the lab's Stop does: the iteration in flight is abandoned and the
// last checkpoint stays the run's state (--resume continues from it); a second Ctrl-C quits at once.
// --progress prints each phase as a line on stderr ("progress <iteration> <phase>: <detail>") instead of the
// terminal's bar, for logs and scripts (the process-kill tests stop a run at a phase with it).
// --plan prints the run's memory and time plan on this GPU and exits without training (--budget GIB: the
// GPU memory the run may use; over it, or over a buffer limit, the plan says which setting to change);
// --measure then runs --iterations iterations (default 2, no checkpoints) and prints the measured peaks beside it.

import { basename, dirname, resolve } from 'node:path';
import { parseInitAdapters } from '../../marft/checkpoint/init-adapter.ts';
import { MarftError } from '../../marft/errors.ts';
import { Run } from '../../marft/run.ts';
import { type IterationProfile, type Notice } from '../../marft/run-events.ts';
import { type KernelTime, formatKernelTable, kernelRows, phaseRows } from '../../common/profile-table.ts';
import { nodeStore } from '../../platform/storage/node.ts';
import { nodeModelFiles } from '../../model/node-files.ts';
import { LIMITS_FLAG, UsageError, parse, parseLimits } from '../args.ts';
import { ProgressBar, iterationLine } from '../progress.ts';
import { printPlan } from '../plan.ts';
import { checkpointSource, nodeSession, readRunConfig } from '../platform.ts';

export const usage =
  'marft train [--config FILE] [--iterations N] [--out DIR] [--resume DIR] [--json] [--keep K] [--init-adapter ROLE=DIR ...] [--profile] [--progress] [--limits default|adapter]\n  marft train --plan [--config FILE] [--budget GIB] [--measure [--iterations N]] [--json] [--limits default|adapter]';

export async function trainCommand(argv: string[]): Promise<void> {
  const a = parse(argv, {
    config: { type: 'string' },
    iterations: { type: 'string' },
    out: { type: 'string' },
    resume: { type: 'string' },
    json: { type: 'boolean' },
    keep: { type: 'string' },
    'init-adapter': { type: 'string', multiple: true },
    profile: { type: 'boolean' },
    progress: { type: 'boolean' },
    plan: { type: 'boolean' },
    measure: { type: 'boolean' },
    budget: { type: 'string' },
    ...LIMITS_FLAG,
  });
  const limits = parseLimits(a.limits);
  if (a.measure && !a.plan) throw new UsageError('--measure goes with --plan');
  if (a.budget !== undefined && !a.plan) throw new UsageError('--budget goes with --plan');
  if (a.plan) {
    if (a.resume || a.out || a['init-adapter'])
      throw new UsageError('--plan plans a new run from --config; it takes no --resume, --out or --init-adapter');
    const budget = a.budget === undefined ? undefined : Number(a.budget);
    if (budget !== undefined && !(budget > 0)) throw new UsageError(`--budget must be a positive number of GiB, got ${a.budget}`);
    const iterations = a.iterations === undefined ? 2 : Number(a.iterations);
    if (!Number.isInteger(iterations) || iterations < 1)
      throw new UsageError(`--iterations must be a positive integer, got ${a.iterations}`);
    await printPlan(readRunConfig(a.config as string | undefined), {
      budget: budget === undefined ? undefined : budget * 2 ** 30,
      measure: a.measure === true,
      iterations,
      json: a.json === true,
      log: (l) => console.error(l),
      limits,
    });
    return;
  }
  const initSpecs = parseInitAdapters((a['init-adapter'] as unknown as string[] | undefined) ?? []);
  if (initSpecs.length && a.resume) throw new UsageError('--init-adapter starts a new run; it cannot be combined with --resume');
  const log = (l: string) => console.error(l);
  const resumeDir = typeof a.resume === 'string' ? resolve(a.resume) : null;
  // a checkpoint zip (downloaded from the browser lab) resumes too; its run continues in --out or beside it
  const resumeZip = resumeDir?.endsWith('.zip') ?? false;
  const outDir = resolve(
    typeof a.out === 'string'
      ? a.out
      : ((resumeZip ? resumeDir!.slice(0, -4) : resumeDir) ?? `runs/run-${new Date().toISOString().replace(/[:.]/g, '-')}`),
  );
  const totalFrom = (iteration: number, configured: number): number => {
    const total = typeof a.iterations === 'string' ? iteration + Number(a.iterations) : configured;
    if (!Number.isInteger(total) || total < iteration)
      throw new UsageError(`--iterations must be a non-negative integer, got ${a.iterations}`);
    return total;
  };

  let total = 0;
  let paused: Notice | null = null;
  let bar: ProgressBar | null = null;
  const profiles: Array<IterationProfile & { kernels: KernelTime[] }> = [];
  const session = nodeSession(log, limits);
  const run: Run = new Run(
    session,
    nodeStore(dirname(outDir)),
    {
      onProgress: (e) =>
        a.progress ? log(`progress ${e.iteration} ${e.phase}: ${e.detail}`) : bar?.update(e.iteration, `${e.phase}: ${e.detail}`),
      onStatus: (e) => {
        if (e.status === 'recovering') log(`${e.message}: on a new device, from the last checkpoint in ${outDir}`);
      },
      onIteration: ({ metrics, profile }) => {
        bar?.clear();
        if (profile?.kernels) profiles.push({ ...profile, kernels: profile.kernels });
        if (a.json) process.stdout.write(`${JSON.stringify(metrics)}\n`);
        else console.log(iterationLine(metrics));
        // --profile: the last iteration (armed when the one before it ends)
        if (a.profile && metrics.iteration + 2 === total) run.profileNext(true);
      },
      onNotice: (n) => {
        if (n.code === 'ROLLBACK')
          log(
            `${run.config?.runLoop.rollbackAfter} iterations in a row with skipped non-finite steps: rolled back to the last checkpoint in ${outDir} (iteration ${n.iteration})`,
          );
        if (n.code === 'DEVICE_LOST') log(`resumed at iteration ${n.iteration} after the device loss`);
        if (n.code === 'RUN_PAUSED') paused = n;
      },
    },
    { keep: typeof a.keep === 'string' ? Number(a.keep) : undefined },
  );
  /** Says what is about to train (once the model is loaded). */
  const announce = (): void => {
    const m = run.model!;
    if (initSpecs.length) log(`initial adapters: ${initSpecs.map(({ role, dir }) => `${role} <- ${dir}`).join(', ')}`);
    log(
      `training ${run.config!.graph.agents.map((x) => x.role).join(' -> ')} on ${m.source.name}, iterations ${run.iteration}..${total - 1}, checkpoints in ${outDir}`,
    );
    bar = new ProgressBar(total, run.iteration);
    if (a.profile && !m.gpu.hasTimestamps) {
      log(
        `--profile: this GPU (${m.gpu.adapter.description || m.gpu.adapter.vendor || 'unknown adapter'}) lacks the WebGPU feature timestamp-query, so per-kernel times are unavailable; training without them`,
      );
    }
  };

  if (resumeDir) {
    // a resumed run keeps the checkpoint's own run config
    await run.resume(checkpointSource(resumeDir), basename(outDir));
    total = totalFrom(run.iteration, run.config!.iterations);
    announce();
    if (a.profile && run.iteration === total - 1) run.profileNext(true);
    run.train(total);
  } else {
    const config = readRunConfig(a.config as string | undefined);
    total = totalFrom(0, config.iterations);
    if (a.profile && total === 1) run.profileNext(true);
    const adapters = [];
    for (const { role, dir } of initSpecs) adapters.push({ role, files: await nodeModelFiles(resolve(dir)), where: dir });
    await run.start(config, { id: basename(outDir), until: total, adapters });
    announce();
  }
  const onSigint = (): void => {
    if (run.status === 'stopping') process.exit(130);
    bar?.clear();
    log('stopping: abandoning the iteration in flight (Ctrl-C again to quit at once)');
    run.stop();
  };
  process.on('SIGINT', onSigint);
  try {
    await run.wait();
  } finally {
    process.off('SIGINT', onSigint);
  }
  if (run.status === 'stopped') {
    log(`stopped at iteration ${run.iteration}; its checkpoint in ${outDir} is the run's state (continue with --resume ${outDir})`);
    process.exitCode = 130;
    return;
  }
  if (paused) throw new MarftError('RUN_PAUSED', (paused as Notice).message);
  const p = profiles.at(-1);
  if (p) {
    const out = a.json ? log : (l: string) => console.log(l);
    const phases = phaseRows(p.seconds)
      .map((r) => `${r.phase} ${r.seconds.toFixed(2)} s (${(r.share * 100).toFixed(0)}%)`)
      .join(', ');
    out(
      `iteration ${p.iteration} while profiled (every dispatch in a pass of its own): ${(p.seconds.total ?? 0).toFixed(2)} s wall; ${phases}`,
    );
    out('per-kernel GPU time:');
    out(formatKernelTable(kernelRows(p.kernels), 25));
  }
  log(`done: ${run.iteration} iterations; last checkpoint in ${outDir}`);
}

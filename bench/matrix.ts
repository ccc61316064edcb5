// The learning matrix's runner: trains and evaluates matrix rows (bench/matrix-rows.ts) as
// parallel `marft` processes on one GPU — the engine is dispatch-bound on the CPU, so many small runs share
// the GPU well — and writes every log under --out. Bundle it and the CLI, then on the GPU machine:
//   bash .devcarry/enter.sh node .devcarry/app/matrix.mjs --seeds 1 --base --parallel 16 [ROW ...]
// (bench/matrix.sh does that). A job is one row and seed: `marft train` then `marft eval` greedy and sampled
// on the held-out split; --base adds the untuned model's evals, one per distinct team (baseKey), four at a time
// beside the training. Deadlines keep a run inside the GPU machine's time limit: at --deadline minus
// --eval-reserve seconds every training still running gets SIGINT (the CLI abandons the iteration in flight
// and keeps its last checkpoint, which is then evaluated: the logs say how many iterations it made), and at
// --deadline whatever still runs is killed. Output per job <row>-s<seed>: configs/<id>.json (what trained),
// <id>.jsonl (one line per iteration), <id>.err, <id>.eval.jsonl, <id>.job.json (status, iterations, wall
// times); base-<key>.eval.jsonl; plan.json. A progress line is printed as each job ends. The lab overlays a
// job's <id>.jsonl (or a kept checkpoint's state.json) on its Train charts: Runs, "Overlay a training log".
// Options: --seeds 1[,2] --rows a,b (or positional) --parallel P --deadline S --eval-reserve S --base
// --iterations N --episodes N (rollout.episodes: tasks per iteration) --eval-episodes N --cli FILE --out DIR
// --runs DIR (checkpoints) --zips row,row (copy those rows' last checkpoints as zips the lab's Runs tab imports)

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { exportCheckpointZip } from '../src/marft/checkpoint/checkpoint.ts';
import { nodeStore } from '../src/platform/storage/node.ts';
import { MATRIX_ROWS, type MatrixRow, baseKey, matrixConfig } from './matrix-rows.ts';

export interface MatrixOptions {
  rows: MatrixRow[];
  seeds: number[];
  parallel: number;
  deadline: number;
  evalReserve: number;
  base: boolean;
  iterations: number | null;
  episodes: number | null;
  evalEpisodes: number;
  cli: string;
  out: string;
  runs: string;
  zips: string[];
}

export interface JobRecord {
  row: string;
  seed: number;
  /** done: trained all its iterations; cut: stopped at the training deadline; failed: the train exited otherwise; skipped: never started. */
  status: 'done' | 'cut' | 'failed' | 'skipped' | 'killed';
  iterations: number;
  tokens: number;
  trainSeconds: number;
  evalSeconds: number;
  startedAt: number;
  parallel: number;
  exitCode: number | null;
}

export const jobId = (row: string, seed: number): string => `${row}-s${seed}`;

function parseArgs(argv: string[]): MatrixOptions {
  const named = new Map<string, string>();
  const flags = new Set<string>();
  const positional: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) positional.push(a);
    else if (a === '--base') flags.add('base');
    else if (i + 1 < argv.length) named.set(a.slice(2), argv[++i]);
    else throw new Error(`matrix: ${a} needs a value`);
  }
  const known = [
    'seeds',
    'rows',
    'parallel',
    'deadline',
    'eval-reserve',
    'iterations',
    'episodes',
    'eval-episodes',
    'cli',
    'out',
    'runs',
    'zips',
  ];
  for (const k of named.keys())
    if (!known.includes(k)) throw new Error(`matrix: unknown option --${k} (options: --base, ${known.map((x) => `--${x}`).join(', ')})`);
  const int = (k: string, d: number | null): number | null => {
    const v = named.get(k);
    if (v === undefined) return d;
    const n = Number(v);
    if (!Number.isInteger(n) || n < 0) throw new Error(`matrix: --${k} must be a non-negative integer, got ${v}`);
    return n;
  };
  const list = (k: string): string[] => (named.get(k) ?? '').split(',').filter(Boolean);
  const names = [...list('rows'), ...positional];
  const rows = names.length
    ? names.map(
        (n) =>
          MATRIX_ROWS.find((r) => r.name === n) ??
          (() => {
            throw new Error(`matrix: no row "${n}" (rows: ${MATRIX_ROWS.map((r) => r.name).join(', ')})`);
          })(),
      )
    : MATRIX_ROWS;
  const out = named.get('out') ?? join(process.env.OUT ?? '/tmp/out', 'matrix');
  return {
    rows,
    seeds: (list('seeds').length ? list('seeds') : ['1']).map(Number),
    parallel: int('parallel', 16)!,
    deadline: int('deadline', 560)!,
    evalReserve: int('eval-reserve', 110)!,
    base: flags.has('base'),
    iterations: int('iterations', null),
    episodes: int('episodes', null),
    evalEpisodes: int('eval-episodes', 1024)!,
    cli: named.get('cli') ?? '.devcarry/app/marft.mjs',
    out,
    runs: named.get('runs') ?? '/tmp/matrix-runs',
    zips: list('zips'),
  };
}

/** The config a job trains: the row's, with the job's seed and the --episodes override. */
export function jobConfig(row: MatrixRow, seed: number, episodes: number | null): Record<string, unknown> {
  const c = matrixConfig(row);
  const rollout = c.rollout as Record<string, unknown>;
  return { ...c, seed, rollout: episodes === null ? rollout : { ...rollout, episodes } };
}

/** Generated tokens per iteration line of a train log. */
export function logTokens(lines: Array<{ agents: Record<string, { tokens: number }> }>): number {
  return lines.reduce((s, l) => s + Object.values(l.agents).reduce((a, x) => a + x.tokens, 0), 0);
}

const readLines = (file: string): Array<Record<string, unknown>> =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((l) => l.trim())
        .flatMap((l) => {
          try {
            return [JSON.parse(l)];
          } catch {
            return [];
          }
        })
    : [];

async function main(o: MatrixOptions): Promise<void> {
  const t0 = Date.now();
  const now = () => (Date.now() - t0) / 1000;
  mkdirSync(join(o.out, 'configs'), { recursive: true });
  mkdirSync(o.runs, { recursive: true });
  const gpu = spawnSync('nvidia-smi', ['--query-gpu=name,driver_version', '--format=csv,noheader'], { encoding: 'utf8' });
  writeFileSync(
    join(o.out, `plan-s${o.seeds.join('-')}.json`),
    `${JSON.stringify({ ...o, rows: o.rows.map((r) => r.name), gpu: gpu.stdout?.trim() || null, cpus: (await import('node:os')).cpus().length, startedAt: new Date().toISOString() }, null, 2)}\n`,
  );
  const live = new Set<ChildProcess>();
  let trainStopped = false;
  const procs = new Map<ChildProcess, 'train' | 'eval'>();

  /** Runs the CLI; stdout to a file (or collected), stderr appended to a file. */
  const cli = (args: string[], errFile: string, outFile?: string): Promise<{ code: number | null; stdout: string }> =>
    new Promise((done) => {
      const err = openSync(errFile, 'a');
      const outFd = outFile ? openSync(outFile, 'w') : 'pipe';
      const child = spawn(process.execPath, [o.cli, ...args], { stdio: ['ignore', outFd, err] });
      live.add(child);
      procs.set(child, args[0] === 'train' ? 'train' : 'eval');
      let stdout = '';
      child.stdout?.on('data', (b: Buffer) => {
        stdout += b.toString();
      });
      child.on('close', (code) => {
        live.delete(child);
        procs.delete(child);
        closeSync(err);
        if (typeof outFd === 'number') closeSync(outFd);
        done({ code, stdout });
      });
    });

  const evalLine = async (args: string[], errFile: string, file: string, extra: Record<string, unknown>): Promise<number | null> => {
    const r = await cli(['eval', ...args, '--episodes', String(o.evalEpisodes), '--json'], errFile);
    const result = r.code === 0 ? (JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { accuracy: number }) : null;
    writeFileSync(file, `${JSON.stringify({ ...extra, result, exitCode: r.code })}\n`, { flag: 'a' });
    return result?.accuracy ?? null;
  };

  // the untuned bases, four evals at a time beside the training
  const baseJobs: Array<() => Promise<void>> = [];
  if (o.base) {
    const byKey = new Map<string, string[]>();
    for (const row of o.rows) {
      const k = baseKey(matrixConfig(row));
      byKey.set(k, [...(byKey.get(k) ?? []), row.name]);
    }
    for (const [key, rows] of byKey) {
      const cfg = join(o.out, 'configs', `base-${key}.json`);
      writeFileSync(
        cfg,
        `${JSON.stringify(
          jobConfig(
            MATRIX_ROWS.find((r) => r.name === rows[0])!,
            1,
            null,
          ),
          null,
          2,
        )}\n`,
      );
      for (const mode of ['greedy', 'sampled'] as const) {
        baseJobs.push(async () => {
          const acc = await evalLine(
            ['--config', cfg, '--base', ...(mode === 'sampled' ? ['--sampled'] : [])],
            join(o.out, `base-${key}.err`),
            join(o.out, `base-${key}.eval.jsonl`),
            { key, rows, mode },
          );
          console.log(
            `[${now().toFixed(0).padStart(4)} s] base ${rows[0]} (${rows.length} rows) ${mode}: ${acc === null ? 'FAILED' : `${(acc * 100).toFixed(1)} %`}`,
          );
        });
      }
    }
  }
  const pool = async (jobs: Array<() => Promise<void>>, n: number): Promise<void> => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(n, jobs.length) }, async () => {
        while (next < jobs.length) await jobs[next++]();
      }),
    );
  };

  const total = o.rows.length * o.seeds.length;
  let finished = 0;
  const trainJobs = o.seeds.flatMap((seed) =>
    o.rows.map((row) => async () => {
      const id = jobId(row.name, seed);
      const rec: JobRecord = {
        row: row.name,
        seed,
        status: 'skipped',
        iterations: 0,
        tokens: 0,
        trainSeconds: 0,
        evalSeconds: 0,
        startedAt: now(),
        parallel: o.parallel,
        exitCode: null,
      };
      const log = join(o.out, `${id}.jsonl`);
      if (!trainStopped) {
        const cfg = join(o.out, 'configs', `${id}.json`);
        writeFileSync(cfg, `${JSON.stringify(jobConfig(row, seed, o.episodes), null, 2)}\n`);
        const r = await cli(
          [
            'train',
            '--config',
            cfg,
            '--out',
            join(o.runs, id),
            '--json',
            '--keep',
            '2',
            ...(o.iterations !== null ? ['--iterations', String(o.iterations)] : []),
          ],
          join(o.out, `${id}.err`),
          log,
        );
        const lines = readLines(log) as Array<{ agents: Record<string, { tokens: number }> }>;
        rec.exitCode = r.code;
        rec.iterations = lines.length;
        rec.tokens = logTokens(lines);
        rec.trainSeconds = now() - rec.startedAt;
        rec.status = r.code === 0 ? 'done' : r.code === 130 && trainStopped ? 'cut' : 'failed';
        if (r.code === null) rec.status = 'killed';
      }
      let accs: Array<number | null> = [];
      if (rec.iterations > 0 && rec.status !== 'killed') {
        const e0 = now();
        const ckpt = join(o.runs, id);
        accs = [
          await evalLine(['--checkpoint', ckpt], join(o.out, `${id}.err`), join(o.out, `${id}.eval.jsonl`), {
            row: row.name,
            seed,
            mode: 'greedy',
          }),
        ];
        accs.push(
          await evalLine(['--checkpoint', ckpt, '--sampled'], join(o.out, `${id}.err`), join(o.out, `${id}.eval.jsonl`), {
            row: row.name,
            seed,
            mode: 'sampled',
          }),
        );
        rec.evalSeconds = now() - e0;
        if (o.zips.includes(row.name)) {
          mkdirSync(join(o.out, 'zips'), { recursive: true });
          writeFileSync(join(o.out, 'zips', `${id}.zip`), await exportCheckpointZip(nodeStore(o.runs), id));
        }
      }
      writeFileSync(join(o.out, `${id}.job.json`), `${JSON.stringify(rec)}\n`);
      const pct = (x: number | null | undefined) => (x === null || x === undefined ? '-' : `${(x * 100).toFixed(1)} %`);
      console.log(
        `[${now().toFixed(0).padStart(4)} s] ${++finished}/${total} ${id}: ${rec.status}, ${rec.iterations} it, ${(rec.tokens / 1000).toFixed(0)} k tokens, train ${rec.trainSeconds.toFixed(0)} s; greedy ${pct(accs[0])}, sampled ${pct(accs[1])}`,
      );
    }),
  );

  const stopTraining = setTimeout(
    () => {
      trainStopped = true;
      for (const [p, kind] of procs) if (kind === 'train') p.kill('SIGINT');
      console.log(`[${now().toFixed(0)} s] training deadline: running trainings stopped at their last checkpoint, queued ones skipped`);
    },
    Math.max(0, o.deadline - o.evalReserve) * 1000,
  );
  const killAll = setTimeout(() => {
    console.log(`[${now().toFixed(0)} s] deadline: killing ${live.size} processes still running`);
    for (const p of live) p.kill('SIGKILL');
  }, o.deadline * 1000);
  await Promise.all([pool(baseJobs, 4), pool(trainJobs, o.parallel)]);
  clearTimeout(stopTraining);
  clearTimeout(killAll);
  console.log(`matrix: ${finished} jobs in ${now().toFixed(0)} s; logs in ${resolve(o.out)}`);
}

if (process.argv[1] && /matrix\.(ts|mjs)$/.test(process.argv[1])) {
  main(parseArgs(process.argv.slice(2))).catch((e) => {
    console.error((e as Error).message);
    process.exit(1);
  });
}

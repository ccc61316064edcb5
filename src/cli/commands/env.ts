// marft env test --module FILE [--seeds N] [--options JSON] [--roles a,b] [--texts JSON] [--time-limit MS] [--json]
// Checks a user's environment module without a model or a GPU, in the same sandbox a run uses: for seeds
// 0..N-1, reset and steps with sample answers (every acting role gets the turn's text), each replayed in a
// fresh instance to check determinism per seed, with timings. Prints a report; exits 1 naming the module,
// the call and the problem when a check fails.

import { basename, resolve } from 'node:path';
import { type ModuleReport, SAMPLE_TEXTS, checkModule } from '../../envs/module/check.ts';
import { DEFAULT_LIMITS } from '../../envs/module/host.ts';
import { Envs } from '../../envs/registry.ts';
import { nodeSandbox } from '../../platform/sandbox/node.ts';
import { UsageError, parse, required } from '../args.ts';
import { readModuleFile } from '../module-source.ts';

export const usage = 'marft env test --module FILE [--seeds N] [--options JSON] [--roles a,b] [--texts JSON] [--time-limit MS] [--json]';

const quote = (s: string, n = 70): string => JSON.stringify(s.length > n ? `${s.slice(0, n - 3)}...` : s);
const ms = (xs: number[]): string =>
  xs.length ? `${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)} ms mean (max ${Math.max(...xs).toFixed(2)})` : 'none';

/** The report as text lines. */
export function formatModuleReport(r: ModuleReport): string[] {
  const out = [`environment module ${r.module}: env "${r.name || '?'}", horizon ${r.horizon || '?'}`];
  for (const s of r.seeds) {
    out.push(`seed ${s.seed}  task: ${quote(s.task)}`);
    s.steps.forEach((st, t) => {
      const said = Object.entries(st.actions)
        .map(([role, text]) => `${role}: ${quote(text, 30)}`)
        .join(', ');
      const x = st.result;
      out.push(
        `  turn ${t + 1}  ${said} -> reward ${x.teamReward}, correct ${x.correct}, done ${x.done}, feedback ${quote(x.feedback, 50)}`,
      );
    });
    out.push(
      `  ${s.deterministic ? 'replayed in a fresh instance: same results' : 'replay not finished'}; reset ${s.resetMs.toFixed(2)} ms, steps ${ms(s.stepMs)}`,
    );
  }
  if (r.error) out.push(`FAILED (${r.error.code}): ${r.error.message}`, `  hint: ${r.error.hint}`);
  else
    out.push(
      `OK: ${r.seeds.length} seeds, deterministic per seed; reset ${ms(r.seeds.map((s) => s.resetMs))}, step ${ms(r.seeds.flatMap((s) => s.stepMs))}`,
    );
  return out;
}

function jsonArg<T>(text: string | undefined, flag: string, check: (v: unknown) => v is T, fallback: T): T {
  if (text === undefined) return fallback;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--${flag} must be JSON, got ${text} (${(e as Error).message})`);
  }
  if (!check(v)) throw new UsageError(`--${flag} has the wrong shape: ${text}`);
  return v;
}

export async function envCommand(argv: string[]): Promise<void> {
  const [sub, ...rest] = argv;
  if (sub !== 'test') throw new UsageError(sub ? `unknown subcommand "${sub}"` : 'give a subcommand: test');
  const a = parse(rest, {
    module: { type: 'string' },
    seeds: { type: 'string' },
    options: { type: 'string' },
    roles: { type: 'string' },
    texts: { type: 'string' },
    'time-limit': { type: 'string' },
    json: { type: 'boolean' },
  });
  const file = resolve(required(a.module, 'module'));
  const seeds = typeof a.seeds === 'string' ? Number(a.seeds) : 5;
  if (!Number.isInteger(seeds) || seeds < 1) throw new UsageError(`--seeds must be a positive integer, got ${a.seeds}`);
  const callMs = typeof a['time-limit'] === 'string' ? Number(a['time-limit']) : DEFAULT_LIMITS.callMs;
  if (!Number.isFinite(callMs) || callMs <= 0)
    throw new UsageError(`--time-limit must be a positive number of milliseconds, got ${a['time-limit']}`);
  const options = jsonArg(
    a.options as string | undefined,
    'options',
    (v): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v),
    {},
  );
  const texts = jsonArg(
    a.texts as string | undefined,
    'texts',
    (v): v is string[] => Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string'),
    SAMPLE_TEXTS,
  );
  const roles =
    typeof a.roles === 'string'
      ? a.roles
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean)
      : ['solver'];
  if (!roles.length) throw new UsageError('--roles must name at least one role');
  const logs: string[] = [];
  const envs = new Envs(nodeSandbox); // the module runs in a worker thread
  const report = await checkModule(
    envs.modules,
    { source: readModuleFile(file), name: basename(file), limits: { callMs }, onLog: (t) => logs.push(t) },
    { seeds: Array.from({ length: seeds }, (_, i) => i), roles, texts, options },
  ).finally(() => envs.close());
  if (a.json) process.stdout.write(`${JSON.stringify({ ...report, logs })}\n`);
  else {
    for (const l of logs) console.error(`[${basename(file)}] ${l}`);
    for (const l of formatModuleReport(report)) console.log(l);
  }
  if (report.error) throw new Error(`${report.error.message}\n  hint: ${report.error.hint}`);
}

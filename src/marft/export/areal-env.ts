// The environment of an AReaL export when the run uses a user's environment module: the module's source
// goes into env/<file> (the lab kept it in the run config), with env/env_server.mjs, a JSON-lines server
// that runs it under Node.js on the cluster — the same request/reply protocol as the lab's sandbox
// (src/platform/sandbox/guest.ts), so the module behaves there exactly as in the lab. On the cluster the
// module is the user's own trusted code: it runs unsandboxed, as AReaL's reward functions do.

import type { RunConfig } from '../../config/run-config.ts';
import { isModuleEnv } from '../../envs/registry.ts';
import { moduleLabel } from '../../envs/module/source.ts';
import { GUEST_RUNTIME } from '../../platform/sandbox/guest.ts';

export const ENV_SERVER_FILE = 'env/env_server.mjs';

const ENV_SERVER = `#!/usr/bin/env node
// MARFT Lab environment-module server: node env_server.mjs MODULE.mjs
// One JSON request per stdin line, one JSON reply per stdout line (console output of the module goes to stderr):
//   {"id": 1, "op": "create", "inst": 1, "options": {"horizon": 3}}  -> value: {"name", "horizon"}
//   {"id": 2, "op": "reset", "inst": 1, "seed": 7}                    -> value: {"observation": {"task"}, "info"}
//   {"id": 3, "op": "step", "inst": 1, "actions": {"solver": "..."}, "stepOptions": {"answerRoles": ["solver"]}}
//   {"id": 4, "op": "dispose", "inst": 1}
// Replies: {"kind": "reply", "id", "ok": true, "value": "<the result as JSON text>"} or {"kind": "reply", "id", "ok": false, "error": {"name", "message", "stack"}}.
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
console.log = console.info = console.warn = console.debug = (...a) => process.stderr.write(a.join(' ') + '\\n');
${GUEST_RUNTIME}
const file = process.argv[2];
if (!file) { process.stderr.write('usage: node env_server.mjs MODULE.mjs\\n'); process.exit(2); }
const load = async () => (await import(pathToFileURL(resolve(file)).href)).default;
// requests are answered one at a time, in order (a reset waits for the create before it)
const waiting = new Map();
const dispatch = __marft_guest(load, (text) => {
  process.stdout.write(text + '\\n');
  const m = JSON.parse(text);
  if (m.kind === 'reply') waiting.get(m.id)?.(), waiting.delete(m.id);
});
let chain = Promise.resolve();
createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  chain = chain.then(() => new Promise((done) => { waiting.set(JSON.parse(line).id, done); dispatch(line); }));
});
`;

/** The module's file in the export (env/<its file name>), or null for a built-in environment. */
export function arealModuleFile(config: RunConfig): string | null {
  if (!isModuleEnv(config.env)) return null;
  const name = moduleLabel(config.env.module, 'env.mjs');
  return `env/${/\.m?js$/.test(name) ? name : `${name}.mjs`}`;
}

/** lab_settings.json's env: name and options, and for a module its file and server instead of the source. */
export function arealEnvEntry(config: RunConfig): Record<string, unknown> {
  const file = arealModuleFile(config);
  return file
    ? { name: config.env.name, options: config.env.options, module: file, server: `node ${ENV_SERVER_FILE} ${file}` }
    : { name: config.env.name, options: config.env.options };
}

/** The env/ files of the export (none for a built-in environment). */
export function arealEnvFiles(config: RunConfig): Record<string, string> {
  const file = arealModuleFile(config);
  return file && config.env.moduleSource !== undefined ? { [file]: config.env.moduleSource, [ENV_SERVER_FILE]: ENV_SERVER } : {};
}

/** README lines on what the cluster side needs for the environment. */
export function arealEnvReadme(config: RunConfig): string[] {
  const file = arealModuleFile(config);
  if (!file) return [];
  return [
    '',
    '## The environment: your module',
    '',
    `The run trains on your environment module, copied to \`${file}\`. The cluster side needs Node.js 20+ on the`,
    `rollout workers and, in the AReaL workflow, a small Python adapter that starts \`${arealEnvEntry(config).server}\``,
    'once per worker and, per episode, sends `create` (with `env.options` of lab_settings.json and the horizon), `reset` (the',
    'seed) and one `step` per turn ({role: generated text} and the answering roles), one JSON line each (the',
    `protocol is at the top of \`${ENV_SERVER_FILE}\`); \`teamReward\` is the reward and \`feedback\` goes into the next turn's prompt.`,
    "There the module runs as your own code, without the lab's sandbox and its limits.",
  ];
}

// The marft command line: one entry, a command per file in src/cli/commands/.
// Errors print their message (with the catalogue's hint) and exit 1; usage errors exit 2. No error ends in
// a stack trace, whatever throws it and wherever (a rejection nobody awaited included): a user reads one
// line saying what went wrong and what to do. MARFT_DEBUG=1 adds the stack, for a bug report.

import { ensureVulkanEnv } from '../gpu/node.ts';
import { errorMessage } from '../common/errors.ts';
import { UsageError } from './args.ts';
import { commandHelp } from './help.ts';
import { envCommand, usage as envUsage } from './commands/env.ts';
import { evalCommand, usage as evalUsage } from './commands/eval.ts';
import { exportCommand, usage as exportUsage } from './commands/export.ts';
import { inspectCommand, usage as inspectUsage } from './commands/inspect.ts';
import { logitsCommand, usage as logitsUsage } from './commands/logits.ts';
import { pretrainCommand, usage as pretrainUsage } from './commands/pretrain.ts';
import { tokenizeCommand, usage as tokenizeUsage } from './commands/tokenize.ts';
import { trainCommand, usage as trainUsage } from './commands/train.ts';

const COMMANDS: Record<string, { run: (argv: string[]) => Promise<void>; usage: string; gpu: boolean }> = {
  train: { run: trainCommand, usage: trainUsage, gpu: true },
  eval: { run: evalCommand, usage: evalUsage, gpu: true },
  export: { run: exportCommand, usage: exportUsage, gpu: true },
  pretrain: { run: pretrainCommand, usage: pretrainUsage, gpu: true },
  logits: { run: logitsCommand, usage: logitsUsage, gpu: true },
  tokenize: { run: tokenizeCommand, usage: tokenizeUsage, gpu: false },
  env: { run: envCommand, usage: envUsage, gpu: false },
  inspect: { run: (argv) => inspectCommand(argv), usage: inspectUsage, gpu: false },
};

function help(): string {
  return `usage:\n${Object.values(COMMANDS)
    .map((c) => `  ${c.usage}`)
    .join('\n')}\n\nmarft <command> --help: what a command does, its options and examples (also docs/CLI.md).`;
}

const [cmd, ...argv] = process.argv.slice(2);
const command = cmd ? COMMANDS[cmd] : undefined;
if (!command) {
  console.error(cmd && cmd !== '--help' ? `marft: unknown command "${cmd}"\n${help()}` : help());
  process.exit(cmd && cmd !== '--help' ? 2 : 0);
}
if (argv.includes('--help') || argv.includes('-h')) {
  console.log(commandHelp(cmd, command.usage));
  process.exit(0);
}
/** Prints what went wrong and exits: 2 for a usage error (with the usage), 1 otherwise. */
function fail(e: unknown): never {
  const debug = process.env.MARFT_DEBUG ? `\n${(e as Error)?.stack ?? ''}` : '';
  if (e instanceof UsageError) {
    console.error(`marft ${cmd}: ${e.message}\nusage: ${command!.usage}${debug}`);
    process.exit(2);
  }
  console.error(`marft ${cmd}: ${errorMessage(e)}${debug}`);
  process.exit(1);
}
process.on('uncaughtException', fail);
process.on('unhandledRejection', fail);
try {
  if (command.gpu) await ensureVulkanEnv();
  await command.run(argv);
  process.exit(0);
} catch (e) {
  fail(e);
}

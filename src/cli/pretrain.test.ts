// marft pretrain: flags are checked (with the flag named) before any GPU or data work starts.

import { describe, expect, it } from 'vitest';
import { UsageError } from './args.ts';
import { pretrainCommand, usage } from './commands/pretrain.ts';

describe('marft pretrain', () => {
  it('refuses bad flags with a usage error naming the flag', async () => {
    await expect(pretrainCommand([])).rejects.toThrow(/--out is required/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--steps', '1.5'])).rejects.toThrow(UsageError);
    await expect(pretrainCommand(['--out', '/tmp/x', '--error-rate', '2'])).rejects.toThrow(/--error-rate must be a number >= 0 <= 1/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--difficulty', '1,7'])).rejects.toThrow(/--difficulty/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--solo-misread-rate', '1.5'])).rejects.toThrow(
      /--solo-misread-rate must be a number >= 0 <= 1/,
    );
    await expect(pretrainCommand(['--out', '/tmp/x', '--precedence', '-0.1'])).rejects.toThrow(/--precedence/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--teams', 'solo,trio'])).rejects.toThrow(/--teams must list solo, duo, orchestrated/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--skip-plan-rate', '1.5'])).rejects.toThrow(
      /--skip-plan-rate must be a number >= 0 <= 1/,
    );
    await expect(pretrainCommand(['--out', '/tmp/x', '--tasks', 'coop-arith,coop-chess'])).rejects.toThrow(
      /--tasks must list coop-arith, coop-plan/,
    );
    await expect(pretrainCommand(['--out', '/tmp/x', '--tasks', 'coop-plan,coop-plan'])).rejects.toThrow(/--tasks/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--tasks', ''])).rejects.toThrow(/--tasks/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--trap-plan-rate', '1.2'])).rejects.toThrow(
      /--trap-plan-rate must be a number >= 0 <= 1/,
    );
    await expect(pretrainCommand(['--out', '/tmp/x', '--plan-slip-rate', 'x'])).rejects.toThrow(/--plan-slip-rate/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--plan-wrong-rate', '-1'])).rejects.toThrow(/--plan-wrong-rate/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--trap', '2'])).rejects.toThrow(/--trap must be a number/);
    await expect(pretrainCommand(['--out', '/tmp/x', '--plan-difficulty', '1,2'])).rejects.toThrow(
      /--plan-difficulty must be an integer >= 2 <= 4/,
    );
    await expect(pretrainCommand(['--out', '/tmp/x', '--nope'])).rejects.toThrow(UsageError);
    expect(usage).toMatch(/^marft pretrain --out DIR/);
  });
});

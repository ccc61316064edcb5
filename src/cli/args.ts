// Command-line parsing shared by the marft commands: node:util parseArgs plus usage errors that name the flag.

import { parseArgs } from 'node:util';

export class UsageError extends Error {}

export type Flags = Record<string, { type: 'string' | 'boolean'; short?: string; default?: string | boolean; multiple?: boolean }>;

export function parse<F extends Flags>(argv: string[], flags: F): Record<keyof F, string | boolean | undefined> {
  try {
    const { values } = parseArgs({ args: argv, options: flags, strict: true, allowPositionals: false });
    return values as unknown as Record<keyof F, string | boolean | undefined>;
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
}

export function required(v: string | boolean | undefined, flag: string): string {
  if (typeof v !== 'string' || !v) throw new UsageError(`--${flag} is required`);
  return v;
}

/** "1,2,3" -> [1, 2, 3], rejecting anything that is not a non-negative integer. */
export function parseIds(s: string, flag = 'ids'): number[] {
  const ids = s
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean)
    .map(Number);
  if (!ids.length || ids.some((x) => !Number.isInteger(x) || x < 0))
    throw new UsageError(`--${flag} must be comma-separated token ids, got "${s}"`);
  return ids;
}

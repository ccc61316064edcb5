// Command-line parsing shared by the marft commands: node:util parseArgs plus usage errors that name the flag.

import { parseArgs } from 'node:util';
import { LIMITS_MODES, type LimitsMode } from '../gpu/device.ts';

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

/** The --limits flag of the commands that open a GPU device. */
export const LIMITS_FLAG = { limits: { type: 'string' } } as const;

/** --limits default|adapter: WebGPU's default limits or the adapter's (when absent: MARFT_GPU_LIMITS's, else adapter). */
export function parseLimits(v: string | boolean | undefined): LimitsMode | undefined {
  if (v === undefined) return undefined;
  if (!LIMITS_MODES.includes(v as LimitsMode)) throw new UsageError(`--limits must be ${LIMITS_MODES.join(' or ')}, got ${String(v)}`);
  return v as LimitsMode;
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

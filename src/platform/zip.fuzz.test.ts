// Fuzzes the zip reader (unzipFiles) with hostile archives: entry names built from traversal parts
// ("..", absolute, drive letters, backslashes, NUL, empty parts), duplicate entries, symlink entries
// (Unix mode in the central directory), and byte-wise mutations of each. Every case ends in a
// CheckpointError or in files whose names are plain relative paths; those files are then written under
// one run folder of a memory store, and nothing may land outside it.

import fc from 'fast-check';
import { zipSync } from 'fflate';
import { afterAll, describe, expect, it } from 'vitest';
import { applyByteOps, byteOps } from '../../scripts/fuzz.ts';
import { type ReliabilityRow, Tally, outcomeOfAsync, recordReliability } from '../../scripts/reliability.ts';
import { CheckpointError } from './storage/errors.ts';
import { joinPath, memoryStore } from './storage/store.ts';
import { unzipFiles } from './zip.ts';

const TEST = 'src/platform/zip.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('zip-reader', rows));

const RUN = 'runs/run-1';
const PART = fc.constantFrom(
  '..',
  '.',
  '',
  'a',
  'ckpt-000001',
  'state.json',
  'C:',
  'c:evil',
  '\\..\\x',
  '..\\',
  '%2e%2e',
  'x\0y',
  ' ',
  '‥',
  'link',
);
/** An entry name: 1-4 parts joined by "/" (sometimes "\\"), sometimes led by "/" or "//". */
const NAME = fc
  .tuple(fc.constantFrom('', '', '/', '//'), fc.array(PART, { minLength: 1, maxLength: 4 }), fc.constantFrom('/', '/', '\\'))
  .map(([lead, parts, sep]) => lead + parts.join(sep));

/** A unix mode in the external attributes: the high 16 bits (a symlink is 0o120777). */
const SYMLINK_ATTRS = (0o120777 << 16) >>> 0;

/** Renames the second of two same-length entries to the first's name (local and central headers): a duplicate. */
function duplicateSecond(z: Uint8Array, first: string, second: string): Uint8Array {
  const out = z.slice();
  const a = new TextEncoder().encode(first);
  const b = new TextEncoder().encode(second);
  for (let i = 0; i + b.length <= out.length; i++) {
    if (b.every((c, k) => out[i + k] === c)) out.set(a, i);
  }
  return out;
}

/** Unzips and, when that succeeds, writes every file under RUN and checks nothing is outside it. */
const readAndWrite = (z: Uint8Array) => async () => {
  const files = unzipFiles(z, { maxTotalBytes: 1 << 20, maxEntries: 64 });
  const store = memoryStore();
  for (const [p, b] of Object.entries(files)) await store.write(joinPath(RUN, p), b);
  for (const p of store.files.keys()) expect(p.startsWith(`${RUN}/`), p).toBe(true);
};

describe('zip reader fuzz', () => {
  it('hostile entry names, symlinks and duplicates are refused; accepted names stay inside the run folder', async () => {
    const t = new Tally();
    await fc.assert(
      fc.asyncProperty(fc.array(NAME, { minLength: 1, maxLength: 4 }), fc.boolean(), fc.boolean(), async (names, link, dup) => {
        const entries: Record<string, [Uint8Array, { attrs?: number; os?: number }]> = {};
        names.forEach((n, i) => {
          entries[n] = [Uint8Array.of(i), link && i === 0 ? { os: 3, attrs: SYMLINK_ATTRS } : {}];
        });
        if (dup) {
          entries.dupA = [Uint8Array.of(1), {}];
          entries.dupB = [Uint8Array.of(2), {}];
        }
        const z = dup ? duplicateSecond(zipSync(entries), 'dupA', 'dupB') : zipSync(entries);
        const out = await outcomeOfAsync(readAndWrite(z), [CheckpointError]);
        if (link || dup) expect(out, `${JSON.stringify(names)} link=${link} dup=${dup}`).toBe('CheckpointError ZIP_INVALID');
        t.add(out);
      }),
      { numRuns: 1500, seed: 181 },
    );
    rows.push({
      area: 'zip reader',
      fault:
        'hostile entry names ("..", absolute, drive letters, backslashes, NUL, empty parts), symlink entries (Unix mode 0120777), duplicate entries',
      cases: t.cases,
      outcome: `${t.summary('read (plain relative names only)')}; every file read stays inside its run folder`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations of hostile and valid zips', async () => {
    const valid = zipSync({
      'state.json': new TextEncoder().encode('{"a": 1}'),
      'agents/p/adapter_model.safetensors': new Uint8Array(64).fill(3),
    });
    const link = zipSync({ 'state.json': [Uint8Array.of(1), { os: 3, attrs: SYMLINK_ATTRS }] });
    const traversal = zipSync({ '../../evil.json': Uint8Array.of(1), ok: Uint8Array.of(2) });
    const dup = duplicateSecond(zipSync({ dupA: Uint8Array.of(1), dupB: Uint8Array.of(2) }), 'dupA', 'dupB');
    const t = new Tally();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(valid, link, traversal, dup), byteOps, async (z, ops) => {
        t.add(await outcomeOfAsync(readAndWrite(applyByteOps(z, ops)), [CheckpointError]));
      }),
      { numRuns: 1500, seed: 182 },
    );
    rows.push({
      area: 'zip reader',
      fault: 'byte-wise mutations of a valid zip and of zips with a symlink, a "../" entry or a duplicate entry',
      cases: t.cases,
      outcome: `${t.summary('read')}; every file read stays inside its run folder`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('names each hostile entry in its message', () => {
    const cases: Array<[string, Uint8Array, RegExp]> = [
      ['symlink', zipSync({ 'agents/x': [Uint8Array.of(1), { os: 3, attrs: SYMLINK_ATTRS }] }), /"agents\/x" is a symbolic link/],
      ['duplicate', duplicateSecond(zipSync({ dupA: Uint8Array.of(1), dupB: Uint8Array.of(2) }), 'dupA', 'dupB'), /"dupA" appears twice/],
      ['traversal', zipSync({ 'a/../../x': Uint8Array.of(1) }), /"a\/\.\.\/\.\.\/x" has an unsafe path/],
      ['absolute', zipSync({ '/etc/x': Uint8Array.of(1) }), /"\/etc\/x" has an unsafe path/],
    ];
    for (const [what, z, re] of cases) {
      let err: unknown;
      try {
        unzipFiles(z);
      } catch (e) {
        err = e;
      }
      expect(err, what).toBeInstanceOf(CheckpointError);
      expect((err as CheckpointError).code, what).toBe('ZIP_INVALID');
      expect((err as Error).message, what).toMatch(re);
    }
    // a regular file made on Unix (mode 0100644) is read
    expect(unzipFiles(zipSync({ f: [Uint8Array.of(9), { os: 3, attrs: (0o100644 << 16) >>> 0 }] })).f).toEqual(Uint8Array.of(9));
  });
});

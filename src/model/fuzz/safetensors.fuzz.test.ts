// Fuzzes parseSafetensors: valid files round-trip; byte-wise mutations (flips, truncation, insertion,
// overwritten header length) and structural mutations of the header JSON (dtype, shape, data_offsets,
// overlapping / out-of-bounds / gapped offsets, metadata) end in a correct load or a ModelFileError ST_*;
// headers that claim huge sizes are refused without allocating. Every case is tallied for RELIABILITY.md.

import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type ReliabilityRow, Tally, outcomeOf, recordReliability } from '../../../scripts/reliability.ts';
import { applyByteOps, applyJsonEdits, byteOps, concat, jsonEdits, measure } from '../../../scripts/fuzz.ts';
import { ModelFileError } from '../errors.ts';
import {
  DTYPE_BYTES,
  type SafetensorsFile,
  type TensorToWrite,
  parseSafetensors,
  tensorToFloat32,
  writeSafetensors,
} from '../safetensors.ts';

const TEST = 'src/model/fuzz/safetensors.fuzz.test.ts';
const rows: ReliabilityRow[] = [];
afterAll(() => recordReliability('safetensors', rows));

const tensorArb = fc.record({
  dtype: fc.constantFrom('F32' as const, 'F16' as const, 'BF16' as const),
  shape: fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 3 }),
  seed: fc.nat(),
});
const fileArb = fc
  .uniqueArray(
    fc.tuple(
      fc.string({ minLength: 1, maxLength: 8 }).filter((s) => s !== '__metadata__'),
      tensorArb,
    ),
    { selector: ([n]) => n, maxLength: 5 },
  )
  .map((ts) =>
    ts.map(([name, t]): TensorToWrite => {
      const n = t.shape.reduce((a, b) => a * b, 1);
      return { name, dtype: t.dtype, shape: t.shape, data: Float32Array.from({ length: n }, (_, i) => ((i * 7 + t.seed) % 13) - 6) };
    }),
  );

/** A loaded file must be self-consistent: every view lies inside the file and has numel * bpe bytes. */
function checkLoaded(f: SafetensorsFile, bytes: Uint8Array): void {
  for (const [name, t] of f.tensors) {
    const n = t.shape.reduce((a, b) => a * b, 1);
    expect(t.data.length, name).toBe(n * DTYPE_BYTES[t.dtype]);
    expect(t.data.buffer).toBe(bytes.buffer);
    expect(t.data.byteOffset + t.data.length).toBeLessThanOrEqual(bytes.byteOffset + bytes.length);
    expect(tensorToFloat32(t).length).toBe(n);
  }
}

function header(bytes: Uint8Array): { json: unknown; rest: Uint8Array } {
  const n = new DataView(bytes.buffer, bytes.byteOffset).getUint32(0, true);
  return { json: JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))), rest: bytes.subarray(8 + n) };
}

function withHeader(json: unknown, rest: Uint8Array, lenDelta = 0): Uint8Array {
  const h = new TextEncoder().encode(JSON.stringify(json));
  const out = concat(new Uint8Array(8), h, rest);
  new DataView(out.buffer).setUint32(0, Math.max(0, h.length + lenDelta), true);
  return out;
}

const parse = (b: Uint8Array) => () => checkLoaded(parseSafetensors(b, 'fuzz.safetensors'), b);

describe('safetensors fuzz', () => {
  it('valid files round-trip', () => {
    const t = new Tally();
    fc.assert(
      fc.property(fileArb, fc.dictionary(fc.string({ maxLength: 5 }), fc.string({ maxLength: 5 }), { maxKeys: 2 }), (ts, meta) => {
        const bytes = writeSafetensors(ts, meta);
        const f = parseSafetensors(bytes, 'ok.safetensors');
        expect([...f.tensors.keys()].sort()).toEqual(ts.map((x) => x.name).sort());
        for (const x of ts) expect(Array.from(tensorToFloat32(f.tensors.get(x.name)!))).toEqual(Array.from(x.data as Float32Array));
        checkLoaded(f, bytes);
        t.add('ok');
      }),
      { numRuns: 300, seed: 1 },
    );
    rows.push({
      area: 'safetensors',
      fault: 'valid generated files (F32/F16/BF16, rank 0-3, empty tensors, metadata)',
      cases: t.cases,
      outcome: `${t.cases} round-trip exactly`,
      verdict: 'pass',
      test: TEST,
    });
  });

  it('byte-wise mutations end in a correct load or ModelFileError', () => {
    const t = new Tally();
    fc.assert(
      fc.property(
        fileArb.filter((ts) => ts.length > 0),
        byteOps,
        (ts, ops) => {
          const b = applyByteOps(writeSafetensors(ts, { format: 'pt' }), ops);
          t.add(outcomeOf(parse(b), [ModelFileError]));
        },
      ),
      { numRuns: 2500, seed: 2 },
    );
    expect(t.counts.size).toBeGreaterThan(3);
    rows.push({
      area: 'safetensors',
      fault:
        'byte-wise mutations of valid files (bit flips, overwritten bytes and u32s incl. the header length, insertions, deletions, truncation, trailing bytes)',
      cases: t.cases,
      outcome: t.summary(),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('structural header mutations end in a correct load or ModelFileError', () => {
    const t = new Tally();
    const keys = fc.constantFrom('dtype', 'shape', 'data_offsets', '__metadata__', 'x', 'format');
    fc.assert(
      fc.property(
        fileArb.filter((ts) => ts.length > 0),
        jsonEdits(keys),
        fc.constantFrom(0, 0, 0, -1, 1, 8),
        (ts, edits, lenDelta) => {
          const { json, rest } = header(writeSafetensors(ts, { format: 'pt' }));
          const b = withHeader(applyJsonEdits(json, edits), rest, lenDelta);
          t.add(outcomeOf(parse(b), [ModelFileError]));
        },
      ),
      { numRuns: 2500, seed: 3 },
    );
    rows.push({
      area: 'safetensors',
      fault:
        'structural header mutations (dtype, shape, data_offsets and metadata replaced, deleted or added with hostile values; header length off by -1..8)',
      cases: t.cases,
      outcome: t.summary(),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('overlapping, out-of-bounds, gapped and truncated offsets are refused with the right code', () => {
    const t = new Tally();
    const offsetsArb = fc.array(fc.tuple(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 })), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(offsetsArb, fc.integer({ min: 0, max: 48 }), (offs, dataLen) => {
        const json: Record<string, unknown> = {};
        offs.forEach(([a, len], i) => {
          json[`t${i}`] = { dtype: 'U8', shape: [len], data_offsets: [a, a + len] };
        });
        const b = withHeader(json, new Uint8Array(dataLen));
        // the reference: sorted by begin, the spans must tile [0, dataLen) exactly
        const spans = offs.map(([a, len]) => [a, a + len]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
        let p = 0;
        let tiles = true;
        for (const [a, e] of spans) {
          if (a !== p) tiles = false;
          p = e;
        }
        const out = outcomeOf(parse(b), [ModelFileError]);
        expect(out === 'ok').toBe(tiles && p === dataLen);
        if (tiles && p > dataLen) expect(out).toBe('ModelFileError ST_TRUNCATED');
        if (tiles && p < dataLen) expect(out).toBe('ModelFileError ST_TRAILING');
        if (!tiles) expect(out).toBe('ModelFileError ST_OFFSETS');
        t.add(out);
      }),
      { numRuns: 2000, seed: 4 },
    );
    rows.push({
      area: 'safetensors',
      fault:
        'generated data_offsets: overlapping, gapped, out of bounds, truncated data, trailing bytes (checked against a reference tiling)',
      cases: t.cases,
      outcome: t.summary(),
      verdict: 'pass',
      test: TEST,
    });
  });

  it('headers claiming huge sizes are refused fast, without allocating', () => {
    const t = new Tally();
    const small = writeSafetensors([{ name: 'w', dtype: 'F32', shape: [2], data: new Float32Array(2) }]);
    const { rest } = header(small);
    const cases: Array<[string, Uint8Array]> = [];
    for (const [lo, hi] of [
      [0xffffffff, 0],
      [0, 1],
      [0xffffffff, 0xffffffff],
      [100_000_001, 0],
      [99_999_999, 0],
      [0, 0x1fffff],
    ]) {
      const b = small.slice();
      const dv = new DataView(b.buffer);
      dv.setUint32(0, lo, true);
      dv.setUint32(4, hi, true);
      cases.push([`header length ${hi * 2 ** 32 + lo}`, b]);
    }
    for (const shape of [[2 ** 31, 2 ** 31], [2 ** 53 - 1], [2 ** 26, 2 ** 26, 2 ** 26], [4294967296]]) {
      cases.push([`shape [${shape}]`, withHeader({ w: { dtype: 'F32', shape, data_offsets: [0, 8] } }, rest)]);
    }
    for (const offs of [
      [0, 2 ** 53 - 1],
      [2 ** 52, 2 ** 52 + 8],
      [0, 2 ** 40],
      [0, 4294967304],
    ]) {
      cases.push([`data_offsets [${offs}]`, withHeader({ w: { dtype: 'U8', shape: [offs[1] - offs[0]], data_offsets: offs } }, rest)]);
    }
    for (const [what, b] of cases) {
      const m = measure(() => parseSafetensors(b, 'huge.safetensors'));
      expect(m.error, what).toBeInstanceOf(ModelFileError);
      expect(m.ms, what).toBeLessThan(50);
      expect(m.arrayBufferBytes, what).toBeLessThan(1 << 20);
      t.add(`ModelFileError ${(m.error as ModelFileError).code}`);
    }
    rows.push({
      area: 'safetensors',
      fault: 'headers claiming huge sizes (header length up to 2^64, dims up to 2^53, offsets up to 2^53)',
      cases: t.cases,
      outcome: `${t.summary()}; each < 50 ms and < 1 MiB allocated`,
      verdict: 'pass',
      test: TEST,
    });
  });
});

import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, parseJson } from './json.ts';

describe('parseJson', () => {
  it('parses what JSON.parse parses, up to the nesting cap', () => {
    const text = '{"a": [1, {"b": "[[[{{ \\" ]]"}], "c": null}';
    expect(parseJson(text)).toEqual(JSON.parse(text));
    const atCap = '['.repeat(MAX_JSON_DEPTH) + ']'.repeat(MAX_JSON_DEPTH);
    expect(parseJson(atCap)).toEqual(JSON.parse(atCap));
    expect(parseJson('{"x": -0}', (_k, v) => (Object.is(v, -0) ? 'minus zero' : v))).toEqual({ x: 'minus zero' });
  });

  it('refuses deeper text before parsing, naming the depth and the position', () => {
    const deep = '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000);
    expect(() => parseJson(deep)).toThrow(
      new SyntaxError(`nested more than ${MAX_JSON_DEPTH} levels deep (at position ${5 * MAX_JSON_DEPTH})`),
    );
    expect(() => parseJson('[[[1]]]', undefined, 2)).toThrow(/nested more than 2 levels deep \(at position 2\)/);
    // brackets inside strings do not count
    expect(parseJson('["[[[[", "{{{{"]', undefined, 1)).toEqual(['[[[[', '{{{{']);
  });
});

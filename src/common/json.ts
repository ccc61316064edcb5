// JSON.parse with a nesting cap. V8 parses deep JSON fine, but every recursive walk after it (a
// validator, an error message quoting the value, a reviver, structuredClone) overflows the stack on a
// hostile file nested 100 000 levels deep, as an untyped RangeError. One linear scan refuses such text
// first; callers wrap the thrown SyntaxError in their own typed error, as they do for invalid JSON.

/** Deeper than any config, state.json, tokenizer or dataset the lab reads (they nest fewer than 10 levels). */
export const MAX_JSON_DEPTH = 100;

/** JSON.parse that first refuses text nested deeper than `maxDepth` arrays / objects (a SyntaxError). */
export function parseJson(
  text: string,
  reviver?: (this: unknown, key: string, value: unknown) => unknown,
  maxDepth = MAX_JSON_DEPTH,
): unknown {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) throw new SyntaxError(`nested more than ${maxDepth} levels deep (at position ${i})`);
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return JSON.parse(text, reviver);
}

// A small hand-written schema language for the run config: one description per field that both validates
// a JSON value (filling defaults, collecting every problem with its field path, e.g.
// `ppo.clip must be a number in (0, 1), got "x"`, and suggesting the nearest name for an unknown field)
// and exports JSON Schema (draft 2020-12) for editors and the AReaL export. Chosen over a library to keep
// messages in the lab's words and the bundle small; it covers exactly what the config needs.

/** `paper`: the MARFT paper's term for what the field (or section) configures; the lab links the paper there. */
export type Schema = (
  | NumberSchema
  | { type: 'string'; default?: string; minLength?: number; optional?: boolean; description?: string }
  | { type: 'boolean'; default?: boolean; optional?: boolean; description?: string }
  | { type: 'enum'; values: readonly string[]; default?: string | null; nullable?: boolean; optional?: boolean; description?: string }
  | { type: 'array'; items: Schema; minItems?: number; default?: unknown[]; optional?: boolean; description?: string }
  | {
      type: 'object';
      fields: Record<string, Schema>;
      default?: Record<string, unknown> | null;
      nullable?: boolean;
      optional?: boolean;
      description?: string;
    }
  | { type: 'record'; values: Schema; default?: Record<string, unknown>; optional?: boolean; description?: string }
  | { type: 'any'; default?: unknown; optional?: boolean; description?: string }
) & { paper?: string };

export interface NumberSchema {
  type: 'number';
  integer?: boolean;
  min?: number;
  max?: number;
  exclusiveMin?: boolean;
  exclusiveMax?: boolean;
  default?: number | null;
  nullable?: boolean;
  optional?: boolean;
  description?: string;
  paper?: string;
}

/** A number field with a default (and bounds). */
export const num = (def: number | null, extra: Omit<NumberSchema, 'type' | 'default'> = {}): Schema => ({
  type: 'number',
  default: def,
  ...extra,
});
/** An integer field >= min with a default. */
export const int = (def: number, min: number, description?: string): Schema => ({
  type: 'number',
  integer: true,
  min,
  default: def,
  description,
});

export interface SchemaIssue {
  /** Field path, e.g. "ppo.clip" or "graph.agents[1].topP". */
  path: string;
  message: string;
}

const show = (v: unknown): string => (v === undefined ? 'nothing' : (JSON.stringify(v) ?? String(v)));

/** "a number in (0, 1)", "an integer >= 1", ... */
export function describeNumber(s: NumberSchema): string {
  const kind = s.integer ? 'an integer' : 'a number';
  const lo = s.min;
  const hi = s.max;
  if (lo !== undefined && hi !== undefined) return `${kind} in ${s.exclusiveMin ? '(' : '['}${lo}, ${hi}${s.exclusiveMax ? ')' : ']'}`;
  if (lo !== undefined) return `${kind} ${s.exclusiveMin ? '>' : '>='} ${lo}`;
  if (hi !== undefined) return `${kind} ${s.exclusiveMax ? '<' : '<='} ${hi}`;
  return kind;
}

function levenshtein(a: string, b: string): number {
  const d = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = d[0];
    d[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = d[j];
      d[j] = Math.min(d[j] + 1, d[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return d[b.length];
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key);
const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const clone = <T>(v: T): T => (v === undefined ? v : structuredClone(v));

/** Validates `value` against `schema`, filling defaults; problems go to `issues`. Returns the filled value. */
export function validate(schema: Schema, value: unknown, path: string, issues: SchemaIssue[]): unknown {
  const name = path || 'the config';
  if (value === undefined) {
    if ('default' in schema && schema.default !== undefined) value = clone(schema.default);
    else if (schema.type === 'object') value = {};
    else if (schema.optional) return undefined;
    else {
      issues.push({ path, message: `${name} is required` });
      return undefined;
    }
  }
  if (value === null && 'nullable' in schema && schema.nullable) return null;
  switch (schema.type) {
    case 'number': {
      const ok =
        typeof value === 'number' &&
        Number.isFinite(value) &&
        (!schema.integer || Number.isInteger(value)) &&
        (schema.min === undefined || (schema.exclusiveMin ? value > schema.min : value >= schema.min)) &&
        (schema.max === undefined || (schema.exclusiveMax ? value < schema.max : value <= schema.max));
      if (!ok)
        issues.push({ path, message: `${name} must be ${describeNumber(schema)}${schema.nullable ? ' or null' : ''}, got ${show(value)}` });
      return value;
    }
    case 'string':
      if (typeof value !== 'string') issues.push({ path, message: `${name} must be a string, got ${show(value)}` });
      else if (schema.minLength && value.length < schema.minLength) issues.push({ path, message: `${name} must not be empty` });
      return value;
    case 'boolean':
      if (typeof value !== 'boolean') issues.push({ path, message: `${name} must be true or false, got ${show(value)}` });
      return value;
    case 'enum':
      if (typeof value !== 'string' || !schema.values.includes(value)) {
        issues.push({
          path,
          message: `${name} must be one of ${schema.values.map((v) => `"${v}"`).join(', ')}${schema.nullable ? ' or null' : ''}, got ${show(value)}`,
        });
      }
      return value;
    case 'array': {
      if (!Array.isArray(value)) {
        issues.push({ path, message: `${name} must be an array, got ${show(value)}` });
        return value;
      }
      if (schema.minItems && value.length < schema.minItems)
        issues.push({ path, message: `${name} must have at least ${schema.minItems} item${schema.minItems > 1 ? 's' : ''}` });
      return value.map((item, i) => validate(schema.items, item, `${path}[${i}]`, issues));
    }
    case 'record': {
      if (!isPlainObject(value)) {
        issues.push({ path, message: `${name} must be an object, got ${show(value)}` });
        return value;
      }
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(value)) out[k] = validate(schema.values, v, join(path, k), issues);
      return out;
    }
    case 'object': {
      if (!isPlainObject(value)) {
        issues.push({ path, message: `${name} must be an object${schema.nullable ? ' or null' : ''}, got ${show(value)}` });
        return value;
      }
      const out: Record<string, unknown> = {};
      const known = Object.keys(schema.fields);
      for (const key of Object.keys(value)) {
        if (!(key in schema.fields)) {
          const near = known.map((k) => [k, levenshtein(k.toLowerCase(), key.toLowerCase())] as const).sort((a, b) => a[1] - b[1])[0];
          const hint =
            near && near[1] <= Math.max(2, Math.floor(key.length / 3))
              ? ` (did you mean ${join(path, near[0])}?)`
              : `; known fields: ${known.join(', ')}`;
          issues.push({ path: join(path, key), message: `unknown field ${join(path, key)}${hint}` });
        }
      }
      for (const [key, sub] of Object.entries(schema.fields)) {
        const v = validate(sub, value[key], join(path, key), issues);
        if (v !== undefined) out[key] = v;
      }
      return out;
    }
    case 'any':
      return value;
  }
}

/** The JSON Schema (draft 2020-12) of `schema`. */
export function toJsonSchema(schema: Schema): Record<string, unknown> {
  const base: Record<string, unknown> = {};
  if (schema.description) base.description = schema.description;
  if ('default' in schema && schema.default !== undefined) base.default = schema.default;
  const nullable = 'nullable' in schema && schema.nullable;
  const withNull = (t: string) => (nullable ? [t, 'null'] : t);
  switch (schema.type) {
    case 'number': {
      const out: Record<string, unknown> = { ...base, type: withNull(schema.integer ? 'integer' : 'number') };
      if (schema.min !== undefined) out[schema.exclusiveMin ? 'exclusiveMinimum' : 'minimum'] = schema.min;
      if (schema.max !== undefined) out[schema.exclusiveMax ? 'exclusiveMaximum' : 'maximum'] = schema.max;
      return out;
    }
    case 'string':
      return { ...base, type: 'string', ...(schema.minLength ? { minLength: schema.minLength } : {}) };
    case 'boolean':
      return { ...base, type: 'boolean' };
    case 'enum':
      return { ...base, enum: nullable ? [...schema.values, null] : [...schema.values] };
    case 'array':
      return { ...base, type: 'array', items: toJsonSchema(schema.items), ...(schema.minItems ? { minItems: schema.minItems } : {}) };
    case 'record':
      return { ...base, type: 'object', additionalProperties: toJsonSchema(schema.values) };
    case 'object': {
      const required = Object.entries(schema.fields)
        .filter(([, s]) => !s.optional && !('default' in s && s.default !== undefined) && s.type !== 'object')
        .map(([k]) => k);
      return {
        ...base,
        type: withNull('object'),
        properties: Object.fromEntries(Object.entries(schema.fields).map(([k, s]) => [k, toJsonSchema(s)])),
        additionalProperties: false,
        ...(required.length ? { required } : {}),
      };
    }
    case 'any':
      return { ...base };
  }
}

const sameJson = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/**
 * `value` (a filled, valid config) without the fields that equal their schema default: what validate()
 * fills back in, so validate(schema, withoutDefaults(schema, v)) gives v again. Keeps shared links short.
 */
export function withoutDefaults(schema: Schema, value: unknown): unknown {
  if (schema.type !== 'object' || !isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(schema.fields)) {
    const v = value[key];
    if (v === undefined) continue;
    if ('default' in sub && sub.default !== undefined && sameJson(v, sub.default)) continue;
    const slim = withoutDefaults(sub, v);
    // an object without a default is filled from {}: an empty remainder can go too
    if (sub.type === 'object' && sub.default === undefined && isPlainObject(slim) && Object.keys(slim).length === 0) continue;
    out[key] = slim;
  }
  return out;
}

/** The schema of a field path ("ppo.clip", "graph.agents[2].topP", "credit.perStep.planner"); null when none. */
export function schemaAt(schema: Schema, path: string): Schema | null {
  let s: Schema | null = schema;
  for (const part of path.match(/[^.[\]]+|\[\d+\]/g) ?? []) {
    if (!s) return null;
    if (part.startsWith('[')) s = s.type === 'array' ? s.items : null;
    else if (s.type === 'object') s = Object.hasOwn(s.fields, part) ? s.fields[part] : null;
    else if (s.type === 'record') s = s.values;
    else return null;
  }
  return s;
}

/** The paper's term for the field at `path`: its own, or the nearest enclosing section's; null when none. */
export function paperAt(schema: Schema, path: string): string | null {
  const parts = path.match(/[^.[\]]+|\[\d+\]/g) ?? [];
  for (let n = parts.length; n > 0; n--) {
    const term = schemaAt(schema, parts.slice(0, n).join('.').replace(/\.\[/g, '['))?.paper;
    if (term) return term;
  }
  return null;
}

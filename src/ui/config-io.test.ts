// The config lifecycle's pure logic: the builder kept in storage (versioned, with a fallback), export and
// import as run-config JSON, and the shareable link (round trip, defaults left out, size check).

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/errors.ts';
import { parseRunConfig } from '../config/run-config.ts';
import { CONFIG_SCHEMA } from '../config/run-config-schema.ts';
import { PRESET_RUNS, defaultRunConfig, presetRunConfig } from '../config/run-presets.ts';
import { withoutDefaults } from '../config/schema.ts';
import {
  BUILDER_KEY,
  BUILDER_VERSION,
  LINK_PREFIX,
  MAX_LINK_CHARS,
  decodeConfigLink,
  encodeConfigLink,
  exportConfigJson,
  importConfigText,
  isConfigLink,
  restoreBuilder,
  saveBuilder,
  shareLink,
} from './config-io.ts';

const memory = () => {
  const m = new Map<string, string>();
  return { getItem: (k: string) => m.get(k) ?? null, setItem: (k: string, v: string) => void m.set(k, v), m };
};

describe('builder persistence', () => {
  it('restores what was saved, and nothing when nothing was', () => {
    const s = memory();
    expect(restoreBuilder(s)).toEqual({ kind: 'none' });
    const c = defaultRunConfig();
    c.iterations = 7;
    c.graph.agents[1].temperature = 0.7;
    saveBuilder(s, c, 'custom');
    expect(JSON.parse(s.m.get(BUILDER_KEY)!).version).toBe(BUILDER_VERSION);
    expect(restoreBuilder(s)).toEqual({ kind: 'ok', config: c, preset: 'custom' });
  });

  it('fills defaults for fields a saved config predates', () => {
    const s = memory();
    const c = defaultRunConfig() as unknown as Record<string, Record<string, unknown>>;
    delete c.runLoop;
    delete c.ppo.groupStd;
    s.setItem(BUILDER_KEY, JSON.stringify({ version: BUILDER_VERSION, config: c, preset: 'duo' }));
    const r = restoreBuilder(s);
    expect(r.kind).toBe('ok');
    if (r.kind === 'ok') {
      expect(r.config.ppo.groupStd).toBe('sample');
      expect(r.config.runLoop).toEqual({
        keepCheckpoints: 20,
        checkpointEvery: 10,
        checkpointSeconds: 60,
        rollbackAfter: 3,
        maxRecoveries: 3,
      });
    }
  });

  it('falls back with the reason when the saved builder is unreadable, of another version or invalid', () => {
    const s = memory();
    s.setItem(BUILDER_KEY, '{oops');
    expect(restoreBuilder(s)).toEqual({ kind: 'invalid', reason: 'the saved builder is not JSON', issues: [] });
    s.setItem(BUILDER_KEY, JSON.stringify({ version: 99, config: defaultRunConfig(), preset: 'duo' }));
    expect(restoreBuilder(s)).toEqual({
      kind: 'invalid',
      reason: `the saved builder has version 99; this lab reads version ${BUILDER_VERSION}`,
      issues: [],
    });
    const bad = defaultRunConfig() as unknown as { ppo: { clip: number; lr: string } };
    bad.ppo.clip = 3;
    s.setItem(BUILDER_KEY, JSON.stringify({ version: BUILDER_VERSION, config: bad, preset: 'duo' }));
    const r = restoreBuilder(s);
    expect(r.kind).toBe('invalid');
    if (r.kind === 'invalid') {
      expect(r.reason).toBe('the saved config no longer validates (1 problem)');
      expect(r.issues).toEqual([{ path: 'ppo.clip', message: 'ppo.clip must be a number in (0, 1), got 3' }]);
    }
  });
});

describe('export and import', () => {
  it('exports the JSON the CLI reads and imports it back unchanged', () => {
    const c = defaultRunConfig({ preset: 'trio', anonymous: false });
    c.credit.method = 'step_discount';
    c.credit.discount = 0.5;
    const text = exportConfigJson(c);
    expect(JSON.parse(text)).toEqual(c);
    expect(importConfigText(text)).toEqual({ config: c, issues: [] });
  });

  it('lists every issue of a bad file, and a JSON error as one issue', () => {
    expect(importConfigText('{"ppo": {"clip": 2}, "algo": "dqn"}').issues.map((i) => i.path)).toEqual(['algo', 'ppo.clip']);
    const r = importConfigText('{"seed": 1,}');
    expect(r.config).toBeNull();
    expect(r.issues).toHaveLength(1);
    expect(r.issues[0].message).toMatch(/^the file is not valid JSON/);
  });
});

describe('share link', () => {
  it('round-trips a config, leaving out fields equal to their defaults', () => {
    const c = defaultRunConfig({ preset: 'quartet', anonymous: false });
    c.seed = 42;
    c.graph.agents[0].systemPrompt = 'Plan — in ünïcode ✓';
    const value = encodeConfigLink(c);
    expect(value.startsWith(LINK_PREFIX)).toBe(true);
    expect(isConfigLink(value)).toBe(true);
    expect(isConfigLink('classroom')).toBe(false);
    expect(decodeConfigLink(value)).toEqual(c);
    // base64url: nothing a query string would escape
    expect(value.slice(LINK_PREFIX.length)).toMatch(/^[A-Za-z0-9_-]+$/);
    const slim = withoutDefaults(CONFIG_SCHEMA, c) as Record<string, unknown>;
    expect(slim.seed).toBe(42);
    expect('level' in slim).toBe(false); // "action", the default
    expect('runLoop' in slim).toBe(false);
  });

  it('puts the encoded config in ?config= of the page link', () => {
    const c = defaultRunConfig();
    const link = new URL(shareLink('http://localhost:5173/?config=classroom#x', c));
    expect(link.origin + link.pathname).toBe('http://localhost:5173/');
    expect(link.hash).toBe('');
    expect(decodeConfigLink(link.searchParams.get('config')!)).toEqual(c);
  });

  it('refuses a config too long for a link, and a cut or foreign value, with a CONFIG_LINK error', () => {
    const c = defaultRunConfig();
    c.env = { name: 'dataset', options: { data: 'x'.repeat(MAX_LINK_CHARS), source: 'big.jsonl' } };
    expect(() => encodeConfigLink(c)).toThrowError(ConfigError);
    expect(() => encodeConfigLink(c)).toThrowError(/too long for a link/);
    const value = encodeConfigLink(defaultRunConfig());
    const err = (() => {
      try {
        decodeConfigLink(value.slice(0, value.length - 7));
      } catch (e) {
        return e as ConfigError;
      }
      return null;
    })();
    expect(err?.code).toBe('CONFIG_LINK');
    expect(() => decodeConfigLink('classroom')).toThrowError(/does not start with "cfg1\."/);
  });

  it('lists the issues of a link whose config does not validate', () => {
    const bad = LINK_PREFIX + btoa(JSON.stringify({ ppo: { clip: 5 } })).replace(/=+$/, '');
    expect(() => decodeConfigLink(bad)).toThrowError(/ppo\.clip must be a number in \(0, 1\), got 5/);
  });
});

describe('preset run configs', () => {
  it('every preset run fits in a link and comes back unchanged', () => {
    for (const name of Object.keys(PRESET_RUNS)) {
      const c = parseRunConfig(presetRunConfig(name));
      expect(decodeConfigLink(encodeConfigLink(c))).toEqual(c);
    }
  });
});

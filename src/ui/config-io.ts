// The config lifecycle outside the page (pure, no React): the builder kept in localStorage (versioned,
// with a fallback when the saved config no longer validates), export/import as the CLI's run-config JSON
// (`marft train --config <file>` runs the exported file), and a shareable link that carries the config
// itself: /?config=<preset> names a preset run, /?config=cfg1.<base64url> carries a config without the
// fields equal to their defaults, size-checked so the link stays usable.

import { ConfigError } from '../config/errors.ts';
import { type ConfigIssue, type RunConfig, parseRunConfig, validateConfig } from '../config/run-config.ts';
import { CONFIG_SCHEMA } from '../config/run-config-schema.ts';
import { withoutDefaults } from '../config/schema.ts';

/** The localStorage key of the builder and the version of what is stored under it. */
export const BUILDER_KEY = 'marft-lab.builder';
export const BUILDER_VERSION = 1;

export interface SavedBuilder {
  version: number;
  config: RunConfig;
  /** The preset-team picker's choice. */
  preset: string;
}

/** The subset of the Storage API used here (tests pass a Map-backed one). */
export type KeyValueStore = Pick<Storage, 'getItem' | 'setItem'>;

export function saveBuilder(store: KeyValueStore, config: RunConfig, preset: string): void {
  const saved: SavedBuilder = { version: BUILDER_VERSION, config, preset };
  store.setItem(BUILDER_KEY, JSON.stringify(saved));
}

export type Restored =
  | { kind: 'none' }
  | { kind: 'ok'; config: RunConfig; preset: string }
  /** Saved, but unusable: why, and every issue the saved config has (the caller starts from the default). */
  | { kind: 'invalid'; reason: string; issues: ConfigIssue[] };

/** The saved builder, validated as an imported file is (defaults filled for fields added since). */
export function restoreBuilder(store: KeyValueStore): Restored {
  const text = store.getItem(BUILDER_KEY);
  if (text === null) return { kind: 'none' };
  let saved: Partial<SavedBuilder>;
  try {
    saved = JSON.parse(text) as Partial<SavedBuilder>;
  } catch {
    return { kind: 'invalid', reason: 'the saved builder is not JSON', issues: [] };
  }
  if (typeof saved !== 'object' || saved === null || saved.version !== BUILDER_VERSION) {
    return {
      kind: 'invalid',
      reason: `the saved builder has version ${JSON.stringify(saved?.version)}; this lab reads version ${BUILDER_VERSION}`,
      issues: [],
    };
  }
  const { config, issues } = validateConfig(saved.config);
  if (!config)
    return {
      kind: 'invalid',
      reason: `the saved config no longer validates (${issues.length} problem${issues.length > 1 ? 's' : ''})`,
      issues,
    };
  return { kind: 'ok', config, preset: typeof saved.preset === 'string' ? saved.preset : 'custom' };
}

/** The config as the CLI reads it (`marft train --config`). */
export const exportConfigJson = (config: RunConfig): string => `${JSON.stringify(config, null, 2)}\n`;

/** An imported run-config file: the filled config, or every issue (a JSON error is one issue at the root). */
export function importConfigText(text: string): { config: RunConfig; issues: [] } | { config: null; issues: ConfigIssue[] } {
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (e) {
    return { config: null, issues: [{ path: '', message: `the file is not valid JSON (${(e as Error).message})` }] };
  }
  const { config, issues } = validateConfig(obj);
  return config ? { config, issues: [] } : { config: null, issues };
}

/** The prefix of an encoded config in ?config= (versioned, so a later encoding can be told apart). */
export const LINK_PREFIX = 'cfg1.';
/** Longest encoded config a link may carry: URLs beyond ~8 KB are cut by servers, chats and mail. */
export const MAX_LINK_CHARS = 6000;

function toBase64Url(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return btoa(bin).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64Url(text: string): Uint8Array {
  const bin = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(bin, (c) => c.charCodeAt(0));
}

/** The ?config= value that carries `config`; a ConfigError (CONFIG_LINK) when it is too long for a link. */
export function encodeConfigLink(config: RunConfig): string {
  const value = LINK_PREFIX + toBase64Url(new TextEncoder().encode(JSON.stringify(withoutDefaults(CONFIG_SCHEMA, config))));
  if (value.length > MAX_LINK_CHARS) {
    throw new ConfigError(
      'CONFIG_LINK',
      `this config is too long for a link (${value.length} characters encoded, at most ${MAX_LINK_CHARS}; an uploaded dataset or a module source makes it long)`,
    );
  }
  return value;
}

/** Whether a ?config= value is an encoded config (otherwise it names a preset run). */
export const isConfigLink = (value: string): boolean => value.startsWith(LINK_PREFIX);

/** The config a ?config=cfg1.… value carries; a ConfigError (CONFIG_LINK, or parseRunConfig's listing the issues). */
export function decodeConfigLink(value: string): RunConfig {
  if (!isConfigLink(value))
    throw new ConfigError('CONFIG_LINK', `the link's config does not start with "${LINK_PREFIX}" (an encoded config of this lab)`);
  if (value.length > MAX_LINK_CHARS)
    throw new ConfigError(
      'CONFIG_LINK',
      `the link's config is ${value.length} characters long, more than the ${MAX_LINK_CHARS} a link may carry`,
    );
  let obj: unknown;
  try {
    obj = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(fromBase64Url(value.slice(LINK_PREFIX.length))));
  } catch {
    throw new ConfigError('CONFIG_LINK', "the link's config cannot be decoded: the link was probably cut off when it was copied");
  }
  return parseRunConfig(obj);
}

/** The page link that opens the lab with `config` in the builder. */
export function shareLink(base: string, config: RunConfig): string {
  const url = new URL(base);
  url.search = '';
  url.hash = '';
  url.searchParams.set('config', encodeConfigLink(config));
  return url.toString();
}

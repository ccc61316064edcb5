// The coded-error base: one message format and name per layer, checked through two catalogues built on it.

import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/errors.ts';
import { ModelFileError } from '../model/errors.ts';
import { CodedError, errorMessage, messageWithoutHint } from './errors.ts';

describe('CodedError', () => {
  it('formats message and hint one way, keeps the code, the hint and the given name', () => {
    const e = new ConfigError('GRAPH_EMPTY', 'no agents');
    expect(e).toBeInstanceOf(CodedError);
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('ConfigError');
    expect(e.code).toBe('GRAPH_EMPTY');
    expect(e.message).toBe(`no agents\n  hint: ${e.hint}`);
    expect(messageWithoutHint(e.message)).toBe('no agents');
  });

  it('a catalogue may add fields and prefix the message (ModelFileError names its file)', () => {
    const e = new ModelFileError('FILE_MISSING', 'config.json', 'not in the folder', 'pick the folder');
    expect(e.name).toBe('ModelFileError');
    expect(e.file).toBe('config.json');
    expect(e.message).toBe('config.json: not in the folder\n  hint: pick the folder');
  });

  it('errorMessage reads anything thrown', () => {
    expect(errorMessage(new Error('x'))).toBe('x');
    expect(errorMessage('y')).toBe('y');
    expect(messageWithoutHint('plain')).toBe('plain');
  });
});

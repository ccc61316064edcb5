// The Storage panel rendered from store state (react-dom/server): usage against quota, every run and
// model folder biggest first with its size and a Delete, names shown as text; and formatBytes' units.

import { createElement } from 'react';
import { renderToString } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { StorageUsage } from '../../worker/api.ts';
import { StorageView, formatBytes } from './StoragePanel.tsx';

/** The panel's HTML without React's text-boundary comments. */
const render = (storage: StorageUsage | null, active = false) =>
  renderToString(createElement(StorageView, { storage, active, current: 'run-a', model: 'opfs:models/tiny' })).replace(/<!-- -->/g, '');

describe('storage panel', () => {
  it('formats bytes in the largest unit that keeps the number >= 1', () => {
    expect([0, 1023, 1024, 1536, 10 * 2 ** 20, 2.5 * 2 ** 30].map(formatBytes)).toEqual([
      '0 B',
      '1023 B',
      '1.00 KiB',
      '1.50 KiB',
      '10.0 MiB',
      '2.50 GiB',
    ]);
  });

  it('says "reading" until the worker answers', () => {
    expect(render(null)).toContain('Reading the browser storage');
  });

  it('shows usage, quota and every folder biggest first, names as text', () => {
    const storage: StorageUsage = {
      usage: 3 * 2 ** 20,
      quota: 100 * 2 ** 20,
      runs: [
        { name: 'run-a', bytes: 2 * 2 ** 20 },
        { name: '<b>run-x</b>', bytes: 10 },
      ],
      models: [{ name: 'opfs:models/tiny', bytes: 5 * 2 ** 20 }],
    };
    const html = render(storage);
    expect(html).toContain('3.00 MiB used of 100.0 MiB this browser grants the site (3%)');
    expect(html).toMatch(/<progress[^>]*max="1"[^>]*value="0.03"/);
    const names = [...html.matchAll(/<code>([^<]*)<\/code>/g)].map((m) => m[1]);
    expect(names).toEqual(['opfs:models/tiny', 'run-a', '&lt;b&gt;run-x&lt;/b&gt;']);
    expect(html.match(/>Delete</g)).toHaveLength(3);
    expect(html.match(/disabled=""/g)).toBeNull();
    // while run-a trains on tiny: its run and every model are locked, the other run can go
    const busy = render(storage, true);
    expect(busy.match(/<button[^>]*disabled=""[^>]*>Delete/g)).toHaveLength(2);
  });

  it('says so when the browser reports no quota', () => {
    expect(render({ usage: null, quota: null, runs: [], models: [] })).toContain('usage unknown (this browser reports no quota)');
  });
});

// The worker's errors as the lab shows them: an iteration that is not kept is named as the lab numbers it.

import { describe, expect, it } from 'vitest';
import { notKept } from './errors.ts';

describe('notKept', () => {
  it('names the iteration asked for and the kept ones from 1, as the Inspect tab and the sandbox show them', () => {
    // the sandbox asked for "recorded (iteration 8)", internally iteration 7
    expect(notKept(7, [])).toMatchObject({ code: 'NO_EPISODES', message: expect.stringContaining('iteration 8 is not kept (kept: none)') });
    expect(notKept(2, [3, 4]).message).toContain('iteration 3 is not kept (kept: 4, 5)');
  });
});

// The builder's edits through the store: stable agent ids kept parallel to the agents, quick edits of one
// field merged into one undo step, and a live run's config read-only (an edit is refused with a notice,
// never dropped silently) until the user takes a copy.

import { beforeEach, describe, expect, it } from 'vitest';
import { defaultRunConfig } from '../config/run-presets.ts';
import { addAgent, removeAgent } from './builder/graph-ops.ts';
import { redo, undo } from './builder/history.ts';
import { editDraft, freshAgentIds, selectBuilderLocked, setDraft, showSnapshot, useLab, withEditKey } from './store.ts';

const initial = useLab.getState();
beforeEach(() => useLab.setState(initial, true));
const s = () => useLab.getState();
const current = () => ({ draft: s().draft, agentIds: s().agentIds, preset: s().preset });

describe('builder edits', () => {
  it('keeps a stable id per agent through adds and removes', () => {
    const [a, b] = s().agentIds;
    editDraft((d, ids) => {
      addAgent(d);
      ids.push(...freshAgentIds(1));
    });
    const c = s().agentIds[2];
    editDraft((d, ids) => {
      removeAgent(d, 0);
      ids.splice(0, 1);
    });
    expect(s().agentIds).toEqual([b, c]);
    expect(new Set([a, b, c]).size).toBe(3);
    expect(s().draft.graph.agents.map((x) => x.role)).toEqual(['solver', 'agent_3']);
  });

  it('merges a value typed key by key into one undo step, and undo brings back ids and preset', () => {
    const before = s().draft.seed;
    for (const v of [1, 12, 123])
      withEditKey('seed', () =>
        editDraft((d) => {
          d.seed = v;
        }),
      );
    expect(s().undo.past).toHaveLength(1);
    editDraft((d) => {
      d.seed = 123;
    }); // no change: no step
    expect(s().undo.past).toHaveLength(1);
    const u = undo(s().undo, current())!;
    showSnapshot(u.snapshot, u.history);
    expect(s().draft.seed).toBe(before);
    const r = redo(s().undo, current())!;
    showSnapshot(r.snapshot, r.history);
    expect(s().draft.seed).toBe(123);
  });

  it("refuses edits of a live run's config with a notice, and accepts them on a copy", () => {
    const run = defaultRunConfig();
    setDraft(run, { runConfig: run, copyOf: null, run: { ...s().run, status: 'paused', runId: 'run-1' } });
    expect(selectBuilderLocked(s())).toBe(true);
    editDraft((d) => {
      d.iterations = 99;
    });
    expect(s().draft.iterations).toBe(run.iterations);
    expect(s().notices.map((n) => n.code)).toEqual(['CONFIG_COPY']);
    useLab.setState({ copyOf: 'run-1' });
    expect(selectBuilderLocked(s())).toBe(false);
    editDraft((d) => {
      d.iterations = 99;
    });
    expect(s().draft.iterations).toBe(99);
    expect(s().runConfig?.iterations).toBe(run.iterations);
    // a finished run's config is the builder's to edit again
    useLab.setState({ copyOf: null, run: { ...s().run, status: 'done' } });
    expect(selectBuilderLocked(s())).toBe(false);
  });
});

// The selected agent's profile: role, description, system prompt, whether it answers, and its sampling.

import { editDraft, selectDraft, selectSelectedAgent, useLab } from '../store.ts';
import { CheckField, FieldIssues, NumberField, TextField } from './fields.tsx';
import { removeAgent, renameAgent } from './graph-ops.ts';

export function ProfileEditor() {
  const draft = useLab(selectDraft);
  const i = useLab(selectSelectedAgent);
  const p = draft.graph.agents[i];
  if (!p) return <section className="card"><p className="hint">Select an agent in the graph.</p></section>;
  const at = `graph.agents[${i}]`;
  const edit = (f: (a: typeof p) => void) => editDraft((d) => f(d.graph.agents[i]));
  return (
    <section className="card profile" data-testid="profile-editor">
      <div className="row spread">
        <h2>Agent {i + 1}: {p.role}</h2>
        <button type="button" className="danger" data-testid="remove-agent" disabled={draft.graph.agents.length < 2}
          onClick={() => { editDraft((d) => removeAgent(d, i)); useLab.setState({ selectedAgent: Math.max(0, i - 1) }); }}>Remove agent</button>
      </div>
      <div className="grid2">
        <TextField label="Role" path={`${at}.role`} value={p.role} onChange={(v) => editDraft((d) => renameAgent(d, i, v))} />
        <TextField label="Description" path={`${at}.description`} value={p.description ?? ''} onChange={(v) => edit((a) => { a.description = v; })} />
      </div>
      <TextField label="System prompt" path={`${at}.systemPrompt`} value={p.systemPrompt} multiline onChange={(v) => edit((a) => { a.systemPrompt = v; })} />
      <CheckField label="Gives the answer (its \boxed{} is scored)" path={`${at}.withAnswer`} value={p.withAnswer} onChange={(v) => edit((a) => { a.withAnswer = v; })} />
      <div className="grid4">
        <NumberField label="Max new tokens" path={`${at}.maxNewTokens`} value={p.maxNewTokens} step={1} onChange={(v) => edit((a) => { a.maxNewTokens = v; })} />
        <NumberField label="Temperature" path={`${at}.temperature`} value={p.temperature} step={0.1} onChange={(v) => edit((a) => { a.temperature = v; })} />
        <NumberField label="Top-k (0 = off)" path={`${at}.topK`} value={p.topK} step={1} onChange={(v) => edit((a) => { a.topK = v; })} />
        <NumberField label="Top-p" path={`${at}.topP`} value={p.topP} step={0.05} onChange={(v) => edit((a) => { a.topP = v; })} />
      </div>
      <FieldIssues path={`${at}`} exact />
    </section>
  );
}

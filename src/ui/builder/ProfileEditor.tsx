// The selected agent's profile: role, description, system prompt, whether it answers, and its sampling.
// The role is the agent's identity: it is edited as text and committed on blur or Enter (Escape reverts),
// so the names typed on the way ("solver" on the way to "solver2") never touch the graph.

import { useState } from 'react';
import { editDraft, selectAgentIds, selectDraft, selectSelectedAgent, useLab } from '../store.ts';
import { CheckField, FieldIssues, Label, NumberField, TextField } from './fields.tsx';
import { removeAgent, renameAgent, roleIssue } from './graph-ops.ts';

/** The role of agent `index`; `key`ed by the agent's stable id, so its typed text belongs to that agent. */
function RoleField({ index, role }: { index: number; role: string }) {
  const [text, setText] = useState(role);
  const [refused, setRefused] = useState<string | null>(null);
  const draft = useLab(selectDraft);
  const path = `graph.agents[${index}].role`;
  const pending = text !== role ? roleIssue(draft, index, text) : null;
  const commit = () => {
    if (text === role) return;
    let issue: string | null = null;
    editDraft((d) => {
      issue = renameAgent(d, index, text);
    });
    setRefused(issue ? `not renamed: ${issue}` : null);
  };
  const message = refused ?? (pending ? `${pending} (Enter renames; Escape keeps "${role}")` : null);
  return (
    <label className={`field wide${message ? ' bad' : ''}`}>
      <Label label="Role" path={path} />
      <input
        type="text"
        value={text}
        data-testid={`field-${path}`}
        aria-invalid={!!message}
        onChange={(e) => {
          setText(e.target.value);
          setRefused(null);
        }}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter') commit();
          if (e.key === 'Escape') {
            setText(role);
            setRefused(null);
          }
        }}
      />
      {message && (
        <ul className="issues" data-testid="role-issue">
          <li>{message}</li>
        </ul>
      )}
      <FieldIssues path={path} exact />
    </label>
  );
}

export function ProfileEditor() {
  const draft = useLab(selectDraft);
  const i = useLab(selectSelectedAgent);
  const ids = useLab(selectAgentIds);
  const p = draft.graph.agents[i];
  if (!p)
    return (
      <section className="card">
        <p className="hint">Select an agent in the graph.</p>
      </section>
    );
  const at = `graph.agents[${i}]`;
  const edit = (f: (a: typeof p) => void) => editDraft((d) => f(d.graph.agents[i]));
  return (
    <section className="card profile" data-testid="profile-editor">
      <div className="row spread">
        <h2>
          Agent {i + 1}: {p.role}
        </h2>
        <button
          type="button"
          className="danger"
          data-testid="remove-agent"
          disabled={draft.graph.agents.length < 2}
          onClick={() => {
            editDraft((d, agentIds) => {
              removeAgent(d, i);
              agentIds.splice(i, 1);
            });
            useLab.setState({ selectedAgent: Math.max(0, i - 1) });
          }}
        >
          Remove agent
        </button>
      </div>
      <div className="grid2">
        <RoleField key={`${ids[i]}:${p.role}`} index={i} role={p.role} />
        <TextField
          label="Description"
          path={`${at}.description`}
          value={p.description ?? ''}
          onChange={(v) =>
            edit((a) => {
              a.description = v;
            })
          }
        />
      </div>
      <TextField
        label="System prompt"
        path={`${at}.systemPrompt`}
        value={p.systemPrompt}
        multiline
        onChange={(v) =>
          edit((a) => {
            a.systemPrompt = v;
          })
        }
      />
      <CheckField
        label="Gives the answer (its \boxed{} is scored)"
        path={`${at}.withAnswer`}
        value={p.withAnswer}
        onChange={(v) =>
          edit((a) => {
            a.withAnswer = v;
          })
        }
      />
      <div className="grid4">
        <NumberField
          label="Max new tokens"
          path={`${at}.maxNewTokens`}
          value={p.maxNewTokens}
          step={1}
          onChange={(v) =>
            edit((a) => {
              a.maxNewTokens = v;
            })
          }
        />
        <NumberField
          label="Temperature"
          path={`${at}.temperature`}
          value={p.temperature}
          step={0.1}
          onChange={(v) =>
            edit((a) => {
              a.temperature = v;
            })
          }
        />
        <NumberField
          label="Top-k (0 = off)"
          path={`${at}.topK`}
          value={p.topK}
          step={1}
          onChange={(v) =>
            edit((a) => {
              a.topK = v;
            })
          }
        />
        <NumberField
          label="Top-p"
          path={`${at}.topP`}
          value={p.topP}
          step={0.05}
          onChange={(v) =>
            edit((a) => {
              a.topP = v;
            })
          }
        />
      </div>
      <FieldIssues path={`${at}`} exact />
    </section>
  );
}

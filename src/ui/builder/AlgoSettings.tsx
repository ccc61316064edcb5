// The algorithm: level, PPO/GRPO, credit assignment, LoRA and critic modes, schedule, hyperparameters and
// the rollout size. Every field shows its validation message in place.

import { LORA_TARGETS, type RunConfig } from '../../config/run-config.ts';
import { editDraft, selectDraft, useLab } from '../store.ts';
import { CheckField, FieldIssues, NumberField, SelectField } from './fields.tsx';

type Ppo = RunConfig['ppo'];
const PPO_FIELDS: Array<[keyof Ppo, string, number | 'any']> = [
  ['lr', 'Policy LR', 'any'], ['criticLr', 'Critic LR', 'any'], ['clip', 'Clip ε', 0.05], ['valueClip', 'Value clip', 0.05],
  ['entropyCoef', 'Entropy coef', 0.005], ['klCoef', 'KL coef', 0.01], ['gamma', 'γ (gamma)', 0.01], ['lambda', 'λ (lambda)', 0.01],
  ['epochs', 'Epochs', 1], ['minibatches', 'Minibatches', 1], ['maxGradNorm', 'Grad clip', 0.1], ['huberDelta', 'Huber δ', 1],
];

export function AlgoSettings() {
  const d = useLab(selectDraft);
  const maxTokens = d.graph.agents.every((a) => a.maxNewTokens === d.graph.agents[0]?.maxNewTokens) ? d.graph.agents[0]?.maxNewTokens ?? null : null;
  return (
    <section className="card" data-testid="algo-settings">
      <h2>Algorithm</h2>
      <h3>Run</h3>
      <div className="grid4">
        <NumberField label="Iterations" path="iterations" value={d.iterations} step={1} onChange={(v) => editDraft((c) => { c.iterations = v; })} />
        <NumberField label="Episodes / iteration" path="rollout.episodes" value={d.rollout.episodes} step={1} onChange={(v) => editDraft((c) => { c.rollout.episodes = v; })} />
        <NumberField label="Turns (horizon)" path="rollout.horizon" value={d.rollout.horizon} step={1} onChange={(v) => editDraft((c) => { c.rollout.horizon = v; })} />
        <NumberField label="Max new tokens (all agents)" path="graph.maxNewTokens" testid="field-all-max-new-tokens" value={maxTokens} step={1}
          onChange={(v) => editDraft((c) => { for (const a of c.graph.agents) a.maxNewTokens = v; })} />
        <NumberField label="Seed" path="seed" value={d.seed} step={1} onChange={(v) => editDraft((c) => { c.seed = v; })} />
      </div>
      <h3>Method</h3>
      <div className="grid4">
        <SelectField label="Level" path="level" value={d.level} options={[{ value: 'action', label: 'action (MARFT-A)' }, { value: 'token', label: 'token (MARFT-T)' }]} onChange={(v) => editDraft((c) => { c.level = v; })} />
        <SelectField label="Algorithm" path="algo" value={d.algo} options={['ppo', 'grpo']} onChange={(v) => editDraft((c) => { c.algo = v; if (v === 'grpo' && c.rollout.groupSize < 2) c.rollout.groupSize = 4; })} />
        {d.algo === 'grpo' && <NumberField label="Group size" path="rollout.groupSize" value={d.rollout.groupSize} step={1} onChange={(v) => editDraft((c) => { c.rollout.groupSize = v; })} />}
        <SelectField label="Log-prob of an action" path="ppo.logProbNorm" value={d.ppo.logProbNorm} options={['sum', 'token', 'word']} onChange={(v) => editDraft((c) => { c.ppo.logProbNorm = v; })} />
      </div>
      <h3>Credit assignment</h3>
      <div className="grid4">
        <SelectField label="Method" path="credit.method" value={d.credit.method} options={['equal', 'step_discount', 'per_step']} onChange={(v) => editDraft((c) => { c.credit.method = v; })} />
        {d.credit.method === 'step_discount' && <NumberField label="Discount d" path="credit.discount" value={d.credit.discount} step={0.05} onChange={(v) => editDraft((c) => { c.credit.discount = v; })} />}
        <CheckField label="Reward sharing (team reward only)" path="credit.rewardSharing" value={d.credit.rewardSharing} onChange={(v) => editDraft((c) => { c.credit.rewardSharing = v; })} />
      </div>
      <FieldIssues path="credit" />
      <h3>LoRA and critic</h3>
      <div className="grid4">
        <SelectField label="LoRA" path="lora.mode" value={d.lora.mode} options={[{ value: 'per_agent', label: 'one per agent' }, { value: 'shared', label: 'shared' }]} onChange={(v) => editDraft((c) => { c.lora.mode = v; })} />
        <NumberField label="Rank r" path="lora.r" value={d.lora.r} step={1} onChange={(v) => editDraft((c) => { c.lora.r = v; })} />
        <NumberField label="Alpha" path="lora.alpha" value={d.lora.alpha} step={1} onChange={(v) => editDraft((c) => { c.lora.alpha = v; })} />
        <SelectField label="Critic" path="critic.mode" value={d.critic.mode} options={[{ value: 'shared', label: 'shared head' }, { value: 'per_agent', label: 'a head per agent' }, { value: 'lora', label: 'a critic LoRA per agent' }]} onChange={(v) => editDraft((c) => { c.critic.mode = v; })} />
        <SelectField label="Critic reads" path="critic.input" value={d.critic.input} options={[{ value: 'own', label: "the agent's prompt" }, { value: 'episode', label: 'the whole episode so far' }]} onChange={(v) => editDraft((c) => { c.critic.input = v; })} />
      </div>
      <fieldset className="targets">
        <legend>LoRA targets</legend>
        {LORA_TARGETS.map((t) => (
          <label key={t} className="check">
            <input type="checkbox" checked={d.lora.targets.includes(t)}
              onChange={(e) => editDraft((c) => { c.lora.targets = e.target.checked ? [...c.lora.targets, t] : c.lora.targets.filter((x) => x !== t); })} />
            {t}
          </label>
        ))}
      </fieldset>
      <FieldIssues path="lora.targets" />
      <label className="field">
        <span>Critic MLP hidden sizes</span>
        <input type="text" value={d.critic.hidden.join(', ')} data-testid="field-critic.hidden"
          onChange={(e) => editDraft((c) => { c.critic.hidden = e.target.value.split(/[,\s]+/).filter(Boolean).map(Number); })} />
        <FieldIssues path="critic.hidden" />
      </label>
      <h3>Schedule</h3>
      <div className="grid4">
        <SelectField label="Agents train" path="schedule.mode" value={d.schedule.mode} options={[{ value: 'all', label: 'all at once' }, { value: 'agent_by_agent', label: 'agent by agent' }]} onChange={(v) => editDraft((c) => { c.schedule.mode = v; })} />
        {d.schedule.mode === 'agent_by_agent' && <NumberField label="Interval K" path="schedule.interval" value={d.schedule.interval} step={1} onChange={(v) => editDraft((c) => { c.schedule.interval = v; })} />}
        <NumberField label="Critic warm-up iterations" path="schedule.criticWarmup" value={d.schedule.criticWarmup} step={1} onChange={(v) => editDraft((c) => { c.schedule.criticWarmup = v; })} />
      </div>
      <h3>PPO hyperparameters</h3>
      <div className="grid4">
        {PPO_FIELDS.map(([k, label, step]) => (
          <NumberField key={k} label={label} path={`ppo.${k}`} value={d.ppo[k] as number} step={step} onChange={(v) => editDraft((c) => { (c.ppo as unknown as Record<string, number>)[k] = v; })} />
        ))}
        <NumberField label="Target KL (empty = off)" path="ppo.targetKl" value={d.ppo.targetKl} onChange={(v) => editDraft((c) => { c.ppo.targetKl = Number.isFinite(v) ? v : null; })} />
        <CheckField label="Normalise advantages" path="ppo.advantageNorm" value={d.ppo.advantageNorm} onChange={(v) => editDraft((c) => { c.ppo.advantageNorm = v; })} />
      </div>
    </section>
  );
}

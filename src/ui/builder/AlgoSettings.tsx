// The algorithm: level, PPO/GRPO (and GRPO's grouping), credit assignment, reward shaping, LoRA and critic
// modes, schedule, hyperparameters and the rollout size. Every field shows its validation message in place.

import { type RunConfig, defaultTargetKl } from '../../config/run-config.ts';
import { LORA_TARGETS, STEP_REWARD_NAMES } from '../../config/run-config-schema.ts';
import { suggestedStepRewards } from '../../config/run-presets.ts';
import { editDraft, selectDraft, useLab } from '../store.ts';
import { CheckField, FieldIssues, Label, NumberField, SelectField } from './fields.tsx';

type Ppo = RunConfig['ppo'];
const PPO_FIELDS: Array<[keyof Ppo, string, number | 'any']> = [
  ['lr', 'Policy LR', 'any'],
  ['criticLr', 'Critic LR', 'any'],
  ['clip', 'Clip ε', 0.05],
  ['valueClip', 'Value clip', 0.05],
  ['entropyCoef', 'Entropy coef', 0.005],
  ['klCoef', 'KL coef', 0.01],
  ['gamma', 'γ (gamma)', 0.01],
  ['lambda', 'λ (lambda)', 0.01],
  ['epochs', 'Epochs', 1],
  ['minibatches', 'Minibatches', 1],
  ['maxGradNorm', 'Grad clip', 0.1],
  ['huberDelta', 'Huber δ', 1],
];

/** ppo.targetKl as the builder offers it: the level's default (absent), off (null) or a value. */
type KlStop = 'level' | 'off' | 'value';
const klStopOf = (p: Ppo): KlStop => (p.targetKl === undefined ? 'level' : p.targetKl === null ? 'off' : 'value');

export function AlgoSettings() {
  const d = useLab(selectDraft);
  const maxTokens = d.graph.agents.every((a) => a.maxNewTokens === d.graph.agents[0]?.maxNewTokens)
    ? (d.graph.agents[0]?.maxNewTokens ?? null)
    : null;
  return (
    <section className="card" data-testid="algo-settings">
      <h2>Algorithm</h2>
      <h3>Run</h3>
      <div className="grid4">
        <NumberField
          label="Iterations"
          path="iterations"
          value={d.iterations}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.iterations = v;
            })
          }
        />
        <NumberField
          label="Episodes / iteration"
          path="rollout.episodes"
          value={d.rollout.episodes}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.rollout.episodes = v;
            })
          }
        />
        <NumberField
          label="Turns (horizon)"
          path="rollout.horizon"
          value={d.rollout.horizon}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.rollout.horizon = v;
            })
          }
        />
        <NumberField
          label="Max new tokens (all agents)"
          path="graph.maxNewTokens"
          testid="field-all-max-new-tokens"
          helpPath="graph.agents[0].maxNewTokens"
          value={maxTokens}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              for (const a of c.graph.agents) a.maxNewTokens = v;
            })
          }
        />
        <NumberField
          label="Seed"
          path="seed"
          value={d.seed}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.seed = v;
            })
          }
        />
      </div>
      <h3>Method</h3>
      <div className="grid4">
        <SelectField
          label="Level"
          path="level"
          value={d.level}
          options={[
            { value: 'action', label: 'action (MARFT-A)' },
            { value: 'token', label: 'token (MARFT-T)' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.level = v;
            })
          }
        />
        <SelectField
          label="Algorithm"
          path="algo"
          value={d.algo}
          options={['ppo', 'grpo']}
          onChange={(v) =>
            editDraft((c) => {
              c.algo = v;
              // GRPO has no critic to warm up and takes its KL penalty in the loss
              if (v === 'grpo') {
                if (c.rollout.groupSize < 2) c.rollout.groupSize = 4;
                c.schedule.criticWarmup = 0;
                c.ppo.klIn = 'loss';
              }
            })
          }
        />
        {d.algo === 'grpo' && (
          <NumberField
            label="Group size"
            path="rollout.groupSize"
            value={d.rollout.groupSize}
            step={1}
            onChange={(v) =>
              editDraft((c) => {
                c.rollout.groupSize = v;
              })
            }
          />
        )}
        {d.algo === 'grpo' && (
          <SelectField
            label="GRPO normalises over"
            path="ppo.groupNorm"
            value={d.ppo.groupNorm}
            options={[
              { value: 'pooled', label: "all tokens of a task's samples (AReaL)" },
              { value: 'agent_turn', label: 'each agent and call (AT-GRPO)' },
            ]}
            onChange={(v) =>
              editDraft((c) => {
                c.ppo.groupNorm = v;
              })
            }
          />
        )}
        <SelectField
          label="Log-prob of an action"
          path="ppo.logProbNorm"
          value={d.ppo.logProbNorm}
          options={['sum', 'token', 'word']}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.logProbNorm = v;
            })
          }
        />
      </div>
      <h3>Credit assignment</h3>
      <div className="grid4">
        <SelectField
          label="Method"
          path="credit.method"
          value={d.credit.method}
          options={['equal', 'step_discount', 'per_step']}
          onChange={(v) =>
            editDraft((c) => {
              c.credit.method = v;
              // per_step with no helper set pays every role R (step_discount's numbers): start from the planner's own step reward
              if (v === 'per_step' && !Object.keys(c.credit.perStep).length)
                c.credit.perStep = suggestedStepRewards(
                  c.graph.agents.map((a) => a.role),
                  c.env.name,
                );
            })
          }
        />
        {d.credit.method === 'step_discount' && (
          <NumberField
            label="Discount d"
            path="credit.discount"
            value={d.credit.discount}
            step={0.05}
            onChange={(v) =>
              editDraft((c) => {
                c.credit.discount = v;
              })
            }
          />
        )}
        {d.credit.method === 'per_step' && !d.credit.rewardSharing && (
          <SelectField
            label="Fallback (roles not set)"
            path="credit.fallback"
            value={d.credit.fallback ?? 'none'}
            options={[...STEP_REWARD_NAMES, { value: 'none', label: 'none (every role set)' }]}
            onChange={(v) =>
              editDraft((c) => {
                c.credit.fallback = v === 'none' ? null : v;
              })
            }
          />
        )}
        <CheckField
          label="Reward sharing (one team reward at the end)"
          path="credit.rewardSharing"
          value={d.credit.rewardSharing}
          onChange={(v) =>
            editDraft((c) => {
              c.credit.rewardSharing = v;
            })
          }
        />
        <SelectField
          label="Team reward (several answerers)"
          path="env.teamReward"
          value={d.env.teamReward ?? 'last'}
          options={[
            { value: 'last', label: 'last answer' },
            { value: 'fraction', label: 'fraction right' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.env.teamReward = v;
            })
          }
        />
      </div>
      {d.credit.method === 'per_step' && !d.credit.rewardSharing && (
        <div className="grid4" data-testid="per-step-rewards">
          {d.graph.agents.map((a) => (
            <SelectField
              key={a.role}
              label={`Step reward: ${a.role}`}
              path={`credit.perStep.${a.role}`}
              value={d.credit.perStep[a.role] ?? 'fallback'}
              options={[{ value: 'fallback', label: `fallback (${d.credit.fallback ?? 'none'})` }, ...STEP_REWARD_NAMES]}
              onChange={(v) =>
                editDraft((c) => {
                  if (v === 'fallback') delete c.credit.perStep[a.role];
                  else c.credit.perStep[a.role] = v;
                })
              }
            />
          ))}
        </div>
      )}
      <FieldIssues path="credit" />
      <h3>Reward shaping</h3>
      <div className="grid4" data-testid="reward-shaping">
        <NumberField
          label="Reward scaling"
          path="ppo.rewardScaling"
          value={d.ppo.rewardScaling}
          step={0.5}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.rewardScaling = v;
            })
          }
        />
        <NumberField
          label="Reward bias"
          path="ppo.rewardBias"
          value={d.ppo.rewardBias}
          step={0.1}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.rewardBias = v;
            })
          }
        />
        <NumberField
          label="Reward clip ±"
          path="ppo.rewardClip"
          value={d.ppo.rewardClip}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.rewardClip = v;
            })
          }
        />
        <SelectField
          label="Reward normalisation"
          path="ppo.rewardNorm"
          value={d.ppo.rewardNorm ?? 'off'}
          options={[
            { value: 'off', label: 'off' },
            { value: 'batch', label: 'over the batch' },
            { value: 'group', label: "over a task's samples" },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.rewardNorm = v === 'off' ? null : v;
            })
          }
        />
      </div>
      <h3>LoRA and critic</h3>
      <div className="grid4">
        <SelectField
          label="LoRA"
          path="lora.mode"
          value={d.lora.mode}
          options={[
            { value: 'per_agent', label: 'one per agent' },
            { value: 'shared', label: 'shared' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.lora.mode = v;
            })
          }
        />
        <NumberField
          label="Rank r"
          path="lora.r"
          value={d.lora.r}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.lora.r = v;
            })
          }
        />
        <NumberField
          label="Alpha"
          path="lora.alpha"
          value={d.lora.alpha}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.lora.alpha = v;
            })
          }
        />
        <SelectField
          label="Critic"
          path="critic.mode"
          value={d.critic.mode}
          options={[
            { value: 'shared', label: 'shared head' },
            { value: 'per_agent', label: 'a head per agent' },
            { value: 'lora', label: 'a critic LoRA per agent' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.critic.mode = v;
            })
          }
        />
        <SelectField
          label="Critic reads"
          path="critic.input"
          value={d.critic.input}
          options={[
            { value: 'own', label: "the agent's prompt" },
            { value: 'episode', label: 'the whole episode so far' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.critic.input = v;
            })
          }
        />
      </div>
      <fieldset className="targets">
        <legend>
          <Label label="LoRA targets" path="lora.targets" />
        </legend>
        {LORA_TARGETS.map((t) => (
          <label key={t} className="check">
            <input
              type="checkbox"
              checked={d.lora.targets.includes(t)}
              onChange={(e) =>
                editDraft((c) => {
                  c.lora.targets = e.target.checked ? [...c.lora.targets, t] : c.lora.targets.filter((x) => x !== t);
                })
              }
            />
            {t}
          </label>
        ))}
      </fieldset>
      <FieldIssues path="lora.targets" />
      <label className="field">
        <Label label="Critic MLP hidden sizes" path="critic.hidden" />
        <input
          type="text"
          value={d.critic.hidden.join(', ')}
          data-testid="field-critic.hidden"
          onChange={(e) =>
            editDraft((c) => {
              c.critic.hidden = e.target.value
                .split(/[,\s]+/)
                .filter(Boolean)
                .map(Number);
            })
          }
        />
        <FieldIssues path="critic.hidden" />
      </label>
      <h3>Schedule</h3>
      <div className="grid4">
        <SelectField
          label="Agents train"
          path="schedule.mode"
          value={d.schedule.mode}
          options={[
            { value: 'all', label: 'all at once' },
            { value: 'agent_by_agent', label: 'agent by agent' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.schedule.mode = v;
            })
          }
        />
        {d.schedule.mode === 'agent_by_agent' && (
          <NumberField
            label="Interval K"
            path="schedule.interval"
            value={d.schedule.interval}
            step={1}
            onChange={(v) =>
              editDraft((c) => {
                c.schedule.interval = v;
              })
            }
          />
        )}
        <NumberField
          label="Critic warm-up iterations"
          path="schedule.criticWarmup"
          value={d.schedule.criticWarmup}
          step={1}
          onChange={(v) =>
            editDraft((c) => {
              c.schedule.criticWarmup = v;
            })
          }
        />
      </div>
      <h3>PPO hyperparameters</h3>
      <div className="grid4">
        {PPO_FIELDS.map(([k, label, step]) => (
          <NumberField
            key={k}
            label={label}
            path={`ppo.${k}`}
            value={d.ppo[k] as number}
            step={step}
            onChange={(v) =>
              editDraft((c) => {
                (c.ppo as unknown as Record<string, number>)[k] = v;
              })
            }
          />
        ))}
        <SelectField
          label="KL penalty in"
          path="ppo.klIn"
          value={d.ppo.klIn}
          options={[
            { value: 'loss', label: 'the loss' },
            { value: 'reward', label: 'the rewards (AReaL)' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.klIn = v;
            })
          }
        />
        <SelectField
          label="KL estimator"
          path="ppo.klEstimator"
          value={d.ppo.klEstimator}
          options={['k1', 'k3']}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.klEstimator = v;
            })
          }
        />
        <SelectField
          label="Approx-KL early stop"
          path="ppo.earlyStop"
          value={klStopOf(d.ppo)}
          options={[
            { value: 'level', label: `level default (${defaultTargetKl(d)})` },
            { value: 'value', label: 'target' },
            { value: 'off', label: 'off' },
          ]}
          onChange={(v) =>
            editDraft((c) => {
              if (v === 'level') delete c.ppo.targetKl;
              else c.ppo.targetKl = v === 'off' ? null : defaultTargetKl(c);
            })
          }
        />
        {klStopOf(d.ppo) === 'value' && (
          <NumberField
            label="Target KL"
            path="ppo.targetKl"
            value={d.ppo.targetKl ?? null}
            onChange={(v) =>
              editDraft((c) => {
                c.ppo.targetKl = v;
              })
            }
          />
        )}
        <CheckField
          label="Normalise advantages"
          path="ppo.advantageNorm"
          value={d.ppo.advantageNorm}
          onChange={(v) =>
            editDraft((c) => {
              c.ppo.advantageNorm = v;
            })
          }
        />
      </div>
    </section>
  );
}

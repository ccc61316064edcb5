// What `marft <command> --help` prints beyond the usage line: a summary, every flag, examples. Kept as data
// (no imports) so that docs/CLI.md is generated from it (scripts/docs-reference.ts) and cannot drift.

export interface CommandHelp {
  summary: string;
  /** [flag as written in the usage, what it does]; every flag of the usage has a row (src/cli/help.test.ts). */
  flags: Array<[string, string]>;
  examples: string[];
}

const LIMITS_HELP =
  "the GPU's limits: adapter (the default) asks for the adapter's maximum, default for WebGPU's default limits, which every device has (a laptop's browser gives these): a vocabulary too large for one buffer is split across several";

export const HELP: Record<string, CommandHelp> = {
  train: {
    summary:
      "Trains a team from a run config (or resumes a run folder or checkpoint zip) on the GPU Dawn finds, writing a checkpoint on the config's cadence and at the end. Ctrl-C stops at once with the run at its last completed iteration; a second Ctrl-C quits. With --plan it trains nothing and prints the memory and time plan of one iteration on this GPU.",
    flags: [
      ['--config FILE', 'the run config (JSON; see docs/RUN-CONFIG.md); default: configs/lab.json, the duo on the built-in model'],
      ['--iterations N', "iterations to train (with --resume: that many more); default: the config's"],
      ['--out DIR', 'the run folder; default: runs/run-<time>, or the resumed folder'],
      ['--resume DIR', 'continue a run folder, a checkpoint folder or a checkpoint zip exactly (iteration, RNG, metrics)'],
      ['--json', 'one JSON line of metrics per iteration on stdout'],
      ['--keep K', 'checkpoints kept in the run folder, newest first (overrides runLoop.keepCheckpoints; 0 = all)'],
      [
        '--init-adapter ROLE=DIR',
        'start ROLE from a PEFT adapter made elsewhere (repeatable; rank, alpha and targets must match the config)',
      ],
      ['--profile', "time the last iteration: its phases and every kernel's GPU time (timestamp queries)"],
      ['--progress', 'each phase as a line on stderr instead of the progress bar (logs, scripts)'],
      ['--plan', 'print the memory plan (tensor by tensor, at the peak) and time estimate of one iteration; trains nothing'],
      ['--budget GIB', 'with --plan: a memory budget; a plan over it gets the settings to change, each re-planned'],
      ['--measure', 'with --plan: run two iterations (no checkpoints) and print the measured peaks beside the plan'],
      ['--limits default|adapter', LIMITS_HELP],
    ],
    examples: [
      'marft train --config configs/duo-action.json --out runs/duo --json',
      'marft train --resume runs/duo --iterations 20',
      'marft train --config configs/classroom.json --iterations 1 --profile',
      'marft train --plan --config configs/duo-action.json --budget 8',
    ],
  },
  eval: {
    summary:
      "Held-out accuracy of a trained checkpoint, or of the untuned base model under a config, on the environment's test (or train) split.",
    flags: [
      ['--checkpoint DIR', 'a run folder, a checkpoint folder or a checkpoint zip'],
      ['--config FILE', 'with --base: the run config whose team and environment to evaluate'],
      ['--base', 'evaluate the untuned base model (no adapters)'],
      ['--episodes N', 'episodes to evaluate (default 100)'],
      ['--split test|train', "the environment's split (default test)"],
      ['--sampled', "sample at the agents' temperatures instead of greedy decoding"],
      ['--seed S', "the evaluation's seed"],
      ['--env-options JSON', "environment options merged over the config's, for this evaluation only"],
      ['--json', 'print the result as one JSON line'],
      ['--limits default|adapter', LIMITS_HELP],
    ],
    examples: [
      'marft eval --checkpoint runs/duo --episodes 256 --split test --sampled',
      'marft eval --config configs/duo-action.json --base',
      'marft eval --checkpoint runs/duo --env-options \'{"difficulty": 3}\'',
    ],
  },
  export: {
    summary:
      "Exports a checkpoint: the agents' PEFT adapters as a zip, one agent as an ONNX graph (its adapter merged into the base weights), or an AReaL starting point (config.yaml, adapters, the lab's settings). See docs/EXPORT.md.",
    flags: [
      ['--format zip|onnx|areal', 'what to write (default zip)'],
      ['--checkpoint DIR', 'a run folder, a checkpoint folder or a checkpoint zip'],
      ['--out FILE.zip', 'the file (zip, onnx) or folder (areal) to write; written under a temporary name, then renamed'],
      ['--agent ROLE', 'onnx: the agent whose adapter is merged'],
      ['--model DIR', "onnx: a model folder to export instead of a checkpoint's (or the base model a checkpoint names)"],
      ['--adapter DIR', 'onnx with --model: a PEFT adapter folder merged into it'],
      ['--no-mask', 'onnx: no attention_mask input'],
      ['--max-positions N', "onnx: the longest sequence the graph takes (default: the model's)"],
      ['--external-data auto|on|off', 'onnx: weights in FILE.onnx.data (auto: past ~1.5 GB)'],
      ['--base-model PATH', "areal: the base model's path on the cluster (actor.path)"],
      ['--limits default|adapter', LIMITS_HELP],
    ],
    examples: [
      'marft export --checkpoint runs/duo --out adapters.zip',
      'marft export --format onnx --checkpoint runs/duo --agent solver --out solver.onnx',
      'marft export --format areal --checkpoint runs/duo --out areal-duo --base-model /models/marft-tiny',
    ],
  },
  pretrain: {
    summary:
      "Makes a small Llama model and its tokenizer from synthetic planner/solver transcripts of the coop-arith tasks (and with --tasks, the coop-plan tasks); its defaults are the built-in model's recipe (public/models/marft-tiny).",
    flags: [
      ['--out DIR', 'the model folder to write (config, tokenizer, safetensors)'],
      ['--steps 4800', 'training steps'],
      ['--seed 0', 'seed of the corpus and the initialisation'],
      ['--batch 32', 'transcripts per step'],
      ['--seq 384', 'tokens per transcript at most'],
      ['--lr 1e-3', 'peak learning rate'],
      ['--error-rate 0.4', 'share of solver solutions with a slip after a good plan'],
      ['--plan-error-rate 0.3', 'share of unhelpful plans'],
      ['--solo-misread-rate 0.95', 'share of precedence problems a solver alone reads left to right'],
      ['--precedence 0.5', 'share of multi-step expressions where reading left to right is wrong'],
      ['--teams solo,duo[,orchestrated]', 'the team shapes of the transcripts (orchestrated adds routing)'],
      ['--skip-plan-rate 0.3', 'orchestrated transcripts: share where the orchestrator calls the solver first, without a plan'],
      [
        '--tasks coop-arith[,coop-plan]',
        'the task families the corpus mixes, drawn evenly per episode (coop-plan: plans the environment checks)',
      ],
      ['--trap 0.5', 'coop-plan: share of problems where reading left to right is wrong (traps)'],
      ['--trap-plan-rate 0.6', 'coop-plan: share of traps whose plan reads left to right'],
      ['--plan-wrong-rate 0.1', 'coop-plan: share of other problems with a wrong plan'],
      ['--plan-slip-rate 0.3', 'coop-plan: share of solver solutions with a slip after a good plan'],
      ['--plan-difficulty 2,3', 'coop-plan: the task levels (2..4)'],
      ['--layers 6 --hidden 256 --heads 4 --kv-heads 2 --intermediate 688 --max-pos 512 --vocab 512', "the model's shape"],
      ['--difficulty 1,2,3', 'the task levels of the corpus'],
      ['--warmup N', 'learning-rate warm-up steps'],
      ['--weight-decay 0.1', 'AdamW weight decay'],
      ['--log-every 50', 'steps between loss lines'],
      ['--eval-every 500', 'steps between held-out evaluations (0 = none)'],
      ['--eval-n 128', 'held-out transcripts per evaluation'],
      ['--corpus 4000', 'transcripts in the corpus'],
      ['--bf16', 'store the weights in bf16'],
      ['--limits default|adapter', LIMITS_HELP],
    ],
    examples: ['marft pretrain --out public/models/marft-tiny --seed 0 --bf16'],
  },
  logits: {
    summary:
      'Prints the logits of a model folder (optionally with a PEFT adapter) for a list of token ids, as JSON rows: to compare with transformers.',
    flags: [
      ['--model DIR', 'a Hugging Face model folder (config.json, safetensors)'],
      ['--adapter DIR', 'a PEFT adapter folder applied to it'],
      ['--ids 1,2,3', 'the input token ids'],
      ['--f32', 'load the weights as float32 (as for training) instead of their stored format'],
      ['--limits default|adapter', LIMITS_HELP],
    ],
    examples: ['marft logits --model fixtures/parity/qwen2-tiny --ids 1,2,3'],
  },
  tokenize: {
    summary: "Prints the token ids of a text under a model folder's tokenizer, as JSON. Needs no GPU.",
    flags: [
      ['--model DIR', 'a folder with tokenizer.json and tokenizer_config.json'],
      ['--text "..."', 'the text to encode'],
      ['--no-special', "without the tokenizer's special tokens"],
    ],
    examples: ['marft tokenize --model public/models/marft-tiny --text "2 + 3 * 4"'],
  },
  env: {
    summary:
      'Checks an environment module without a model or a GPU: resets each seed, steps with sample texts, replays the seed in a fresh instance, and prints the tasks, the step results, determinism and timings. Exits 1 naming the module, the call and the problem when a check fails. See docs/ENVIRONMENTS.md.',
    flags: [
      ['--module FILE', 'the environment module (an ES module whose default export is a factory)'],
      ['--seeds N', 'seeds to check (default 5)'],
      ['--options JSON', "the module's options"],
      ['--roles a,b', "the roles that speak; each says the turn's text (default solver)"],
      ['--texts JSON', 'a JSON array of sample texts, one per turn'],
      ['--time-limit MS', 'time limit of each call into the module'],
      ['--json', 'print the report as one JSON line'],
    ],
    examples: [
      'marft env test --module examples/guess.mjs --seeds 5 --texts \'["\\\\boxed{8}", "\\\\boxed{4}"]\'',
      'marft env test --module examples/verifier.mjs --roles solver,verifier',
    ],
  },
  inspect: {
    summary:
      "The inspector's numbers for recorded episodes, with no model and no GPU: per action (or token) the credited reward, the critic value, δ, the advantage and the return, from the trainer's own code under the config's level, algorithm and credit method. The lab's Inspect tab downloads episodes in this format (docs/GUIDE.md).",
    flags: [
      ['--config RUN.json', 'the run config (level, algorithm, credit, γ, λ, groupSize)'],
      ['--episodes FILE.jsonl', 'one episode a line'],
      ['--credit equal|step_discount|per_step', "another credit method than the config's"],
      ['--json', 'one JSON line per episode instead of a table'],
    ],
    examples: ['marft inspect --config configs/duo-action.json --episodes episodes.jsonl --credit per_step --json'],
  },
};

/** What `marft <name> --help` prints. */
export function commandHelp(name: string, usage: string): string {
  const h = HELP[name];
  if (!h) return `usage: ${usage}`;
  const width = Math.max(...h.flags.map(([f]) => f.length));
  return [
    `usage: ${usage}`,
    '',
    h.summary,
    '',
    'options:',
    ...h.flags.map(([f, t]) => `  ${f.length > 40 ? `${f}\n  ${' '.repeat(Math.min(width, 40))}` : f.padEnd(Math.min(width, 40))}  ${t}`),
    '',
    'examples:',
    ...h.examples.map((e) => `  ${e}`),
  ].join('\n');
}

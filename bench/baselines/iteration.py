"""PyTorch peer for `npm run bench:iteration`: one MARFT iteration with transformers + peft, the way the
reference MARFT code runs it: 2 agents (planner -> solver, one LoRA adapter each, r 8 / alpha 16 on q_proj and
v_proj), 8 episodes, `generate` with the KV cache (sampling, exactly NEW tokens per agent), then scoring
(policy log-probs; reference log-probs and critic values with adapters disabled), token-level GAE, and one
PPO epoch (clipped surrogate + entropy, critic MLP 576 -> 1024 -> 512 -> 1 on the frozen trunk's hidden
states, AdamW). fp32 with TF32 off. Usage: python3 bench/baselines/iteration.py [--iterations 5] --out FILE.json
(--iterations N: N timed iterations after the warm-up, each phase their median, as bench:iteration does;
--profile: then one more iteration whose update runs under torch.profiler, printing its CUDA kernels by GPU time).
"""
import argparse, contextlib, json, statistics, time
import torch
import torch.nn.functional as F
from transformers import LlamaConfig, LlamaForCausalLM
from peft import LoraConfig, get_peft_model

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
MODELS = {
    'smollm2-135m': dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, tie_word_embeddings=True),
    'tiny': dict(vocab_size=512, hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    'smollm2-360m': dict(vocab_size=49152, hidden_size=960, intermediate_size=2560, num_hidden_layers=32, num_attention_heads=15,
                         num_key_value_heads=5, tie_word_embeddings=True),
    # Qwen2 (q/k/v biases): bench/random-model.ts's qwen2.5-0.5b
    'qwen2.5-0.5b': dict(model_type='qwen2', vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                         num_attention_heads=14, num_key_value_heads=2, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True),
}


def make_base(name, dev):
    """A random model of the shape `name`: Llama, or Qwen2 where the shape says so."""
    dims = dict(MODELS[name])
    if dims.pop('model_type', 'llama') == 'qwen2':
        from transformers import Qwen2Config, Qwen2ForCausalLM
        cfg = Qwen2Config(**dims, max_position_embeddings=4096)
        return cfg, Qwen2ForCausalLM(cfg).to(dev)
    cfg = LlamaConfig(**dims, max_position_embeddings=4096)
    return cfg, LlamaForCausalLM(cfg).to(dev)


def token_logp(logits, targets):
    lp = F.log_softmax(logits.float(), -1)
    return lp.gather(-1, targets.unsqueeze(-1)).squeeze(-1), -(lp.exp() * lp).sum(-1)


def iteration(model, critic, opt, B, P, NEW, V, dev, update_ctx=contextlib.nullcontext):
    """P: each agent's prompt length; the solver's prompt is the end of the planner's sequence and 16 new tokens."""
    sync = torch.cuda.synchronize
    t0 = time.perf_counter()
    seqs, plens = [], []
    ctx = torch.randint(1, V, (B, P[0]), device=dev)
    for i, agent in enumerate(('planner', 'solver')):
        model.set_adapter(agent)
        with torch.no_grad():
            out = model.generate(input_ids=ctx, attention_mask=torch.ones_like(ctx), max_new_tokens=NEW, min_new_tokens=NEW,
                                 do_sample=True, top_k=0, top_p=1.0, pad_token_id=0)
        seqs.append(out)
        plens.append(ctx.shape[1])
        if i + 1 < len(P):  # the next agent's prompt: the end of this sequence and a transition of 16 tokens
            keep = out[:, -min(P[i + 1] - 16, out.shape[1]):]
            fill = P[i + 1] - keep.shape[1]
            ctx = torch.cat([torch.randint(1, V, (B, fill - 16), device=dev), keep, torch.randint(1, V, (B, 16), device=dev)], 1) if fill > 16 else torch.cat([keep, torch.randint(1, V, (B, 16), device=dev)], 1)
    sync(); t1 = time.perf_counter()
    old, ref, vals, hid = [], [], [], []
    with torch.no_grad():
        for agent, seq, p in zip(('planner', 'solver'), seqs, plens):
            model.set_adapter(agent)
            lg = model(input_ids=seq).logits[:, p - 1:-1]
            old.append(token_logp(lg, seq[:, p:])[0])
            with model.disable_adapter():
                o = model(input_ids=seq, output_hidden_states=True)
            ref.append(token_logp(o.logits[:, p - 1:-1], seq[:, p:])[0])
            h = o.hidden_states[-1][:, p - 1:-1]
            hid.append(h)
            vals.append(critic(h).squeeze(-1))
    sync(); t2 = time.perf_counter()
    # token-level GAE over [planner tokens, solver tokens] per episode, reward on the last token
    v = torch.cat(vals, 1)
    r = torch.zeros_like(v); r[:, -1] = (torch.rand(B, device=dev) > 0.5).float()
    adv = torch.zeros_like(v); last = torch.zeros(B, device=dev)
    for k in range(v.shape[1] - 1, -1, -1):
        nv = v[:, k + 1] if k + 1 < v.shape[1] else torch.zeros(B, device=dev)
        last = r[:, k] + 0.99 * nv - v[:, k] + 0.99 * 0.95 * last
        adv[:, k] = last
    ret = adv + v
    adv = (adv - adv.mean()) / (adv.std() + 1e-5)
    sync(); t3 = time.perf_counter()
    with update_ctx():
        update(model, critic, opt, seqs, plens, old, adv, hid, ret, NEW)
        sync()
    t4 = time.perf_counter()
    return dict(rollout_s=t1 - t0, score_s=t2 - t1, advantages_s=t3 - t2, update_s=t4 - t3, total_s=t4 - t0)


def update(model, critic, opt, seqs, plens, old, adv, hid, ret, NEW):
    opt.zero_grad()
    for i, (agent, seq, p) in enumerate(zip(('planner', 'solver'), seqs, plens)):
        model.set_adapter(agent)
        lg = model(input_ids=seq).logits[:, p - 1:-1]
        lp, ent = token_logp(lg, seq[:, p:])
        a = adv[:, i * NEW:(i + 1) * NEW]
        ratio = (lp - old[i]).exp()
        loss = torch.max(-ratio * a, -ratio.clamp(0.8, 1.2) * a).mean() - 0.01 * ent.mean()
        loss.backward()
    vloss = F.huber_loss(critic(torch.cat(hid, 1)).squeeze(-1), ret, delta=10.0)
    vloss.backward()
    torch.nn.utils.clip_grad_norm_([p for g in opt.param_groups for p in g['params']], 0.5)
    opt.step()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--models', default='smollm2-135m')
    ap.add_argument('--episodes', type=int, default=8)
    ap.add_argument('--new', type=int, default=128)
    # each agent's prompt tokens: bench:iteration prints its own (promptTokens) for the peer to match;
    # 64,208 is a 64-token task and the planner's whole sequence plus a 16-token transition for the solver
    ap.add_argument('--prompts', default='64,208')
    ap.add_argument('--iterations', type=int, default=1, help='timed iterations; each phase reports its median')
    ap.add_argument('--profile', action='store_true', help="one more iteration, its update's CUDA kernels by GPU time")
    ap.add_argument('--out', default='')
    a = ap.parse_args()
    dev = 'cuda'
    rows = []
    for name in a.models.split(','):
        torch.manual_seed(0)
        cfg, base = make_base(name, dev)
        lcfg = LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj'], lora_dropout=0.0, task_type='CAUSAL_LM')
        model = get_peft_model(base, lcfg, adapter_name='planner')
        model.add_adapter('solver', lcfg)
        C = cfg.hidden_size
        critic = torch.nn.Sequential(torch.nn.Linear(C, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1)).to(dev)
        params = [p for n, p in model.named_parameters() if 'lora_' in n] + list(critic.parameters())
        for p in params:
            p.requires_grad_(True)
        opt = torch.optim.AdamW(params, lr=1e-6, eps=1e-5)
        P = [int(x) for x in a.prompts.split(',')]
        iteration(model, critic, opt, a.episodes, P, a.new, cfg.vocab_size, dev)  # warm-up
        torch.cuda.reset_peak_memory_stats()
        runs = [iteration(model, critic, opt, a.episodes, P, a.new, cfg.vocab_size, dev) for _ in range(max(1, a.iterations))]
        t = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        row = dict(model=name, prompts=a.prompts, iterations=len(runs), **t, peak_mib=torch.cuda.max_memory_allocated() / 2**20)
        print(json.dumps(row), flush=True)
        if a.profile:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CUDA])
            iteration(model, critic, opt, a.episodes, P, a.new, cfg.vocab_size, dev, update_ctx=lambda: prof)
            print(f'update kernels of one iteration ({name}):')
            print(prof.key_averages().table(sort_by='cuda_time_total', row_limit=30, max_name_column_width=70))
        rows.append(row)
    out = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'rows': rows}
    if a.out:
        with open(a.out, 'w') as f:
            json.dump(out, f)


if __name__ == '__main__':
    main()

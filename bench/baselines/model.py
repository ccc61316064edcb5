"""PyTorch peer for `npm run bench:model`: transformers + peft on the same GPU, the same shapes and work:
a LoRA (r 8, alpha 16, q_proj and v_proj) forward+backward of sum(logits * w) over B x T tokens, and
greedy `generate` with the KV cache of NEW tokens after a P-token prompt for B sequences; fp32 (TF32 off)
and bf16. Usage: python3 bench/baselines/model.py --out FILE.json [--batch 8 --seq 256 --prompt 32 --new 128]
"""
import argparse, json, time
import torch
from transformers import LlamaConfig, LlamaForCausalLM
from peft import LoraConfig, get_peft_model

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False

MODELS = {
    'tiny': dict(vocab_size=512, hidden_size=256, intermediate_size=704, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2),
    'smollm2-135m': dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, tie_word_embeddings=True),
}


def sync_time(fn, reps):
    fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / reps


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--batch', type=int, default=8)
    ap.add_argument('--seq', type=int, default=256)
    ap.add_argument('--prompt', type=int, default=32)
    ap.add_argument('--new', type=int, default=128)
    ap.add_argument('--models', default='tiny,smollm2-135m')
    ap.add_argument('--out', default='')
    a = ap.parse_args()
    rows = []
    for name in a.models.split(','):
        for dtype, tdt in (('fp32', torch.float32), ('bf16', torch.bfloat16)):
            torch.manual_seed(0)
            cfg = LlamaConfig(**MODELS[name], max_position_embeddings=4096)
            model = LlamaForCausalLM(cfg).to('cuda', tdt)
            model = get_peft_model(model, LoraConfig(r=8, lora_alpha=16, target_modules=['q_proj', 'v_proj'], lora_dropout=0.0, task_type='CAUSAL_LM'))
            ids = torch.randint(0, cfg.vocab_size, (a.batch, a.seq), device='cuda')
            w = torch.randn(a.batch, a.seq, cfg.vocab_size, device='cuda', dtype=tdt) * 1e-3

            def step():
                out = model(input_ids=ids).logits
                (out * w).sum().backward()
            t = sync_time(step, 5)
            model.eval()
            prompt = torch.randint(0, cfg.vocab_size, (a.batch, a.prompt), device='cuda')
            gen = lambda: model.generate(input_ids=prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=a.new,
                                         min_new_tokens=a.new, do_sample=False, pad_token_id=0)
            with torch.no_grad():
                td = sync_time(gen, 1)
            row = {'model': name, 'dtype': dtype, 'fwd_bwd_tok_s': a.batch * a.seq / t, 'decode_tok_s': a.batch * a.new / td,
                   'peak_mib': torch.cuda.max_memory_allocated() / 2**20}
            print(json.dumps(row), flush=True)
            rows.append(row)
            del model
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
    out = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'rows': rows}
    if a.out:
        with open(a.out, 'w') as f:
            json.dump(out, f)


if __name__ == '__main__':
    main()

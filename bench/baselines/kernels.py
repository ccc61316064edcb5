"""PyTorch peer for `npm run bench:kernels`: fp32 matmul (TF32 off) and causal SDPA on the same GPU.

Usage: python3 bench/baselines/kernels.py --matmul 4096x4096x4096,1024x1024x1024 --attn 4x512x9x3x64 --out FILE.json
"""
import argparse, json, time
import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def timed(fn, reps, rounds=5):
    """Milliseconds a call: the median over `rounds` of a loop of `reps` calls (launched asynchronously, as
    bench:kernels streams its dispatches), after a warm-up of a tenth of a second."""
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < 0.1:
        fn()
        torch.cuda.synchronize()
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1000 / reps)
    return sorted(times)[len(times) // 2]


def reps_for(flops):
    """About 0.1 s of work a round at 50 TFLOP/s, 20 to 500 calls."""
    return max(20, min(500, round(5e12 / flops)))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--matmul', default='4096x4096x4096')
    ap.add_argument('--attn', default='')
    ap.add_argument('--out', default='')
    args = ap.parse_args()
    dev = 'cuda'
    rows = []
    for s in filter(None, args.matmul.split(',')):
        M, N, K = map(int, s.split('x'))
        a = torch.randn(M, K, device=dev)
        b = torch.randn(K, N, device=dev)
        ms = timed(lambda: a @ b, reps_for(2 * M * N * K))
        rows.append({'op': 'matmul', 'shape': s, 'ms': ms, 'gflops': 2 * M * N * K / ms / 1e6})
    for s in filter(None, args.attn.split(',')):
        B, T, NH, NKV, HS = map(int, s.split('x'))
        q = torch.randn(B, NH, T, HS, device=dev, requires_grad=True)
        k = torch.randn(B, NKV, T, HS, device=dev, requires_grad=True)
        v = torch.randn(B, NKV, T, HS, device=dev, requires_grad=True)
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        ms = timed(fwd, 20)
        o = fwd()
        g = torch.randn_like(o)
        bwd_ms = timed(lambda: torch.autograd.grad(fwd(), (q, k, v), g), 10) - ms
        flops = 4 * B * NH * T * T * HS / 2
        rows.append({'op': 'attention', 'shape': s, 'ms': ms, 'gflops': flops / ms / 1e6, 'bwd_ms': bwd_ms, 'bwd_gflops': 2.5 * flops / bwd_ms / 1e6})
    out = {'device': torch.cuda.get_device_name(0), 'torch': torch.__version__, 'rows': rows}
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, 'w') as f:
            json.dump(out, f)


if __name__ == '__main__':
    main()

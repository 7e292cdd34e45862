#!/usr/bin/env python3
"""PyTorch GPU peer of the CUDA decode benchmark (bench-cuda.c): the upstream decoders on the same
GPU at the same precision, the upstream way (the module converted with .to(dtype), eager,
channels_last, torch.backends.cudnn.benchmark on), and the GPU's matmul peak at that precision.

    python cuda_torch.py peak --dtype bf16 [--n 8192] [--runs 10]
    python cuda_torch.py time --model taef2|kl|wan|wan22 --dir DIR --dtype bf16 [--runs 20] [--warmup 3]
                              [--taef2 PATH --height-latent 64 --width-latent 64] [--compile]

--dtype: fp32 (TF32 off for cuDNN and matmuls), tf32 (fp32 storage, TF32 on for both), fp16, bf16.
Needs torch with CUDA, and diffusers for kl and wan. The decoders are built by the CPU peers'
code: TAEF2 by tests/data/taesd_torch.py (as taef2_torch.py does), AutoencoderKL by kl_torch.py,
the Wan 2.1 and 2.2 VAEs by video_torch.py (diffusers' AutoencoderKL / AutoencoderKLWan), on the
files in DIR: taef2.latent.f32 (raw f32 [1, z, H, W], written by bench-cuda), kl_sd.safetensors +
kl.json + kl.latent.f32 (kl_torch.py gen), wan21_b96.safetensors + wan.json + wan.latent.f32
(video_torch.py gen --only wan), wan22_b256.safetensors + wan22.json + wan22.latent.f32 (--only
wan22). --compile: the decoder module through torch.compile (default mode) after the reference;
its compilation falls in the warm-up.

`peak` prints, last: cuda_peak tflops=<f> ms=<f> dtype=<d> n=<n> torch=<v>
(the best of --runs rounds of 10 back-to-back n x n x n products timed with CUDA events).

`time` moves the module and the latent to the GPU (outside the timing), decodes once in fp32 with
TF32 off (the reference, on the weights as the file has them), converts both to the precision,
then runs --warmup untimed and --runs timed decodes (wan: streams of all T latent frames), each
timed on the wall clock from a synchronized start to torch.cuda.synchronize(). It writes DIR/<model>.torch.f32 (the last timed output, as f32) and DIR/<model>.ref32.f32
([F, 3, H, W], as upstream returns it: AutoencoderKL and TAEF2 raw, Wan clamped to [-1, 1])
and prints, last:

    cuda_peer model=<m> ms=<f> min_ms=<f> first_ms=<f> stream_ms=<f> ref_ms=<f> dtype=<d>
        layout=channels_last torch=<v> load_mib=<f> peak_mib=<f> reserved_mib=<f> compiled=<0|1>

(one line). ms: per output frame (taef2, kl: per decode; wan: steady state, the latent frames
after the first, 4 frames each: diffusers' decode runs vae.decoder once per latent frame, and CUDA
events recorded by a forward pre-hook and hook on vae.decoder time each call; first_ms = call 0,
stream_ms = the whole decode; -1 for the image decoders). Memory: load_mib =
torch.cuda.memory_allocated() once the module is on the GPU; peak_mib = max_memory_allocated()
and reserved_mib = max_memory_reserved() over the timed decodes (the statistics reset after the
warm-up, whose cudnn.benchmark trials take large workspaces), weights included.
"""

import argparse
import json
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "data"))
from video_torch import input_layout, load_latent, log, to_layout  # noqa: E402

DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
VIDEO = ("wan", "wan22")  # streams of latent frames: the first gives 1 frame, each later one 4


def set_precision(dtype):
    tf32 = dtype == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def mib(b):
    return b / 1048576.0


def cmd_peak(args):
    set_precision(args.dtype)
    dt = DTYPES[args.dtype]
    g = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn((args.n, args.n), device="cuda", dtype=dt, generator=g)
    b = torch.randn((args.n, args.n), device="cuda", dtype=dt, generator=g)
    for _ in range(3):
        torch.matmul(a, b)
    best = None
    for _ in range(args.runs):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10):
            torch.matmul(a, b)
        e1.record()
        torch.cuda.synchronize()
        ms = e0.elapsed_time(e1) / 10
        best = ms if best is None else min(best, ms)
    tflops = 2.0 * args.n ** 3 / (best / 1e3) / 1e12
    log(f"{torch.cuda.get_device_name()}: {args.n}x{args.n}x{args.n} {args.dtype} matmul, best of {args.runs} "
        f"rounds of 10: {best:.3f} ms, {tflops:.1f} TFLOP/s")
    log(f"cuda_peak tflops={tflops:.3f} ms={best:.4f} dtype={args.dtype} n={args.n} torch={torch.__version__}")


def build(args):
    """(module on the GPU in fp32, forward(z) -> output, latent on the GPU in fp32, [T, ...] info)"""
    if args.model == "taef2":
        import taesd_torch as tt
        sd, _ = tt.load_safetensors(args.taef2)
        m = tt.TaesdDecoder.from_state_dict(sd).eval()
        import numpy as np
        a = np.fromfile(os.path.join(args.dir, "taef2.latent.f32"), dtype="<f4")
        shape = (1, m.z, args.height_latent, args.width_latent)
        assert a.size == m.z * args.height_latent * args.width_latent, (a.size, shape)
        z = torch.from_numpy(a.reshape(shape).copy())
        return m, m, z, 1
    if args.model == "kl":
        from kl_torch import make_vae
        with open(os.path.join(args.dir, "kl.json")) as f:
            info = json.load(f)
        _, C, H, W = info["latent"]
        vae = load_weights(make_vae(), os.path.join(args.dir, info["weights"]))
        import numpy as np
        a = np.fromfile(os.path.join(args.dir, "kl.latent.f32"), dtype="<f4")
        z = torch.from_numpy(a.reshape(1, C, H, W).copy())
        return vae, lambda x: vae.decode(x).sample, z, 1
    from video_torch import make_wan, make_wan22
    with open(os.path.join(args.dir, f"{args.model}.json")) as f:
        info = json.load(f)
    T, C, H, W = info["latent"]
    vae = load_weights(make_wan22() if args.model == "wan22" else make_wan(), os.path.join(args.dir, info["weights"]))
    z = load_latent(os.path.join(args.dir, f"{args.model}.latent.f32"), T, C, H, W).permute(1, 0, 2, 3).unsqueeze(0)
    return vae, lambda x: vae.decode(x).sample, z, T


def load_weights(vae, path):
    from safetensors.torch import load_file
    r = vae.load_state_dict(load_file(path), strict=False)
    assert not r.unexpected_keys, r.unexpected_keys
    assert all(k.startswith(("encoder.", "quant_conv.")) for k in r.missing_keys), r.missing_keys
    vae.encoder = None  # never used: not on the GPU
    vae.quant_conv = None
    return vae.eval()


def as_frames(y, model):
    """[F, 3, H, W] f32 on the host"""
    y = y.float()
    return (y[0].permute(1, 0, 2, 3) if model in VIDEO else y).contiguous().cpu()


def timed(fn, x):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    y = fn(x)
    torch.cuda.synchronize()
    return y, (time.perf_counter() - t0) * 1e3


def cmd_time(args):
    dt = DTYPES[args.dtype]
    m, fn, z, T = build(args)
    m = to_layout(m.to("cuda"), "channels_last")
    z = input_layout(z.to("cuda"), "channels_last")
    if z.dim() == 4:
        z = z.contiguous(memory_format=torch.channels_last)
    # the reference first, while the weights are the file's: the decode in fp32, TF32 off, without
    # cudnn.benchmark (under it the AutoencoderKL 1024x1024 reference took 45 s on an H200)
    set_precision("fp32")
    torch.backends.cudnn.benchmark = False
    with torch.inference_mode():
        yr, ref_ms = timed(fn, z)
        ref = as_frames(yr, args.model)
    torch.backends.cudnn.benchmark = True
    ref.numpy().astype("<f4").tofile(os.path.join(args.dir, f"{args.model}.ref32.f32"))
    del yr
    torch.cuda.empty_cache()  # its blocks are not the timed decodes' memory
    set_precision(args.dtype)
    m.to(dt)
    z = z.to(dt)
    if args.compile:  # (the decoder: the module every call of a stream runs; TAEF2 is one)
        if args.model == "taef2":
            fn = torch.compile(m)
        else:
            m.decoder = torch.compile(m.decoder)
    torch.cuda.synchronize()
    load = torch.cuda.memory_allocated()
    log(f"{args.model}: {sum(p.numel() for p in m.parameters()) / 1e6:.2f} M parameters on "
        f"{torch.cuda.get_device_name()}, {args.dtype} (dtype {dt}, cuDNN TF32 {torch.backends.cudnn.allow_tf32}, "
        f"matmul TF32 {torch.backends.cuda.matmul.allow_tf32}), channels_last, cudnn.benchmark{', torch.compile' if args.compile else ''}; latent "
        f"{tuple(z.shape)}; torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}; "
        f"{mib(load):.1f} MiB allocated after loading")

    # wan, wan22: CUDA events around every vae.decoder call (one per latent frame)
    calls = []
    if args.model in VIDEO:
        def pre(mod, a, kw):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            calls.append([e, None])

        def post(mod, a, kw, out):
            e = torch.cuda.Event(enable_timing=True)
            e.record()
            calls[-1][1] = e

        hooks = [m.decoder.register_forward_pre_hook(pre, with_kwargs=True),
                 m.decoder.register_forward_hook(post, with_kwargs=True)]
    per_frame, firsts, streams = [], [], []
    with torch.inference_mode():
        for i in range(args.warmup + args.runs):
            if i == args.warmup:
                torch.cuda.synchronize()
                torch.cuda.reset_peak_memory_stats()  # not cudnn.benchmark's trials in the warm-up
            calls.clear()
            y, ms = timed(fn, z)
            if i < args.warmup:
                continue
            if args.model in VIDEO:
                assert len(calls) == T, (len(calls), T)
                c = [a.elapsed_time(b) for a, b in calls]
                per_frame.append(sum(c[1:]) / (4 * (T - 1)))
                firsts.append(c[0])
                streams.append(ms)
            else:
                per_frame.append(ms)
        if args.model in VIDEO:
            for h in hooks:
                h.remove()
        torch.cuda.synchronize()
        peak, reserved = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
        out = as_frames(y, args.model)
        if not bool(torch.isfinite(out).all()):
            sys.exit(f"{args.model}: non-finite output at {args.dtype}")
        out.numpy().astype("<f4").tofile(os.path.join(args.dir, f"{args.model}.torch.f32"))
    mean = sum(per_frame) / len(per_frame)
    first = sum(firsts) / len(firsts) if firsts else -1.0
    stream = sum(streams) / len(streams) if streams else -1.0
    d = (out - ref).abs().max().item()
    log(f"{args.model}: {args.runs} timed {'streams' if args.model in VIDEO else 'decodes'} after {args.warmup} "
        f"warm-up: ms/frame mean {mean:.3f} min {min(per_frame):.3f}"
        + (f"; first latent {first:.2f} ms, stream {stream:.1f} ms" if firsts else "")
        + f"; output {tuple(out.shape)} in [{out.min().item():.3f}, {out.max().item():.3f}], max |{args.dtype} - "
        f"fp32| {d:.3g}; fp32 reference decode {ref_ms:.1f} ms")
    log(f"cuda_peer model={args.model} ms={mean:.4f} min_ms={min(per_frame):.4f} first_ms={first:.4f} "
        f"stream_ms={stream:.3f} ref_ms={ref_ms:.3f} dtype={args.dtype} layout=channels_last "
        f"torch={torch.__version__} load_mib={mib(load):.1f} peak_mib={mib(peak):.1f} "
        f"reserved_mib={mib(reserved):.1f} compiled={int(args.compile)}")


def main():
    ap = argparse.ArgumentParser(description="PyTorch GPU peer of the CUDA decode benchmark")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("peak", help="the GPU's matmul TFLOP/s at a precision")
    p.add_argument("--dtype", choices=DTYPES, default="bf16")
    p.add_argument("--n", type=int, default=8192)
    p.add_argument("--runs", type=int, default=10)
    t = sub.add_parser("time", help="time an upstream decoder on the GPU")
    t.add_argument("--model", choices=["taef2", "kl", *VIDEO], required=True)
    t.add_argument("--dir", required=True)
    t.add_argument("--dtype", choices=DTYPES, default="bf16")
    t.add_argument("--runs", type=int, default=20, help="timed decodes (wan: streams)")
    t.add_argument("--warmup", type=int, default=3, help="untimed decodes (wan: streams) first")
    t.add_argument("--taef2", help="taef2_decoder.safetensors (taef2 only)")
    t.add_argument("--height-latent", type=int, default=64, help="taef2 only (kl, wan: from DIR/*.json)")
    t.add_argument("--width-latent", type=int, default=64)
    t.add_argument("--compile", action="store_true", help="the decoder through torch.compile")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        sys.exit(f"torch {torch.__version__} sees no CUDA device")
    if args.cmd == "peak":
        if args.n < 1 or args.runs < 1:
            sys.exit("--n >= 1, --runs >= 1")
        cmd_peak(args)
    else:
        if args.runs < 1 or args.warmup < 0:
            sys.exit("--runs >= 1, --warmup >= 0")
        if args.model == "taef2" and not args.taef2:
            sys.exit("--taef2 PATH is needed for --model taef2")
        cmd_time(args)


if __name__ == "__main__":
    main()

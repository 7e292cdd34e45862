#!/usr/bin/python3
"""PyTorch CPU peer for the TAEF2 decode benchmark.

    /usr/bin/python3 tests/bench/taef2_torch.py --model ../shared/models/taef2_decoder.safetensors \
        [--height-latent 60] [--width-latent 104] [--frames 5] [--warmup 1] [--threads N] \
        [--best-layout] [--dtype fp32|bf16] [--verbose]

Decodes one random latent frame [1,32,H,W] in fp32 (torch.inference_mode), `--warmup` untimed
runs then `--frames` timed runs; with `--dtype bf16` the module and the latent are cast to
bfloat16 (`.to(torch.bfloat16)`, the upstream way; PyTorch runs its convolutions through oneDNN's
bf16 kernels where the CPU has AVX512-BF16 or AMX). The last line printed is always

    torch_ms_per_frame=<float> threads=<int> torch=<version>[ layout=<nchw|channels_last>] dtype=<fp32|bf16>

(`layout=` only with --best-layout, which times both NCHW and channels_last and reports the
faster). The model is loaded with tests/data/taesd_torch.py (own module from MODELS.md).
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
import taesd_torch as tt  # noqa: E402


def time_layout(model, x, frames, warmup, layout):
    fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
    m = model.to(memory_format=fmt)
    xi = x.contiguous(memory_format=fmt)
    with torch.inference_mode():
        for _ in range(warmup):
            m(xi)
        times = []
        for _ in range(frames):
            t0 = time.perf_counter()
            y = m(xi)
            times.append(time.perf_counter() - t0)
    assert y.shape == (x.shape[0], 3, 8 * x.shape[2], 8 * x.shape[3]), y.shape
    return times


def main():
    ap = argparse.ArgumentParser(description="PyTorch CPU TAEF2 decode benchmark")
    ap.add_argument("--model", required=True, help="taef2_decoder.safetensors (any TAESD naming)")
    ap.add_argument("--height-latent", type=int, default=60)
    ap.add_argument("--width-latent", type=int, default=104)
    ap.add_argument("--frames", type=int, default=5, help="timed runs (one frame each)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--best-layout", action="store_true",
                    help="time NCHW and channels_last, report the faster")
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()

    # Debian's torch defaults to 1 thread here: always set it explicitly.
    torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    if threads != args.threads:
        print(f"warning: asked for {args.threads} threads, torch uses {threads}")
    if args.verbose:
        info = torch.__config__.parallel_info().splitlines()
        print("\n".join(info[:8]))

    sd, _ = tt.load_safetensors(args.model)
    model = tt.TaesdDecoder.from_state_dict(sd).eval()
    g = torch.Generator().manual_seed(args.seed)
    x = torch.randn((1, model.z, args.height_latent, args.width_latent), generator=g)
    if args.dtype == "bf16":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    print(f"model {args.model}: z={model.z} width={model.width} midblock_gn={model.midblock_gn}; "
          f"latent {tuple(x.shape)} -> [1, 3, {8 * args.height_latent}, {8 * args.width_latent}]")

    layouts = ["nchw", "channels_last"] if args.best_layout else ["nchw"]
    results = {}
    for layout in layouts:
        times = time_layout(model, x, args.frames, args.warmup, layout)
        ms = [t * 1e3 for t in times]
        mean = sum(ms) / len(ms)
        results[layout] = mean
        print(f"{layout}: {args.frames} frames, ms/frame mean {mean:.1f} min {min(ms):.1f} "
              f"max {max(ms):.1f}")
    best = min(results, key=results.get)
    line = f"torch_ms_per_frame={results[best]:.3f} threads={threads} torch={torch.__version__}"
    if args.best_layout:
        line += f" layout={best}"
    print(line + f" dtype={args.dtype}")


if __name__ == "__main__":
    main()

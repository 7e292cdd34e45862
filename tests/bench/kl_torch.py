#!/usr/bin/env python3
"""PyTorch CPU peer for the AutoencoderKL part of the decode benchmark (bench-cpu.c): diffusers'
`AutoencoderKL` with the SD 1.x/2.x / SDXL decoder at full width (block_out_channels
(128, 256, 512, 512), 2 layers per block = 3 resnets per decoder level, latent 4 channels,
post_quant_conv; 49.5 M decoder parameters), random weights.

    python kl_torch.py gen  --out DIR [--height-latent 128] [--width-latent 128] [--seed 1234]
    python kl_torch.py time --dir DIR [--runs 2] [--warmup 1] [--threads N]
                            [--layouts nchw,channels_last] [--dtype fp32|bf16]

Needs torch >= 2 and diffusers (Debian's torch 1.13 cannot import current diffusers).
No upstream code is copied here.

`gen` writes into DIR (a temporary directory; never the repository):
  kl_sd.safetensors  `vae.state_dict()` restricted to post_quant_conv.* and decoder.* (diffusers
                     naming), F32: the module's default initialisation under torch.manual_seed
  kl.latent.f32      raw little-endian f32 [1, 4, H, W], N(0, 1) (the VAE's raw latent z)
  kl.json            shapes, parameter count and the generator's output statistics

`time` builds the module again, loads the decoder weights, and for every memory layout decodes
`--warmup` untimed and then `--runs` timed latents with `vae.decode(z)` (`torch.inference_mode`,
`torch.set_num_threads`; fp32, or with `--dtype bf16` the module and the latent cast with
`.to(torch.bfloat16)`, the upstream way, as taef2_torch.py, the output converted to float); it
writes the last output of every layout to DIR/kl.torch.<layout>.f32 and that of the fastest layout
to DIR/kl.torch.f32 (raw f32 [3, 8H, 8W], unclamped, as the decoder returns it; the layouts differ
by ~5e-4 at 1024x1024) and prints, last:

    kl_peer ms_per_decode=<f> min_ms=<f> layout=<l> threads=<n> torch=<v> load_rss_mib=<f>
        decode_peak_rss_mib=<f> decode_rss_increase_mib=<f> max_rss_mib=<f> dtype=<fp32|bf16>

(one line). Memory: load_rss_mib = VmRSS once the module is built and loaded (the unused encoder
dropped); decode_peak_rss_mib = VmHWM after a reset through /proc/self/clear_refs at that point,
read after all the decodes (the whole process at its peak while decoding: runtime, weights,
activations); decode_rss_increase_mib = the difference of the two (what decoding added over the
model-loaded baseline); max_rss_mib = ru_maxrss of the process (building the module with its
encoder included). Both layouts run in the same process, so the peak is that of the hungrier one.
"""

import argparse
import gc
import json
import os
import resource
import sys
import time

import torch

BLOCK_OUT = (128, 256, 512, 512)
LATENT_CHANNELS = 4
WEIGHTS = "kl_sd.safetensors"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from video_torch import log, reset_peak_rss, status_kib  # noqa: E402  (the video peer's helpers)


def make_vae():
    from diffusers import AutoencoderKL
    # the SD 1.x / 2.x / SDXL configuration (diffusers' vae/config.json of those models)
    return AutoencoderKL(in_channels=3, out_channels=3,
                         down_block_types=("DownEncoderBlock2D",) * 4,
                         up_block_types=("UpDecoderBlock2D",) * 4,
                         block_out_channels=BLOCK_OUT, layers_per_block=2, act_fn="silu",
                         latent_channels=LATENT_CHANNELS, norm_num_groups=32, sample_size=1024,
                         use_quant_conv=True, use_post_quant_conv=True).eval()


def decoder_state(vae):
    return {k: v.detach().float().contiguous() for k, v in vae.state_dict().items()
            if k.startswith(("decoder.", "post_quant_conv."))}


def describe(y):
    return (f"{tuple(y.shape)} min {y.min().item():.3f} max {y.max().item():.3f} mean "
            f"{y.mean().item():.4f} std {y.std().item():.4f}")


def cmd_gen(args):
    from safetensors.torch import save_file
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    t0 = time.perf_counter()
    torch.manual_seed(args.seed)  # the default initialisation draws from the global generator
    vae = make_vae()
    sd = decoder_state(vae)
    params = sum(v.numel() for v in sd.values())
    g = torch.Generator().manual_seed(args.seed + 1)
    z = torch.randn((1, LATENT_CHANNELS, args.height_latent, args.width_latent), generator=g)
    save_file(sd, os.path.join(args.out, WEIGHTS),
              metadata={"model": "AutoencoderKL SD/SDXL decoder, random weights (default init, seed "
                                 f"{args.seed}), tests/bench/kl_torch.py"})
    z.numpy().astype("<f4").tofile(os.path.join(args.out, "kl.latent.f32"))
    # a quick check that the weights give finite, non-trivial outputs (a small crop of the latent)
    with torch.inference_mode():
        y = vae.decode(z[:, :, :min(16, args.height_latent), :min(16, args.width_latent)]).sample
    ok = bool(torch.isfinite(y).all()) and y.std().item() > 1e-4
    info = {"model": "kl", "weights": WEIGHTS, "params": params, "tensors": len(sd),
            "latent": [1, LATENT_CHANNELS, args.height_latent, args.width_latent], "seed": args.seed,
            "check": describe(y), "finite": ok}
    with open(os.path.join(args.out, "kl.json"), "w") as f:
        json.dump(info, f)
    log(f"gen kl: {len(sd)} tensors, {params / 1e6:.2f} M decoder parameters -> {WEIGHTS}; latent "
        f"[1, {LATENT_CHANNELS}, {args.height_latent}, {args.width_latent}]; check decode of a crop "
        f"{describe(y)}{'' if ok else ' NOT FINITE OR CONSTANT'} ({time.perf_counter() - t0:.1f} s)")
    if not ok:
        sys.exit("gen kl: non-finite or constant output")


def cmd_time(args):
    torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    if threads != args.threads:
        log(f"warning: asked for {args.threads} threads, torch uses {threads}")
    with open(os.path.join(args.dir, "kl.json")) as f:
        info = json.load(f)
    _, C, H, W = info["latent"]
    from safetensors.torch import load_file
    sd = load_file(os.path.join(args.dir, info["weights"]))
    vae = make_vae()
    r = vae.load_state_dict(sd, strict=False)
    assert not r.unexpected_keys, r.unexpected_keys
    assert all(k.startswith(("encoder.", "quant_conv.")) for k in r.missing_keys), r.missing_keys
    vae.encoder = None  # never used: do not count it as resident
    vae.quant_conv = None
    del sd
    gc.collect()
    import numpy as np
    a = np.fromfile(os.path.join(args.dir, "kl.latent.f32"), dtype="<f4")
    assert a.size == C * H * W, (a.size, (C, H, W))
    z0 = torch.from_numpy(a.reshape(1, C, H, W).copy())
    if args.dtype == "bf16":  # before the RSS baseline: the f32 copy goes, the bf16 one is what decodes
        vae, z0 = vae.to(torch.bfloat16), z0.to(torch.bfloat16)
        gc.collect()
    load_rss = status_kib("VmRSS") / 1024
    can_reset = reset_peak_rss()
    log(f"kl: {info['params'] / 1e6:.2f} M decoder parameters, latent [1, {C}, {H}, {W}] -> {8 * W}x{8 * H}; "
        f"{args.dtype}, torch {torch.__version__}, {threads} threads; RSS after load {load_rss:.0f} MiB")

    best = None
    with torch.inference_mode():
        for layout in args.layouts.split(","):
            fmt = torch.channels_last if layout == "channels_last" else torch.contiguous_format
            vae.to(memory_format=fmt)
            z = z0.contiguous(memory_format=fmt)
            for _ in range(args.warmup):
                vae.decode(z)
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                y = vae.decode(z).sample
                times.append((time.perf_counter() - t0) * 1e3)
            mean = sum(times) / len(times)
            log(f"{layout}: {args.runs} decodes after {args.warmup} warmup: ms/decode mean {mean:.1f} min "
                f"{min(times):.1f} ({', '.join(f'{t:.0f}' for t in times)}); output {describe(y)}")
            if not bool(torch.isfinite(y).all()):
                sys.exit("kl: non-finite output")
            out = y[0].float().contiguous()
            out.numpy().astype("<f4").tofile(os.path.join(args.dir, f"kl.torch.{layout}.f32"))
            if best is None or mean < best[0]:
                best = (mean, min(times), layout, out)
            del y, out
            gc.collect()
    peak = status_kib("VmHWM") / 1024 if can_reset else -1.0
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mean, mn, layout, out = best
    out.numpy().astype("<f4").tofile(os.path.join(args.dir, "kl.torch.f32"))
    log(f"kl_peer ms_per_decode={mean:.3f} min_ms={mn:.3f} layout={layout} threads={threads} "
        f"torch={torch.__version__} load_rss_mib={load_rss:.1f} decode_peak_rss_mib={peak:.1f} "
        f"decode_rss_increase_mib={(peak - load_rss) if peak > 0 else -1.0:.1f} max_rss_mib={maxrss:.1f} "
        f"dtype={args.dtype}")


def main():
    ap = argparse.ArgumentParser(description="PyTorch CPU peer for the AutoencoderKL decode benchmark")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write random full-width decoder weights and a latent")
    g.add_argument("--out", required=True)
    g.add_argument("--height-latent", type=int, default=128)
    g.add_argument("--width-latent", type=int, default=128)
    g.add_argument("--seed", type=int, default=1234)
    g.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    t = sub.add_parser("time", help="time diffusers' AutoencoderKL.decode on the files gen wrote")
    t.add_argument("--dir", required=True)
    t.add_argument("--runs", type=int, default=2, help="timed decodes per layout")
    t.add_argument("--warmup", type=int, default=1, help="untimed decodes per layout")
    t.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    t.add_argument("--layouts", default="nchw,channels_last")
    t.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: the module and the latent .to(torch.bfloat16), the output converted to float")
    args = ap.parse_args()
    if args.cmd == "gen":
        cmd_gen(args)
    else:
        if args.runs < 1 or args.warmup < 0:
            sys.exit("--runs >= 1, --warmup >= 0")
        if not args.layouts or any(l not in ("nchw", "channels_last") for l in args.layouts.split(",")):
            sys.exit("--layouts: nchw, channels_last or both, comma-separated")
        cmd_time(args)


if __name__ == "__main__":
    main()

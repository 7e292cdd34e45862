#!/usr/bin/env python3
"""PyTorch CPU peer for the video part of the decode benchmark (bench-cpu.c): the Wan 2.1 VAE
decoder (diffusers' AutoencoderKLWan, full widths: base 96), the Wan 2.2 TI2V-5B one (base 256, 48
latent channels; generated only, for tests/gpu-emu/emu-counts), TAEW2.1 (madebyollin/taehv
`taehv.py`, full widths n_f=[256,128,64,64]), SVD's temporal decoder (diffusers'
AutoencoderKLTemporalDecoder, block_out_channels 128/256/512/512), SeedVR2's VAE (SeedVR's
attn_video_vae VideoAutoencoderKLWrapper, the released configuration), HunyuanVideo 1.5's VAE
(diffusers' AutoencoderKLHunyuanVideo15, its defaults: the released configuration), LTX-2's
(diffusers' AutoencoderKLLTX2Video, the released 2.0 decoder of its conversion script) and MiniMax-H3's
(diffusers' AutoencoderKLMiniMaxH3, the released widths with --blocks of its 36 ViT blocks), all with
random weights.

    python video_torch.py gen  --out DIR [--height-latent 30] [--width-latent 52] [--latent-frames 3]
                               [--only wan|wan22|taehv|svd|seedvr2|hyvideo15|ltx2|minimax] [--blocks 4]
                               [--taehv-py PATH]
    python video_torch.py time --model wan|taehv|svd|seedvr2|hyvideo15|ltx2|minimax --dir DIR [--streams 1]
                               [--warmup 1] [--threads N] [--layouts nchw,channels_last]
                               [--modes parallel,sequential] [--chunk N] [--dtype fp32|bf16] [--taehv-py PATH]

Needs torch >= 2 and diffusers (Wan, SVD), upstream `taehv.py` (TAEHV; path from --taehv-py or
$TAEHV_PY) and a SeedVR checkout with einops installed (SeedVR2; $SEEDVR_DIR, as for
tests/data/gen_seedvr_fixtures.py); see tests/bench/README.md. No upstream code is copied here.

`gen` writes into DIR (a temporary directory; never the repository):
  wan21_b96.safetensors   decoder-side tensors of AutoencoderKLWan (diffusers naming:
                          post_quant_conv.*, decoder.*), BF16
  wan22_b256.safetensors  the same of the Wan 2.2 TI2V-5B VAE (--only wan22), BF16
  taew21_full.safetensors TAEHV decoder.* tensors (upstream naming), BF16
  svd_full.safetensors    decoder.* of AutoencoderKLTemporalDecoder (diffusers naming), BF16
  seedvr2_full.safetensors decoder.* of VideoAutoencoderKLWrapper (its state_dict's names), F16
  hyvideo15_full.safetensors decoder.* of AutoencoderKLHunyuanVideo15 (diffusers naming), F16
  ltx2_full.safetensors   decoder.*, latents_mean and latents_std of AutoencoderKLLTX2Video (diffusers
                          naming), F16
  minimax_b<N>.safetensors post_quant_conv.*, decoder.* of AutoencoderKLMiniMaxH3 with N = --blocks
                          blocks (diffusers naming), F16; and minimax_b<N/2>.safetensors, its first N/2
                          blocks (bench-cpu plans 720p with both)
  <model>.latent.f32      raw little-endian f32 [T, C, H, W] (C = 4 for SVD, 32 for HunyuanVideo
                          1.5, 128 for LTX-2, 24 for MiniMax-H3, 48 for Wan 2.2, else 16): the latent
                          frames in stream order, the decoder's raw latents
  <model>.json            shapes and the generator's output statistics
Weights are random (fixed seeds), scaled-uniform so that activations stay O(1) (no denormals,
no Inf/NaN), and rounded to bf16 before they are stored, so both sides decode the same values.
SVD: the modules' default initialisation with random GroupNorm affines and time_mixer
mix_factors (as tests/data/gen_svd_fixtures.py); SeedVR2: gen_seedvr_fixtures.py's
random_weights (F16-rounded); HunyuanVideo 1.5: gen_hyvideo15_fixtures.py's init_weights; LTX-2:
gen_ltx2_fixtures.py's; MiniMax-H3: gen_minimax_fixtures.py's.

`time` loads the files (`--dtype bf16`: then casts the module and the latents with
`.to(torch.bfloat16)`, the upstream way, as taef2_torch.py; the output is converted to float;
bench-cpu asks it of Wan and TAEHV), decodes `--warmup` untimed streams of the first 2 latent
frames (both paths: latent frame 0 and a later one; TAEHV parallel=True: the whole clip, whose
shapes depend on T) and then `--streams` timed streams of all T latent frames, for every memory
layout (and for TAEHV every decode_video mode), writes the last output of the fastest
configuration to DIR/<model>.torch.f32 (f32 [F, 3, sH, sW], s = 16 for HunyuanVideo 1.5 and
MiniMax-H3, 32 for LTX-2, else 8, as upstream returns it: Wan, TAEHV clamped, the others raw,
MiniMax-H3's ImageNet-normalised) and prints, last:

    video_peer model=<m> steady_ms_per_frame=<f> steady_min_ms_per_frame=<f> first_ms=<f>
        stream_ms=<f> layout=<l> mode=<m> threads=<n> torch=<v> load_rss_mib=<f>
        decode_peak_rss_mib=<f> max_rss_mib=<f> dtype=<fp32|bf16>

(one line). steady = the latent frames after the first, 4 output frames each (LTX-2: 8):
- Wan: diffusers' `vae.decode(z)` runs `vae.decoder` once per latent frame (its own causal
  cache loop); a forward pre-hook and hook on `vae.decoder` time every call: steady = the mean
  of calls 1..T-1 / 4, first = call 0, stream_ms = the whole `vae.decode`.
- TAEHV, `decode_video(parallel=False)`: its work queue finishes the 4 raw frames of one latent
  frame before it starts the next, so a hook on the output conv (decoder[22]) marks the latent
  boundaries: first = start to the 4th raw frame, steady = 4th to 4T-th raw frame / (4 (T - 1)).
- TAEHV, `decode_video(parallel=True)`: the clip is one batch with no per-latent boundary, so
  every timed stream decodes the T latents and then latent 0 alone: steady = the marginal cost
  (t(T) - t(1)) / (4 (T - 1)), first = t(1).
- SVD: StableVideoDiffusionPipeline.decode_latents' loop, `vae.decode(z[i:i+N], num_frames=n)`
  for chunks of N = --chunk latent frames (0: the whole clip as one call), the last one shorter;
  no per-frame boundary within a call, so steady = the whole clip / its T frames, first = the
  first call.
- SeedVR2: `vae.decode(z)` on [1, 16, T, H, W] after `set_causal_slicing(split_size=4,
  memory_device="same")`, as its inference configures it (latent frames 0 and 1 as one call,
  then one at a time with the convs' memory; at T = 2 this is the one call); steady = the whole
  clip / its 1 + 4 (T - 1) frames, first = 0 (no boundary).
- HunyuanVideo 1.5, LTX-2, MiniMax-H3: `vae.decode(z)` of the whole clip (tiling off: the default,
  MiniMax-H3's `disable_tiling()`, whole frames as ours): steady = the whole clip / its frames,
  first = 0. MiniMax-H3's warm-up streams are of 3 latent frames, the fewest it decodes.
Memory: load_rss_mib = VmRSS after the model is built and loaded; decode_peak_rss_mib = VmHWM
reset (/proc/self/clear_refs) after loading, read after the timed decodes: the whole process
resident at its peak while decoding (weights, torch runtime, activations); max_rss_mib =
ru_maxrss of the process (includes building the module with its default init).
"""

import argparse
import gc
import importlib.util
import json
import os
import resource
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))
from gen_video_fixtures import fan_in, uni  # noqa: E402  (the fixtures' weight helpers)

# Wan 2.1 decoder at full width; the encoder (built by AutoencoderKLWan too, never used) is made
# narrow so that it costs no memory
WAN_DEC_BASE = 96
WAN_ENC_BASE = 8
TAEHV_NF = [256, 128, 64, 64]  # upstream's (hard-coded) decoder widths

WAN_WEIGHTS = "wan21_b96.safetensors"
WAN22_WEIGHTS = "wan22_b256.safetensors"
TAEHV_WEIGHTS = "taew21_full.safetensors"
SVD_WEIGHTS = "svd_full.safetensors"
SEEDVR_WEIGHTS = "seedvr2_full.safetensors"
HYV15_WEIGHTS = "hyvideo15_full.safetensors"
LTX2_WEIGHTS = "ltx2_full.safetensors"
CHANNELS = {"wan": 16, "wan22": 48, "taehv": 16, "svd": 4, "seedvr2": 16, "hyvideo15": 32, "ltx2": 128, "minimax": 24}
SCALE = {"wan22": 16, "hyvideo15": 16, "ltx2": 32, "minimax": 16}  # output pixels per latent pixel (8 for the others)
FRAMES = {"svd": 1, "ltx2": 8}  # output frames per later latent frame (4 for the others)
SEEDVR_WIDTHS = [128, 256, 512, 512]  # the released s8_c16_t4_inflation_sd3.yaml


def log(*a):
    print(*a, flush=True)


def status_kib(key):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return -1


def reset_peak_rss():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def load_taehv_module(path):
    path = path or os.environ.get("TAEHV_PY")
    if not path or not os.path.isfile(path):
        sys.exit(f"upstream taehv.py not found (got {path!r}): pass --taehv-py PATH or set TAEHV_PY "
                 "(see tests/bench/README.md)")
    spec = importlib.util.spec_from_file_location("taehv_upstream", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def make_wan():
    from diffusers import AutoencoderKLWan
    # the Wan 2.1 defaults (dim_mult [1,2,4,4], 2 res blocks, no encoder attention,
    # temperal_downsample [False,True,True]); decoder dims 96*[4,4,4,2,1]
    return AutoencoderKLWan(base_dim=WAN_ENC_BASE, decoder_base_dim=WAN_DEC_BASE, z_dim=16).eval()


def make_wan22():
    from diffusers import AutoencoderKLWan
    # the Wan 2.2 TI2V-5B VAE (MODELS.md B.8): decoder base 256, 48 latent channels, residual up
    # blocks, 2x2 patches, 16x in space; its encoder narrow, as Wan 2.1's
    return AutoencoderKLWan(base_dim=WAN_ENC_BASE, decoder_base_dim=256, z_dim=48, dim_mult=[1, 2, 4, 4],
                            num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True],
                            is_residual=True, in_channels=12, out_channels=12, patch_size=2,
                            scale_factor_temporal=4, scale_factor_spatial=16).eval()


def make_taehv(th):
    # checkpoint_path=None: upstream guesses patch size and latent channels from the checkpoint's
    # file name; without one it takes the arguments (taew2_1: patch 1, 16 channels)
    m = th.TAEHV(checkpoint_path=None, patch_size=1, latent_channels=16).eval()
    assert m.frames_to_trim == 3 and m.t_upscale == 4
    return m


def make_svd():
    from diffusers import AutoencoderKLTemporalDecoder
    # diffusers' defaults are SVD's: block_out_channels (128, 256, 512, 512), 2 layers per block
    return AutoencoderKLTemporalDecoder(block_out_channels=(128, 256, 512, 512), layers_per_block=2,
                                        down_block_types=("DownEncoderBlock2D",) * 4).eval()


def seedvr_fixtures():
    """tests/data/gen_seedvr_fixtures.py: the upstream class (from $SEEDVR_DIR) and its weights"""
    import gen_seedvr_fixtures as gs
    return gs


def make_seedvr():
    gs = seedvr_fixtures()
    return gs.make_vae(gs.upstream(), SEEDVR_WIDTHS, 2)


def make_hyvideo15():
    from diffusers import AutoencoderKLHunyuanVideo15
    return AutoencoderKLHunyuanVideo15().eval()  # its defaults are the released configuration


def hyvideo15_weights(vae, seed):
    """decoder.* (diffusers naming), F16: gen_hyvideo15_fixtures.py's init_weights"""
    import gen_hyvideo15_fixtures as gh
    names = [(k, tuple(v.shape)) for k, v in vae.state_dict().items() if k.startswith("decoder.")]
    return {k: v.half() for k, v in gh.init_weights(names, seed).items()}


def make_ltx2():
    """the released LTX-2.0 decoder (gen_ltx2_fixtures.py's RELEASED["v20"]), its encoder narrow
    (never used)"""
    import gen_ltx2_fixtures as gl
    from diffusers import AutoencoderKLLTX2Video
    return AutoencoderKLLTX2Video(**dict(gl.RELEASED["v20"], block_out_channels=(8, 8, 8, 8))).eval()


def ltx2_weights(vae, seed):
    """decoder.*, latents_mean, latents_std (diffusers naming), F16: gen_ltx2_fixtures.py's init_weights"""
    import gen_ltx2_fixtures as gl
    names = [(k, tuple(v.shape)) for k, v in vae.state_dict().items() if not k.startswith("encoder.")]
    return {k: v.half() for k, v in gl.init_weights(names, seed).items()}


def make_minimax(blocks):
    """MiniMax-H3's decoder at the released widths (diffusers' defaults: 32 heads of 64, ffn_mult 4, 4
    register tokens) with `blocks` of its 36 blocks, tiling off; its encoder narrow (never used)"""
    from diffusers import AutoencoderKLMiniMaxH3
    vae = AutoencoderKLMiniMaxH3(block_out_channels=(8,) * 6, layers_per_block=1, norm_num_groups=4,
                                 decoder_num_layers=blocks).eval()
    vae.disable_tiling()
    return vae


def minimax_weights(vae, seed):
    """post_quant_conv.*, decoder.* (diffusers naming), F16: gen_minimax_fixtures.py's init_weights"""
    import gen_minimax_fixtures as gm
    names = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()
             if k.startswith(("decoder.", "post_quant_conv."))]
    return {k: v.half() for k, v in gm.init_weights(names, seed).items()}


def minimax_frames(t):
    """upstream's frames for t >= 3 latent frames: its encoder's clips of 17 frames are 5 latent frames,
    the first of them 1 frame, the others 4 (what its decode cuts to)"""
    return sum(1 if j % 5 == 0 else 4 for j in range(t))


def svd_weights(vae, seed):
    """decoder.* (diffusers naming), bf16: the module's default initialisation (built under
    torch.manual_seed), the GroupNorm affines around (1, 0) and the mix_factors with sigmoid in
    (0.12, 0.88), as the fixtures (every blend matters)"""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, v in vae.state_dict().items():
        if not name.startswith("decoder."):
            continue
        v = v.clone()
        if name.endswith("mix_factor"):
            v = torch.rand(v.shape, generator=g) * 4 - 2
        elif ".norm" in name or "group_norm" in name or "conv_norm_out" in name:
            v = (1.0 if name.endswith(".weight") else 0.0) + (torch.rand(v.shape, generator=g) - 0.5) * 0.6
        out[name] = bf16_exact(v)
    return out


def seedvr_weights(vae, seed):
    """decoder.* (the state_dict's names), F16-rounded, from the fixture generator"""
    sd = seedvr_fixtures().random_weights(vae, seed)
    return {k: v.half() for k, v in sd.items() if k.startswith("decoder.")}


def bf16_exact(t):
    return t.float().to(torch.bfloat16)


def wan_weights(vae, seed):
    """Decoder-side tensors (diffusers naming), bf16. Every RMS norm re-normalises, so only the
    last conv of each residual branch and the output conv set the activation scale: U(+-g*sqrt(3/
    fan_in)) with g = 1; 0.8 for the last conv of a residual branch, 0.5 for the output conv."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, p in vae.state_dict().items():
        if not name.startswith(("decoder.", "post_quant_conv.")):
            continue
        shape = tuple(p.shape)
        if name.endswith(".gamma"):
            v = 1.0 + uni(g, shape, 0.25)
        elif name.endswith(".bias"):
            v = uni(g, shape, 0.1)
        elif name.endswith(".weight"):
            gain = 0.5 if name.startswith("decoder.conv_out.") else 0.8 if ".conv2." in name else 1.0
            v = uni(g, shape, gain * (3.0 / fan_in(shape)) ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = bf16_exact(v)
    return out


def taehv_weights(m, seed):
    """decoder.* tensors (upstream naming), bf16: ReLU network, MemBlock conv.0/conv.2 gain
    sqrt(2), conv.4 0.5, output conv 0.3 with bias 0.5 +- 0.1 (outputs mostly inside [0, 1])."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    last = max(int(k.split(".")[1]) for k in m.state_dict() if k.startswith("decoder."))
    for name, p in m.state_dict().items():
        if not name.startswith("decoder."):
            continue
        shape = tuple(p.shape)
        parts = name.split(".")
        if name.endswith(".weight"):
            if parts[2:4] in (["conv", "0"], ["conv", "2"]):
                gain = 2.0 ** 0.5
            elif parts[2:4] == ["conv", "4"]:
                gain = 0.5
            elif int(parts[1]) == last:
                gain = 0.3
            else:
                gain = 1.0
            v = uni(g, shape, gain * (3.0 / fan_in(shape)) ** 0.5)
        elif name == f"decoder.{last}.bias":
            v = 0.5 + uni(g, shape, 0.1)
        elif name.endswith(".bias"):
            v = uni(g, shape, 0.1)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = bf16_exact(v)
    return out


BOUNDS = {"wan": (-1.0, 1.0), "wan22": (-1.0, 1.0), "taehv": (0.0, 1.0)}  # what upstream clamps its output to (SVD, SeedVR2: raw)


def make_model(name, taehv_py, gen_seed=False, blocks=None):
    """the upstream module at full width (MiniMax-H3: `blocks` blocks); with gen_seed its random weights
    too: (model, sd, file)"""
    if name == "wan":
        model, weights, fname = make_wan(), wan_weights, WAN_WEIGHTS
        seed = 96021
    elif name == "wan22":
        model, weights, fname = make_wan22(), wan_weights, WAN22_WEIGHTS
        seed = 96022
    elif name == "taehv":
        model, weights, fname = make_taehv(load_taehv_module(taehv_py)), taehv_weights, TAEHV_WEIGHTS
        seed = 256021
    elif name == "svd":
        model, weights, fname = make_svd(), svd_weights, SVD_WEIGHTS
        seed = 14
    elif name == "hyvideo15":
        model, weights, fname = make_hyvideo15(), hyvideo15_weights, HYV15_WEIGHTS
        seed = 4151
    elif name == "ltx2":
        model, weights, fname = make_ltx2(), ltx2_weights, LTX2_WEIGHTS
        seed = 4200
    elif name == "minimax":
        model, weights, fname = make_minimax(blocks), minimax_weights, f"minimax_b{blocks}.safetensors"
        seed = 5300
    else:
        model, weights, fname = make_seedvr(), seedvr_weights, SEEDVR_WEIGHTS
        seed = 2024
    return model, weights(model, seed) if gen_seed else None, fname


def check_keys(r):
    """load_state_dict(strict=False) of decoder-side tensors: only the encoder side is missing"""
    assert not r.unexpected_keys, r.unexpected_keys
    assert all(k.startswith(("encoder.", "quant_conv.")) for k in r.missing_keys), r.missing_keys


def describe(y, lo=None, hi=None):
    s = (f"{tuple(y.shape)} min {y.min().item():.3f} max {y.max().item():.3f} mean "
         f"{y.mean().item():.3f} std {y.std().item():.3f}")
    if lo is not None:
        s += f", {100 * ((y <= lo) | (y >= hi)).double().mean().item():.1f}% at the clamp bounds"
    return s


def save_latent(path, z_tchw):
    z_tchw.float().contiguous().numpy().astype("<f4").tofile(path)


def load_latent(path, t, c, h, w):
    import numpy as np
    a = np.fromfile(path, dtype="<f4")
    assert a.size == t * c * h * w, (path, a.size, (t, c, h, w))
    return torch.from_numpy(a.reshape(t, c, h, w).copy())


def cmd_gen(args):
    from safetensors.torch import save_file
    torch.set_num_threads(args.threads)
    os.makedirs(args.out, exist_ok=True)
    t_, h, w = args.latent_frames, args.height_latent, args.width_latent
    which = [args.only] if args.only else ["wan", "taehv"]
    for name in which:
        t0 = time.perf_counter()
        torch.manual_seed(0)  # the default initialisation SVD's weights keep
        model, sd, fname = make_model(name, args.taehv_py, gen_seed=True, blocks=args.blocks)
        r = model.load_state_dict(sd, strict=False)
        check_keys(r)
        c = CHANNELS[name]
        g = torch.Generator().manual_seed({"wan": 5, "wan22": 12, "taehv": 6, "svd": 7, "seedvr2": 8, "hyvideo15": 9,
                                           "ltx2": 10, "minimax": 11}[name])
        z = torch.randn((t_, c, h, w), generator=g)  # [T, C, H, W]
        save_file(sd, os.path.join(args.out, fname),
                  metadata={"model": f"{name}, random weights, tests/bench/video_torch.py"})
        save_latent(os.path.join(args.out, f"{name}.latent.f32"), z)
        if name == "minimax":  # its first blocks / 2 blocks too, for bench-cpu's plan at two block counts
            half = args.blocks // 2
            save_file({k: v for k, v in sd.items()
                       if not k.startswith("decoder.transformer_blocks.") or int(k.split(".")[2]) < half},
                      os.path.join(args.out, f"minimax_b{half}.safetensors"),
                      metadata={"model": f"{name}, random weights, its first {half} blocks, "
                                         "tests/bench/video_torch.py"})
        # a quick check that the weights give O(1), finite outputs (2 latent frames, MiniMax-H3 3: the
        # fewest it decodes; small)
        zs = z[:3 if name == "minimax" else 2, :, :min(h, 8), :min(w, 8)]
        with torch.inference_mode():
            if name in ("wan", "wan22"):
                y = model.decode(zs.permute(1, 0, 2, 3).unsqueeze(0)).sample
            elif name == "taehv":
                y = model.decode_video(zs.unsqueeze(0), parallel=True, show_progress_bar=False)
            elif name == "svd":
                y = model.decode(zs, num_frames=zs.shape[0]).sample
            else:
                y = model.decode(zs.permute(1, 0, 2, 3).unsqueeze(0)).sample
        ok = bool(torch.isfinite(y).all())
        lo, hi = BOUNDS.get(name, (None, None))
        params = sum(v.numel() for v in sd.values())
        info = {"model": name, "weights": fname, "params": params, "latent": [t_, c, h, w],
                "check": describe(y, lo, hi), "finite": ok}
        if name == "minimax":
            info["blocks"] = args.blocks
        with open(os.path.join(args.out, f"{name}.json"), "w") as f:
            json.dump(info, f)
        log(f"gen {name}: {len(sd)} tensors, {params / 1e6:.1f} M parameters -> {fname}; latent "
            f"[{t_}, {c}, {h}, {w}]; check decode {describe(y, lo, hi)}{'' if ok else ' NOT FINITE'} "
            f"({time.perf_counter() - t0:.1f} s)")
        if not ok:
            sys.exit(f"gen {name}: non-finite output")
        del model, sd
        gc.collect()


def to_layout(model, layout):
    """channels_last: 4-D parameters channels_last, 5-D ones channels_last_3d (Module.to(memory_
    format=) refuses a model that holds both)."""
    for p in model.parameters():
        if layout == "channels_last" and p.dim() in (4, 5):
            fmt = torch.channels_last if p.dim() == 4 else torch.channels_last_3d
        else:
            fmt = torch.contiguous_format
        p.data = p.data.contiguous(memory_format=fmt)
    return model


def input_layout(x, layout):
    if layout == "channels_last" and x.dim() == 5:
        return x.contiguous(memory_format=torch.channels_last_3d)
    return x.contiguous()


def time_wan(vae, z_tchw, layout, streams, warmup):
    z = input_layout(z_tchw.permute(1, 0, 2, 3).unsqueeze(0), layout)  # [1, 16, T, H, W]
    zw = z[:, :, :2]  # warm-up streams: latent frames 0 and 1 (both paths of the cache loop)
    calls = []
    state = {}

    def pre(mod, args, kwargs):
        state["t0"] = time.perf_counter()

    def post(mod, args, kwargs, out):
        calls.append((time.perf_counter() - state["t0"]) * 1e3)

    h1 = vae.decoder.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = vae.decoder.register_forward_hook(post, with_kwargs=True)
    T = z.shape[2]
    runs = []
    try:
        for _ in range(warmup):
            vae.decode(zw)
        for _ in range(streams):
            calls.clear()
            t0 = time.perf_counter()
            y = vae.decode(z).sample
            total = (time.perf_counter() - t0) * 1e3
            assert len(calls) == T, (len(calls), T)
            runs.append({"first": calls[0], "steady": sum(calls[1:]) / (4 * (T - 1)), "stream": total})
    finally:
        h1.remove()
        h2.remove()
    out = y[0].permute(1, 0, 2, 3).float().contiguous()  # [F, 3, 8H, 8W]
    return runs, out


def time_taehv(m, z_tchw, mode, streams, warmup):
    x = z_tchw.unsqueeze(0).contiguous()  # NTCHW
    x1 = x[:, :1].contiguous()
    xw = x[:, :2].contiguous()  # warm-up streams: latent frames 0 and 1
    T = x.shape[1]
    runs = []
    if mode == "sequential":
        # the work queue finishes each latent frame's 4 raw frames before it touches the next
        # latent frame: the output conv's calls mark the latent boundaries
        stamps = []
        h = m.decoder[-1].register_forward_hook(lambda mod, inp, out: stamps.append(time.perf_counter()))
        try:
            for _ in range(warmup):
                m.decode_video(xw.clone(), parallel=False, show_progress_bar=False)
            for _ in range(streams):
                stamps.clear()
                t0 = time.perf_counter()
                y = m.decode_video(x.clone(), parallel=False, show_progress_bar=False)
                t_end = time.perf_counter()
                assert len(stamps) == 4 * T, (len(stamps), T)
                runs.append({"first": (stamps[3] - t0) * 1e3,
                             "steady": (stamps[-1] - stamps[3]) * 1e3 / (4 * (T - 1)),
                             "stream": (t_end - t0) * 1e3})
        finally:
            h.remove()
    else:
        # the clip as one batch: no per-latent boundary; the marginal cost of T - 1 latent frames.
        # Its shapes depend on T, so the warm-up decodes the whole clip (and latent frame 0 alone)
        for _ in range(warmup):
            m.decode_video(x.clone(), parallel=True, show_progress_bar=False)
            m.decode_video(x1.clone(), parallel=True, show_progress_bar=False)
        for _ in range(streams):
            t0 = time.perf_counter()
            y = m.decode_video(x.clone(), parallel=True, show_progress_bar=False)
            tT = (time.perf_counter() - t0) * 1e3
            t0 = time.perf_counter()
            m.decode_video(x1.clone(), parallel=True, show_progress_bar=False)
            t1 = (time.perf_counter() - t0) * 1e3
            runs.append({"first": t1, "steady": (tT - t1) / (4 * (T - 1)), "stream": tT})
    out = y[0].float().contiguous()  # [F, 3, 8H, 8W]
    return runs, out


def time_clip(decode, T, n_frames, streams, warmup, warm=2):
    """SVD, SeedVR2: decode(n) decodes the first n latent frames and returns (output, first call
    ms); the warm-up decodes `warm`; steady = the whole clip / its frames"""
    for _ in range(warmup):
        decode(warm)
    runs = []
    for _ in range(streams):
        t0 = time.perf_counter()
        y, first = decode(T)
        total = (time.perf_counter() - t0) * 1e3
        runs.append({"first": first, "steady": total / n_frames, "stream": total})
    return runs, y


def svd_decoder(vae, z_tchw, layout, chunk):
    """StableVideoDiffusionPipeline.decode_latents' loop: calls of `chunk` latent frames (0: all)"""
    def decode(n):
        z = z_tchw[:n]
        step = chunk or n
        outs, first = [], None
        for i in range(0, n, step):
            t0 = time.perf_counter()
            part = input_layout(z[i:i + step], layout)
            outs.append(vae.decode(part, num_frames=part.shape[0]).sample)
            first = first if first is not None else (time.perf_counter() - t0) * 1e3
        return torch.cat(outs).float().contiguous(), first  # [T, 3, 8H, 8W]
    return decode


def whole_clip_decoder(vae, z_tchw, layout):
    """vae.decode(z) of the whole clip (HunyuanVideo 1.5: tiling and slicing off, the defaults)"""
    def decode(n):
        z = input_layout(z_tchw[:n].permute(1, 0, 2, 3).unsqueeze(0), layout)  # [1, C, n, H, W]
        y = vae.decode(z).sample
        return y[0].permute(1, 0, 2, 3).float().contiguous(), 0.0  # [F, 3, sH, sW]
    return decode


def seedvr_decoder(vae, z_tchw, layout):
    """vae.decode(z) with the inference's causal slicing (split_size 4: latent frames 0 and 1,
    then one at a time)"""
    vae.set_causal_slicing(split_size=4, memory_device="same")

    def decode(n):
        z = input_layout(z_tchw[:n].permute(1, 0, 2, 3).unsqueeze(0), layout)  # [1, 16, n, H, W]
        y = vae.decode(z).sample
        return y[0].permute(1, 0, 2, 3).float().contiguous(), 0.0  # [F, 3, 8H, 8W]
    return decode


def cmd_time(args):
    torch.set_num_threads(args.threads)
    threads = torch.get_num_threads()
    if threads != args.threads:
        log(f"warning: asked for {args.threads} threads, torch uses {threads}")
    with open(os.path.join(args.dir, f"{args.model}.json")) as f:
        info = json.load(f)
    T, C, H, W = info["latent"]
    if T < 2:
        sys.exit("time: need at least 2 latent frames (the first one is not steady state)")
    from safetensors.torch import load_file
    sd = load_file(os.path.join(args.dir, info["weights"]))
    model = make_model(args.model, args.taehv_py, blocks=info.get("blocks"))[0]
    check_keys(model.load_state_dict({k: v.float() for k, v in sd.items()}, strict=False))
    if args.model == "taehv":
        model.encoder = torch.nn.Identity()
    else:
        model.encoder = None  # never used: do not count it as resident
        model.quant_conv = None
    del sd
    z = load_latent(os.path.join(args.dir, f"{args.model}.latent.f32"), T, C, H, W)
    if args.dtype == "bf16":  # before the RSS baseline: the f32 copy goes, the bf16 one is what decodes
        model, z = model.to(torch.bfloat16), z.to(torch.bfloat16)
    gc.collect()
    load_rss = status_kib("VmRSS") / 1024
    can_reset = reset_peak_rss()
    if args.model == "svd":
        n_frames = T
    elif args.model == "minimax":
        n_frames = minimax_frames(T)
    else:
        n_frames = 1 + FRAMES.get(args.model, 4) * (T - 1)
    log(f"model {args.model}: {info['params'] / 1e6:.1f} M decoder parameters, latent [{T}, {C}, {H}, {W}] "
        f"-> {n_frames} frames of {SCALE.get(args.model, 8) * W}x{SCALE.get(args.model, 8) * H}; {args.dtype}, "
        f"torch {torch.__version__}, {threads} threads"
        + (f"; decode_chunk_size {args.chunk or T}" if args.model == "svd" else ""))

    layouts = args.layouts.split(",")
    modes = args.modes.split(",") if args.model == "taehv" else ["-"]
    bounds = BOUNDS.get(args.model, (None, None))
    results = []
    best = None
    with torch.inference_mode():
        for layout in layouts:
            to_layout(model, layout)
            for mode in modes:
                if args.model == "wan":
                    runs, out = time_wan(model, z, layout, args.streams, args.warmup)
                elif args.model == "svd":
                    runs, out = time_clip(svd_decoder(model, z, layout, args.chunk), T, n_frames, args.streams,
                                          args.warmup)
                elif args.model == "seedvr2":
                    runs, out = time_clip(seedvr_decoder(model, z, layout), T, n_frames, args.streams, args.warmup)
                elif args.model in ("hyvideo15", "ltx2", "minimax"):
                    runs, out = time_clip(whole_clip_decoder(model, z, layout), T, n_frames, args.streams,
                                          args.warmup, 3 if args.model == "minimax" else 2)
                else:
                    runs, out = time_taehv(model, z, mode, args.streams, args.warmup)
                steady = sum(r["steady"] for r in runs) / len(runs)
                res = {"layout": layout, "mode": mode, "steady": steady,
                       "steady_min": min(r["steady"] for r in runs),
                       "first": sum(r["first"] for r in runs) / len(runs),
                       "stream": sum(r["stream"] for r in runs) / len(runs)}
                results.append(res)
                log(f"{layout} {mode}: {len(runs)} streams of {T} latent frames after {args.warmup} warmup: "
                    f"steady ms/frame mean {steady:.1f} min {res['steady_min']:.1f}; first latent "
                    f"{res['first']:.1f} ms; stream {res['stream']:.1f} ms; output {describe(out, *bounds)}")
                if not bool(torch.isfinite(out).all()):
                    sys.exit(f"{args.model}: non-finite output")
                if best is None or steady < best[0]["steady"]:
                    best = (res, out)
    peak = status_kib("VmHWM") / 1024 if can_reset else -1
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    res, out = best
    out.numpy().astype("<f4").tofile(os.path.join(args.dir, f"{args.model}.torch.f32"))
    log(f"video_peer model={args.model} steady_ms_per_frame={res['steady']:.3f} "
        f"steady_min_ms_per_frame={res['steady_min']:.3f} first_ms={res['first']:.3f} "
        f"stream_ms={res['stream']:.3f} layout={res['layout']} mode={res['mode']} threads={threads} "
        f"torch={torch.__version__} load_rss_mib={load_rss:.1f} decode_peak_rss_mib={peak:.1f} "
        f"max_rss_mib={maxrss:.1f} dtype={args.dtype}")


def main():
    ap = argparse.ArgumentParser(description="PyTorch CPU peer for the Wan 2.1 / TAEHV decode benchmark")
    sub = ap.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("gen", help="write random full-width weights and latents")
    g.add_argument("--out", required=True)
    g.add_argument("--height-latent", type=int, default=30)
    g.add_argument("--width-latent", type=int, default=52)
    g.add_argument("--latent-frames", type=int, default=3)
    g.add_argument("--only", choices=list(CHANNELS))
    g.add_argument("--blocks", type=int, default=4, help="MiniMax-H3's transformer blocks (the release's 36)")
    g.add_argument("--taehv-py", help="upstream taehv.py (default $TAEHV_PY)")
    g.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    t = sub.add_parser("time", help="time the upstream decoders on the files gen wrote")
    t.add_argument("--model", choices=list(CHANNELS), required=True)
    t.add_argument("--dir", required=True)
    t.add_argument("--streams", type=int, default=1, help="timed streams per configuration")
    t.add_argument("--warmup", type=int, default=1, help="untimed streams per configuration")
    t.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    t.add_argument("--layouts", default="nchw,channels_last")
    t.add_argument("--modes", default="parallel,sequential", help="TAEHV decode_video modes")
    t.add_argument("--chunk", type=int, default=0, help="SVD decode_chunk_size (0: the whole clip)")
    t.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: the module and the latents .to(torch.bfloat16), the output converted to float")
    t.add_argument("--taehv-py", help="upstream taehv.py (default $TAEHV_PY)")
    args = ap.parse_args()
    if args.cmd == "gen":
        cmd_gen(args)
    else:
        if args.streams < 1 or args.warmup < 0 or args.chunk < 0:
            sys.exit("--streams >= 1, --warmup >= 0, --chunk >= 0")
        cmd_time(args)


if __name__ == "__main__":
    main()

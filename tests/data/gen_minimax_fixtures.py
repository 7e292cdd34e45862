#!/usr/bin/env python3
"""Generate the small, deterministic MiniMax-H3 video VAE decoder fixtures (minimax_*) in tests/data/.

    /tmp/venv-torch/bin/python tests/data/gen_minimax_fixtures.py [--out DIR] [--probe]

The reference is computed by the UPSTREAM implementation, diffusers' `AutoencoderKLMiniMaxH3`
(pip package `diffusers`, 0.42.1 used; diffusers/models/autoencoders/autoencoder_kl_minimax_h3.py),
`vae.decode(z).sample`, fp32 on the CPU, one thread. Nothing of it is part of this repository.

Model: the released decoder structure (36 ViT blocks of 32 heads of 64 in the release) with reduced
sizes: 2 blocks of 2 heads of 64 (the released head width, which no weight shape tells: dim 128,
SwiGLU inner 256), 4 register tokens, RoPE theta 100 on the first 0.75 of each head's channels (48
of 64: 8 frequencies per axis), 24 latent channels,
16x16 pixels and 4 frames per latent voxel (the released spatial and temporal factors, which set
the patch), clip_length 17 and token_drop 3 (the released chunk geometry). The encoder (never
used) is narrow. Weights are uniform, fan-in scaled, the LayerScale vectors (scale1, scale2, zero
at init upstream) random so that every block changes the stream, rounded to values exact in F16
and BF16 before the reference is computed.

Decodes (MODELS.md J.3): the latents are decoded in chunks of 5 latent frames with 2 more of
overlap, each chunk's 28 frames cut to [3, 20) and cross-faded over 5 frames with the previous
chunk's held [23, 28); T = 5 n + 2 latent frames give 17 n + 5 frames. Upstream decodes with
256-pixel spatial tiles blended over 64 pixels by default (`use_tiling`, "the released frames are
the blended-tile ones"); the fixtures hold both: `decoded` with tiling off (the whole frame, what
vaedecode is to give) and, on a latent grid wider than a tile, `decoded_tiled` (the default).

Files (written to --out, tests/data by default):
  minimax_w128.diffusers.safetensors post_quant_conv.*, decoder.* (diffusers names), F16
  minimax_w128.latent                raw latent z [1, 24, 12, 2, 3] (two chunks: 39 frames)
  minimax_w128.wide.latent           raw latent z [1, 24, 3, 1, 17] (one padded chunk: 9 frames, 272
                                     pixels wide)
  minimax_w128.expected.safetensors  decoded [1, 3, 39, 32, 48] (tiling off), decoded_t7 (the first 7
                                     latent frames: 22 frames, the held ones last), decoded_t9 (the
                                     first 9: a padded chunk after a whole one, 30 frames), wide
                                     [1, 3, 9, 16, 272] tiling off,
                                     wide_tiled the same with upstream's default tiles

--probe prints what upstream does with T = 1 .. 13 latent frames (which fail, how many frames the
others give) and how far the tiled decode is from the whole-frame one.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors writer, weight helpers)

GEN = "tests/data/gen_minimax_fixtures.py"

CONFIG = dict(latent_channels=24, block_out_channels=(8, 8, 8, 8, 8, 8), layers_per_block=1, norm_num_groups=4,
              decoder_num_layers=2, decoder_num_attention_heads=2, decoder_attention_head_dim=64,
              decoder_num_register_tokens=4, decoder_ffn_mult=2, decoder_rope_theta=100.0,
              decoder_rope_dim_ratio=0.75, decoder_norm_eps=1e-5, clip_length=17, token_drop=3)
LATENT = (12, 2, 3)
WIDE = (3, 1, 17)


def init_weights(names_shapes, seed):
    """decoder-side parameters: linear weights U(+-sqrt(3 / fan_in)), biases +-0.1, norms around 1,
    LayerScale +-0.5, register tokens N(0, 1)-ish, rounded to F16/BF16-exact values"""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in names_shapes:
        if name.endswith(("scale1", "scale2")):
            v = tt.uni(g, shape, 0.5)
        elif name.endswith("register_tokens"):
            v = tt.uni(g, shape, 1.5)
        elif ".norm" in name or "norm_out" in name:
            v = (1.0 + tt.uni(g, shape, 0.25)) if name.endswith(".weight") else tt.uni(g, shape, 0.1)
        elif name.endswith(".bias"):
            v = tt.uni(g, shape, 0.1)
        elif name.endswith(".weight"):
            fan = 1
            for d in shape[1:]:
                fan *= d
            v = tt.uni(g, shape, (3.0 / fan) ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_f16_bf16(v)
    return out


def make_vae(seed=5300):
    from diffusers import AutoencoderKLMiniMaxH3
    torch.manual_seed(0)
    vae = AutoencoderKLMiniMaxH3(**CONFIG).eval()
    names = [(k, tuple(v.shape)) for k, v in vae.state_dict().items() if k.startswith(("decoder.", "post_quant_conv."))]
    sd = init_weights(names, seed)
    r = vae.load_state_dict(sd, strict=False)
    assert not r.unexpected_keys and all(k.startswith(("encoder.", "quant_conv.")) for k in r.missing_keys)
    return vae, sd


def decode(vae, z, tiled):
    if tiled:
        vae.enable_tiling()
    else:
        vae.disable_tiling()
    with torch.no_grad():
        return vae.decode(z).sample.float().contiguous()


def probe(vae, g):
    for T in range(1, 14):
        z = torch.randn((1, 24, T, 1, 2), generator=g)
        try:
            y = decode(vae, z, False)
            print(f"T = {T}: {y.shape[2]} frames{' (on the 17 n + 5 grid)' if (T - 2) % 5 == 0 else ''}")
        except Exception as e:  # noqa: BLE001 (upstream's own failure is the finding)
            print(f"T = {T}: upstream fails: {type(e).__name__}: {str(e)[:120]}")


def main():
    ap = argparse.ArgumentParser(description="generate the MiniMax-H3 video VAE decoder test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--probe", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)
    import diffusers

    vae, sd = make_vae()
    g = torch.Generator().manual_seed(5301)
    z = torch.randn((1, 24) + LATENT, generator=g)
    zw = torch.randn((1, 24) + WIDE, generator=g)
    dec = decode(vae, z, False)
    dec7 = decode(vae, z[:, :, :7].contiguous(), False)
    dec9 = decode(vae, z[:, :, :9].contiguous(), False)
    wide = decode(vae, zw, False)
    wide_tiled = decode(vae, zw, True)
    print(f"decoded {tt.describe(dec)}; the first 7 latent frames: {tt.describe(dec7)}; the first 9: {dec9.shape[2]} "
          f"frames")
    print(f"max |decode(z)[:, :, :17] - decode(z[:, :, :7])[:, :, :17]| = "
          f"{(dec[:, :, :17] - dec7[:, :, :17]).abs().max().item():.3g} (the first chunk's kept frames)")
    print(f"wide {tt.describe(wide)}; tiled (upstream's default) differs by "
          f"{(wide - wide_tiled).abs().max().item():.3g} max, {(wide - wide_tiled).abs().mean().item():.3g} mean")
    v64 = make_vae()[0].double()
    with torch.no_grad():
        v64.disable_tiling()
        d64 = v64.decode(z.double()).sample
    print(f"max |fp32 - fp64| = {(dec.double() - d64).abs().max().item():.3g}")
    if args.probe:
        probe(vae, g)

    written = []
    meta = {"model": "MiniMax-H3 video VAE decoder structure (AutoencoderKLMiniMaxH3), reduced sizes, random weights "
                     "(values exact in F16 and BF16)", "config": str(CONFIG), "generator": GEN}
    for fname, tensors, m in (
            ("minimax_w128.diffusers.safetensors", {k: v.half() for k, v in sd.items()}, meta),
            ("minimax_w128.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
             {"generator": GEN, "space": "raw MiniMax-H3 latent z, NCTHW"}),
            ("minimax_w128.wide.latent", {"latent_tensor": zw, "latent_format_version_0": torch.zeros(0)},
             {"generator": GEN, "space": "raw MiniMax-H3 latent z, NCTHW"}),
            ("minimax_w128.expected.safetensors", {"decoded": dec, "decoded_t7": dec7, "decoded_t9": dec9, "wide": wide,
                                                  "wide_tiled": wide_tiled},
             {"reference": f"diffusers {diffusers.__version__} AutoencoderKLMiniMaxH3.decode(z).sample, fp32 CPU, "
                           f"torch {torch.__version__}; decoded, decoded_t7, decoded_t9, wide: disable_tiling(); "
                           f"wide_tiled: "
                           f"enable_tiling() (upstream's default)",
              "output": "ImageNet-normalised RGB (x * std + mean gives [0, 1]), not clamped"})):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, m)
        written.append(path)
    tt.report_written(written)


if __name__ == "__main__":
    main()

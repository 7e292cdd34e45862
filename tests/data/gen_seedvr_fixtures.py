#!/usr/bin/env python3
"""Generate the small, deterministic SeedVR2 video VAE test fixtures in tests/data/.

    SEEDVR_DIR=/tmp/seedvr-up /tmp/cpu-torch-venv/bin/python tests/data/gen_seedvr_fixtures.py [--out DIR]

SEEDVR_DIR is a checkout of ByteDance-Seed/SeedVR (its `models/video_vae_v3` and `common`
directories are enough); the reference is computed by its `attn_video_vae.py`
VideoAutoencoderKLWrapper (the class the released configs build from
`models/video_vae_v3/s8_c16_t4_inflation_sd3.yaml`), nothing of which is part of this repository.
Needs torch >= 2, diffusers and einops.

The configuration is the released one with reduced widths, random weights (fixed seeds) rounded
to F16 before the reference is computed, and the decoder's tensors with a sample of the
encoder's (the loader must ignore those). Two fixtures:
- seedvr2_w32: block_out_channels [32, 32, 32, 32] (released: [128, 256, 512, 512]; 32 is the
  least that 32 GroupNorm groups allow), layers_per_block 2 as released; the weights as ComfyUI's
  conversion ema_vae_fp16.safetensors stores them (the state_dict's names, F16); raw latents
  (what vae.decode takes), 4 frames of 5x6 -> 13 frames of 40x48;
- seedvr2_sc: block_out_channels [64, 32, 32, 32], layers_per_block 0 (one resnet per up-block),
  so that the last up-block widens and has a conv_shortcut as the released ones do; the weights as
  the released ema_vae.pth is written, torch.save(state_dict) (F16 values); the diffusion model's
  latents x, decoded as x / 0.9152, 3 frames of 3x5 -> 9 frames of 24x40.
Each `<tag>.expected.safetensors` holds the upstream one-call decode, fp32 CPU, not clamped (the
inference script clips to [-1, 1] when it writes the video). The sliced decode of the inference
script (set_causal_slicing(split_size=4): latent frames [0, 1], then one at a time, with conv
memory) is checked against the one-call decode and printed.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors write helper)

SCALING_FACTOR = 0.9152   # configs_3b/main.yaml, configs_7b/main.yaml: vae.scaling_factor
ENCODER_SAMPLE = ("encoder.conv_in.weight", "encoder.conv_in.bias", "encoder.conv_norm_out.weight")


def upstream():
    root = os.environ.get("SEEDVR_DIR")
    if not root or not os.path.isfile(os.path.join(root, "models/video_vae_v3/modules/attn_video_vae.py")):
        sys.exit(f"set SEEDVR_DIR to a ByteDance-Seed/SeedVR checkout; got {root!r}")
    sys.path.insert(0, root)
    from models.video_vae_v3.modules.attn_video_vae import VideoAutoencoderKLWrapper
    return VideoAutoencoderKLWrapper


def make_vae(cls, widths, layers_per_block):
    """the yaml's configuration (s8_c16_t4_inflation_sd3.yaml) with reduced widths"""
    blocks = len(widths)
    return cls(act_fn="silu", block_out_channels=widths, down_block_types=["DownEncoderBlock3D"] * blocks,
               in_channels=3, latent_channels=16, layers_per_block=layers_per_block, norm_num_groups=32,
               out_channels=3, slicing_sample_min_size=4, temporal_scale_num=2, inflation_mode="pad",
               up_block_types=["UpDecoderBlock3D"] * blocks, spatial_downsample_factor=8,
               temporal_downsample_factor=4, use_quant_conv=False, use_post_quant_conv=False,
               freeze_encoder=False).eval()


def random_weights(vae, seed):
    """every parameter random (norm scales around 1), F16-rounded, in the state_dict's order"""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, v in vae.state_dict().items():
        if name.endswith(("norm1.weight", "norm2.weight", "group_norm.weight", "conv_norm_out.weight")):
            t = 1.0 + 0.2 * torch.randn(v.shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(v.shape, generator=g)
        else:  # (the last conv smaller: few output values beyond [-1, 1], where the video clips)
            fan_in = v[0].numel() if v.dim() > 1 else 1
            t = torch.randn(v.shape, generator=g) / fan_in ** 0.5 * (0.4 if name == "decoder.conv_out.weight" else 1.0)
        sd[name] = t.half().float()
    return sd


def fixture(cls, out, tag, widths, layers_per_block, lat_shape, normalized, seed):
    torch.manual_seed(0)
    vae = make_vae(cls, widths, layers_per_block)
    sd = random_weights(vae, seed=seed)
    vae.load_state_dict(sd, strict=True)
    g = torch.Generator().manual_seed(seed + 1)
    lat = torch.randn((1, 16) + lat_shape, generator=g)
    lat[0, 2, 1, 2, 4] = 6.0 if not normalized else -5.0
    z = lat / SCALING_FACTOR + 0.0 if normalized else lat   # infer.py vae_decode: latent / scale + shift
    with torch.no_grad():
        dec = vae.decode(z).sample.float().contiguous()
        vae.set_causal_slicing(split_size=4, memory_device="same")
        sliced = vae.decode(z).sample.float()
        vae.set_causal_slicing(split_size=None, memory_device=None)
    t, h, w = lat_shape
    assert dec.shape == (1, 3, 1 + 4 * (t - 1), 8 * h, 8 * w), dec.shape
    print(f"{tag}: decoded {tuple(dec.shape)}: min {dec.min().item():.3f} max {dec.max().item():.3f} "
          f"std {dec.std().item():.3f}, {100 * (dec.abs() > 1).double().mean().item():.2f}% beyond +-1; "
          f"max |sliced - one-call| = {(sliced - dec).abs().max().item():.3g}")

    keep = {k: v.half() for k, v in sd.items() if k.startswith("decoder.") or k in ENCODER_SAMPLE}
    print(f"{tag}: {sum(k.startswith('decoder.') for k in keep)} decoder tensors, "
          f"{sum(v.numel() for v in keep.values())} values")
    gen = {"generator": "tests/data/gen_seedvr_fixtures.py"}
    if normalized:
        torch.save(keep, os.path.join(out, f"{tag}.pth"))
    else:
        tt.save_safetensors(os.path.join(out, f"{tag}.safetensors"), keep,
                            dict(gen, model="SeedVR2 VAE (attn_video_vae VideoAutoencoderKLWrapper), block_out_channels "
                                            f"{widths}, layers_per_block {layers_per_block}, random F16 weights"))
    space = (f"SeedVR2 diffusion latent x (z = x / {SCALING_FACTOR}), NCTHW" if normalized
             else "raw SeedVR2 VAE latent (decoder input), NCTHW")
    name = f"{tag}.normalized.latent" if normalized else f"{tag}.latent"
    tt.save_safetensors(os.path.join(out, name), {"latent_tensor": lat, "latent_format_version_0": torch.zeros(0)},
                        dict(gen, space=space))
    key = "decoded_normalized" if normalized else "decoded"
    tt.save_safetensors(os.path.join(out, f"{tag}.expected.safetensors"), {key: dec},
                        {"reference": f"SeedVR attn_video_vae VideoAutoencoderKLWrapper.decode(z).sample, fp32 CPU, "
                                      f"torch {torch.__version__}; not clamped",
                         key: f"decode(z), z = {name}" + (f" / {SCALING_FACTOR}" if normalized else "")})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    cls = upstream()
    fixture(cls, args.out, "seedvr2_w32", [32, 32, 32, 32], 2, (4, 5, 6), normalized=False, seed=2024)
    fixture(cls, args.out, "seedvr2_sc", [64, 32, 32, 32], 0, (3, 3, 5), normalized=True, seed=2025)


if __name__ == "__main__":
    main()

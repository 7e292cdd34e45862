#!/usr/bin/env python3
"""Generate the small, deterministic LTX-2 / LTX-2.3 video VAE decoder fixtures (ltx2_*) in tests/data/.

    /tmp/venv-torch/bin/python tests/data/gen_ltx2_fixtures.py [--out DIR] [--only v20|v23] [--rf]

The reference is computed by the UPSTREAM implementation, diffusers' `AutoencoderKLLTX2Video`
(pip package `diffusers`, 0.42.1 used; diffusers/models/autoencoders/autoencoder_kl_ltx2.py),
`vae.decode(z).sample`, fp32 on the CPU, one thread, whole clip (no tiling, no framewise decode).
Nothing of it is part of this repository.

Models: the released decoder configurations (those of diffusers' scripts/convert_ltx2_to_diffusers.py,
`get_ltx2_video_vae_config("2.0")` / `("2.3")`) with reduced widths:

  v20 (LTX-2.0): decoder_block_out_channels (8, 16, 32) instead of (256, 512, 1024), three
      spatiotemporal upsamplers with residual, upsample_factor (2,2,2), spatial padding
      `reflect`; decoder widths 32 (conv_in, mid) -> 16 -> 8 -> 4 (released: 1024 -> 512 ->
      256 -> 128).  The residual needs upsampler input widths divisible by 8, so these are the
      smallest widths; to keep the file small decoder_layers_per_block is (2,2,1,1) instead of
      (5,5,5,5) (res blocks: mid 1, up_blocks.0 1, up_blocks.1 2, up_blocks.2 2).
  v23 (LTX-2.3): decoder_block_out_channels (8, 16, 16, 32) instead of (256, 512, 512, 1024),
      upsample_type (spatiotemporal, spatiotemporal, temporal, spatial), no residual,
      upsample_factor (2,2,1,2), spatial padding `zeros`; decoder widths 32 (conv_in, mid) ->
      16 -> 16 -> 8 -> 4 (released: 1024 -> 512 -> 512 -> 256 -> 128); decoder_layers_per_block
      (2,2,1,1,1) instead of (4,6,4,2,2) (res blocks: mid 1, up_blocks.0..3: 1, 1, 2, 2).

Both: 128 latent channels, patch 4, decoder_causal False (the released value; the class default
is True), timestep_conditioning False, no noise injection.  The decoder has no learned norm
parameters (PerChannelRMSNorm only), so only conv weights (uniform, fan-in scaled) and biases
(+-0.1) are random.  latents_mean / latents_std buffers are random too (the decoder does not use
them).  Weights are rounded to values exact in F16 and BF16 before the reference is computed.

Files per tag (tag = v20, v23; see tests/data/README.md):
  ltx2_<tag>.diffusers.safetensors   diffusers state-dict names, F16 (decoder, latents_mean/std,
                                     and a few encoder tensors a loader must ignore)
  ltx2_<tag>.orig.safetensors        the same values in Lightricks' original names (flat
                                     decoder.up_blocks.N, res_blocks, per_channel_statistics.*),
                                     F16; checked by renaming back (v20 also with diffusers'
                                     own single-file converter) and a strict load + decode
  ltx2_<tag>.latent                  raw latent z [1,128,10,h,w]
  ltx2_<tag>.expected.safetensors    decoded [1,3,73,32h,32w] = vae.decode(z).sample (not clamped),
                                     decoded_first2 [1,3,9,32h,32w] = vae.decode(z[:,:,:2]).sample
"""

import argparse
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors writer)

GEN = "tests/data/gen_ltx2_fixtures.py"

ENC_COMMON = dict(in_channels=3, out_channels=3, latent_channels=128,
                  down_block_types=("LTX2VideoDownBlock3D",) * 4,
                  spatio_temporal_scaling=(True, True, True, True),
                  downsample_type=("spatial", "temporal", "spatiotemporal", "spatiotemporal"),
                  timestep_conditioning=False, patch_size=4, patch_size_t=1, resnet_norm_eps=1e-6,
                  encoder_causal=True, decoder_causal=False, encoder_spatial_padding_mode="zeros",
                  spatial_compression_ratio=32, temporal_compression_ratio=8)

# released configurations (diffusers scripts/convert_ltx2_to_diffusers.py)
RELEASED = {
    "v20": dict(ENC_COMMON, block_out_channels=(256, 512, 1024, 2048),
                decoder_block_out_channels=(256, 512, 1024), layers_per_block=(4, 6, 6, 2, 2),
                decoder_layers_per_block=(5, 5, 5, 5), decoder_spatio_temporal_scaling=(True, True, True),
                decoder_inject_noise=(False, False, False, False),
                upsample_type=("spatiotemporal", "spatiotemporal", "spatiotemporal"),
                upsample_residual=(True, True, True), upsample_factor=(2, 2, 2),
                decoder_spatial_padding_mode="reflect"),
    "v23": dict(ENC_COMMON, block_out_channels=(256, 512, 1024, 1024),
                decoder_block_out_channels=(256, 512, 512, 1024), layers_per_block=(4, 6, 4, 2, 2),
                decoder_layers_per_block=(4, 6, 4, 2, 2),
                decoder_spatio_temporal_scaling=(True, True, True, True),
                decoder_inject_noise=(False, False, False, False, False),
                upsample_type=("spatiotemporal", "spatiotemporal", "temporal", "spatial"),
                upsample_residual=(False, False, False, False), upsample_factor=(2, 2, 1, 2),
                decoder_spatial_padding_mode="zeros"),
}
SMALL = {
    # v20: the upsamplers' residual reshapes C channels as (C/8, 2, 2, 2), so every upsampler input
    # width must be a multiple of 8: (8, 16, 32) is the smallest; at the released 5 res blocks per
    # stage that is 1.3 MB of F16, hence fewer res blocks (mid 1, then 1, 2, 2).
    "v20": dict(block_out_channels=(8, 8, 8, 8), decoder_block_out_channels=(8, 16, 32),
                decoder_layers_per_block=(2, 2, 1, 1)),
    # v23: the channel bookkeeping forces (W, 2W, 2W, 4W) with a last width of W/2; W = 4 (last
    # width 2) makes the per-pixel RMS norm over 2 channels ill-conditioned (fp32 vs fp64 2e-4 on
    # a third of the outputs), so W = 8 (last width 4) with fewer res blocks (mid 1, then 1, 1, 2, 2)
    "v23": dict(block_out_channels=(8, 8, 8, 8), decoder_block_out_channels=(8, 16, 16, 32),
                decoder_layers_per_block=(2, 2, 1, 1, 1)),
}
# latent frames, height, width.  v20's reflect padding needs h, w >= 2; v23 (zeros) takes 1.  10
# latent frames: more than these small decoders' look-ahead (8 latent frames: a stream starts with
# 9), so that a stream starts, steps and is flushed at its end.
LATENT = {"v20": (10, 2, 2), "v23": (10, 1, 2)}
SEEDS = {"v20": (4200, 5200), "v23": (4230, 5230)}

# encoder-side tensors written too (a loader must ignore them), diffusers names
ENCODER_SAMPLE = ("encoder.conv_out.conv.weight", "encoder.conv_out.conv.bias",
                  "encoder.down_blocks.0.resnets.0.conv1.conv.bias",
                  "encoder.down_blocks.0.downsamplers.0.conv.conv.bias")


def init_weights(names_shapes, seed):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in names_shapes:
        if name == "latents_mean":
            v = tt.uni(g, shape, 0.5)
        elif name == "latents_std":
            v = 1.25 + tt.uni(g, shape, 0.75)
        elif name.endswith(".bias"):
            v = tt.uni(g, shape, 0.1)
        elif name.endswith(".weight") and len(shape) == 5:
            fan = shape[1] * shape[2] * shape[3] * shape[4]
            gain = 0.6 if ".conv2." in name else 1.0          # residual branch
            if name == "decoder.conv_out.conv.weight":
                gain = 0.8
            v = tt.uni(g, shape, gain * (3.0 / fan) ** 0.5)
        elif name.endswith(".weight"):                       # encoder LayerNorm (none in decoder)
            v = 1.0 + tt.uni(g, shape, 0.25)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_f16_bf16(v)
    return out


# --------------------------------------------------------------------------------------------
# original (Lightricks ltx-core / ComfyUI) names <-> diffusers names
# --------------------------------------------------------------------------------------------

def block_map(n_up):
    """original flat block index -> diffusers path (encoder: 4 down stages, decoder: n_up up stages)"""
    m = {"encoder.down_blocks.8": "encoder.mid_block", "decoder.up_blocks.0": "decoder.mid_block"}
    for i in range(4):
        m[f"encoder.down_blocks.{2 * i}"] = f"encoder.down_blocks.{i}"
        m[f"encoder.down_blocks.{2 * i + 1}"] = f"encoder.down_blocks.{i}.downsamplers.0"
    for i in range(n_up):
        m[f"decoder.up_blocks.{2 * i + 1}"] = f"decoder.up_blocks.{i}.upsamplers.0"
        m[f"decoder.up_blocks.{2 * i + 2}"] = f"decoder.up_blocks.{i}"
    return m


STATS = {"latents_mean": "per_channel_statistics.mean-of-means",
         "latents_std": "per_channel_statistics.std-of-means"}


def to_original(name, n_up):
    if name in STATS:
        return STATS[name]
    inv = {v: k for k, v in block_map(n_up).items()}
    # longest diffusers block prefix first (".upsamplers.0" before the bare block)
    for d in sorted(inv, key=len, reverse=True):
        if name.startswith(d + "."):
            rest = name[len(d):]
            return inv[d] + rest.replace(".resnets.", ".res_blocks.")
    return name        # conv_in, conv_out (norm_out has no tensors)


def original_to_diffusers(orig, n_up):
    """the reverse, written as the diffusers 2.3/2.5 converter does it (regex on the flat block)"""
    import re
    bm = block_map(n_up)
    rs = {v: k for k, v in STATS.items()}
    out = {}
    for k, v in orig.items():
        if k in rs:
            out[rs[k]] = v
            continue
        m = re.match(r"^((?:encoder\.down_blocks|decoder\.up_blocks)\.\d+)(\..*)$", k)
        if m:
            k = bm[m.group(1)] + m.group(2)
        out[k.replace(".res_blocks.", ".resnets.")] = v
    return out


def receptive_field(tag, T=64):
    """Temporal receptive field of the RELEASED layer structure (tiny widths, released res-block
    counts; nothing written): perturb latent frame k, list the output frames that change.  Output
    frame f "belongs" to latent frame own(f) = ceil(f / 8) (frame 0 to latent 0, frames 8j-7..8j to j)."""
    from diffusers import AutoencoderKLLTX2Video
    cfg = dict(RELEASED[tag], block_out_channels=(8, 8, 8, 8),
               decoder_block_out_channels=SMALL[tag]["decoder_block_out_channels"])
    vae = AutoencoderKLLTX2Video(**cfg).eval()
    ns = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()]
    vae.load_state_dict(init_weights(ns, 99))
    vae.double()
    g = torch.Generator().manual_seed(7)
    h, w = (2, 2) if tag == "v20" else (1, 1)
    z = torch.randn(1, 128, T, h, w, generator=g, dtype=torch.float64)
    rng = {}
    with torch.no_grad():
        base = vae.decode(z).sample
        for k in (0, 1, 2, T // 2, T - 2, T - 1):
            z2 = z.clone()
            z2[:, :, k] += 1.0
            d = (vae.decode(z2).sample - base).abs().amax(dim=(0, 1, 3, 4))
            ch = (d > 0).nonzero().flatten().tolist()
            assert ch == list(range(ch[0], ch[-1] + 1))
            rng[k] = (ch[0], ch[-1])
            print(f"{tag} (released res-block counts): perturbing latent {k} of {T} changes output "
                  f"frames {ch[0]}..{ch[-1]} (of {base.shape[2]}; its own: "
                  f"{0 if k == 0 else 8 * k - 7}..{8 * k})")
    m = T // 2
    a, b = rng[m][0] - 8 * m, rng[m][1] - 8 * m      # frame 8m+r changes for r in a..b
    for r in range(-7, 1):
        f = 8 * m + r                                  # own latent m, phase r
        ks = [k for k in range(T) if 8 * k + a <= f <= 8 * k + b]
        print(f"{tag}:   interior output frame 8j{r:+d} (own latent j) depends on latents "
              f"j{min(ks) - m:+d} .. j{max(ks) - m:+d}")
    return rng


def main():
    ap = argparse.ArgumentParser(description="generate the LTX-2 / 2.3 video VAE decoder test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", choices=list(RELEASED))
    ap.add_argument("--rf", action="store_true", help="also measure the temporal receptive field of the released layer structure")
    args = ap.parse_args()
    torch.set_num_threads(1)
    os.makedirs(args.out, exist_ok=True)

    import diffusers
    from diffusers import AutoencoderKLLTX2Video
    from diffusers.loaders.single_file_utils import convert_ltx2_vae_to_diffusers

    written = []

    def save(fname, tensors, meta):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)

    for tag in RELEASED:
        if args.only and tag != args.only:
            continue
        base = f"ltx2_{tag}"
        with torch.device("meta"):
            full = AutoencoderKLLTX2Video(**RELEASED[tag])
        full_dec = {k: tuple(t.shape) for k, t in full.state_dict().items() if not k.startswith("encoder.")}
        cfg = dict(RELEASED[tag], **SMALL[tag])
        torch.manual_seed(0)
        vae = AutoencoderKLLTX2Video(**cfg).eval()
        assert vae.decoder.is_causal is False
        names_shapes = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()]
        wseed, zseed = SEEDS[tag]
        sd = init_weights(names_shapes, wseed)
        vae.load_state_dict(sd, strict=True)
        dec_names = [k for k, _ in names_shapes if not k.startswith("encoder.")]
        def shape_free(names):      # structure up to the number of res blocks per stage
            return sorted({re.sub(r"resnets\.\d+\.", "resnets.J.", k) for k in names})
        if "decoder_layers_per_block" in SMALL[tag]:
            assert shape_free(dec_names) == shape_free(full_dec)
        else:
            assert sorted(dec_names) == sorted(full_dec)      # same structure as the released decoder
        n_up = len(vae.decoder.up_blocks)
        print(f"{tag}: {len(dec_names)} decoder-side tensors incl. latents_mean/std "
              f"(released: {len(full_dec)}), {n_up} up blocks")

        T, h, w = LATENT[tag]
        g = torch.Generator().manual_seed(zseed)
        z = torch.randn((1, 128, T, h, w), generator=g, dtype=torch.float32)
        z[0, 5, 1, h - 1, 1] = 4.0
        z[0, 100, T - 1, 0, 0] = -4.5
        with torch.no_grad():
            dec = vae.decode(z).sample.float().contiguous()
            dec2 = vae.decode(z[:, :, :2].contiguous()).sample.float().contiguous()
            explicit = vae.decode(z, causal=False).sample
            dec_causal = vae.decode(z, causal=True).sample
        assert torch.equal(explicit, dec)
        print(f"{tag}: decoded {tt.describe(dec)}  |y|>1: {100 * (dec.abs() > 1).double().mean().item():.2f}%")
        print(f"{tag}: decoded_first2 {tt.describe(dec2)}")
        diff = (dec[:, :, :9] - dec2).abs().amax(dim=(0, 1, 3, 4))
        print(f"{tag}: max |decode(z)[:, :, f] - decode(z[:, :, :2])[:, :, f]| per frame f=0..8: "
              + " ".join(f"{x:.3g}" for x in diff.tolist()))
        print(f"{tag}: decode(causal=True) differs from the released non-causal decode by "
              f"{(dec_causal - dec).abs().max().item():.3g}")
        with torch.no_grad():
            v64 = AutoencoderKLLTX2Video(**cfg)
            v64.load_state_dict(sd)
            d64 = v64.double().eval().decode(z.double()).sample
        print(f"{tag}: max |fp32 - fp64| = {(dec.double() - d64).abs().max().item():.3g}")

        # ---- names ----
        keep = set(dec_names) | set(ENCODER_SAMPLE)
        sd_w = {k: v for k, v in sd.items() if k in keep}
        orig = {to_original(k, n_up): v for k, v in sd_w.items()}
        assert len(orig) == len(sd_w)
        back = original_to_diffusers(orig, n_up)
        assert back.keys() == sd_w.keys()
        if tag == "v20":
            conv = convert_ltx2_vae_to_diffusers({"vae." + k: v.clone() for k, v in orig.items()})
            assert conv.keys() == sd_w.keys(), sorted(set(conv) ^ set(sd_w))
            print(f"{tag}: diffusers' convert_ltx2_vae_to_diffusers maps the original names back exactly")
        v2 = AutoencoderKLLTX2Video(**cfg).eval()
        r = v2.load_state_dict(back, strict=False)
        assert not r.unexpected_keys and all(k.startswith("encoder.") for k in r.missing_keys)
        with torch.no_grad():
            d2 = v2.decode(z).sample
        print(f"{tag}: max |decode(original names renamed back) - decoded| = {(d2 - dec).abs().max().item():.3g}")

        meta_model = {"model": f"LTX-2 video VAE ({'2.0' if tag == 'v20' else '2.3'}) decoder structure "
                               f"(AutoencoderKLLTX2Video), random weights (values exact in F16 and BF16)",
                      "decoder_block_out_channels": str(SMALL[tag]["decoder_block_out_channels"]),
                      "generator": GEN}
        save(f"{base}.diffusers.safetensors", {k: v.half() for k, v in sd_w.items()},
             dict(meta_model, naming="diffusers AutoencoderKLLTX2Video"))
        save(f"{base}.orig.safetensors", {k: v.half() for k, v in orig.items()},
             dict(meta_model, naming="original Lightricks (ltx-core / ComfyUI), no 'vae.' prefix"))
        save(f"{base}.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
             {"generator": GEN, "space": "raw LTX-2 VAE latent z (decoder input), NCTHW"})
        save(f"{base}.expected.safetensors", {"decoded": dec, "decoded_first2": dec2},
             {"reference": f"diffusers {diffusers.__version__} AutoencoderKLLTX2Video.decode(z).sample, "
                           f"fp32 CPU, torch {torch.__version__}, decoder_causal False",
              "decoded": f"decode({base}.latent), whole clip, not clamped (about [-1,1])",
              "decoded_first2": "decode of the first 2 latent frames alone",
              "model": meta_model["model"]})
        if args.rf:
            receptive_field(tag)

    tt.report_written(written)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate the small, deterministic HunyuanVideo 1.5 VAE test fixtures (hyvideo15_w32.*) in tests/data/.

    /tmp/venv-torch/bin/python tests/data/gen_hyvideo15_fixtures.py [--out DIR] [--stats]

The reference is computed by the UPSTREAM implementation, diffusers' `AutoencoderKLHunyuanVideo15`
(pip package `diffusers`, 0.42.1 used), `vae.decode(z).sample`, fp32 on the CPU, one thread,
tiling and slicing off (the class defaults; asserted).  Nothing of it is part of this repository.

Model: the released configuration (latent_channels 32, layers_per_block 2 -> 3 resnets per
decoder up-block, 16x spatial / 4x temporal: five levels, up-blocks 0 and 1 upsample in time and
space, 2 and 3 in space only, 4 not at all; mid block resnet + block-causal attention + resnet;
upsample_match_channel) with reduced widths: block_out_channels (2, 4, 8, 16, 32) instead of
(128, 256, 512, 1024, 1024), i.e. decoder widths [32, 16, 8, 4, 2] instead of
[1024, 1024, 512, 256, 128].  The top width cannot go below 32 (conv_in's shortcut repeats the 32
latent channels block_out_channels[-1] // 32 times), and the 3x3x3 convolutions at width 32
(conv_in, 4 in the mid block, 6 in up-block 0) alone are 300k parameters, so a weight file is
about 1 MB in F16.  Upsampler repeat ratios: up-block 0: 4 (first frame 2; released 8 / 4),
up-block 1: 4 / 2 (released 4 / 2), up-blocks 2, 3: 2 (released 2).
Random weights (fixed seed; RMS gains 1 +- 0.25, biases +- 0.1) rounded to values exact in both
F16 and BF16 before the reference is computed.

Files (see tests/data/README.md):
  hyvideo15_w32.diffusers.safetensors  diffusers state-dict names, F16, + 6 encoder tensors to ignore
  hyvideo15_w32.orig.safetensors       the original Tencent names (tencent/HunyuanVideo-1.5
                                       vae/diffusion_pytorch_model.safetensors; the same names
                                       ComfyUI's comfy/ldm/hunyuan_video/vae_refiner.py uses), F16
  hyvideo15_w32.latent                 raw VAE-space latent z, [1,32,4,3,5]
  hyvideo15_w32.normalized.latent      the diffusion model's latent x (z = x / 1.03682), [1,32,2,3,5]
  hyvideo15_w32.expected.safetensors   decoded [1,3,13,48,80], decoded_prefix2 [1,3,5,48,80],
                                       decoded_normalized [1,3,5,48,80], F32, not clamped

Checks (printed): the original names are the diffusers conversion script's map
(scripts/convert_hunyuan_video1_5_to_diffusers.py) and equal a list built independently from
ComfyUI's vae_refiner module layout; the original-named file read back and renamed decodes
identically; fp32 vs fp64; prefix decode vs whole clip; causality (changing latent frames > k
leaves the output frames of latents <= k unchanged).
"""

import argparse
import os
import re
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors read/write helpers)

GEN = "tests/data/gen_hyvideo15_fixtures.py"
TAG = "hyvideo15_w32"
SCALING = 1.03682

RELEASED = dict(in_channels=3, out_channels=3, latent_channels=32, layers_per_block=2,
                spatial_compression_ratio=16, temporal_compression_ratio=4,
                downsample_match_channel=True, upsample_match_channel=True, scaling_factor=SCALING)
RELEASED_BOC = (128, 256, 512, 1024, 1024)
BOC = (2, 4, 8, 16, 32)          # decoder widths reversed: [32, 16, 8, 4, 2]
LAT_T, LAT_H, LAT_W = 4, 3, 5    # -> 13 frames of 48 x 80

ENCODER_SAMPLE = ("encoder.conv_in.conv.weight", "encoder.conv_in.conv.bias",
                  "encoder.down_blocks.0.resnets.0.norm1.gamma", "encoder.mid_block.attentions.0.to_q.bias",
                  "encoder.norm_out.gamma", "encoder.conv_out.conv.bias")


def init_weights(names_shapes, seed):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in names_shapes:
        if name.endswith(".gamma"):
            v = 1.0 + tt.uni(g, shape, 0.25)
        elif name.endswith(".bias"):
            v = tt.uni(g, shape, 0.1)
        elif name.endswith(".weight"):
            if name.startswith("decoder.conv_out."):
                gain = 0.7
            elif re.search(r"attentions\.0\.to_[qk]\.", name):
                gain = 2.5          # q.k spread of a few units: a non-uniform softmax
            elif re.search(r"resnets\.\d+\.conv2\.", name):
                gain = 0.6          # residual branch
            elif ".upsamplers." in name:
                gain = 0.7
            else:
                gain = 1.0
            v = tt.uni(g, shape, gain * (3.0 / tt.fan_in(shape)) ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_f16_bf16(v)
    return out


# --------------------------------------------------------------------------------------------
# names: diffusers <-> original (Tencent HunyuanVideo-1.5 / ComfyUI vae_refiner)
# --------------------------------------------------------------------------------------------

_ATT = {"to_q": "q", "to_k": "k", "to_v": "v", "proj_out": "proj_out", "norm": "norm"}


def to_original(name):
    """diffusers AutoencoderKLHunyuanVideo15 key -> original key, as the inverse of diffusers'
    convert_hunyuan_video_15_vae_checkpoint_to_diffusers (scripts/convert_hunyuan_video1_5_to_diffusers.py)"""
    m = re.match(r"(encoder|decoder)\.mid_block\.resnets\.(\d)\.(.*)$", name)
    if m:
        return f"{m.group(1)}.mid.block_{int(m.group(2)) + 1}.{m.group(3)}"
    m = re.match(r"(encoder|decoder)\.mid_block\.attentions\.0\.(\w+)\.(.*)$", name)
    if m:
        return f"{m.group(1)}.mid.attn_1.{_ATT[m.group(2)]}.{m.group(3)}"
    m = re.match(r"decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)$", name)
    if m:
        return f"decoder.up.{m.group(1)}.block.{m.group(2)}.{m.group(3)}"
    m = re.match(r"decoder\.up_blocks\.(\d+)\.upsamplers\.0\.(.*)$", name)
    if m:
        return f"decoder.up.{m.group(1)}.upsample.{m.group(2)}"
    m = re.match(r"encoder\.down_blocks\.(\d+)\.resnets\.(\d+)\.(.*)$", name)
    if m:
        return f"encoder.down.{m.group(1)}.block.{m.group(2)}.{m.group(3)}"
    m = re.match(r"encoder\.down_blocks\.(\d+)\.downsamplers\.0\.(.*)$", name)
    if m:
        return f"encoder.down.{m.group(1)}.downsample.{m.group(2)}"
    if re.match(r"(encoder|decoder)\.(conv_in|conv_out|norm_out)\.", name):
        return name
    raise ValueError(f"no original name for {name}")


def expected_original_decoder(boc, z, nrb, out_ch, tus_levels=2, sus_levels=4):
    """decoder names and shapes built from ComfyUI's comfy/ldm/hunyuan_video/vae_refiner.py
    Decoder(refiner_vae=True) module layout (NoPadConv3d holds `.conv`; RMS_norm gamma (C,1,1,1);
    AttnBlock q/k/v/proj_out 1x1x1 Conv3d + norm; UpSmpl conv to oc*8 or oc*4), independently of
    the renaming above"""
    boc = list(boc)[::-1]
    e = {}

    def conv(p, cin, cout, k=3):
        e[f"{p}.conv.weight"] = (cout, cin, k, k, k)
        e[f"{p}.conv.bias"] = (cout,)

    def res(p, cin, cout):
        e[f"{p}.norm1.gamma"] = (cin, 1, 1, 1)
        conv(f"{p}.conv1", cin, cout)
        e[f"{p}.norm2.gamma"] = (cout, 1, 1, 1)
        conv(f"{p}.conv2", cout, cout)
        assert cin == cout       # no nin_shortcut with upsample_match_channel

    ch = boc[0]
    conv("decoder.conv_in", z, ch)
    res("decoder.mid.block_1", ch, ch)
    e["decoder.mid.attn_1.norm.gamma"] = (ch, 1, 1, 1)
    for q in ("q", "k", "v", "proj_out"):
        e[f"decoder.mid.attn_1.{q}.weight"] = (ch, ch, 1, 1, 1)
        e[f"decoder.mid.attn_1.{q}.bias"] = (ch,)
    res("decoder.mid.block_2", ch, ch)
    for i, tgt in enumerate(boc):
        for j in range(nrb + 1):
            res(f"decoder.up.{i}.block.{j}", ch if j == 0 else tgt, tgt)
        ch = tgt
        if i < sus_levels:
            nxt = boc[i + 1]
            conv(f"decoder.up.{i}.upsample.conv", ch, nxt * (8 if i < tus_levels else 4))
            ch = nxt
    e["decoder.norm_out.gamma"] = (ch, 1, 1, 1)
    conv("decoder.conv_out", ch, out_ch)
    return e


# --------------------------------------------------------------------------------------------

def make_latents(seed):
    g = torch.Generator().manual_seed(seed)
    shape = (1, 32, LAT_T, LAT_H, LAT_W)
    z = torch.randn(shape, generator=g, dtype=torch.float32) * 1.5      # raw VAE space
    z[0, 3, 1, 2, 4] = 7.0
    z[0, 30, 3, 0, 1] = -6.5
    x = torch.randn((1, 32, 2, LAT_H, LAT_W), generator=g, dtype=torch.float32)   # normalised, T=2
    x[0, 5, 0, 1, 2] = 4.5
    x[0, 17, 1, 2, 0] = -5.0
    return z, x


def decode(vae, z):
    with torch.no_grad():
        return vae.decode(z).sample.float().contiguous()


def frames_of(k):
    """output frame range produced by latent frame k: latent 0 -> frame 0, k >= 1 -> 4k-3 .. 4k"""
    return (0, 1) if k == 0 else (4 * k - 3, 4 * k + 1)


def stats(vae, z):
    rows = []
    mods = [("conv_in", vae.decoder.conv_in), ("mid_block", vae.decoder.mid_block)]
    mods += [(f"up_blocks.{i}", b) for i, b in enumerate(vae.decoder.up_blocks)]
    mods += [("conv_out", vae.decoder.conv_out)]
    hooks = [m.register_forward_hook(lambda mod, i, o, n=n: rows.append((n, o.std().item(), o.abs().max().item())))
             for n, m in mods]
    decode(vae, z)
    for h in hooks:
        h.remove()
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, s, mx in rows)


def attention_spread(vae, z):
    """softmax sharpness in the mid attention: mean over queries of the max attention weight"""
    att = vae.decoder.mid_block.attentions[0]
    got = {}

    def hook(mod, inp, out):
        x = att.norm(inp[0])
        q = att.to_q(x).flatten(2).transpose(1, 2)
        k = att.to_k(x).flatten(2).transpose(1, 2)
        s = q @ k.transpose(1, 2) / q.shape[-1] ** 0.5
        t, hw = inp[0].shape[2], inp[0].shape[3] * inp[0].shape[4]
        mask = att.prepare_causal_attention_mask(t, hw, s.dtype, s.device)
        p = torch.softmax(s + mask, -1)
        got["maxw"] = p.max(-1).values.mean().item()
        got["logit_std"] = s[0][mask == 0].std().item()
    h = att.register_forward_hook(hook)
    decode(vae, z)
    h.remove()
    return got


def main():
    ap = argparse.ArgumentParser(description="generate the HunyuanVideo 1.5 VAE test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stats", action="store_true", help="print per-block activation std/max")
    args = ap.parse_args()
    torch.set_num_threads(1)   # reproducible summation order
    os.makedirs(args.out, exist_ok=True)

    import diffusers
    from diffusers import AutoencoderKLHunyuanVideo15

    # the class defaults are the released configuration
    with torch.device("meta"):
        full = AutoencoderKLHunyuanVideo15()
    for k, v in RELEASED.items():
        assert full.config[k] == v, (k, full.config[k], v)
    assert tuple(full.config.block_out_channels) == RELEASED_BOC
    full_dec = {k: tuple(t.shape) for k, t in full.state_dict().items() if k.startswith("decoder.")}
    full_orig = {to_original(k): s for k, s in full_dec.items()}
    assert len(full_orig) == len(full_dec)
    want_full = expected_original_decoder(RELEASED_BOC, 32, 2, 3)
    assert full_orig == want_full, sorted(set(full_orig.items()) ^ set(want_full.items()))
    assert all(not k.startswith(("quant_conv", "post_quant_conv")) for k in full.state_dict())

    torch.manual_seed(0)
    cfg = dict(RELEASED, block_out_channels=BOC)
    vae = AutoencoderKLHunyuanVideo15(**cfg).eval()
    assert not vae.use_tiling and not vae.use_slicing
    names_shapes = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()]
    sd = init_weights(names_shapes, seed=4151)
    vae.load_state_dict(sd, strict=True)
    dec_names = [k for k, _ in names_shapes if k.startswith("decoder.")]
    assert sorted(dec_names) == sorted(full_dec)        # same decoder structure as the released model
    for k in ENCODER_SAMPLE:
        assert k in sd, k
    nparam = sum(sd[k].numel() for k in dec_names)
    print(f"hyvideo15: {len(dec_names)} decoder tensors ({nparam} values; released: "
          f"{sum(torch.Size(s).numel() for s in full_dec.values())}), names equal the released model's")

    z, x = make_latents(seed=5151)
    dec = decode(vae, z)
    dec_p2 = decode(vae, z[:, :, :2].contiguous())
    dec_n = decode(vae, x / SCALING)
    for name, y in (("decoded", dec), ("decoded_prefix2", dec_p2), ("decoded_normalized", dec_n)):
        frac = (y.abs() >= 1.0).double().mean().item()
        print(f"hyvideo15: {name} {tt.describe(y)}  |y|>=1: {100 * frac:.2f}%")
    d = (dec_p2 - dec[:, :, :dec_p2.shape[2]]).abs().max().item()
    print(f"hyvideo15: max |decode(z[:, :, :2]) - decode(z)[:, :, :5]| = {d:.3g}")
    a = attention_spread(vae, z)
    print(f"hyvideo15: mid attention: mean max weight {a['maxw']:.3f}, logit std {a['logit_std']:.2f}")
    if args.stats:
        print("hyvideo15 stats:", stats(vae, z))

    # causality: output frames of latents <= k do not depend on latents > k
    g = torch.Generator().manual_seed(6151)
    worst = 0.0
    for k in range(LAT_T - 1):
        z2 = z.clone()
        z2[:, :, k + 1:] = torch.randn(z2[:, :, k + 1:].shape, generator=g) * 3.0
        d2 = decode(vae, z2)
        e = frames_of(k)[1]
        diff = (d2[:, :, :e] - dec[:, :, :e]).abs().max().item()
        later = (d2[:, :, e:] - dec[:, :, e:]).abs().max().item()
        worst = max(worst, diff)
        print(f"hyvideo15: causality k={k}: latents > {k} replaced: frames < {e} change by {diff:.3g}, "
              f"frames >= {e} by {later:.3g}")
    # every prefix length
    for n in range(1, LAT_T + 1):
        dp = decode(vae, z[:, :, :n].contiguous())
        print(f"hyvideo15: prefix of {n} latents -> {dp.shape[2]} frames, max diff to the whole clip "
              f"{(dp - dec[:, :, :dp.shape[2]]).abs().max().item():.3g}")

    with torch.no_grad():
        v64 = AutoencoderKLHunyuanVideo15(**cfg)
        v64.load_state_dict(sd)
        d64 = v64.double().eval().decode(z.double()).sample
    print(f"hyvideo15: max |fp32 - fp64 diffusers| = {(dec.double() - d64).abs().max().item():.3g}")

    # ---- the two namings ----
    keep = set(dec_names) | set(ENCODER_SAMPLE)
    sd_w = {k: v for k, v in sd.items() if k in keep}
    orig = {to_original(k): v for k, v in sd_w.items()}
    assert len(orig) == len(sd_w)
    want = expected_original_decoder(BOC, 32, 2, 3)
    got = {k: tuple(v.shape) for k, v in orig.items() if k.startswith("decoder.")}
    assert got == want, sorted(set(got.items()) ^ set(want.items()))
    print(f"hyvideo15: original names: {len(got)} decoder tensors, names and shapes equal the "
          f"ComfyUI vae_refiner layout list (also at the released widths: {len(want_full)}); "
          f"+ {len(orig) - len(got)} encoder tensors")

    meta_model = {"model": "HunyuanVideo 1.5 VAE (AutoencoderKLHunyuanVideo15) structure, random weights "
                           "(values exact in F16 and BF16)",
                  "block_out_channels": ",".join(map(str, BOC)), "latent_channels": "32",
                  "scaling_factor": str(SCALING), "generator": GEN}
    written = []

    def save(fname, tensors, meta):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)
        return path

    save(f"{TAG}.diffusers.safetensors", {k: v.half() for k, v in sd_w.items()},
         dict(meta_model, naming="diffusers AutoencoderKLHunyuanVideo15"))
    p_orig = save(f"{TAG}.orig.safetensors", {k: v.half() for k, v in orig.items()},
                  dict(meta_model, naming="original tencent/HunyuanVideo-1.5 vae (= ComfyUI vae_refiner)"))
    lat_meta = {"generator": GEN}
    save(f"{TAG}.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space="raw HunyuanVideo 1.5 VAE latent z (decoder input), NCTHW"))
    save(f"{TAG}.normalized.latent", {"latent_tensor": x, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space=f"diffusion-model latent x, z = x / {SCALING} (scaling_factor), NCTHW"))
    save(f"{TAG}.expected.safetensors",
         {"decoded": dec, "decoded_prefix2": dec_p2, "decoded_normalized": dec_n},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKLHunyuanVideo15.decode(z).sample, "
                       f"fp32 CPU, tiling/slicing off, torch {torch.__version__}",
          "decoded": f"decode({TAG}.latent), not clamped",
          "decoded_prefix2": f"decode of the first 2 latent frames of {TAG}.latent alone (5 frames)",
          "decoded_normalized": f"decode(x / {SCALING}), x = {TAG}.normalized.latent",
          "channels": "R, G, B; image = (y + 1) / 2 clipped to [0,1]",
          "model": meta_model["model"]})

    # ---- read the original-named file back, rename, decode ----
    raw, _ = tt.load_safetensors(p_orig)
    inv = {to_original(k): k for k, _ in names_shapes}
    back = {inv[k]: torch.as_tensor(v).float() for k, v in raw.items()}
    v2 = AutoencoderKLHunyuanVideo15(**cfg).eval()
    r = v2.load_state_dict(back, strict=False)
    assert not r.unexpected_keys and all(k.startswith("encoder.") for k in r.missing_keys)
    d2 = decode(v2, z)
    print(f"hyvideo15: max |decode(orig file renamed back) - decode(diffusers)| = {(d2 - dec).abs().max().item():.3g}")

    tt.report_written(written)


if __name__ == "__main__":
    main()

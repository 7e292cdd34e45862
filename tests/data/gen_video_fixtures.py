#!/usr/bin/env python3
"""Generate the small, deterministic Wan 2.1 / Wan 2.2 VAE and TAEHV test fixtures in tests/data/.

    WAN_VAE_PY=/tmp/upstream/wan/modules/vae.py WAN22_VAE_PY=/tmp/upstream/wan/modules/vae2_2.py \\
        TAEHV_PY=/tmp/upstream/taehv.py \\
        /tmp/fixenv/bin/python tests/data/gen_video_fixtures.py [--out DIR] [--only wan|wan22|taehv] [--stats]

The references are computed by the UPSTREAM implementations, not by code in this repository:
- Wan 2.1 VAE: diffusers' `AutoencoderKLWan` (pip package `diffusers`), `vae.decode(z).sample`,
  fp32 on the CPU.  Wan's own `WanVAE_` (`wan/modules/vae.py` of Wan-Video/Wan2.1, path in
  $WAN_VAE_PY) is used as a cross-check only (printed, not stored).
- Wan 2.2 VAE (TI2V-5B): diffusers' `AutoencoderKLWan(is_residual=True, patch_size=2, z_dim=48)`;
  Wan's own `WanVAE_` of `wan/modules/vae2_2.py` (Wan-Video/Wan2.2, path in $WAN22_VAE_PY) loads
  the original-named values strictly and must decode the same frames (checked, printed).
- TAEHV: `TAEHV.decode_video` of madebyollin/taehv `taehv.py` (path in $TAEHV_PY).
No upstream file is part of this repository; tests/data/README.md says how to get them and
which Python environment to use (torch >= 2 and diffusers; Debian's torch 1.13 is too old for
current diffusers).

Random weights (fixed seeds), reduced widths, rounded to the dtype they are stored in *before*
the reference is computed.  Re-running rewrites byte-identical files (same torch build).
"""

import argparse
import importlib.util
import os
import re
import sys

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors read/write helpers)

# Latent size shared by all fixtures: T=4 latent frames of 5x7 -> 13 frames of 40x56 (x8)
LAT_T, LAT_H, LAT_W = 4, 5, 7

# Wan 2.1 latent statistics (MODELS.md §B.4; identical to diffusers' AutoencoderKLWan defaults)
WAN21_MEAN = [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
              0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921]
WAN21_STD = [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
             3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160]

# Wan 2.2 (TI2V-5B) latent statistics (MODELS.md §B.8; Wan2_2_VAE in vae2_2.py)
WAN22_MEAN = [-0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382,
              0.0542, 0.2813, 0.0891, 0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207,
              -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502, -0.2055, -0.0322, 0.1109,
              0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723,
              -0.2839, -0.2083, -0.0520, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573,
              -0.0548, -0.1681, -0.0667]
WAN22_STD = [0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344,
             0.5894, 1.0901, 0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804,
             0.5833, 1.4146, 0.8986, 0.5659, 0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999,
             0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944, 0.5726, 1.2042, 0.5458, 1.6887,
             0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744]
assert len(WAN22_MEAN) == len(WAN22_STD) == 48

# Wan 2.2 latent size: 16x spatial, so 3x4 latents give 48x64 frames (13 of them, ~0.5 MB per
# expected tensor)
WAN22_LAT_H, WAN22_LAT_W = 3, 4

# Reduced Wan widths: decoder base 4 -> decoder dims 4*[4,4,4,2,1] = [16,16,16,8,4]
# (attention at C=16); encoder base 2.  (base 8 would make the F32 file 3.6 MB.)  The same
# bases for Wan 2.2: decoder dims [16,16,16,8,4], head 4 -> 12 = 3 x 2x2.
WAN_DEC_BASE = 4
WAN_ENC_BASE = 2

# Reduced TAEHV widths (upstream: decoder n_f = [256,128,64,64], encoder 64)
TAEHV_NF = [32, 24, 16, 16]
TAEHV_ENC_W = 8


def load_module(env, name):
    path = os.environ.get(env)
    if not path or not os.path.isfile(path):
        sys.exit(f"set {env} to the upstream file (see tests/data/README.md); got {path!r}")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def uni(g, shape, bound):
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound


def fan_in(shape):
    n = 1
    for d in shape[1:]:
        n *= d
    return n


def describe(y):
    return (f"{tuple(y.shape)} min {y.min().item():.4f} max {y.max().item():.4f} "
            f"mean {y.mean().item():.4f} std {y.std().item():.4f}")


# --------------------------------------------------------------------------------------------
# Wan 2.1
# --------------------------------------------------------------------------------------------

def wan_init(sd_names_shapes, seed):
    """Random weights in diffusers naming.  Every RMS norm re-normalises, so only the gains of
    the last conv of each residual branch, the attention and the output conv matter for the
    activation scale; they are chosen so the output std is ~0.4 with few clamped values."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in sd_names_shapes:
        if name.endswith(".gamma"):
            v = 1.0 + uni(g, shape, 0.25)
        elif name.endswith(".bias"):
            v = uni(g, shape, 0.1)
        elif name.endswith(".weight"):
            if name.startswith("decoder.conv_out."):
                gain = 0.8
            elif ".to_qkv." in name:
                gain = 2.0          # q.k spread of a few units: a non-uniform softmax
            elif re.search(r"resnets\.\d+\.conv2\.", name):
                gain = 0.8          # residual branch
            else:
                gain = 1.0
            v = uni(g, shape, gain * (3.0 / fan_in(shape)) ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_to_dtype(v.float(), torch.bfloat16)
    return out


_RES_SUB = {"norm1": "residual.0", "conv1": "residual.2", "norm2": "residual.3",
            "conv2": "residual.6", "conv_shortcut": "shortcut"}
_MID = {"resnets.0": "middle.0", "attentions.0": "middle.1", "resnets.1": "middle.2"}


def wan_diffusers_to_original(name):
    """diffusers AutoencoderKLWan (Wan 2.1 layout) key -> Wan2.1 `WanVAE_` key (MODELS.md §B.6,
    §B.7; encoder analogous)."""
    if name.startswith("post_quant_conv."):
        return "conv2." + name[len("post_quant_conv."):]
    if name.startswith("quant_conv."):
        return "conv1." + name[len("quant_conv."):]
    side, rest = name.split(".", 1)
    if side not in ("encoder", "decoder"):
        raise ValueError(name)
    m = re.match(r"conv_in\.(.*)$", rest)
    if m:
        return f"{side}.conv1.{m.group(1)}"
    m = re.match(r"norm_out\.(.*)$", rest)
    if m:
        return f"{side}.head.0.{m.group(1)}"
    m = re.match(r"conv_out\.(.*)$", rest)
    if m:
        return f"{side}.head.2.{m.group(1)}"
    m = re.match(r"mid_block\.(resnets\.\d|attentions\.\d)\.(.*)$", rest)
    if m:
        blk, sub = _MID[m.group(1)], m.group(2)
        if m.group(1).startswith("resnets"):
            sub = _res_sub(sub)
        return f"{side}.{blk}.{sub}"
    m = re.match(r"down_blocks\.(\d+)\.(.*)$", rest)   # encoder: flat list
    if m:
        sub = m.group(2)
        if not sub.startswith(("resample.", "time_conv.")):
            sub = _res_sub(sub)
        return f"{side}.downsamples.{m.group(1)}.{sub}"
    m = re.match(r"up_blocks\.(\d+)\.resnets\.(\d+)\.(.*)$", rest)
    if m:
        i, j = int(m.group(1)), int(m.group(2))
        return f"{side}.upsamples.{4 * i + j}.{_res_sub(m.group(3))}"
    m = re.match(r"up_blocks\.(\d+)\.upsamplers\.0\.(.*)$", rest)
    if m:
        return f"{side}.upsamples.{4 * int(m.group(1)) + 3}.{m.group(2)}"
    raise ValueError(f"no original name for {name}")


def _res_sub(sub):
    first, rest = sub.split(".", 1)
    return f"{_RES_SUB[first]}.{rest}"


def wan_make_latents(seed, c=16, h=LAT_H, w=LAT_W):
    g = torch.Generator().manual_seed(seed)
    shape = (1, c, LAT_T, h, w)
    z = torch.randn(shape, generator=g, dtype=torch.float32) * 1.5     # raw VAE space
    z[0, 3, 1, 2, min(4, w - 1)] = 9.0
    z[0, 11, LAT_T - 1, h - 1, w - 1] = -8.0
    x = torch.randn(shape, generator=g, dtype=torch.float32)           # normalised space
    x[0, 5, 0, 0, 0] = 4.5
    x[0, 14, 2, min(3, h - 1), 1] = -5.0
    return z, x


def wan_denormalize(x, mean=WAN21_MEAN, std=WAN21_STD):
    """Exactly diffusers' WanPipeline: latents / (1/std) + mean, all float32."""
    c = len(mean)
    mean = torch.tensor(mean).view(1, c, 1, 1, 1).to(x.device, x.dtype)
    std_inv = 1.0 / torch.tensor(std).view(1, c, 1, 1, 1).to(x.device, x.dtype)
    return x / std_inv + mean


def wan_stats(vae, z):
    rows = []
    hooks = []
    mods = [("post_quant_conv", vae.post_quant_conv), ("conv_in", vae.decoder.conv_in),
            ("mid_block", vae.decoder.mid_block)]
    mods += [(f"up_blocks.{i}", b) for i, b in enumerate(vae.decoder.up_blocks)]
    mods += [("conv_out", vae.decoder.conv_out)]
    for n, m in mods:
        hooks.append(m.register_forward_hook(
            lambda mod, inp, out, n=n: rows.append((n, out.std().item(), out.abs().max().item()))))
    with torch.no_grad():
        vae.decode(z)
    for h in hooks:
        h.remove()
    # one row per (module, latent frame): summarise per module
    agg = {}
    for n, s, mx in rows:
        a = agg.setdefault(n, [0.0, 0.0])
        a[0], a[1] = max(a[0], s), max(a[1], mx)
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, (s, mx) in agg.items())


def wan_reference(args, tag, cfg, seed, z, x, mean, std):
    """diffusers' AutoencoderKLWan(**cfg) with wan_init weights, and its decodes of z and of x
    de-normalised as the pipeline does (mean, std); prints their statistics and the fp32 vs fp64
    difference"""
    from diffusers import AutoencoderKLWan

    torch.manual_seed(0)
    vae = AutoencoderKLWan(**cfg).eval()
    names_shapes = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()]
    sd = wan_init(names_shapes, seed=seed)
    vae.load_state_dict(sd, strict=True)
    with torch.no_grad():
        dec = vae.decode(z).sample.float().contiguous()
        dec_n = vae.decode(wan_denormalize(x, mean, std)).sample.float().contiguous()
    for name, y in (("decoded", dec), ("decoded_normalized", dec_n)):
        clamped = (y.abs() >= 1.0).double().mean().item()
        print(f"{tag}: {name} {describe(y)}  at +-1: {100 * clamped:.2f}%")
    if args.stats:
        print(f"{tag} stats:", wan_stats(vae, z))
    with torch.no_grad():
        v64 = AutoencoderKLWan(**cfg)
        v64.load_state_dict(sd)
        d64 = v64.double().eval().decode(z.double()).sample
        print(f"{tag}: max |fp32 - fp64 diffusers| = {(dec.double() - d64).abs().max().item():.3g}")
    return vae, sd, dec, dec_n


def wan_save(save, base, version, sd, orig, z, x, dec, dec_n, naming_orig, reference):
    """the five files of a Wan fixture `base` (both namings, both latents, the references)"""
    import diffusers

    meta_model = {"model": f"Wan {version} VAE structure, random weights (bf16-exact values)",
                  "decoder_base_dim": str(WAN_DEC_BASE), "encoder_base_dim": str(WAN_ENC_BASE),
                  "z_dim": str(z.shape[1]), "generator": "tests/data/gen_video_fixtures.py"}
    save(f"{base}.diffusers.safetensors", sd, dict(meta_model, naming="diffusers"))
    save(f"{base}.orig.safetensors", {k: v.bfloat16() for k, v in orig.items()},
         dict(meta_model, naming=naming_orig))
    lat_meta = {"generator": "tests/data/gen_video_fixtures.py"}
    short = version.split()[0]
    save(f"{base}.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space=f"raw Wan {short} VAE latent (decoder input), NCTHW"))
    save(f"{base}.normalized.latent",
         {"latent_tensor": x, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space=f"normalised Wan {short} latent x (z = x / (1/std) + mean), NCTHW"))
    save(f"{base}.expected.safetensors", {"decoded": dec, "decoded_normalized": dec_n},
         {"reference": f"diffusers {diffusers.__version__} {reference}.decode(...).sample, "
                       f"fp32 CPU, torch {torch.__version__}; clamped to [-1,1]",
          "decoded": f"decode({base}.latent)",
          "decoded_normalized": f"decode(x / (1/std) + mean), x = {base}.normalized.latent"})


def gen_wan(args, save):
    cfg = dict(base_dim=WAN_ENC_BASE, decoder_base_dim=WAN_DEC_BASE, z_dim=16, dim_mult=[1, 2, 4, 4],
               num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True], dropout=0.0)
    z, x = wan_make_latents(seed=5021)
    vae, sd, dec, dec_n = wan_reference(args, "wan21", cfg, 4021, z, x, WAN21_MEAN, WAN21_STD)
    orig = {wan_diffusers_to_original(k): v for k, v in sd.items()}
    assert len(orig) == len(sd)
    wan_save(save, "wan21_b4", "2.1", sd, orig, z, x, dec, dec_n, "original WanVAE_", "AutoencoderKLWan")

    if os.environ.get("WAN_VAE_PY"):
        wan_crosscheck(orig, z, x, dec, dec_n, vae)
    else:
        print("wan21: WAN_VAE_PY not set: cross-check against Wan's own WanVAE_ skipped")


def wan_crosscheck(orig, z, x, dec, dec_n, vae):
    wv = load_module("WAN_VAE_PY", "wan_vae_upstream")
    cfg = dict(z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
               temperal_downsample=[False, True, True], dropout=0.0)
    # decoder side: WanVAE_ at the decoder width; encoder side: WanVAE_ at the encoder width
    mdec = wv.WanVAE_(dim=WAN_DEC_BASE, **cfg).eval()
    menc = wv.WanVAE_(dim=WAN_ENC_BASE, **cfg).eval()
    dec_keys = {k: v for k, v in orig.items() if k.startswith(("decoder.", "conv2."))}
    enc_keys = {k: v for k, v in orig.items() if k.startswith(("encoder.", "conv1."))}
    want_dec = {k for k in mdec.state_dict() if k.startswith(("decoder.", "conv2."))}
    want_enc = {k for k in menc.state_dict() if k.startswith(("encoder.", "conv1."))}
    assert set(dec_keys) == want_dec, sorted(set(dec_keys) ^ want_dec)
    assert set(enc_keys) == want_enc, sorted(set(enc_keys) ^ want_enc)
    assert len(dec_keys) + len(enc_keys) == len(orig)
    r = mdec.load_state_dict(dec_keys, strict=False)
    assert not r.unexpected_keys and all(k.startswith(("encoder.", "conv1.")) for k in r.missing_keys)
    r = menc.load_state_dict(enc_keys, strict=False)
    assert not r.unexpected_keys and all(k.startswith(("decoder.", "conv2.")) for k in r.missing_keys)
    print(f"wan21: original naming: {len(dec_keys)} decoder-side + {len(enc_keys)} encoder-side "
          f"tensors load into WanVAE_ (shapes match)")
    with torch.no_grad():
        o = mdec.decode(z).float().clamp_(-1, 1)          # chunked, as WanVAE.decode does
        mean = torch.tensor(WAN21_MEAN, dtype=torch.float32)
        std = torch.tensor(WAN21_STD, dtype=torch.float32)
        on = mdec.decode(x, [mean, 1.0 / std]).float().clamp_(-1, 1)
        print(f"wan21: max |WanVAE_ - diffusers| decoded = {(o - dec).abs().max().item():.3g}, "
              f"decoded_normalized (WanVAE_ scale=[mean,1/std]) = "
              f"{(on - dec_n).abs().max().item():.3g}")
        g = torch.Generator().manual_seed(6021)
        video = torch.rand((1, 3, 5, 16, 24), generator=g) * 2 - 1
        mu_o, _ = menc.encode(video)
        mu_d = vae.encode(video).latent_dist.mean
        print(f"wan21: encoder naming check: max |WanVAE_ mu - diffusers mu| = "
              f"{(mu_o - mu_d).abs().max().item():.3g}")


# --------------------------------------------------------------------------------------------
# Wan 2.2 (TI2V-5B)
# --------------------------------------------------------------------------------------------

def wan22_diffusers_to_original(name):
    """diffusers AutoencoderKLWan (Wan 2.2 layout, is_residual=True) key -> Wan2.2 `WanVAE_` key
    (MODELS.md §B.8): the up/down blocks nest their residual blocks, and the resampler follows
    them (encoder: 2 residual blocks per block, decoder: 3).  Everything else is named as in 2.1."""
    m = re.match(r"(encoder|decoder)\.(down|up)_blocks\.(\d+)\.(?:resnets\.(\d+)|(?:down|up)sampler)\.(.*)$",
                 name)
    if not m:
        return wan_diffusers_to_original(name)
    side, kind, i, j, rest = m.groups()
    if j is None:
        j, sub = (2 if kind == "down" else 3), rest
    else:
        sub = _res_sub(rest)
    return f"{side}.{kind}samples.{i}.{kind}samples.{j}.{sub}"


def gen_wan22(args, save):
    cfg = dict(base_dim=WAN_ENC_BASE, decoder_base_dim=WAN_DEC_BASE, z_dim=48, dim_mult=[1, 2, 4, 4],
               num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True], dropout=0.0,
               is_residual=True, in_channels=12, out_channels=12, patch_size=2,
               scale_factor_temporal=4, scale_factor_spatial=16,
               latents_mean=WAN22_MEAN, latents_std=WAN22_STD)
    z, x = wan_make_latents(seed=5022, c=48, h=WAN22_LAT_H, w=WAN22_LAT_W)
    _, sd, dec, dec_n = wan_reference(args, "wan22", cfg, 4022, z, x, WAN22_MEAN, WAN22_STD)
    orig = {wan22_diffusers_to_original(k): v for k, v in sd.items()}
    assert len(orig) == len(sd)
    n_dec = sum(k.startswith(("decoder.", "conv2.")) for k in orig)
    print(f"wan22: {len(sd)} tensors, {n_dec} decoder-side (MODELS.md §B.8: 110)")
    assert n_dec == 110
    wan_save(save, "wan22_b4", "2.2 (TI2V-5B)", sd, orig, z, x, dec, dec_n,
             "original Wan2.2 WanVAE_ (as Wan2.2_VAE.pth / ComfyUI wan2.2_vae)",
             "AutoencoderKLWan(is_residual=True, patch_size=2)")

    # ---- cross-check against Wan2.2's own code ----
    wv = load_module("WAN22_VAE_PY", "wan22_vae_upstream")
    up = wv.WanVAE_(dim=WAN_ENC_BASE, dec_dim=WAN_DEC_BASE, z_dim=48, dim_mult=[1, 2, 4, 4],
                    num_res_blocks=2, attn_scales=[], temperal_downsample=[False, True, True],
                    dropout=0.0).eval()
    up.load_state_dict(orig, strict=True)      # every name and shape, encoder side included
    with torch.no_grad():
        o = up.decode(z, [0.0, 1.0]).float().clamp_(-1, 1)   # chunked, as Wan2_2_VAE.decode
        mean = torch.tensor(WAN22_MEAN, dtype=torch.float32)
        std = torch.tensor(WAN22_STD, dtype=torch.float32)
        on = up.decode(x, [mean, 1.0 / std]).float().clamp_(-1, 1)
    d1, d2 = (o - dec).abs().max().item(), (on - dec_n).abs().max().item()
    print(f"wan22: original names load strictly into vae2_2 WanVAE_; max |WanVAE_ - diffusers| "
          f"decoded = {d1:.3g}, decoded_normalized (scale=[mean,1/std]) = {d2:.3g}")
    assert d1 < 1e-5 and d2 < 1e-5


# --------------------------------------------------------------------------------------------
# TAEHV
# --------------------------------------------------------------------------------------------

def taehv_narrow(th, z, p, n_f=TAEHV_NF, full=None):
    """Upstream TAEHV with reduced widths.  Upstream's constructor hard-codes the widths, so the
    model is built by the upstream constructor and then its `encoder` and `decoder` Sequentials
    are rebuilt from upstream's own blocks (conv, Clamp, MemBlock, TPool, TGrow) in the same
    order as upstream builds them, changing only the channel counts; this is checked against a
    full-width instance (same module types, same keys, same kernel sizes and strides).  `full`:
    that instance (upstream's defaults when None), whose time strides and decoder kind ('super':
    SuperMemBlocks) the narrow model takes."""
    we = TAEHV_ENC_W
    if full is None:
        full = th.TAEHV(checkpoint_path=None, patch_size=p, latent_channels=z)
    m = th.TAEHV(checkpoint_path=None, patch_size=p, latent_channels=z)
    m.is_cogvideox = full.is_cogvideox
    ic = m.image_channels * m.patch_size ** 2
    etd = [t.stride == 2 for t in full.encoder if isinstance(t, th.TPool)]
    dtu = [t.stride == 2 for t in full.decoder if isinstance(t, th.TGrow)]
    dsu = (True, True, True)  # upstream default
    conv, MB, TP, TG = th.conv, th.MemBlock, th.TPool, th.TGrow
    m.encoder = nn.Sequential(
        conv(ic, we), nn.ReLU(inplace=True),
        TP(we, 2 if etd[0] else 1), conv(we, we, stride=2, bias=False), MB(we, we), MB(we, we), MB(we, we),
        TP(we, 2 if etd[1] else 1), conv(we, we, stride=2, bias=False), MB(we, we), MB(we, we), MB(we, we),
        TP(we, 2 if etd[2] else 1), conv(we, we, stride=2, bias=False), MB(we, we), MB(we, we), MB(we, we),
        conv(we, m.latent_channels),
    )
    if any(isinstance(x, th.SuperMemBlock) for x in full.decoder):   # as upstream's arch_variant="super"
        SB = th.SuperMemBlock
        m.decoder = nn.Sequential(
            nn.Conv2d(m.latent_channels, n_f[0], 1, bias=False),
            SB(n_f[0]), SB(n_f[0]), SB(n_f[0]), conv(n_f[0], n_f[1] * 4), nn.ReLU(inplace=True),
            nn.PixelShuffle(2), TG(n_f[1], 2 if dtu[0] else 1),
            SB(n_f[1]), SB(n_f[1]), SB(n_f[1]), conv(n_f[1], n_f[2] * 4), nn.ReLU(inplace=True),
            nn.PixelShuffle(2), TG(n_f[2], 2 if dtu[1] else 1),
            SB(n_f[2]), SB(n_f[2]), SB(n_f[2]), conv(n_f[2], n_f[3] * 4), nn.ReLU(inplace=True),
            nn.PixelShuffle(2), TG(n_f[3], 2 if dtu[2] else 1),
            conv(n_f[3], ic),
        )
    else:
        m.decoder = taehv_base_decoder(th, m, n_f, dsu, dtu)
    # structure check against the full-width upstream module
    for part in ("encoder", "decoder"):
        a, b = getattr(full, part), getattr(m, part)
        assert [type(x) for x in a] == [type(x) for x in b], part
        for x, y in zip(a, b):
            if isinstance(x, (th.TPool, th.TGrow)):
                assert x.stride == y.stride
            if isinstance(x, nn.Upsample):
                assert x.scale_factor == y.scale_factor and x.mode == y.mode
            if isinstance(x, nn.PixelShuffle):
                assert x.upscale_factor == y.upscale_factor
            if isinstance(x, th.SuperMemBlock):
                assert [getattr(c, "groups", None) == getattr(c, "in_channels", None) for c in x.conv] == \
                       [getattr(c, "groups", None) == getattr(c, "in_channels", None) for c in y.conv]
    fs, ns = full.state_dict(), m.state_dict()
    assert list(fs) == list(ns)
    for k in fs:
        assert fs[k].dim() == ns[k].dim() and fs[k].shape[2:] == ns[k].shape[2:], k
    m.t_upscale = 2 ** sum(t.stride == 2 for t in m.decoder if isinstance(t, th.TGrow))
    m.t_downscale = 2 ** sum(t.stride == 2 for t in m.encoder if isinstance(t, th.TPool))
    m.frames_to_trim = m.t_upscale - 1
    assert (m.t_upscale, m.t_downscale, m.frames_to_trim) == (full.t_upscale, full.t_downscale, full.frames_to_trim)
    return m.eval()


def taehv_base_decoder(th, m, n_f, dsu, dtu):
    conv, MB, TG = th.conv, th.MemBlock, th.TGrow
    return nn.Sequential(
        th.Clamp(), conv(m.latent_channels, n_f[0]), nn.ReLU(inplace=True),
        MB(n_f[0], n_f[0]), MB(n_f[0], n_f[0]), MB(n_f[0], n_f[0]),
        nn.Upsample(scale_factor=2 if dsu[0] else 1), TG(n_f[0], 2 if dtu[0] else 1), conv(n_f[0], n_f[1], bias=False),
        MB(n_f[1], n_f[1]), MB(n_f[1], n_f[1]), MB(n_f[1], n_f[1]),
        nn.Upsample(scale_factor=2 if dsu[1] else 1), TG(n_f[1], 2 if dtu[1] else 1), conv(n_f[1], n_f[2], bias=False),
        MB(n_f[2], n_f[2]), MB(n_f[2], n_f[2]), MB(n_f[2], n_f[2]),
        nn.Upsample(scale_factor=2 if dsu[2] else 1), TG(n_f[2], 2 if dtu[2] else 1), conv(n_f[2], n_f[3], bias=False),
        nn.ReLU(inplace=True), conv(n_f[3], m.image_channels * m.patch_size ** 2),
    )


def taehv_init(model, seed, round_dtype):
    """ReLU-network init as in gen_fixtures.py: MemBlock conv.0/conv.2 (SuperMemBlock conv.0/conv.1)
    gain sqrt(2), conv.4 (conv.3) 0.5, output conv bias 0.5 +- 0.1 so the [0,1] clamp rarely
    triggers."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    last = max(int(k.split(".")[1]) for k in model.state_dict() if k.startswith("decoder."))
    for name, p in model.state_dict().items():
        shape = tuple(p.shape)
        parts = name.split(".")
        if name.endswith(".weight"):
            if parts[2:4] in (["conv", "0"], ["conv", "1"], ["conv", "2"]):
                gain = 2.0 ** 0.5
            elif parts[2:4] in (["conv", "3"], ["conv", "4"]):
                gain = 0.5
            elif parts[0] == "decoder" and int(parts[1]) == last:
                gain = 0.8
            else:
                gain = 1.0
            v = uni(g, shape, gain * (3.0 / fan_in(shape)) ** 0.5)
        elif name == f"decoder.{last}.bias":
            v = 0.5 + uni(g, shape, 0.1)
        elif name.endswith(".bias"):
            v = uni(g, shape, 0.1)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_to_dtype(v.float(), round_dtype)
    return out


# The other TAEHV variants (model/vae-model.c's table), each checked against the configuration
# upstream's taehv.py derives from a checkpoint's file name:
# (file base, upstream name, latent channels, patch, decoder TGrow time strides, latent T, h, w,
#  raw-latent scale or None, seed).  taecvx has an odd T: upstream's decode_video trims its first
# 3 frames only then (CogVideoX's 13-latent videos); an 8x-temporal taeltx_2 latent gives 8 frames.
TAEHV_VARIANTS = (
    ("taehv_nf16", "taehv", 16, 1, (1, 2, 2), 4, 3, 4, 0.476986, 7031),
    ("taehv15_nf16", "taehv1_5", 32, 2, (1, 2, 2), 4, 2, 3, 1.03682, 7032),
    ("taeltx2_nf16", "taeltx_2", 128, 4, (2, 2, 2), 3, 2, 2, None, 7033),
    ("taecvx_nf16", "taecvx", 16, 1, (1, 2, 2), 5, 3, 4, None, 7034),
    ("taew22s_nf16", "taew2_2_super", 48, 2, (1, 2, 2), 4, 2, 3, None, 7035),
    ("taehv15s_nf16", "taehv1_5_super", 32, 2, (1, 2, 2), 4, 3, 2, 1.03682, 7036),
)
TAEHV_VARIANT_NF = [16, 12, 8, 8]  # narrower than TAEHV_NF: four more fixtures stay small


def taehv_upstream(th, name, z, p, strides, tmp):
    """Upstream's own configuration for checkpoint `name`: a full-width random checkpoint of the
    table's shapes saved as `name`.pth, loaded (strictly) by upstream, which configures itself from
    the file name; its latent channels, patch and time strides must be the table's."""
    dtu = tuple(s == 2 for s in strides)
    etd = (True, True, True) if dtu[0] else (True, True, False)
    ref = th.TAEHV(checkpoint_path=None, patch_size=p, latent_channels=z, decoder_time_upscale=dtu,
                   encoder_time_downscale=etd, arch_variant="super" if "_super" in name else None)
    path = os.path.join(tmp, f"{name}.pth")
    torch.save(ref.state_dict(), path)
    full = th.TAEHV(checkpoint_path=path)
    got = (full.latent_channels, full.patch_size, tuple(t.stride for t in full.decoder if isinstance(t, th.TGrow)))
    assert got == (z, p, strides), f"{name}: upstream configures {got}, the table says {(z, p, strides)}"
    return full


def gen_taehv(args, save):
    import tempfile
    th = load_module("TAEHV_PY", "taehv_upstream")
    # taew2_2-like: a 3x5 latent (-> 48x80) keeps the expected file under 1 MB
    specs = [("taew21_nf32", 16, 1, LAT_T, LAT_H, LAT_W, None, 7021, TAEHV_NF, None),
             ("taew22_nf32", 48, 2, LAT_T, 3, 5, None, 7022, TAEHV_NF, None)]
    with tempfile.TemporaryDirectory() as tmp:
        for base, name, z, p, strides, T, lh, lw, scale, seed in TAEHV_VARIANTS:
            specs.append((base, z, p, T, lh, lw, scale, seed, TAEHV_VARIANT_NF,
                          taehv_upstream(th, name, z, p, strides, tmp)))
    for base, z, p, T, lh, lw, scale, seed, n_f, full in specs:
        dt = torch.float16
        m = taehv_narrow(th, z, p, n_f, full)
        sd = taehv_init(m, seed, dt)
        m.load_state_dict(sd, strict=True)
        g = torch.Generator().manual_seed(seed + 1000)
        lat = torch.randn((1, z, T, lh, lw), generator=g, dtype=torch.float32)
        lat[0, 2, 1, min(2, lh - 1), min(3, lw - 1)] = 7.5           # tanh(x/3)*3 input clamp saturates
        lat[0, z - 1, T - 1, 0, lw - 1] = -6.0
        if scale is not None:   # the file holds raw latents; TAEHV takes raw * scale (the pipeline's)
            lat = lat / scale
        xin = (lat if scale is None else lat * scale).permute(0, 2, 1, 3, 4).contiguous()  # NCTHW -> NTCHW
        with torch.no_grad():
            yp = m.decode_video(xin.clone(), parallel=True, show_progress_bar=False)
            ys = m.decode_video(xin.clone(), parallel=False, show_progress_bar=False)
            st = th.StreamingTAEHV(m)
            frames = []
            for t in range(xin.shape[1]):
                f = st.decode(xin[:, t:t + 1])
                while f is not None:
                    frames.append(f)
                    f = st.decode()
            yst = torch.cat(frames, 1)
            if m.is_cogvideox:  # the streaming wrapper never trims taecvx
                yst = yst[:, m.frames_to_trim:]
            m64 = taehv_narrow(th, z, p, n_f, full)
            m64.load_state_dict(sd)
            y64 = m64.double().decode_video(xin.double(), parallel=True, show_progress_bar=False)
        print(f"{base}: max |fp32 - fp64| = {(yp.double() - y64).abs().max().item():.3g}")
        out = yp.permute(0, 2, 1, 3, 4).float().contiguous()      # NTCHW -> NCTHW
        assert out.shape[2] == 1 + m.t_upscale * (T - 1)
        f0 = (out == 0).double().mean().item()
        f1 = (out == 1).double().mean().item()
        print(f"{base}: decoded {describe(out)}  ==0: {100 * f0:.2f}%  ==1: {100 * f1:.2f}%")
        print(f"{base}: max |parallel - sequential| = {(yp - ys).abs().max().item():.3g}, "
              f"max |parallel - StreamingTAEHV| = {(yp - yst).abs().max().item():.3g} "
              f"({yst.shape[1]} frames)")
        if args.stats:
            rows = []
            hooks = [mod.register_forward_hook(
                lambda mod_, inp, o, i=i: rows.append((i, o.std().item(), o.abs().max().item())))
                for i, mod in enumerate(m.decoder)]
            with torch.no_grad():
                m.decode_video(xin.clone(), parallel=True, show_progress_bar=False)
            for h in hooks:
                h.remove()
            print(f"{base} stats:", " ".join(f"{i}:{s:.2f}/{mx:.1f}" for i, s, mx in rows))
        if full is None:
            desc = (f"TAEHV (taehv.py TAEHV) z={z} patch={p}, decoder n_f={n_f}, encoder width "
                    f"{TAEHV_ENC_W}, random weights")
        else:   # decoder only
            sd = {k: v for k, v in sd.items() if k.startswith("decoder.")}
            desc = (f"TAEHV (taehv.py TAEHV configured as upstream's {base.split('_nf')[0]}) z={z} patch={p} "
                    f"time upscale {m.t_upscale}, decoder n_f={n_f}, random weights")
        space = "normalised latent (TAEHV input), NCTHW" if scale is None else \
            f"raw latent (TAEHV input = raw * {scale}), NCTHW"
        save(f"{base}.safetensors", {k: v.to(dt) for k, v in sd.items()},
             {"model": desc, "latent_channels": str(z), "patch_size": str(p),
              "generator": "tests/data/gen_video_fixtures.py"})
        save(f"{base}.latent", {"latent_tensor": lat, "latent_format_version_0": torch.zeros(0)},
             {"generator": "tests/data/gen_video_fixtures.py", "space": space})
        save(f"{base}.expected.safetensors", {"decoded": out},
             {"reference": f"taehv.py TAEHV.decode_video(parallel=True), fp32 CPU, torch "
                           f"{torch.__version__}; input/output transposed NCTHW<->NTCHW; "
                           f"clamped to [0,1]; first {m.frames_to_trim} frames trimmed", "model": desc})


def main():
    ap = argparse.ArgumentParser(description="generate Wan 2.1 / 2.2 VAE and TAEHV test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--only", choices=["wan", "wan22", "taehv"])
    ap.add_argument("--stats", action="store_true", help="print per-layer activation std/max")
    args = ap.parse_args()
    torch.set_num_threads(1)  # single-threaded: reproducible summation order
    os.makedirs(args.out, exist_ok=True)
    written = []

    def save(fname, tensors, meta=None):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)

    if args.only in (None, "wan"):
        gen_wan(args, save)
    if args.only in (None, "wan22"):
        gen_wan22(args, save)
    if args.only in (None, "taehv"):
        gen_taehv(args, save)
    total = 0
    for p in written:
        size = os.path.getsize(p)
        total += size
        print(f"wrote {os.path.relpath(p)} {size} bytes")
    print(f"total {total} bytes in {len(written)} files")


if __name__ == "__main__":
    main()

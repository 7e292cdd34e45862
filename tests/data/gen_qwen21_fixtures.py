#!/usr/bin/env python3
"""Generate the small, deterministic Qwen-Image 2.1 VAE test fixtures (qwen21_b4.*) in tests/data/.

    /tmp/venv-torch/bin/python tests/data/gen_qwen21_fixtures.py [--out DIR] [--stats]
    COMFY_DIR=/path/to/ComfyUI /tmp/venv-torch/bin/python tests/data/gen_qwen21_fixtures.py   # + ComfyUI check

The reference is computed by the UPSTREAM implementation, diffusers' `AutoencoderKLQwenImage21`
(pip package `diffusers`, 0.42.1 used), `vae.decode(z).sample`, fp32 on the CPU, one thread.
Nothing of it is part of this repository.

Model: the released configuration (the class defaults: z_dim 64, dim_mult [1,2,4,8,8],
num_res_blocks 2, temperal_downsample [False,True,True,True], in/out channels 4 (RGBA),
is_residual, patch_size None, 16x spatial) with reduced widths: decoder_base_dim 4 instead of 144
(decoder dims [32,32,32,16,8,4] instead of [1152,1152,1152,576,288,144]) and base_dim 2 instead
of 96 (encoder; only a few of its tensors are written, to be ignored).  The weight files grow as
the square of the base: 0.5 MB each at 4, about 2 MB each at 8.  Random weights (fixed seeds, RMS gains 1 +- 0.25, biases +- 0.1),
rounded to values that are exact in both F16 and BF16 before the reference is computed.

Files (see tests/data/README.md):
  qwen21_b4.diffusers.safetensors   diffusers state-dict names, F16
  qwen21_b4.orig.safetensors        the original (Wan 2.2 style) names ComfyUI's
                                    qwen_image_2.1_vae_bf16.safetensors uses, 5-D causal-conv
                                    weights (temporal kernel 1), BF16
  qwen21_b4.latent                  raw VAE-space latent z, 4-D [1,64,5,7] (ComfyUI's layout)
  qwen21_b4.5d.latent               the same values, 5-D [1,64,1,5,7] (diffusers' layout)
  qwen21_b4.normalized.latent       the diffusion model's latent x, 5-D [1,64,1,5,7]
  qwen21_b4.expected.safetensors    decoded / decoded_unclamped / decoded_normalized, F32 [1,4,1,80,112]

Checks (printed): the original names and shapes equal the list built independently from the
ComfyUI/Wan 2.2 module layout; the original-named file read back, renamed to diffusers names,
decodes to the same output; fp32 vs fp64; 4-D vs 5-D input.  With COMFY_DIR set to a ComfyUI
checkout that has Qwen-Image 2.1 support (comfy/ldm/wan/vae2_2.py with `temporal_kernel`), its
`WanVAE` is built with the 2.1 configuration (comfy.ops and two attention helpers stubbed with
plain torch), the original-named decoder tensors are loaded into it (every decoder name, shapes
must match) and its 4-D and 5-D decodes are compared with diffusers'.
"""

import argparse
import importlib.util
import os
import re
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors read/write helpers)

GEN = "tests/data/gen_qwen21_fixtures.py"
TAG = "qwen21_b4"

# 64 latent statistics: AutoencoderKLQwenImage21's defaults (diffusers 0.42.1), which the
# pipeline reads from vae.config (x_raw = x * std + mean).  Checked against the class below.
QWEN21_MEAN = [
    0.5126, 0.7721, -0.0631, 1.3506, -0.7855, -2.1025, -0.3458, 1.3722,
    1.8873, -1.7177, -0.6510, 0.2732, 0.7562, -0.6163, -1.0277, 3.8363,
    2.0210, 0.0472, 0.9320, 2.0087, 2.4954, -0.1391, -1.4249, 1.8464,
    -0.5236, 1.2826, 3.7046, -1.3035, 2.7286, -1.4518, -1.9036, -1.9955,
    -0.0342, -1.0265, -0.7636, 3.0555, 0.0746, -3.0751, -0.1076, 1.7376,
    -1.0914, -1.9435, -0.2784, -1.3680, 0.4809, -0.4433, 0.3764, 0.5729,
    -2.0595, 1.0960, -1.3260, -2.0211, -5.0179, 0.5275, 4.0162, 1.8505,
    0.3026, 1.9373, 1.4937, 0.2632, 0.5547, -1.7121, -0.1562, 0.0304]
QWEN21_STD = [
    3.2001, 3.2936, 3.4321, 3.0091, 3.1061, 4.0379, 4.0705, 3.7910,
    3.0785, 3.6500, 3.9308, 3.0904, 2.8778, 3.7675, 3.7320, 5.0756,
    3.2864, 4.0397, 3.1317, 4.0443, 2.9249, 3.9454, 3.0988, 4.2489,
    3.4896, 3.8513, 3.9323, 3.4719, 3.7498, 4.2830, 3.5694, 4.2467,
    3.9037, 3.2947, 5.0770, 3.5075, 3.2700, 3.4767, 2.8063, 5.1125,
    3.5327, 4.7833, 3.1286, 4.1819, 3.8527, 3.8312, 3.5605, 4.3875,
    3.9624, 4.0168, 3.5643, 4.0550, 5.5614, 4.2963, 4.4080, 3.4959,
    3.8747, 3.7608, 3.5735, 3.1490, 3.7662, 3.6746, 3.4563, 3.8161]
assert len(QWEN21_MEAN) == len(QWEN21_STD) == 64

# the released configuration, except the two widths (decoder_base_dim 144, base_dim 96)
RELEASED = dict(z_dim=64, dim_mult=[1, 2, 4, 8, 8], num_res_blocks=2, attn_scales=[],
                temperal_downsample=[False, True, True, True], dropout=0.0, is_residual=True,
                in_channels=4, out_channels=4, patch_size=None, scale_factor_temporal=8,
                scale_factor_spatial=16)
DEC_BASE = 4
ENC_BASE = 2
LAT_H, LAT_W = 5, 7          # -> 80 x 112 pixels

# encoder-side tensors written too (a loader must ignore them), in diffusers names
ENCODER_SAMPLE = ("quant_conv.weight", "quant_conv.bias", "encoder.conv_in.weight",
                  "encoder.conv_in.bias", "encoder.down_blocks.0.resnets.0.norm1.gamma",
                  "encoder.norm_out.gamma")


def qwen21_init(names_shapes, seed):
    """Random weights in diffusers naming.  Every RMS norm re-normalises, so only the gains of the
    last conv of each residual branch, the attention and the output conv set the scale."""
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
            elif ".to_qkv." in name:
                gain = 2.0          # q.k spread of a few units: a non-uniform softmax
            elif re.search(r"resnets\.\d+\.conv2\.", name):
                gain = 0.6          # residual branch
            else:
                gain = 1.0
            v = tt.uni(g, shape, gain * (3.0 / tt.fan_in(shape)) ** 0.5)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
        out[name] = tt.round_f16_bf16(v)
    return out


# --------------------------------------------------------------------------------------------
# names: diffusers <-> original (Wan 2.2 layout, as ComfyUI's qwen_image_2.1_vae_bf16.safetensors)
# --------------------------------------------------------------------------------------------

_RES_SUB = {"norm1": "residual.0", "conv1": "residual.2", "norm2": "residual.3",
            "conv2": "residual.6", "conv_shortcut": "shortcut"}
_MID = {"resnets.0": "middle.0", "attentions.0": "middle.1", "resnets.1": "middle.2"}


def _res_sub(sub):
    first, rest = sub.split(".", 1)
    return f"{_RES_SUB[first]}.{rest}"


def to_original(name, num_res_blocks=2):
    """diffusers AutoencoderKLQwenImage21 key -> original key.  Blocks nest their residual blocks
    (`{side}.{up|down}samples.I.{up|down}samples.J`); the resampler follows them (decoder: index
    num_res_blocks + 1, encoder: num_res_blocks); conv1/conv2 are the quant convs."""
    if name.startswith("post_quant_conv."):
        return "conv2." + name[len("post_quant_conv."):]
    if name.startswith("quant_conv."):
        return "conv1." + name[len("quant_conv."):]
    side, rest = name.split(".", 1)
    if side not in ("encoder", "decoder"):
        raise ValueError(name)
    for pat, fmt in ((r"conv_in\.(.*)$", "conv1.{0}"), (r"norm_out\.(.*)$", "head.0.{0}"),
                     (r"conv_out\.(.*)$", "head.2.{0}")):
        m = re.match(pat, rest)
        if m:
            return f"{side}." + fmt.format(m.group(1))
    m = re.match(r"mid_block\.(resnets\.\d|attentions\.\d)\.(.*)$", rest)
    if m:
        sub = _res_sub(m.group(2)) if m.group(1).startswith("resnets") else m.group(2)
        return f"{side}.{_MID[m.group(1)]}.{sub}"
    m = re.match(r"(down|up)_blocks\.(\d+)\.(?:resnets\.(\d+)|(?:down|up)sampler)\.(.*)$", rest)
    if m:
        kind, i, j, sub = m.groups()
        if j is None:
            j = num_res_blocks + (1 if kind == "up" else 0)
        else:
            sub = _res_sub(sub)
        return f"{side}.{kind}samples.{i}.{kind}samples.{j}.{sub}"
    raise ValueError(f"no original name for {name}")


def causal_conv_weights(vae):
    """diffusers names of the weights of QwenImage21CausalConv3d modules (nn.Conv2d there, 4-D;
    the original/ComfyUI CausalConv3d stores them 5-D with a time axis of 1)"""
    from diffusers.models.autoencoders.autoencoder_kl_qwenimage21 import QwenImage21CausalConv3d
    return {f"{n}.weight" for n, m in vae.named_modules() if isinstance(m, QwenImage21CausalConv3d)}


def diffusers_to_original_sd(sd, conv5d):
    return {to_original(k): (v.unsqueeze(2) if k in conv5d else v) for k, v in sd.items()}


def original_to_diffusers_sd(orig, names, conv5d):
    """inverse map over the names the diffusers model has; original tensors not among them (there
    should be none) are reported"""
    inv = {to_original(k): k for k in names}
    out, unknown = {}, []
    for k, v in orig.items():
        if k not in inv:
            unknown.append(k)
            continue
        d = inv[k]
        out[d] = v.squeeze(2) if d in conv5d else v
    return out, unknown


def expected_original_decoder(dec_dim, z, dim_mult, nrb, tup, out_ch):
    """decoder-side original names and shapes built from the ComfyUI vae2_2 module layout
    (WanVAE(..., temporal_kernel=1, patch_size=1)), independently of the renaming above"""
    dims = [dec_dim * u for u in [dim_mult[-1]] + dim_mult[::-1]]
    e = {"conv2.weight": (z, z, 1, 1, 1), "conv2.bias": (z,),
         "decoder.conv1.weight": (dims[0], z, 1, 3, 3), "decoder.conv1.bias": (dims[0],)}

    def res(prefix, cin, cout):
        e[f"{prefix}.residual.0.gamma"] = (cin, 1, 1, 1)
        e[f"{prefix}.residual.2.weight"] = (cout, cin, 1, 3, 3)
        e[f"{prefix}.residual.2.bias"] = (cout,)
        e[f"{prefix}.residual.3.gamma"] = (cout, 1, 1, 1)
        e[f"{prefix}.residual.6.weight"] = (cout, cout, 1, 3, 3)
        e[f"{prefix}.residual.6.bias"] = (cout,)
        if cin != cout:
            e[f"{prefix}.shortcut.weight"] = (cout, cin, 1, 1, 1)
            e[f"{prefix}.shortcut.bias"] = (cout,)

    c = dims[0]
    res("decoder.middle.0", c, c)
    e["decoder.middle.1.norm.gamma"] = (c, 1, 1)
    e["decoder.middle.1.to_qkv.weight"] = (3 * c, c, 1, 1)
    e["decoder.middle.1.to_qkv.bias"] = (3 * c,)
    e["decoder.middle.1.proj.weight"] = (c, c, 1, 1)
    e["decoder.middle.1.proj.bias"] = (c,)
    res("decoder.middle.2", c, c)
    for i, (cin, cout) in enumerate(zip(dims[:-1], dims[1:])):
        for j in range(nrb + 1):
            res(f"decoder.upsamples.{i}.upsamples.{j}", cin if j == 0 else cout, cout)
        if i != len(dim_mult) - 1:
            p = f"decoder.upsamples.{i}.upsamples.{nrb + 1}"
            e[f"{p}.resample.1.weight"] = (cout, cout, 3, 3)
            e[f"{p}.resample.1.bias"] = (cout,)
            if tup[i]:
                e[f"{p}.time_conv.weight"] = (2 * cout, cout, 1, 1, 1)
                e[f"{p}.time_conv.bias"] = (2 * cout,)
    e["decoder.head.0.gamma"] = (dims[-1], 1, 1, 1)
    e["decoder.head.2.weight"] = (out_ch, dims[-1], 1, 3, 3)
    e["decoder.head.2.bias"] = (out_ch,)
    return e


# --------------------------------------------------------------------------------------------
# optional: ComfyUI's own module
# --------------------------------------------------------------------------------------------

def load_comfy_vae2_2(comfy_dir):
    """comfy/ldm/wan/vae.py + vae2_2.py of a ComfyUI checkout, with comfy.ops and
    comfy.ldm.modules.diffusionmodules.model replaced by plain-torch stubs (what those two files
    import from them)"""
    import torch.nn as nn
    import torch.nn.functional as F

    class Conv3d(nn.Conv3d):
        def forward(self, x, autopad=None):
            if autopad == "causal_zero" and getattr(self, "_padding", 0):
                x = F.pad(x, (0, 0, 0, 0, self._padding, 0))     # front zero frames, as CausalConv3d
            return super().forward(x)

    def vae_attention():
        def attn(q, k, v):          # (B, C, H, W) each; one head of width C
            b, c, h, w = q.shape
            q, k, v = (t.reshape(b, 1, c, h * w).transpose(2, 3) for t in (q, k, v))
            return F.scaled_dot_product_attention(q, k, v).transpose(2, 3).reshape(b, c, h, w)
        return attn

    def torch_cat_if_needed(xs, dim=0):
        xs = [x for x in xs if x is not None and x.numel() > 0]
        return xs[0] if len(xs) == 1 else torch.cat(xs, dim=dim)

    mods = {}
    for name in ("comfy", "comfy.ldm", "comfy.ldm.modules", "comfy.ldm.modules.diffusionmodules",
                 "comfy.ldm.wan"):
        mods[name] = types.ModuleType(name)
        mods[name].__path__ = []
    mods["comfy.ops"] = types.ModuleType("comfy.ops")
    mods["comfy.ops"].disable_weight_init = types.SimpleNamespace(Conv2d=nn.Conv2d, Conv3d=Conv3d,
                                                                  Linear=nn.Linear)
    mods["comfy"].ops = mods["comfy.ops"]
    m = types.ModuleType("comfy.ldm.modules.diffusionmodules.model")
    m.vae_attention, m.torch_cat_if_needed = vae_attention, torch_cat_if_needed
    mods[m.__name__] = m
    saved = {k: sys.modules.get(k) for k in list(mods) + ["comfy.ldm.wan.vae", "comfy.ldm.wan.vae2_2"]}
    sys.modules.update(mods)
    try:
        out = None
        for short in ("vae", "vae2_2"):
            path = os.path.join(comfy_dir, "comfy", "ldm", "wan", f"{short}.py")
            spec = importlib.util.spec_from_file_location(f"comfy.ldm.wan.{short}", path)
            mod = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = mod
            spec.loader.exec_module(mod)
            out = mod
        return out
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def comfy_check(comfy_dir, orig, z, dec):
    v22 = load_comfy_vae2_2(comfy_dir)
    cfg = dict(dim=ENC_BASE, dec_dim=DEC_BASE, z_dim=64, dim_mult=RELEASED["dim_mult"],
               num_res_blocks=2, attn_scales=[], temperal_downsample=RELEASED["temperal_downsample"],
               dropout=0.0, image_channels=4, patch_size=1, temporal_kernel=1)
    cm = v22.WanVAE(**cfg).eval()
    want = {k: tuple(v.shape) for k, v in cm.state_dict().items()}
    dec_side = {k for k in want if k.startswith(("decoder.", "conv2."))}
    assert {k for k in orig if k.startswith(("decoder.", "conv2."))} == dec_side
    for k, v in orig.items():
        assert tuple(v.shape) == want[k], (k, tuple(v.shape), want[k])
    r = cm.load_state_dict({k: v.float() for k, v in orig.items()}, strict=False)
    assert not r.unexpected_keys
    assert all(k.startswith(("encoder.", "conv1.")) for k in r.missing_keys)
    with torch.no_grad():
        d4 = cm.decode(z[:, :, 0]).clamp(-1, 1)            # 4-D: ComfyUI's single-image path
        d5 = cm.decode(z).clamp(-1, 1)                     # 5-D: chunked path with feat_cache
    print(f"qwen21: ComfyUI vae2_2.WanVAE(temporal_kernel=1, image_channels=4, patch_size=1): the "
          f"{len(dec_side)} decoder-side original names load (shapes equal), "
          f"{sum(k in want for k in orig) - len(dec_side)} encoder-side sample names exist")
    print(f"qwen21: max |ComfyUI 4-D decode - diffusers| = {(d4.unsqueeze(2) - dec).abs().max().item():.3g}, "
          f"5-D: {(d5 - dec).abs().max().item():.3g}, ComfyUI 4-D vs 5-D: "
          f"{(d4.unsqueeze(2) - d5).abs().max().item():.3g}")


# --------------------------------------------------------------------------------------------

def make_latents(seed):
    g = torch.Generator().manual_seed(seed)
    shape = (1, 64, 1, LAT_H, LAT_W)
    z = torch.randn(shape, generator=g, dtype=torch.float32) * 2.0     # raw VAE space
    z[0, 3, 0, 2, 4] = 9.0
    z[0, 60, 0, LAT_H - 1, LAT_W - 1] = -8.0
    x = torch.randn(shape, generator=g, dtype=torch.float32)           # normalised space
    x[0, 5, 0, 0, 0] = 4.5
    x[0, 41, 0, 3, 1] = -5.0
    return z, x


def denormalize(x):
    """Exactly diffusers' QwenImage21Pipeline / QwenImage21DecodeStep: x * std + mean, float32."""
    mean = torch.tensor(QWEN21_MEAN).view(1, 64, 1, 1, 1).to(x.device, x.dtype)
    std = torch.tensor(QWEN21_STD).view(1, 64, 1, 1, 1).to(x.device, x.dtype)
    return x * std + mean


def decode_unclamped(vae, z):
    """vae.decode's output before its clamp: the decoder's output captured by a hook"""
    got = []
    h = vae.decoder.register_forward_hook(lambda m, i, o: got.append(o.detach().clone()))
    try:
        with torch.no_grad():
            y = vae.decode(z).sample
    finally:
        h.remove()
    assert len(got) == z.shape[2] == 1
    raw = got[0].float().contiguous()
    assert torch.equal(raw.clamp(-1, 1), y)
    return y.float().contiguous(), raw


def stats(vae, z):
    rows = []
    mods = [("conv_in", vae.decoder.conv_in), ("mid_block", vae.decoder.mid_block)]
    mods += [(f"up_blocks.{i}", b) for i, b in enumerate(vae.decoder.up_blocks)]
    mods += [("conv_out", vae.decoder.conv_out)]
    hooks = [m.register_forward_hook(lambda mod, i, o, n=n: rows.append((n, o.std().item(), o.abs().max().item())))
             for n, m in mods]
    with torch.no_grad():
        vae.decode(z)
    for h in hooks:
        h.remove()
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, s, mx in rows)


def main():
    ap = argparse.ArgumentParser(description="generate the Qwen-Image 2.1 VAE test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stats", action="store_true", help="print per-block activation std/max")
    args = ap.parse_args()
    torch.set_num_threads(1)   # reproducible summation order
    os.makedirs(args.out, exist_ok=True)

    import diffusers
    from diffusers import AutoencoderKLQwenImage21

    # the class defaults are the released configuration and the pipeline's statistics
    with torch.device("meta"):
        full = AutoencoderKLQwenImage21()
    for k, v in RELEASED.items():
        assert full.config[k] == v, (k, full.config[k], v)
    assert full.config.base_dim == 96 and full.config.decoder_base_dim == 144
    assert list(full.config.latents_mean) == QWEN21_MEAN and list(full.config.latents_std) == QWEN21_STD
    full_dec = {k: tuple(t.shape) for k, t in full.state_dict().items()
                if not k.startswith(("encoder.", "quant_conv."))}

    torch.manual_seed(0)
    cfg = dict(RELEASED, base_dim=ENC_BASE, decoder_base_dim=DEC_BASE)
    vae = AutoencoderKLQwenImage21(**cfg).eval()
    names_shapes = [(k, tuple(v.shape)) for k, v in vae.state_dict().items()]
    sd = qwen21_init(names_shapes, seed=4121)
    vae.load_state_dict(sd, strict=True)
    conv5d = causal_conv_weights(vae)
    dec_names = [k for k, _ in names_shapes if not k.startswith(("encoder.", "quant_conv."))]
    assert sorted(dec_names) == sorted(full_dec)        # same decoder structure as the released model
    for k in ENCODER_SAMPLE:
        assert k in sd, k
    print(f"qwen21: {len(dec_names)} decoder-side tensors (released widths: {len(full_dec)}), "
          f"{len(conv5d)} causal-conv weights")

    z, x = make_latents(seed=5121)
    dec, dec_raw = decode_unclamped(vae, z)
    dec_n, _ = decode_unclamped(vae, denormalize(x))
    for name, y in (("decoded_unclamped", dec_raw), ("decoded", dec), ("decoded_normalized", dec_n)):
        frac = (y.abs() >= 1.0).double().mean().item()
        print(f"qwen21: {name} {tt.describe(y)}  |y|>=1: {100 * frac:.2f}%")
    if args.stats:
        print("qwen21 stats:", stats(vae, z))
    with torch.no_grad():
        v64 = AutoencoderKLQwenImage21(**cfg)
        v64.load_state_dict(sd)
        d64 = v64.double().eval().decode(z.double()).sample
    print(f"qwen21: max |fp32 - fp64 diffusers| = {(dec.double() - d64).abs().max().item():.3g}")
    try:
        with torch.no_grad():
            vae.decode(z[:, :, 0])
        print("qwen21: diffusers decode accepts a 4-D latent")
    except ValueError as e:
        print(f"qwen21: diffusers decode rejects a 4-D latent ({e}); the pipeline unsqueezes it to 5-D")

    # ---- the two namings ----
    keep = set(dec_names) | set(ENCODER_SAMPLE)
    sd_w = {k: v for k, v in sd.items() if k in keep}
    orig = diffusers_to_original_sd(sd_w, conv5d)
    assert len(orig) == len(sd_w)
    want = expected_original_decoder(DEC_BASE, 64, RELEASED["dim_mult"], 2,
                                     RELEASED["temperal_downsample"][::-1], 4)
    got = {k: tuple(v.shape) for k, v in orig.items() if k.startswith(("decoder.", "conv2."))}
    assert got == want, sorted(set(got.items()) ^ set(want.items()))
    print(f"qwen21: original names: {len(got)} decoder-side tensors, names and shapes equal the "
          f"ComfyUI/Wan 2.2 layout list; + {len(orig) - len(got)} encoder-side")

    meta_model = {"model": "Qwen-Image 2.1 VAE (AutoencoderKLQwenImage21) structure, random weights "
                           "(values exact in F16 and BF16)",
                  "decoder_base_dim": str(DEC_BASE), "base_dim": str(ENC_BASE), "z_dim": "64",
                  "generator": GEN}
    written = []

    def save(fname, tensors, meta):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)
        return path

    save(f"{TAG}.diffusers.safetensors", {k: v.half() for k, v in sd_w.items()},
         dict(meta_model, naming="diffusers AutoencoderKLQwenImage21"))
    p_orig = save(f"{TAG}.orig.safetensors", {k: v.bfloat16() for k, v in orig.items()},
                  dict(meta_model, naming="original Wan 2.2 layout (ComfyUI qwen_image_2.1_vae_bf16)"))
    lat_meta = {"generator": GEN}
    save(f"{TAG}.latent", {"latent_tensor": z[:, :, 0].contiguous(), "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space="raw Qwen-Image 2.1 VAE latent (decoder input), NCHW (ComfyUI image latent)"))
    save(f"{TAG}.5d.latent", {"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space="raw Qwen-Image 2.1 VAE latent (decoder input), NCTHW T=1 (diffusers)"))
    save(f"{TAG}.normalized.latent", {"latent_tensor": x, "latent_format_version_0": torch.zeros(0)},
         dict(lat_meta, space="normalised Qwen-Image 2.1 latent x (z = x * std + mean), NCTHW T=1"))
    save(f"{TAG}.expected.safetensors",
         {"decoded": dec, "decoded_unclamped": dec_raw, "decoded_normalized": dec_n},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKLQwenImage21.decode(z).sample, "
                       f"fp32 CPU, torch {torch.__version__}",
          "decoded": f"decode({TAG}.latent) (= {TAG}.5d.latent), clamped to [-1,1] inside decode",
          "decoded_unclamped": "the decoder output before that clamp",
          "decoded_normalized": f"decode(x * std + mean), x = {TAG}.normalized.latent, clamped",
          "channels": "R, G, B, A; image = (y + 1) / 2 clipped to [0,1], straight alpha",
          "model": meta_model["model"]})

    # ---- read the original-named file back, rename, decode ----
    raw, _ = tt.load_safetensors(p_orig)
    back = {k: torch.as_tensor(v) for k, v in raw.items()}
    dsd, unknown = original_to_diffusers_sd(back, [k for k, _ in names_shapes], conv5d)
    assert not unknown, unknown
    v2 = AutoencoderKLQwenImage21(**cfg).eval()
    r = v2.load_state_dict(dsd, strict=False)
    assert not r.unexpected_keys and all(k.startswith(("encoder.", "quant_conv.")) for k in r.missing_keys)
    with torch.no_grad():
        d2 = v2.decode(z).sample
    print(f"qwen21: max |decode(orig file renamed back) - decode(diffusers)| = {(d2 - dec).abs().max().item():.3g}")

    comfy_dir = os.environ.get("COMFY_DIR")
    if comfy_dir:
        comfy_check(comfy_dir, {k: v.float() for k, v in back.items()}, z, dec)
    else:
        print("qwen21: COMFY_DIR not set: ComfyUI module check skipped")

    tt.report_written(written)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Generate the small, deterministic HunyuanImage 2.1 VAE test fixtures (tests/data/hyimage_*).

    HYIMAGE_VAE_PY=/tmp/hyup/hunyuanimage_vae.py \\
    HYIMAGE_CONVERT_PY=/tmp/hyup/convert_hunyuan_image_to_diffusers.py \\
        /tmp/venv-torch/bin/python tests/data/gen_hyimage_fixtures.py [--out DIR] [--stats] [--diffusers-file]

The reference is computed by the UPSTREAM implementation, diffusers (pip package `diffusers`,
0.42.1): `AutoencoderKLHunyuanImage.decode(z).sample`, fp32 on the CPU, one thread, not clamped.
The configuration is the released one (diffusers' `scripts/convert_hunyuan_image_to_diffusers.py`
and ComfyUI's VAE loader: latent_channels 64, layers_per_block 2, spatial_compression_ratio 32,
six levels, upsample_match_channel True) with reduced widths: block_out_channels
(32, 32, 32, 32, 32, 64), so the decoder runs 64 | 32 | 32 | 32 | 32 | 32 (released: 1024 | 1024 |
512 | 512 | 256 | 128). 64 is the least first decoder width: it must be a multiple of the 64 latent
channels (diffusers raises otherwise). diffusers' encoder further asks block_out_channels[-1] to
be a multiple of 2*64 = 128, which would quadruple the 64-wide part of the decoder; the encoder is
irrelevant to decoding, so while the model is constructed the encoder class is replaced by
diffusers' own HunyuanImageEncoder2D built with block_out_channels (32, 32, 32, 32, 32, 128). The
decoder and `decode` are diffusers' own, untouched; vae.config is the reduced configuration.

Random weights (fixed seeds), every parameter perturbed (GroupNorm gains and biases included),
rounded to F16 *before* the reference is computed and stored as F16, so the decoder under test
uses exactly the reference's numbers. Written:
- hyimage_w64.names.txt (format of kl_sd.names.txt): the orig file's names in the variants `orig`,
  `diffusers` (the decoder in diffusers' names + a few encoder tensors to ignore; the tests write
  that file from the orig one, tests/vae-test-data.h renamed_model) and `vae` (Tencent's .ckpt:
  every name under `vae.`, the 3x3 convs 5-D with a time axis of 1, as its loader accepts them); --diffusers-file also writes hyimage_w64.diffusers.safetensors;
- hyimage_w64.orig.safetensors: the same values in the original Tencent / ComfyUI names
  (`decoder.up.L.block.J.*`, `decoder.up.L.upsample.conv.*`, `decoder.mid.{block_1,attn_1,block_2}`,
  as hunyuan_image_2.1_vae_fp16.safetensors), + the same encoder tensors renamed;
- hyimage_w64.latent: raw latent z [1,64,3,5] (what vae.decode takes; ComfyUI's LATENT space);
- hyimage_w64.normalized.latent: diffusion-model latent x [1,64,5,3]; the pipelines decode
  x / 0.75289 (diffusers HunyuanImagePipeline: latents / vae.config.scaling_factor, no shift);
- hyimage_w64.expected.safetensors: `decoded` [1,3,96,160] = decode(z), `decoded_normalized`
  [1,3,160,96] = decode(x / 0.75289);

Cross-checks (printed; the optional upstream files are NOT part of this repository, save them
outside it):
- the orig<->diffusers name map, written here, is checked against diffusers' own converter
  `convert_hunyuan_image_vae_checkpoint_to_diffusers` (HYIMAGE_CONVERT_PY, compiled from the
  script with `ast` because the script parses arguments at import), for the fixture and for the
  released widths (meta tensors, every encoder and decoder key);
- Tencent-Hunyuan/HunyuanImage-2.1 `hyimage/models/vae/hunyuanimage_vae.py` (HYIMAGE_VAE_PY): its
  `HunyuanVAE2D` at the released configuration has exactly the mapped names and shapes (meta), and
  its `Decoder` at the fixture widths loads the orig-named values strictly and decodes the same;
- a float64 numpy decoder written from the formulas of the implementation note (conv_in +
  repeat_interleave shortcut, GroupNorm(32, 1e-6), attention, the sub-position-major shuffle)
  reading only the orig-named file; upstream's shuffle vs torch.pixel_shuffle; fp32 vs fp64 diffusers.
Re-running rewrites byte-identical files (same torch build).
"""

import argparse
import ast
import importlib.util
import math
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors write helper)

GEN = "tests/data/gen_hyimage_fixtures.py"
TAG = "hyimage_w64"

# the released configuration (diffusers scripts/convert_hunyuan_image_to_diffusers.py; ComfyUI sd.py)
RELEASED = dict(in_channels=3, out_channels=3, latent_channels=64,
                block_out_channels=(128, 256, 512, 512, 1024, 1024), layers_per_block=2,
                spatial_compression_ratio=32, sample_size=384, scaling_factor=0.75289,
                downsample_match_channel=True, upsample_match_channel=True)
BLOCKS = (32, 32, 32, 32, 32, 64)          # decoder: 64 | 32 | 32 | 32 | 32 | 32
ENC_BLOCKS = (32, 32, 32, 32, 32, 128)     # the encoder built beside it (only sampled, ignored)
ENCODER_SAMPLE = ("encoder.conv_in.weight", "encoder.conv_in.bias", "encoder.down_blocks.0.conv1.weight",
                  "encoder.down_blocks.2.conv.bias", "encoder.mid_block.attentions.0.norm.weight",
                  "encoder.norm_out.bias", "encoder.conv_out.bias")
SEED = 7001


def describe(y):
    return tt.describe(y) + f", {100 * (y.abs() > 1).double().mean().item():.2f}% beyond +-1"


# --------------------------------------------------------------------------------------------
# the model
# --------------------------------------------------------------------------------------------

def build_vae(cfg, enc_blocks=None):
    """AutoencoderKLHunyuanImage(**cfg); with enc_blocks, its encoder gets those widths instead."""
    import diffusers.models.autoencoders.autoencoder_kl_hunyuanimage as hy
    if enc_blocks is None:
        return hy.AutoencoderKLHunyuanImage(**cfg).eval()
    orig = hy.HunyuanImageEncoder2D

    class _Encoder(orig):
        def __init__(self, **kw):
            kw["block_out_channels"] = tuple(enc_blocks)
            super().__init__(**kw)

    hy.HunyuanImageEncoder2D = _Encoder
    try:
        vae = hy.AutoencoderKLHunyuanImage(**cfg).eval()
    finally:
        hy.HunyuanImageEncoder2D = orig
    assert type(vae.decoder) is hy.HunyuanImageDecoder2D
    return vae


def random_weights(vae, seed):
    """every tensor random, F16-rounded: GroupNorm gains 1 + 0.2 N(0,1) and biases 0.1 N(0,1), every
    other bias 0.1 N(0,1), conv weights N(0,1)/sqrt(fan_in) (attention q and k x 1.5, so that the
    softmax is not flat; conv_out x 0.35, so that few outputs leave [-1, 1])"""
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, v in vae.state_dict().items():
        if re.search(r"(norm\d?|norm_out)\.weight$", name):
            t = 1.0 + 0.2 * torch.randn(v.shape, generator=g)
        elif name.endswith(".bias"):
            t = 0.1 * torch.randn(v.shape, generator=g)
        else:
            gain = 1.0
            if re.search(r"attentions\.0\.to_[qk]\.weight$", name):
                gain = 1.5
            elif name == "decoder.conv_out.weight":
                gain = 0.35
            t = torch.randn(v.shape, generator=g) / v[0].numel() ** 0.5 * gain
        sd[name] = t.half().float()
    vae.load_state_dict(sd, strict=True)
    return sd


def decode(vae, z):
    with torch.no_grad():
        return vae.decode(z).sample.float().contiguous()


# --------------------------------------------------------------------------------------------
# names: diffusers <-> original (Tencent HunyuanVAE2D / ComfyUI comfy.ldm.hunyuan_video.vae)
# --------------------------------------------------------------------------------------------

def layout(n_levels, per_level, ratio, resample):
    """the flat diffusers list (decoder.up_blocks / encoder.down_blocks) as (kind, level, index):
    per level `per_level` resnets, then a resampler on levels L < log2(ratio), L != last"""
    out = []
    for lvl in range(n_levels):
        out += [("block", lvl, j) for j in range(per_level)]
        if lvl < np.log2(ratio) and lvl != n_levels - 1:
            out.append((resample, lvl, None))
    return out


_ATTN = {"norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "proj": "proj_out"}


def orig_name(name, cfg):
    """diffusers AutoencoderKLHunyuanImage key -> original / ComfyUI key"""
    n, lpb, r = len(cfg["block_out_channels"]), cfg["layers_per_block"], cfg["spatial_compression_ratio"]
    m = re.match(r"(encoder|decoder)\.(.*)$", name)
    if not m:
        raise ValueError(name)
    side, rest = m.groups()
    if re.match(r"(conv_in|conv_out|norm_out)\.(weight|bias)$", rest):
        return name
    m = re.match(r"mid_block\.resnets\.(\d)\.(.*)$", rest)
    if m:
        return f"{side}.mid.block_{int(m.group(1)) + 1}.{m.group(2).replace('conv_shortcut.', 'nin_shortcut.')}"
    m = re.match(r"mid_block\.attentions\.0\.(norm|to_q|to_k|to_v|proj)\.(weight|bias)$", rest)
    if m:
        return f"{side}.mid.attn_1.{_ATTN[m.group(1)]}.{m.group(2)}"
    m = re.match(r"(up_blocks|down_blocks)\.(\d+)\.(.*)$", rest)
    if m:
        if side == "decoder":
            lay, level, res = layout(n, lpb + 1, r, "upsample"), "up", "upsample"
        else:
            lay, level, res = layout(n, lpb, r, "downsample"), "down", "downsample"
        kind, lvl, j = lay[int(m.group(2))]
        sub = m.group(3)
        if kind == "block":
            return f"{side}.{level}.{lvl}.block.{j}.{sub.replace('conv_shortcut.', 'nin_shortcut.')}"
        assert re.match(r"conv\.(weight|bias)$", sub), name
        return f"{side}.{level}.{lvl}.{res}.{sub}"
    raise ValueError(name)


def to_orig(sd, cfg):
    out = {orig_name(k, cfg): v for k, v in sd.items()}
    assert len(out) == len(sd)
    return out


def check_layout(vae):
    """the flat index -> (level, j) layout equals the module types diffusers built"""
    import diffusers.models.autoencoders.autoencoder_kl_hunyuanimage as hy
    c = vae.config
    lay = layout(len(c.block_out_channels), c.layers_per_block + 1, c.spatial_compression_ratio, "upsample")
    kinds = [("block" if isinstance(b, hy.HunyuanImageResnetBlock) else "upsample") for b in vae.decoder.up_blocks]
    assert kinds == [k for k, _, _ in lay], (kinds, lay)


def upstream_converter(path):
    """diffusers' convert_hunyuan_image_vae_checkpoint_to_diffusers, compiled from the script (it
    parses command-line arguments at import)"""
    src = open(path).read()
    for node in ast.parse(src).body:
        if isinstance(node, ast.FunctionDef) and node.name == "convert_hunyuan_image_vae_checkpoint_to_diffusers":
            ns = {"torch": torch}
            exec(compile(ast.Module(body=[node], type_ignores=[]), path, "exec"), ns)
            return ns[node.name]
    sys.exit(f"no convert_hunyuan_image_vae_checkpoint_to_diffusers in {path}")


def check_with_converter(conv, orig_sd, diff_sd, cfg, what):
    res, left = conv(dict(orig_sd), block_out_channels=list(cfg["block_out_channels"]),
                     layers_per_block=cfg["layers_per_block"])
    assert not left, sorted(left)[:5]
    assert set(res) == set(diff_sd), sorted(set(res) ^ set(diff_sd))[:8]
    for k, v in diff_sd.items():
        assert tuple(res[k].shape) == tuple(v.shape), (k, res[k].shape, v.shape)
        if v.device.type != "meta":
            assert torch.equal(res[k], v), k
    print(f"  diffusers convert_hunyuan_image_vae_checkpoint_to_diffusers(orig names, {what}) == "
          f"vae.state_dict() ({len(diff_sd)} tensors, every encoder and decoder key)")


def load_tencent(path):
    spec = importlib.util.spec_from_file_location("hyimage_upstream_vae", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# --------------------------------------------------------------------------------------------
# an independent float64 decoder from the note's formulas, orig names only
# --------------------------------------------------------------------------------------------

def np_decoder(w, z, z_ch, scale_levels, lpb):
    """w: {orig name: float64 array}; z [C,h,w]. Returns [3, 32h, 32w]."""
    def conv(x, wt, b):
        o, c, kh, kw = wt.shape
        ph, pw = kh // 2, kw // 2
        xp = np.pad(x, ((0, 0), (ph, ph), (pw, pw)))
        H, W = x.shape[1:]
        out = np.broadcast_to(b[:, None, None], (o, H, W)).copy()
        for dy in range(kh):
            for dx in range(kw):
                out += np.einsum("oc,chw->ohw", wt[:, :, dy, dx], xp[:, dy:dy + H, dx:dx + W], optimize=True)
        return out

    def gn(x, g, b, groups=32, eps=1e-6):
        c, H, W = x.shape
        xg = x.reshape(groups, -1)
        mu = xg.mean(axis=1, keepdims=True)
        var = ((xg - mu) ** 2).mean(axis=1, keepdims=True)
        return ((xg - mu) / np.sqrt(var + eps)).reshape(c, H, W) * g[:, None, None] + b[:, None, None]

    def silu(x):
        return x / (1.0 + np.exp(-x))

    def resnet(x, p):
        h = conv(silu(gn(x, w[p + "norm1.weight"], w[p + "norm1.bias"])), w[p + "conv1.weight"], w[p + "conv1.bias"])
        h = conv(silu(gn(h, w[p + "norm2.weight"], w[p + "norm2.bias"])), w[p + "conv2.weight"], w[p + "conv2.bias"])
        s = conv(x, w[p + "nin_shortcut.weight"], w[p + "nin_shortcut.bias"]) if p + "nin_shortcut.weight" in w else x
        return s + h

    def attn(x, p):
        c, H, W = x.shape
        t = gn(x, w[p + "norm.weight"], w[p + "norm.bias"]).reshape(c, H * W)
        q, k, v = (w[p + n + ".weight"].reshape(c, c) @ t + w[p + n + ".bias"][:, None] for n in "qkv")
        s = (q.T @ k) / math.sqrt(c)                       # [query token, key token]
        s = np.exp(s - s.max(axis=1, keepdims=True))
        s /= s.sum(axis=1, keepdims=True)
        o = v @ s.T                                         # [c, query token]
        y = w[p + "proj_out.weight"].reshape(c, c) @ o + w[p + "proj_out.bias"][:, None]
        return x + y.reshape(c, H, W)

    def upsample(x, p):
        cin, H, W = x.shape
        h = conv(x, w[p + "conv.weight"], w[p + "conv.bias"])
        cout = h.shape[0] // 4
        r = 4 * cout // cin
        out = np.zeros((cout, 2 * H, 2 * W))
        for dy in range(2):
            for dx in range(2):
                for c in range(cout):
                    j = (dy * 2 + dx) * cout + c           # sub-position major
                    out[c, dy::2, dx::2] = h[j] + x[j // r]
        return out

    c0 = w["decoder.conv_in.weight"].shape[0]
    x = conv(z, w["decoder.conv_in.weight"], w["decoder.conv_in.bias"])
    x = x + z[np.arange(c0) // (c0 // z_ch)]                # repeat_interleave(c0 / z, dim=channels)
    x = resnet(x, "decoder.mid.block_1.")
    x = attn(x, "decoder.mid.attn_1.")
    x = resnet(x, "decoder.mid.block_2.")
    lvl = 0
    while f"decoder.up.{lvl}.block.0.conv1.weight" in w:
        for j in range(lpb + 1):
            x = resnet(x, f"decoder.up.{lvl}.block.{j}.")
        if f"decoder.up.{lvl}.upsample.conv.weight" in w:
            x = upsample(x, f"decoder.up.{lvl}.upsample.")
        lvl += 1
    assert lvl == scale_levels
    x = silu(gn(x, w["decoder.norm_out.weight"], w["decoder.norm_out.bias"]))
    return conv(x, w["decoder.conv_out.weight"], w["decoder.conv_out.bias"])


def check_shuffle():
    """upstream's rearrangement vs torch.pixel_shuffle, vs the note's index formula"""
    g = torch.Generator().manual_seed(1)
    cout, H, W = 3, 2, 3
    h = torch.randn(1, 4 * cout, H, W, generator=g)
    up = h.reshape(1, 2, 2, cout, H, W).permute(0, 3, 4, 1, 5, 2).reshape(1, cout, 2 * H, 2 * W)
    ps = torch.nn.functional.pixel_shuffle(h, 2)
    perm = [k * cout + c for c in range(cout) for k in range(4)]     # channel 4c+k of ps <- k*cout+c
    ps2 = torch.nn.functional.pixel_shuffle(h[:, perm], 2)
    ok = all(up[0, c, 2 * y + dy, 2 * x + dx] == h[0, (dy * 2 + dx) * cout + c, y, x]
             for c in range(cout) for y in range(H) for x in range(W) for dy in range(2) for dx in range(2))
    print(f"  shuffle: upstream == pixel_shuffle? {torch.equal(up, ps)}; == pixel_shuffle after channel "
          f"permutation 4c+k <- k*C_out+c? {torch.equal(up, ps2)}; index formula (dy*2+dx)*C_out+c holds: {ok}")
    assert ok and torch.equal(up, ps2) and not torch.equal(up, ps)


# --------------------------------------------------------------------------------------------

def stats(vae, z):
    rows = []
    mods = [("conv_in", vae.decoder.conv_in), ("mid", vae.decoder.mid_block)]
    mods += [(f"up_blocks.{i}", b) for i, b in enumerate(vae.decoder.up_blocks)]
    mods += [("conv_out", vae.decoder.conv_out)]
    hooks = [m.register_forward_hook(lambda mod, i, o, n=n: rows.append((n, o.std().item(), o.abs().max().item())))
             for n, m in mods]
    decode(vae, z)
    for h in hooks:
        h.remove()
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, s, mx in rows)


def main():
    ap = argparse.ArgumentParser(description="generate HunyuanImage 2.1 VAE test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stats", action="store_true", help="print per-block activation std/max")
    ap.add_argument("--diffusers-file", action="store_true", help=f"also write {TAG}.diffusers.safetensors")
    args = ap.parse_args()
    torch.set_num_threads(1)
    import diffusers

    cfg = dict(RELEASED, block_out_channels=BLOCKS)
    torch.manual_seed(SEED)
    vae = build_vae(cfg, ENC_BLOCKS)
    check_layout(vae)
    sd = random_weights(vae, SEED + 1)
    scale = vae.config.scaling_factor
    assert scale == 0.75289

    g = torch.Generator().manual_seed(SEED + 2)
    z = torch.randn((1, 64, 3, 5), generator=g)
    z[0, 5, 1, 2], z[0, 63, 2, 4] = 5.0, -4.5
    g = torch.Generator().manual_seed(SEED + 3)
    x = torch.randn((1, 64, 5, 3), generator=g)
    x[0, 17, 4, 0] = -4.0
    zn = x / scale                     # HunyuanImagePipeline: latents / vae.config.scaling_factor
    y = decode(vae, z)
    yn = decode(vae, zn)
    assert y.shape == (1, 3, 96, 160) and yn.shape == (1, 3, 160, 96)
    print(f"{TAG}: decoded {describe(y)}")
    print(f"{TAG}: decoded_normalized {describe(yn)}")
    if args.stats:
        print(f"{TAG} stats (std/max):", stats(vae, z))

    # ---- names
    dec = {k: v for k, v in sd.items() if k.startswith("decoder.")}
    keep = {**dec, **{k: sd[k] for k in ENCODER_SAMPLE}}
    orig = to_orig(keep, cfg)
    full_orig = to_orig(sd, cfg)
    print(f"  {len(dec)} decoder tensors, {sum(v.numel() for v in dec.values())} values; "
          f"+ {len(ENCODER_SAMPLE)} encoder tensors to ignore")

    conv_py = os.environ.get("HYIMAGE_CONVERT_PY")
    with torch.device("meta"):
        rel = build_vae(RELEASED)
    rel_sd = rel.state_dict()
    rel_orig = to_orig(rel_sd, RELEASED)
    if conv_py:
        conv = upstream_converter(conv_py)
        check_with_converter(conv, full_orig, sd, cfg, "fixture widths, values")
        check_with_converter(conv, rel_orig, rel_sd, RELEASED, "released widths, meta")
    else:
        print("  (HYIMAGE_CONVERT_PY not set: diffusers converter check skipped)")

    ten_py = os.environ.get("HYIMAGE_VAE_PY")
    if ten_py:
        ten = load_tencent(ten_py)
        with torch.device("meta"):
            trel = ten.HunyuanVAE2D(in_channels=3, out_channels=3, latent_channels=64,
                                    block_out_channels=list(RELEASED["block_out_channels"]), layers_per_block=2,
                                    ffactor_spatial=32, sample_size=384, sample_tsize=1, scaling_factor=0.75289)
        tsd = {k: tuple(v.shape) for k, v in trel.state_dict().items()}
        mine = {k: tuple(v.shape) for k, v in rel_orig.items()}
        assert tsd == mine, sorted(set(tsd.items()) ^ set(mine.items()))[:8]
        print(f"  Tencent HunyuanVAE2D (released config) state_dict == the mapped names and shapes "
              f"({len(tsd)} tensors, {sum(k.startswith('decoder.') for k in tsd)} decoder)")
        tdec = ten.Decoder(z_channels=64, out_channels=3, block_out_channels=list(reversed(BLOCKS)),
                           num_res_blocks=2, ffactor_spatial=32).eval()
        tdec.load_state_dict({k[len("decoder."):]: v for k, v in orig.items() if k.startswith("decoder.")},
                             strict=True)
        with torch.no_grad():
            ty, tyn = tdec(z), tdec(zn)
        print(f"  Tencent Decoder (strict load of the orig-named values): max |Tencent - diffusers| = "
              f"{(ty - y).abs().max().item():.3g} (decoded), {(tyn - yn).abs().max().item():.3g} (normalized)")
    else:
        print("  (HYIMAGE_VAE_PY not set: Tencent module check skipped)")

    # ---- independent numpy decode from the note's formulas, orig names only
    w64 = {k: v.double().numpy() for k, v in orig.items() if k.startswith("decoder.")}
    ny = np_decoder(w64, z[0].double().numpy(), 64, len(BLOCKS), cfg["layers_per_block"])
    nyn = np_decoder(w64, zn[0].double().numpy(), 64, len(BLOCKS), cfg["layers_per_block"])
    print(f"  numpy float64 decoder from the note vs diffusers fp32: max {np.abs(ny - y[0].numpy()).max():.3g} "
          f"(decoded), {np.abs(nyn - yn[0].numpy()).max():.3g} (normalized)")
    check_shuffle()
    v64 = build_vae(cfg, ENC_BLOCKS).double()
    v64.load_state_dict({k: v.double() for k, v in sd.items()})
    with torch.no_grad():
        y64 = v64.decode(z.double()).sample
    print(f"  fp32 vs fp64 diffusers: max {(y.double() - y64).abs().max().item():.3g}; fp64 diffusers vs numpy: "
          f"{np.abs(ny - y64[0].numpy()).max():.3g}")

    # ---- write
    os.makedirs(args.out, exist_ok=True)
    written = []

    def save(fname, tensors, meta):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)

    model = (f"AutoencoderKLHunyuanImage latent_channels 64, block_out_channels {list(BLOCKS)} (decoder "
             f"{list(reversed(BLOCKS))}), layers_per_block 2, spatial_compression_ratio 32, random weights "
             f"(F16-exact)")
    if args.diffusers_file:
        save(f"{TAG}.diffusers.safetensors", {k: v.half() for k, v in keep.items()},
             {"generator": GEN, "model": model + ", diffusers names (+ 7 encoder tensors to ignore)"})
    save(f"{TAG}.orig.safetensors", {k: v.half() for k, v in orig.items()},
         {"generator": GEN, "model": model + ", original Tencent / ComfyUI names (+ 7 encoder tensors to ignore)"})
    save(f"{TAG}.latent", *tt.latent_file(z, GEN, "raw HunyuanImage 2.1 VAE latent z (decoder input), NCHW"))
    save(f"{TAG}.normalized.latent",
         *tt.latent_file(x, GEN, f"HunyuanImage 2.1 diffusion latent x, NCHW; z = x / {scale} (no shift)"))
    save(f"{TAG}.expected.safetensors", {"decoded": y, "decoded_normalized": yn},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKLHunyuanImage.decode(z).sample, fp32 CPU, "
                       f"torch {torch.__version__}; not clamped", "model": model,
          "decoded": f"decode({TAG}.latent)",
          "decoded_normalized": f"decode(x / {scale}), x = {TAG}.normalized.latent"})
    lines = [f"# variant<TAB>name in {TAG}.orig.safetensors<TAB>name in the variant<TAB>dtype<TAB>shape   ({GEN})"]
    for variant in ("orig", "diffusers", "vae"):
        for k, v in keep.items():
            on = orig_name(k, cfg)
            vn = {"orig": on, "diffusers": k, "vae": "vae." + on}[variant]
            shape = list(v.shape)
            if variant == "vae" and len(shape) == 4 and shape[2] == 3:  # 5-D, a time axis of 1
                shape.insert(2, 1)
            lines.append(f"{variant}\t{on}\t{vn}\tF16\t"
                         f"[{', '.join(str(d) for d in shape)}]")
    path = os.path.join(args.out, f"{TAG}.names.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    written.append(path)
    tt.report_written(written)


if __name__ == "__main__":
    main()

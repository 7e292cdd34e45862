#!/usr/bin/env python3
"""Generate the small, deterministic DC-AE (SANA's deep-compression autoencoder) test fixtures
(tests/data/dcae_*).

    [EFFICIENTVIT_DIR=/tmp/efficientvit-up] /tmp/venv-torch/bin/python tests/data/gen_dcae_fixtures.py \
        [--out DIR] [--stats] [--key-list FILE]

The references are computed by the UPSTREAM implementation, diffusers' `AutoencoderDC`
(`decode(z).sample`), fp32 on the CPU, one thread, not clamped. The model is the released
`mit-han-lab/dc-ae-f32c32-sana-1.0-diffusers` configuration (config.json: latent 32 channels, six
levels, decoder block types ResBlock x3 then EfficientViTBlock x3, 3 layers per level, qkv
multiscales ((), (), (), (5,), (5,), (5,)), norm rms_norm, act silu, upsample_block_type
"interpolate", in_shortcut, conv act relu, scaling factor 0.41407) with reduced widths:
block_out_channels (4, 8, 16, 16, 32, 64) (released (128, 256, 512, 512, 1024, 1024): conv_in's
repeat_interleave ratio is 2 (released 32), the up-samplers' shortcut ratios 2 and 4 as released)
and attention_head_dim 16 (released 32), so the EfficientViT levels have 4, 2 and 1 heads (level
5, 4, 3). Random weights (fixed seeds; the
RMSNorm weights and biases too), rounded to F16 *before* the reference is computed and stored as
F16, so the decoder under test uses exactly the reference's numbers. Re-running rewrites
byte-identical files (same torch build).

Files (tag dcae_w32):
  dcae_w32.diffusers.safetensors  the decoder under diffusers' names (vae.state_dict()), F16, plus
                                  five encoder tensors a loader must ignore
  dcae_w32.orig.safetensors       the same values under the original mit-han-lab/efficientvit names
                                  (`decoder.project_in.main.conv.*`, `decoder.stages.N.op_list.M...`,
                                  to_q/to_k/to_v fused into `...context_module.main.qkv.conv.weight`
                                  [3*inner, C, 1, 1], 1x1 linears as 4-D conv weights), as the
                                  released model.safetensors, plus the same encoder tensors
  dcae_w32.latent                 raw latent z [1, 32, 3, 5]: at level 5 (3x5 = 15 tokens <= head dim
                                  16) the attention takes the QUADRATIC form; levels 4 (6x10) and
                                  3 (12x20) take the ReLU linear form
  dcae_w32.normalized.latent      diffusion-space latent x [1, 32, 3, 7]; z = x / 0.41407 (the SANA
                                  pipeline); 3x7 = 21 > 16, so the LINEAR form at every level
  dcae_w32.expected.safetensors   `decoded` [1, 3, 96, 160] = decode(z); `decoded_normalized`
                                  [1, 3, 96, 224] = decode(x / 0.41407); F32, unclamped

The original names are written here (`orig_name`) and checked against diffusers' own converter
(`convert_autoencoder_dc_checkpoint_to_diffusers`, the same renaming table as diffusers'
scripts/convert_dcae_to_diffusers.py) and its file-type detection (`infer_diffusers_model_type`
must say autoencoder-dc-f32c32-sana), and, at the released widths on the meta device, against the
efficientvit module tree when EFFICIENTVIT_DIR is set (a checkout of mit-han-lab/efficientvit, not
part of this repository; used: commit de7d7733cc0329f391b33f1f459271562ec27bd5, e.g.
`git clone https://github.com/mit-han-lab/efficientvit /tmp/efficientvit-up`). With it, the
original-named file is also loaded strictly into efficientvit's own `Decoder` (its `dc_ae.py`
building blocks; the head dim passed to its EfficientViTBlock, whose default is 32) and decoded:
efficientvit's TritonRMSNorm2d runs a Triton GPU kernel, so on the CPU its forward is replaced by
that kernel's arithmetic (fp32 sum of squares over channels, x / sqrt(mean + eps) * w + b);
omegaconf is stubbed if absent (only its MISSING marker is needed).

Cross-checks printed (not stored): which attention form each level takes; efficientvit vs
diffusers; fp32 vs fp64; the linear and quadratic forms swapped (they are algebraically equal).
"""

import argparse
import functools
import importlib
import os
import re
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors writer)

GEN = "tests/data/gen_dcae_fixtures.py"
TAG = "dcae_w32"
SCALING_FACTOR = 0.41407
WIDTHS = (4, 8, 16, 16, 32, 64)
HEAD_DIM = 16
LATENT_HW = (3, 5)        # level 5: 15 tokens <= 16: quadratic form there
NORMALIZED_HW = (3, 7)    # 21 tokens > 16: linear form everywhere

# the released dc-ae-f32c32-sana-1.0-diffusers config.json (all of it that AutoencoderDC reads;
# the absent keys decoder_in_shortcut, encoder_out_shortcut, decoder_conv_act_fn take the defaults
# True, True, "relu")
RELEASED = dict(
    in_channels=3, latent_channels=32, attention_head_dim=32,
    encoder_block_types=("ResBlock",) * 3 + ("EfficientViTBlock",) * 3,
    decoder_block_types=("ResBlock",) * 3 + ("EfficientViTBlock",) * 3,
    encoder_block_out_channels=(128, 256, 512, 512, 1024, 1024),
    decoder_block_out_channels=(128, 256, 512, 512, 1024, 1024),
    encoder_layers_per_block=(2, 2, 2, 3, 3, 3),
    decoder_layers_per_block=(3, 3, 3, 3, 3, 3),
    encoder_qkv_multiscales=((), (), (), (5,), (5,), (5,)),
    decoder_qkv_multiscales=((), (), (), (5,), (5,), (5,)),
    upsample_block_type="interpolate", downsample_block_type="Conv",
    decoder_norm_types="rms_norm", decoder_act_fns="silu",
    scaling_factor=SCALING_FACTOR)

ENCODER_SAMPLE = ("encoder.conv_in.weight", "encoder.conv_in.bias", "encoder.down_blocks.0.0.conv1.weight",
                  "encoder.conv_out.weight", "encoder.conv_out.bias")


def fixture_config():
    return dict(RELEASED, encoder_block_out_channels=WIDTHS, decoder_block_out_channels=WIDTHS,
                attention_head_dim=HEAD_DIM)


def describe(y):
    return tt.describe(y) + f", {100 * (y.abs() > 1).double().mean().item():.2f}% beyond +-1"


# --------------------------------------------------------------------------------------------
# names: diffusers -> original (mit-han-lab/efficientvit dc_ae.py module tree)
# --------------------------------------------------------------------------------------------

_BLOCK = [  # (diffusers tail, original tail) inside decoder.up_blocks.I.J / encoder.down_blocks.I.J
    # DCUpBlock2d (J = 0 for I < last): ResidualBlock(InterpolateConvUpSampleLayer(ConvLayer), shortcut)
    (r"conv\.(weight|bias)", r"main.conv.conv.\1"),
    # ResBlock: ResidualBlock(ResBlock(conv1: ConvLayer bias, conv2: ConvLayer no bias + norm), Identity)
    (r"conv1\.(weight|bias)", r"main.conv1.conv.\1"),
    (r"conv2\.weight", r"main.conv2.conv.weight"),
    (r"norm\.(weight|bias)", r"main.conv2.norm.\1"),
    # EfficientViTBlock: context_module = ResidualBlock(LiteMLA), local_module = ResidualBlock(GLUMBConv)
    (r"attn\.to_([qkv])\.weight", r"context_module.main.qkv.conv.weight"),     # fused, see to_orig
    (r"attn\.to_qkv_multiscale\.(\d+)\.proj_in\.weight", r"context_module.main.aggreg.\1.0.weight"),
    (r"attn\.to_qkv_multiscale\.(\d+)\.proj_out\.weight", r"context_module.main.aggreg.\1.1.weight"),
    (r"attn\.to_out\.weight", r"context_module.main.proj.conv.weight"),
    (r"attn\.norm_out\.(weight|bias)", r"context_module.main.proj.norm.\1"),
    (r"conv_out\.conv_inverted\.(weight|bias)", r"local_module.main.inverted_conv.conv.\1"),
    (r"conv_out\.conv_depth\.(weight|bias)", r"local_module.main.depth_conv.conv.\1"),
    (r"conv_out\.conv_point\.weight", r"local_module.main.point_conv.conv.weight"),
    (r"conv_out\.norm\.(weight|bias)", r"local_module.main.point_conv.norm.\1"),
]
_TOP = [
    (r"decoder\.conv_in\.(weight|bias)", r"decoder.project_in.main.conv.\1"),
    (r"decoder\.norm_out\.(weight|bias)", r"decoder.project_out.op_list.0.\1"),
    (r"decoder\.conv_out\.(weight|bias)", r"decoder.project_out.op_list.2.conv.\1"),
    (r"encoder\.conv_in\.(weight|bias)", r"encoder.project_in.conv.\1"),
    (r"encoder\.conv_out\.(weight|bias)", r"encoder.project_out.main.op_list.0.conv.\1"),
]


def orig_name(name):
    """diffusers AutoencoderDC key -> the original efficientvit key (decoder, and the encoder
    tensors the fixture samples: conv_in, conv_out, ResBlock tensors)."""
    for pat, rep in _TOP:
        if re.fullmatch(pat, name):
            return re.sub(pat, rep, name)
    m = re.fullmatch(r"(decoder\.up_blocks|encoder\.down_blocks)\.(\d+)\.(\d+)\.(.*)", name)
    if m:
        part = "decoder" if m.group(1).startswith("decoder") else "encoder"
        for pat, rep in _BLOCK:
            if re.fullmatch(pat, m.group(4)):
                if part == "encoder" and pat.startswith(r"conv\."):
                    break  # the encoder's down-sampler is named differently; not sampled here
                return f"{part}.stages.{m.group(2)}.op_list.{m.group(3)}." + re.sub(pat, rep, m.group(4))
    raise ValueError(f"no original name for {name}")


def to_orig(sd):
    """{diffusers name: tensor} -> {original name: tensor}: to_q/to_k/to_v concatenated along the
    output axis (q first) into the fused 1x1 qkv conv, to_out as a 1x1 conv weight."""
    out = {}
    for k, v in sd.items():
        o = orig_name(k)
        m = re.fullmatch(r"(.*)\.attn\.to_([qkv])\.weight", k)
        if m:
            if m.group(2) == "q":
                qkv = [sd[f"{m.group(1)}.attn.to_{c}.weight"] for c in "qkv"]
                out[o] = torch.cat(qkv, 0)[:, :, None, None]
            continue
        out[o] = v[:, :, None, None] if k.endswith(".attn.to_out.weight") else v
    return out


def check_with_diffusers_converter(orig, dsd):
    """diffusers' own single-file conversion turns the original names back into exactly dsd, and
    its file-type detection recognises the released SANA DC-AE."""
    from diffusers.loaders.single_file_utils import (convert_autoencoder_dc_checkpoint_to_diffusers,
                                                     infer_diffusers_model_type)
    kind = infer_diffusers_model_type(dict(orig))
    assert kind == "autoencoder-dc-f32c32-sana", kind
    conv = convert_autoencoder_dc_checkpoint_to_diffusers(dict(orig))
    assert set(conv) == set(dsd), sorted(set(conv) ^ set(dsd))
    for k, v in dsd.items():
        assert conv[k].shape == v.shape and torch.equal(conv[k], v), k
    print(f"  diffusers convert_autoencoder_dc_checkpoint_to_diffusers(original names) == the diffusers "
          f"tensors ({len(dsd)}); infer_diffusers_model_type: {kind}")


# --------------------------------------------------------------------------------------------
# upstream efficientvit (optional, EFFICIENTVIT_DIR)
# --------------------------------------------------------------------------------------------

def _trms2d_cpu(self, x):
    """efficientvit's TritonRMSNorm2d kernel, written in torch: per pixel, fp32 sum of x^2 over the
    channels, rrms = 1 / sqrt(sum / C + eps), y = x * rrms * w + b (stored in x's dtype)."""
    xf = x.float()
    acc = torch.zeros_like(xf[:, 0])
    for c in range(xf.shape[1]):
        acc = acc + xf[:, c] * xf[:, c]
    rrms = 1 / torch.sqrt(acc / xf.shape[1] + self.eps)
    y = xf * rrms[:, None] * self.weight.float()[None, :, None, None] + self.bias.float()[None, :, None, None]
    return y.to(x.dtype)


def efficientvit_modules():
    root = os.environ.get("EFFICIENTVIT_DIR")
    if not root:
        return None
    if not os.path.isfile(os.path.join(root, "efficientvit/models/efficientvit/dc_ae.py")):
        sys.exit(f"EFFICIENTVIT_DIR={root!r} has no efficientvit/models/efficientvit/dc_ae.py")
    # the package __init__ files import the whole model zoo (segment_anything, timm, ...): register
    # the packages without running them, so that only dc_ae.py and what it imports are loaded
    for pkg in ("efficientvit", "efficientvit.models", "efficientvit.models.nn", "efficientvit.models.efficientvit"):
        if pkg not in sys.modules:
            mod = types.ModuleType(pkg)
            mod.__path__ = [os.path.join(root, *pkg.split("."))]
            sys.modules[pkg] = mod
    try:
        import omegaconf  # noqa: F401
    except ImportError:
        stub = types.ModuleType("omegaconf")
        stub.MISSING, stub.OmegaConf = "???", None
        sys.modules["omegaconf"] = stub
    dc_ae = importlib.import_module("efficientvit.models.efficientvit.dc_ae")
    ops = importlib.import_module("efficientvit.models.nn.ops")
    norm = importlib.import_module("efficientvit.models.nn.norm")
    norm.TritonRMSNorm2d.forward = _trms2d_cpu
    return dc_ae, ops


def efficientvit_parts(ev, widths, head_dim):
    """efficientvit's Decoder and Encoder as dc_ae_f32c32('dc-ae-f32c32-sana-1.0') configures them,
    with these widths and head dim (build_block passes no dim: EfficientViTBlock's default is 32)."""
    dc_ae, ops = ev
    dc_ae.EfficientViTBlock = functools.partial(ops.EfficientViTBlock, dim=head_dim)
    evit = ["ResBlock"] * 3 + ["EViTS5_GLU"] * 3
    dec = dc_ae.Decoder(dc_ae.DecoderConfig(
        in_channels=3, latent_channels=32, width_list=widths, depth_list=(3,) * 6, block_type=evit,
        upsample_block_type="InterpolateConv", norm="trms2d", act="silu"))
    enc = dc_ae.Encoder(dc_ae.EncoderConfig(
        in_channels=3, latent_channels=32, width_list=widths, depth_list=(2, 2, 2, 3, 3, 3), block_type=evit,
        downsample_block_type="Conv"))
    return dec.eval(), enc.eval()


def check_released_names(ev, key_list):
    """At the released widths (meta device): the diffusers decoder names and shapes, renamed by
    to_orig, are exactly efficientvit's Decoder names and shapes. Optionally writes both lists."""
    from diffusers import AutoencoderDC
    with torch.device("meta"):
        vae = AutoencoderDC(**RELEASED)
        dsd = {k: v for k, v in vae.state_dict().items() if k.startswith("decoder.")}
        orig = to_orig(dsd)
        if ev is not None:
            dec, enc = efficientvit_parts(ev, RELEASED["decoder_block_out_channels"], 32)
            have = {"decoder." + k: tuple(v.shape) for k, v in dec.state_dict().items()}
            want = {k: tuple(v.shape) for k, v in orig.items()}
            assert have == want, (sorted(set(have) ^ set(want)),
                                  [(k, have[k], want[k]) for k in set(have) & set(want) if have[k] != want[k]])
            print(f"  released widths: the {len(dsd)} diffusers decoder tensors map onto efficientvit's "
                  f"{len(have)} Decoder tensors (names and shapes equal)")
    n_params = sum(v.numel() for v in dsd.values())
    print(f"  released decoder: {len(dsd)} tensors (diffusers), {len(orig)} (original), {n_params} values")
    if key_list:
        lines = ["# AutoencoderDC decoder at the released widths (dc-ae-f32c32-sana-1.0): "
                 "diffusers name<TAB>shape<TAB>original name<TAB>shape   (" + GEN + ")"]
        for k, v in dsd.items():
            o = orig_name(k)
            lines.append(f"{k}\t{list(v.shape)}\t{o}\t{list(orig[o].shape)}")
        with open(key_list, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"  wrote {key_list}")


# --------------------------------------------------------------------------------------------
# model, weights, decode
# --------------------------------------------------------------------------------------------

def random_weights(vae, seed):
    """Every tensor random, F16-rounded: RMSNorm weights 1 +- 0.3 and biases +- 0.2 (uniform),
    other biases 0.1 N(0,1), weights N(0,1) / sqrt(fan_in) (x 0.5 for decoder.conv_out)."""
    from diffusers.models.normalization import RMSNorm
    norms = {n for n, m in vae.named_modules() if isinstance(m, RMSNorm)}
    g = torch.Generator().manual_seed(seed)
    sd = {}
    for name, v in vae.state_dict().items():
        owner, _, leaf = name.rpartition(".")
        if owner in norms:
            u = torch.rand(v.shape, generator=g, dtype=torch.float64) * 2 - 1
            t = 1 + 0.3 * u if leaf == "weight" else 0.2 * u
        elif leaf == "bias":
            t = 0.1 * torch.randn(v.shape, generator=g, dtype=torch.float64)
        else:
            fan_in = v[0].numel()
            t = torch.randn(v.shape, generator=g, dtype=torch.float64) / fan_in ** 0.5
            if name == "decoder.conv_out.weight":
                t = t * 0.5
        sd[name] = t.half().float()
    return sd


def make_latent(seed, hw, scale, spikes):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn((1, 32) + hw, generator=g, dtype=torch.float32) * scale
    for idx, val in spikes:
        z[(0,) + idx] = val
    return z


def decode(vae, z):
    with torch.no_grad():
        return vae.decode(z).sample.float().contiguous()


def attention_paths(vae, z):
    """(level, h, w, form) of every attention call of one decode, as upstream decides it:
    linear when h * w > attention_head_dim, else quadratic."""
    from diffusers.models.attention_processor import SanaMultiscaleLinearAttention
    seen = []
    hooks = []
    for name, m in vae.decoder.named_modules():
        if isinstance(m, SanaMultiscaleLinearAttention):
            level = int(name.split(".")[1])
            hooks.append(m.register_forward_pre_hook(
                lambda mod, inp, level=level: seen.append(
                    (level, inp[0].shape[2], inp[0].shape[3],
                     "linear" if inp[0].shape[2] * inp[0].shape[3] > mod.attention_head_dim else "quadratic"))))
    decode(vae, z)
    for h in hooks:
        h.remove()
    out = []
    for s in seen:
        if s not in out:
            out.append(s)
    return ", ".join(f"level {lv} {h}x{w} {form}" for lv, h, w, form in out)


def swapped_forms(vae, z, y):
    """decode with every attention forced into the other form; returns max |diff|"""
    from diffusers.models.attention_processor import SanaMultiscaleLinearAttention
    mods = [m for m in vae.decoder.modules() if isinstance(m, SanaMultiscaleLinearAttention)]
    lin, quad = [m.apply_linear_attention for m in mods], [m.apply_quadratic_attention for m in mods]
    for m, a, b in zip(mods, lin, quad):
        m.apply_linear_attention, m.apply_quadratic_attention = b, a
    try:
        ys = decode(vae, z)
    finally:
        for m in mods:
            del m.apply_linear_attention, m.apply_quadratic_attention
    return (ys - y).abs().max().item()


def stats(vae, z):
    rows = []
    mods = [("conv_in", vae.decoder.conv_in)]
    mods += [(f"up_blocks.{i}", b) for i, b in reversed(list(enumerate(vae.decoder.up_blocks)))]
    mods += [("conv_out", vae.decoder.conv_out)]
    hooks = [m.register_forward_hook(
        lambda mod, inp, o, n=n: rows.append((n, o.std().item(), o.abs().max().item())))
        for n, m in mods]
    decode(vae, z)
    for h in hooks:
        h.remove()
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, s, mx in rows)


def main():
    ap = argparse.ArgumentParser(description="generate the DC-AE test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stats", action="store_true", help="print per-level activation std/max")
    ap.add_argument("--key-list", help="also write the released-width decoder key list (both namings) here")
    args = ap.parse_args()
    torch.set_num_threads(1)  # single-threaded: reproducible summation order
    import diffusers
    from diffusers import AutoencoderDC

    ev = efficientvit_modules()
    check_released_names(ev, args.key_list)

    cfg = fixture_config()
    torch.manual_seed(0)
    vae = AutoencoderDC(**cfg).eval()
    sd = random_weights(vae, seed=7001)
    vae.load_state_dict(sd, strict=True)

    z = make_latent(7002, LATENT_HW, 2.0, [((3, 1, 2), 8.0), ((30, 2, 4), -7.0)])
    x = make_latent(7003, NORMALIZED_HW, 1.0, [((5, 0, 6), 4.0), ((17, 2, 0), -4.5)])
    zn = x / vae.config.scaling_factor          # SanaPipeline: vae.decode(latents / scaling_factor)
    y = decode(vae, z)
    yn = decode(vae, zn)
    print(f"{TAG}: decoded {describe(y)}")
    print(f"{TAG}: decoded_normalized {describe(yn)}")
    print(f"{TAG}.latent: {attention_paths(vae, z)}")
    print(f"{TAG}.normalized.latent: {attention_paths(vae, zn)}")
    if args.stats:
        print(f"{TAG} stats (std/max):", stats(vae, z))
        print(f"{TAG} stats normalized (std/max):", stats(vae, zn))

    # stored tensors: the decoder and a sample of the encoder
    dsd = {k: v for k, v in sd.items() if k.startswith("decoder.") or k in ENCODER_SAMPLE}
    assert all(k in sd for k in ENCODER_SAMPLE)
    orig = to_orig(dsd)
    check_with_diffusers_converter(orig, dsd)
    n_dec = sum(k.startswith("decoder.") for k in dsd)
    print(f"  {n_dec} decoder tensors (diffusers), {sum(k.startswith('decoder.') for k in orig)} (original), "
          f"{sum(v.numel() for k, v in dsd.items() if k.startswith('decoder.'))} values")

    # cross-checks (printed only)
    dq = swapped_forms(vae, z, y)
    dl = swapped_forms(vae, zn, yn)
    print(f"{TAG}: attention forms swapped: max |diff| {dq:.3g} (latent), {dl:.3g} (normalized)")
    v64 = AutoencoderDC(**cfg).eval()
    v64.load_state_dict(sd)
    v64 = v64.double()
    with torch.no_grad():
        d64 = max((v64.decode(a.double()).sample - b.double()).abs().max().item() for a, b in ((z, y), (zn, yn)))
    print(f"{TAG}: max |fp32 - fp64| = {d64:.3g}")
    if ev is not None:
        dec, enc = efficientvit_parts(ev, WIDTHS, HEAD_DIM)
        dec.load_state_dict({k[len("decoder."):]: v for k, v in orig.items() if k.startswith("decoder.")},
                            strict=True)
        esd = enc.state_dict()
        for k, v in orig.items():
            if k.startswith("encoder."):
                kk = k[len("encoder."):]
                assert kk in esd and esd[kk].shape == v.shape, k
        with torch.no_grad():
            de = max((dec(a) - b).abs().max().item() for a, b in ((z, y), (zn, yn)))
        print(f"{TAG}: efficientvit Decoder (strict load of the original names) vs diffusers: max |diff| = {de:.3g}; "
              f"the encoder sample names are efficientvit Encoder names with the same shapes")

    model = (f"AutoencoderDC (dc-ae-f32c32-sana-1.0 config), block_out_channels {list(WIDTHS)}, "
             f"attention_head_dim {HEAD_DIM}, random weights (F16-exact)")
    written = []

    def save(fname, tensors, meta):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)

    os.makedirs(args.out, exist_ok=True)
    save(f"{TAG}.diffusers.safetensors", {k: v.half() for k, v in dsd.items()},
         {"generator": GEN, "model": model + "; diffusers names (+ 5 encoder tensors to ignore)"})
    save(f"{TAG}.orig.safetensors", {k: v.half() for k, v in orig.items()},
         {"generator": GEN, "model": model + "; original mit-han-lab/efficientvit names (+ 5 encoder tensors to ignore)"})
    save(f"{TAG}.latent", *tt.latent_file(z, GEN, "raw DC-AE latent z (decoder input), NCHW"))
    save(f"{TAG}.normalized.latent",
         *tt.latent_file(x, GEN, f"SANA diffusion latent x, NCHW; z = x / {SCALING_FACTOR}"))
    save(f"{TAG}.expected.safetensors", {"decoded": y, "decoded_normalized": yn},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderDC.decode(z).sample, fp32 CPU, "
                       f"torch {torch.__version__}; not clamped", "model": model,
          "decoded": f"decode({TAG}.latent)",
          "decoded_normalized": f"decode(x / {SCALING_FACTOR}), x = {TAG}.normalized.latent"})
    tt.report_written(written)


if __name__ == "__main__":
    main()

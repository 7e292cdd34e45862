#!/usr/bin/env python3
"""Generate the small, deterministic AutoencoderKL test fixtures (tests/data/kl_*).

    /tmp/fixenv/bin/python tests/data/gen_kl_fixtures.py [--out DIR] [--stats]

The references are computed by the UPSTREAM implementation, diffusers (pip package `diffusers`):
`AutoencoderKL.decode(z).sample` for the SD-like and SD3/FLUX.1-like files, and
`AutoencoderKLFlux2` (its `bn` running statistics, the Flux2 pipeline's latent de-normalisation
and `_unpatchify_latents`, then `decode`) for the FLUX.2-like file; fp32 on the CPU, one thread.
The key renamings are written here and checked against diffusers' own converters
(`convert_ldm_vae_checkpoint` for LDM and prefixed names, `ModelMixin._fix_state_dict_keys_on_load`
for the pre-refactor attention names) and against the key lists in
../shared/design/keys/autoencoderkl_*_ldm.txt.

Random weights (fixed seeds), reduced widths, rounded to bfloat16 *before* the reference is
computed and stored as BF16, so the decoder under test uses exactly the reference's numbers.
Re-running rewrites byte-identical files (same torch build).
"""

import argparse
import ast
import os
import re
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors read/write helpers)

GEN = "tests/data/gen_kl_fixtures.py"
KEYS_DIR = os.path.join(HERE, "..", "..", "..", "shared", "design", "keys")

# fixture geometry (latent channels, block_out_channels, latent C x h x w)
SD_BLOCKS = (32, 64, 96, 96)      # decoder: conv_in->96 | 96 | 96 | 96->64 | 64->32 (SD: 512..128)
F1_BLOCKS = (32, 32, 32, 32)
F2_BLOCKS = (32, 32, 32, 32)
BN_EPS = 1e-4                     # AutoencoderKLFlux2 default batch_norm_eps


def uni(g, shape, bound):
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound


def describe(y):
    return (f"{tuple(y.shape)} min {y.min().item():.4f} max {y.max().item():.4f} "
            f"mean {y.mean().item():.4f} std {y.std().item():.4f}")


def bf16(t):
    return tt.round_to_dtype(t.float(), torch.bfloat16)


# --------------------------------------------------------------------------------------------
# models and weights
# --------------------------------------------------------------------------------------------

def kl_config(z, blocks, post_quant):
    return dict(in_channels=3, out_channels=3, down_block_types=("DownEncoderBlock2D",) * 4,
                up_block_types=("UpDecoderBlock2D",) * 4, block_out_channels=blocks,
                layers_per_block=2, act_fn="silu", latent_channels=z, norm_num_groups=32,
                use_quant_conv=post_quant, use_post_quant_conv=post_quant)


def perturb(vae, seed):
    """diffusers' default initialisation (global torch seed), then: GroupNorm gains 1 +- 0.4 and
    biases +- 0.3, every conv/linear bias +- 0.2, conv weights x sqrt(3) (the default init gives a
    third of the input variance per conv), attention q/k x 2 (a softmax that is not flat), all
    rounded to bfloat16. Only the decoder side and post_quant_conv matter; the encoder keeps its
    default values (rounded too)."""
    g = torch.Generator().manual_seed(seed)
    norms = ("norm1.", "norm2.", "group_norm.", "conv_norm_out.", "norm_out.")
    out = {}
    for name, p in vae.state_dict().items():
        v = p.detach().double()
        if not p.is_floating_point():
            out[name] = p
            continue
        if any(n in name for n in norms):
            v = (1.0 + uni(g, p.shape, 0.4)) if name.endswith(".weight") else uni(g, p.shape, 0.3)
        elif name.endswith(".bias"):
            v = uni(g, p.shape, 0.2)
        elif name.startswith("decoder.") or name.startswith("post_quant_conv."):
            gain = 3.0 ** 0.5
            if re.search(r"attentions\.0\.to_[qk]\.weight$", name):
                gain *= 2.0
            elif name == "decoder.conv_out.weight":
                gain *= 0.5
            v = v * gain
        out[name] = bf16(v)
    vae.load_state_dict(out, strict=True)
    return out


def stats(vae, z):
    rows = []
    mods = []
    if vae.post_quant_conv is not None:
        mods.append(("post_quant_conv", vae.post_quant_conv))
    mods += [("conv_in", vae.decoder.conv_in), ("mid_block", vae.decoder.mid_block)]
    mods += [(f"up_blocks.{i}", b) for i, b in enumerate(vae.decoder.up_blocks)]
    mods += [("conv_out", vae.decoder.conv_out)]
    hooks = [m.register_forward_hook(
        lambda mod, inp, o, n=n: rows.append((n, o.std().item(), o.abs().max().item())))
        for n, m in mods]
    with torch.no_grad():
        vae.decode(z)
    for h in hooks:
        h.remove()
    return " ".join(f"{n}:{s:.2f}/{mx:.1f}" for n, s, mx in rows)


# --------------------------------------------------------------------------------------------
# key renamings (MODELS.md §A.3, §A.4, §A.6), written here, checked against diffusers
# --------------------------------------------------------------------------------------------

_ATTN_LDM = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}
_ATTN_OLD = {"to_q": "query", "to_k": "key", "to_v": "value", "to_out.0": "proj_attn"}


def _resnet_ldm(sub):
    return sub.replace("conv_shortcut.", "nin_shortcut.")


def ldm_name(name):
    """diffusers AutoencoderKL key -> LDM/ComfyUI/BFL key (decoder, post_quant_conv, and the
    encoder keys the fixtures carry: encoder.conv_in.*, quant_conv.*)."""
    if name.startswith(("post_quant_conv.", "quant_conv.", "encoder.conv_in.", "bn.")):
        return name
    if not name.startswith("decoder."):
        raise ValueError(f"no LDM name for {name}")
    rest = name[len("decoder."):]
    if rest.startswith(("conv_in.", "conv_out.")):
        return name
    m = re.match(r"conv_norm_out\.(.*)$", rest)
    if m:
        return f"decoder.norm_out.{m.group(1)}"
    m = re.match(r"mid_block\.resnets\.(\d)\.(.*)$", rest)
    if m:
        return f"decoder.mid.block_{int(m.group(1)) + 1}.{_resnet_ldm(m.group(2))}"
    m = re.match(r"mid_block\.attentions\.0\.(group_norm|to_q|to_k|to_v|to_out\.0)\.(weight|bias)$", rest)
    if m:
        return f"decoder.mid.attn_1.{_ATTN_LDM[m.group(1)]}.{m.group(2)}"
    m = re.match(r"up_blocks\.(\d)\.resnets\.(\d)\.(.*)$", rest)
    if m:
        return f"decoder.up.{3 - int(m.group(1))}.block.{m.group(2)}.{_resnet_ldm(m.group(3))}"
    m = re.match(r"up_blocks\.(\d)\.upsamplers\.0\.conv\.(.*)$", rest)
    if m:
        return f"decoder.up.{3 - int(m.group(1))}.upsample.conv.{m.group(2)}"
    raise ValueError(f"no LDM name for {name}")


def old_attn_name(name):
    """diffusers key -> the pre-refactor diffusers key (query/key/value/proj_attn)."""
    m = re.match(r"(.*\.attentions\.\d+)\.(to_q|to_k|to_v|to_out\.0)\.(weight|bias)$", name)
    return f"{m.group(1)}.{_ATTN_OLD[m.group(2)]}.{m.group(3)}" if m else name


def is_attn_matrix(name):
    return re.search(r"attentions\.0\.(to_[qkv]|to_out\.0)\.weight$", name) is not None


def to_ldm(sd):
    """{diffusers name: tensor} -> {LDM name: tensor}, attention matrices as [C,C,1,1]."""
    out = {}
    for k, v in sd.items():
        out[ldm_name(k)] = v.reshape(*v.shape, 1, 1) if is_attn_matrix(k) else v
    assert len(out) == len(sd)
    return out


def read_key_list(fname):
    rows = {}
    with open(os.path.join(KEYS_DIR, fname)) as f:
        for line in f:
            name, shape = line.rstrip("\n").split("\t")
            rows[name] = [int(d) for d in shape.strip("[]").split(",")]
    return rows


def check_against_key_list(ldm, fname, widths, rename=None):
    """The decoder-side LDM names equal the design key list, and the shapes are the list's with
    the full widths (128, 256, 512) replaced by this model's (everything else equal). A model
    whose levels all have one width has no nin_shortcut (diffusers and LDM make one only where
    a resnet changes the width): those may be missing, nothing else."""
    want = read_key_list(fname)
    have = {(rename or {}).get(k, k): list(v.shape) for k, v in ldm.items()
            if k.startswith(("decoder.", "post_quant_conv.", "bn.")) and not k.endswith("num_batches_tracked")}
    missing = sorted(set(want) - set(have))
    if len(set(widths)) == 1:
        assert all(".nin_shortcut." in k for k in missing), missing
        for k in missing:
            del want[k]
    assert set(have) == set(want), sorted(set(have) ^ set(want))
    bad = [(k, have[k], s) for k, s in want.items()
           if len(have[k]) != len(s)
           or any(a != b and not (b in (128, 256, 512) and a in widths) for a, b in zip(have[k], s))]
    assert not bad, bad[:5]
    print(f"  LDM key set == {fname} ({len(want)} tensors; shapes equal up to the widths)"
          + (f"; without its {len(missing)} nin_shortcut tensors (one width)" if missing else ""))


def check_with_diffusers_converter(ldm_like, vae_cfg, reference_sd, what):
    """diffusers' own single-file converter maps `ldm_like` back to exactly reference_sd."""
    from diffusers.loaders.single_file_utils import convert_ldm_vae_checkpoint
    conv = convert_ldm_vae_checkpoint(dict(ldm_like), vae_cfg)
    dec = {k: v for k, v in conv.items() if k.startswith(("decoder.", "post_quant_conv."))}
    ref = {k: v for k, v in reference_sd.items() if k.startswith(("decoder.", "post_quant_conv."))}
    assert set(dec) == set(ref), sorted(set(dec) ^ set(ref))
    for k in ref:
        assert dec[k].shape == ref[k].shape and torch.equal(dec[k], ref[k]), k
    print(f"  diffusers convert_ldm_vae_checkpoint({what}) == vae.state_dict() ({len(ref)} decoder tensors)")


# --------------------------------------------------------------------------------------------
# the fixtures
# --------------------------------------------------------------------------------------------

def make_latent(seed, shape, scale, spikes):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn((1,) + shape, generator=g, dtype=torch.float32) * scale
    for idx, val in spikes:
        z[(0,) + idx] = val
    return z


def decode(vae, z):
    with torch.no_grad():
        return vae.decode(z).sample.float().contiguous()


def crosscheck(vae_cls, cfg, sd, z, y, tag):
    """fp64 decode and the plain (non-SDPA) attention processor, printed only."""
    from diffusers.models.attention_processor import AttnProcessor
    v2 = vae_cls(**cfg).eval()
    v2.load_state_dict(sd)
    v2.set_attn_processor(AttnProcessor())
    d_attn = (decode(v2, z) - y).abs().max().item()
    v64 = v2.double()
    with torch.no_grad():
        y64 = v64.decode(z.double()).sample
    d64 = (y.double() - y64).abs().max().item()
    print(f"{tag}: max |AttnProcessor - default (SDPA)| = {d_attn:.3g}, max |fp32 - fp64| = {d64:.3g}")
    return d_attn, d64


def latent_file(z, space):
    return ({"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
            {"generator": GEN, "space": space})


def names_lines(variant, pairs):
    """(stored name or '-', name in the variant, dtype, shape) -> lines of a .names.txt"""
    return [f"{variant}\t{s}\t{n}\t{dt}\t[{', '.join(str(d) for d in shape)}]" for s, n, dt, shape in pairs]


def gen_sd(args, save, write_text):
    import diffusers
    from diffusers import AutoencoderKL

    cfg = kl_config(4, SD_BLOCKS, True)
    torch.manual_seed(1001)
    vae = AutoencoderKL(**cfg).eval()
    sd = perturb(vae, seed=1002)

    z = make_latent(1003, (4, 5, 7), 2.0, [((1, 2, 3), 9.0), ((3, 4, 6), -8.0)])
    y = decode(vae, z)
    print(f"kl_sd: decoded {describe(y)}")
    if args.stats:
        print("kl_sd stats:", stats(vae, z))
    crosscheck(AutoencoderKL, cfg, sd, z, y, "kl_sd")

    # the stored file: decoder + post_quant_conv in LDM naming, plus encoder tensors to ignore
    keep = [k for k in sd if k.startswith(("decoder.", "post_quant_conv."))]
    extra = ["encoder.conv_in.weight", "encoder.conv_in.bias", "quant_conv.weight", "quant_conv.bias"]
    dsd = {k: sd[k] for k in keep + extra}
    ldm = to_ldm(dsd)
    check_against_key_list(ldm, "autoencoderkl_sd_sdxl_z4_ldm.txt", SD_BLOCKS)
    check_with_diffusers_converter(ldm, cfg, sd, "LDM names")

    # naming variants, each name taken from (or checked against) diffusers
    full_extra = [("model.diffusion_model.input_blocks.0.0.weight", "BF16", [8, 4, 3, 3]),
                  ("model.diffusion_model.out.2.bias", "BF16", [4]),
                  ("cond_stage_model.transformer.text_model.embeddings.position_ids", "I64", [1, 77])]
    variants = {"ldm": [], "diffusers": [], "diffusers_old_attn": [], "first_stage_model": [], "vae": []}
    for dname in keep + extra:
        lname = ldm_name(dname)
        lshape = list(ldm[lname].shape)
        dshape = list(sd[dname].shape)
        variants["ldm"].append((lname, lname, "BF16", lshape))
        variants["diffusers"].append((lname, dname, "BF16", dshape))
        variants["diffusers_old_attn"].append((lname, old_attn_name(dname), "BF16", dshape))
        variants["first_stage_model"].append((lname, "first_stage_model." + lname, "BF16", lshape))
        variants["vae"].append((lname, "vae." + lname, "BF16", lshape))
    for n, dt, shape in full_extra:
        variants["first_stage_model"].append(("-", n, dt, shape))

    # diffusers' own names: the diffusers variant is vae.state_dict()'s names; the old attention
    # names are what diffusers' loader renames to them; the prefixed LDM names convert back
    names_d = {n for _, n, _, _ in variants["diffusers"]}
    assert names_d <= set(vae.state_dict()), sorted(names_d - set(vae.state_dict()))
    old = {n: None for _, n, _, _ in variants["diffusers_old_attn"]}
    n_old = sum(1 for n in old if re.search(r"\.(query|key|value|proj_attn)\.", n))
    fixed = vae._fix_state_dict_keys_on_load(dict(old))
    assert set(fixed) == names_d, sorted(set(fixed) ^ names_d)
    print(f"  diffusers _fix_state_dict_keys_on_load renames the {n_old} old attention names to "
          f"vae.state_dict()'s")
    for prefix in ("first_stage_model.", "vae."):
        full = {prefix + k: v for k, v in ldm.items()}
        full["model.diffusion_model.input_blocks.0.0.weight"] = torch.zeros(8, 4, 3, 3)
        check_with_diffusers_converter(full, cfg, sd, prefix + "LDM names + unrelated tensors")

    meta = {"model": f"AutoencoderKL z=4 block_out_channels={list(SD_BLOCKS)}, random weights "
                     f"(bf16-exact), LDM naming (+ encoder.conv_in.*, quant_conv.* to ignore)",
            "generator": GEN}
    save("kl_sd.safetensors", {k: v.bfloat16() for k, v in ldm.items()}, meta)
    save("kl_sd.latent", *latent_file(z, "raw VAE latent z (decoder input), NCHW"))
    save("kl_sd.expected.safetensors", {"decoded": y},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKL.decode(z).sample, fp32 CPU, "
                       f"torch {torch.__version__}; not clamped", "model": meta["model"]})
    lines = ["# variant<TAB>name in kl_sd.safetensors ('-': not there, zeros)<TAB>name in the variant"
             "<TAB>dtype<TAB>shape   (tests/data/gen_kl_fixtures.py)"]
    for v, pairs in variants.items():
        lines += names_lines(v, pairs)
    write_text("kl_sd.names.txt", "\n".join(lines) + "\n")


def gen_f1(args, save):
    import diffusers
    from diffusers import AutoencoderKL

    cfg = kl_config(16, F1_BLOCKS, False)
    torch.manual_seed(2001)
    vae = AutoencoderKL(**cfg).eval()
    sd = perturb(vae, seed=2002)
    z = make_latent(2003, (16, 6, 5), 1.0, [((2, 1, 4), 6.0), ((15, 5, 0), -5.5)])
    y = decode(vae, z)
    print(f"kl_f1: decoded {describe(y)}")
    if args.stats:
        print("kl_f1 stats:", stats(vae, z))
    crosscheck(AutoencoderKL, cfg, sd, z, y, "kl_f1")
    ldm = to_ldm({k: v for k, v in sd.items() if k.startswith("decoder.")})
    check_against_key_list(ldm, "autoencoderkl_sd3_flux1_z16_ldm.txt", F1_BLOCKS)
    check_with_diffusers_converter(ldm, cfg, sd, "LDM names")
    meta = {"model": f"AutoencoderKL z=16 block_out_channels={list(F1_BLOCKS)}, no quant convs "
                     f"(SD3/FLUX.1 layout), random weights (bf16-exact), LDM naming",
            "generator": GEN}
    save("kl_f1.safetensors", {k: v.bfloat16() for k, v in ldm.items()}, meta)
    save("kl_f1.latent", *latent_file(z, "raw VAE latent z (decoder input), NCHW"))
    save("kl_f1.expected.safetensors", {"decoded": y},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKL.decode(z).sample, fp32 CPU, "
                       f"torch {torch.__version__}; not clamped", "model": meta["model"]})


def upstream_unpatchify():
    """diffusers' Flux2Pipeline._unpatchify_latents, compiled from the installed diffusers source
    (importing the pipeline module needs `transformers`, which this environment does not have)."""
    import importlib.util
    spec = importlib.util.find_spec("diffusers")
    path = os.path.join(os.path.dirname(spec.origin), "pipelines", "flux2", "pipeline_flux2.py")
    src = open(path).read()
    tree = ast.parse(src)
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "Flux2Pipeline":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "_unpatchify_latents":
                    f.decorator_list = []
                    mod = ast.Module(body=[f], type_ignores=[])
                    ns = {"torch": torch}
                    exec(compile(mod, path, "exec"), ns)
                    return ns["_unpatchify_latents"]
    sys.exit(f"no Flux2Pipeline._unpatchify_latents in {path}")


def gen_f2(args, save, write_text):
    import diffusers
    from diffusers import AutoencoderKLFlux2

    cfg = dict(kl_config(32, F2_BLOCKS, True), batch_norm_eps=BN_EPS)
    torch.manual_seed(3001)
    vae = AutoencoderKLFlux2(**cfg).eval()
    # running statistics: mean +- 0.5, var in [0.2, 2.0], bf16-exact; num_batches_tracked stays 0
    g = torch.Generator().manual_seed(3004)
    vae.bn.running_mean.copy_(bf16(uni(g, (128,), 0.5)))
    vae.bn.running_var.copy_(bf16(1.1 + uni(g, (128,), 0.9)))
    sd = perturb(vae, seed=3002)
    assert sd["bn.num_batches_tracked"].dtype == torch.int64 and sd["bn.num_batches_tracked"].dim() == 0

    z = make_latent(3003, (32, 6, 8), 1.0, [((4, 2, 5), 6.0), ((31, 0, 7), -6.5)])
    x = make_latent(3005, (128, 3, 4), 1.0, [((7, 1, 2), 4.0), ((100, 2, 3), -4.5)])
    y = decode(vae, z)
    # the Flux2 pipeline's path: x * sqrt(bn.running_var + eps) + bn.running_mean, unpatchify
    unpatchify = upstream_unpatchify()
    mean = vae.bn.running_mean.view(1, -1, 1, 1)
    std = torch.sqrt(vae.bn.running_var.view(1, -1, 1, 1) + vae.config.batch_norm_eps)
    zn = unpatchify(x * std + mean)
    yn = decode(vae, zn)
    # cross-check: BN + unpatchify written out element by element (MODELS.md §A.6), in float32
    # (the same arithmetic: expect 0) and in float64
    for dt in (np.float32, np.float64):
        xa = x[0].numpy().astype(dt)
        mv = vae.bn.running_mean.numpy().astype(dt)
        sv = np.sqrt(vae.bn.running_var.numpy().astype(dt) + dt(BN_EPS))
        xp = xa * sv[:, None, None] + mv[:, None, None]
        zm = np.zeros((32, 6, 8), dtype=dt)
        for c in range(32):
            for i in range(2):
                for j in range(2):
                    zm[c, i::2, j::2] = xp[4 * c + 2 * i + j]
        dz = np.abs(zm.astype(np.float64) - zn[0].double().numpy()).max()
        yn_manual = decode(vae, torch.from_numpy(zm.astype(np.float32))[None])
        print(f"kl_f2: pipeline de-normalise+unpatchify vs element-wise ({np.dtype(dt).name}): "
              f"max |dz| = {dz:.3g}, decoded max diff {(yn_manual - yn).abs().max().item():.3g}")
    print(f"kl_f2: decoded {describe(y)}; decoded_normalized {describe(yn)}")
    if args.stats:
        print("kl_f2 stats:", stats(vae, z))
    crosscheck(AutoencoderKLFlux2, cfg, sd, z, y, "kl_f2")

    keep = [k for k in sd if k.startswith(("decoder.", "post_quant_conv.", "bn."))]
    ldm = to_ldm({k: sd[k] for k in keep})
    # the design list names post_quant_conv BFL-style (decoder.post_quant_conv.*)
    check_against_key_list(ldm, "autoencoderkl_flux2_z32_ldm.txt", F2_BLOCKS,
                           rename={"post_quant_conv.weight": "decoder.post_quant_conv.weight",
                                   "post_quant_conv.bias": "decoder.post_quant_conv.bias"})
    check_with_diffusers_converter({k: v for k, v in ldm.items() if not k.startswith("bn.")}, cfg, sd,
                                   "LDM names")
    meta = {"model": f"AutoencoderKLFlux2 z=32 block_out_channels={list(F2_BLOCKS)}, random weights "
                     f"(bf16-exact), LDM naming with top-level post_quant_conv, bn running stats "
                     f"(eps {BN_EPS})", "generator": GEN}
    stored = {k: (v.bfloat16() if v.is_floating_point() else v) for k, v in ldm.items()}
    save("kl_f2.safetensors", stored, meta)
    save("kl_f2.latent", *latent_file(z, "raw VAE latent z (decoder input), NCHW"))
    save("kl_f2.normalized.latent",
         *latent_file(x, "FLUX.2 normalised patchified latent x [1,128,h/2,w/2] "
                         "(z = unpatchify(x * sqrt(bn.running_var + 1e-4) + bn.running_mean))"))
    save("kl_f2.expected.safetensors", {"decoded": y, "decoded_normalized": yn},
         {"reference": f"diffusers {diffusers.__version__} AutoencoderKLFlux2.decode(z).sample, fp32 "
                       f"CPU, torch {torch.__version__}; not clamped", "model": meta["model"],
          "decoded": "decode(kl_f2.latent)",
          "decoded_normalized": "decode(Flux2Pipeline._unpatchify_latents(x * sqrt(bn.running_var + "
                                "eps) + bn.running_mean)), x = kl_f2.normalized.latent"})
    # naming variants: BFL names post_quant_conv decoder.post_quant_conv.*; diffusers names
    lines = ["# variant<TAB>name in kl_f2.safetensors<TAB>name in the variant<TAB>dtype<TAB>shape   "
             "(tests/data/gen_kl_fixtures.py)"]
    bfl, dif = [], []
    for dname in keep:
        lname = ldm_name(dname)
        dt = "I64" if not sd[dname].is_floating_point() else "BF16"
        bname = "decoder." + lname if lname.startswith("post_quant_conv.") else lname
        bfl.append((lname, bname, dt, list(ldm[lname].shape)))
        dif.append((lname, dname, dt, list(sd[dname].shape)))
    lines += names_lines("bfl", bfl) + names_lines("diffusers", dif)
    write_text("kl_f2.names.txt", "\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description="generate AutoencoderKL test fixtures")
    ap.add_argument("--out", default=HERE)
    ap.add_argument("--stats", action="store_true", help="print per-layer activation std/max")
    args = ap.parse_args()
    torch.set_num_threads(1)  # single-threaded: reproducible summation order
    os.makedirs(args.out, exist_ok=True)
    written = []

    def save(fname, tensors, meta=None):
        path = os.path.join(args.out, fname)
        tt.save_safetensors(path, tensors, meta)
        written.append(path)

    def write_text(fname, text):
        path = os.path.join(args.out, fname)
        with open(path, "w") as f:
            f.write(text)
        written.append(path)

    gen_sd(args, save, write_text)
    gen_f1(args, save)
    gen_f2(args, save, write_text)
    total = 0
    for p in written:
        size = os.path.getsize(p)
        total += size
        print(f"wrote {os.path.relpath(p)} {size} bytes")
    print(f"total {total} bytes in {len(written)} files")


if __name__ == "__main__":
    main()

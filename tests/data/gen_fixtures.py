#!/usr/bin/python3
"""Generate the small, deterministic TAESD/TAEF2 test fixtures in tests/data/.

    /usr/bin/python3 tests/data/gen_fixtures.py [--out DIR] [--stats]

Random weights (fixed seeds), the decoder is tests/data/taesd_torch.py (written from
shared/design/MODELS.md §C.1/§C.2), references are its fp32 CPU output. Weights are rounded to
the dtype they are stored in *before* computing the reference, so every file of a model holds
exactly the values the reference used. Re-running rewrites byte-identical files.
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402

WIDTH = 16
LAT_B, LAT_H, LAT_W = 2, 5, 7   # odd latent size -> decoded [2, 3, 40, 56]


def init_weights(model, seed):
    """Kaiming-uniform-like weights scaled so activations stay O(1) through the 10 residual
    blocks; small random biases; GroupNorm affine near (1, 0) but random."""
    g = torch.Generator().manual_seed(seed)

    def uni(shape, bound):
        return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound

    sd = {}
    for name, p in model.state_dict().items():
        shape = tuple(p.shape)
        parts = name.split(".")
        if name.endswith(".weight") and len(shape) == 4:
            fan_in = shape[1] * shape[2] * shape[3]
            if parts[1:3] in (["conv", "0"], ["conv", "2"]):
                gain = 2.0 ** 0.5                   # ReLU follows: keeps E[x^2]
            elif parts[1:3] in (["conv", "4"], ["pool", "3"]):
                gain = 0.5                          # last conv of a residual branch
            elif parts[1:3] == ["pool", "0"]:
                gain = 1.0                          # GroupNorm follows
            elif parts[0] == "19":
                gain = 0.4                          # output conv: output std ~0.3..0.5
            else:
                gain = 1.0                          # 1 (input conv), 7/12/17 (upsample convs)
            sd[name] = uni(shape, gain * (3.0 / fan_in) ** 0.5)
        elif name.endswith(".pool.1.weight"):       # GroupNorm gamma
            sd[name] = 1.0 + uni(shape, 0.25)
        elif name.endswith(".pool.1.bias"):         # GroupNorm beta
            sd[name] = uni(shape, 0.1)
        elif name == "19.bias":
            sd[name] = 0.5 + uni(shape, 0.1)        # output around the middle of [0, 1]
        elif name.endswith(".bias"):
            sd[name] = uni(shape, 0.1)
        else:
            raise ValueError(f"unexpected parameter {name} {shape}")
    return {k: v.float() for k, v in sd.items()}


def make_latent(z, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn((LAT_B, z, LAT_H, LAT_W), generator=g, dtype=torch.float32) * 2.0
    x[0, z - 1, 2, 3] = 12.5       # one large value: tanh clamp saturates (3*tanh(12.5/3) ~ 2.99)
    x[1, 0, 4, 6] = -11.0          # and one on the negative side, at a corner
    return x


def decode(model, x):
    with torch.inference_mode():
        return model(x).float().contiguous()


def activation_stats(model, x):
    stats = []
    hooks = [m.register_forward_hook(
        lambda mod, inp, out, i=i: stats.append((i, out.std().item(), out.abs().max().item())))
        for i, m in enumerate(model)]
    decode(model, x)
    for h in hooks:
        h.remove()
    return " ".join(f"{i}:{s:.2f}/{m:.1f}" for i, s, m in stats)


LATENT_META = {"generator": "tests/data/gen_fixtures.py"}


def main():
    ap = argparse.ArgumentParser(description="generate TAESD/TAEF2 test fixtures")
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

    def build(z, seed, round_dtype, midblock_gn=False, pool_width=256):
        m = tt.TaesdDecoder(z, width=WIDTH, pool_width=pool_width, pool_groups=4,
                            midblock_gn=midblock_gn).eval()
        sd = init_weights(m, seed)
        if round_dtype is not None:
            sd = {k: tt.round_to_dtype(v, round_dtype) for k, v in sd.items()}
        m.load_state_dict(sd, strict=True)
        return m, sd

    def reference(base, m, z, seed, desc):
        x = make_latent(z, seed)
        y = decode(m, x)
        if args.stats:
            print(f"{base}: {activation_stats(m, x)}")
        print(f"{base}: decoded {tuple(y.shape)} min {y.min().item():.3f} "
              f"max {y.max().item():.3f} mean {y.mean().item():.3f} std {y.std().item():.3f}")
        save(f"{base}.latent", {"latent_tensor": x, "latent_format_version_0": torch.zeros(0)},
             dict(LATENT_META, model=desc))
        save(f"{base}.expected.safetensors", {"decoded": y},
             {"model": desc, "note": "fp32 CPU output of tests/data/taesd_torch.py, unclamped"})

    # 1. TAESD z=4: F32 original names + F16 diffusers names, same (f16-exact) values.
    m, sd = build(4, seed=1004, round_dtype=torch.float16)
    save("taesd_z4_w16.orig.safetensors", sd, {"format": "taesd", "width": str(WIDTH)})
    save("taesd_z4_w16.diffusers.safetensors",
         {k: v.half() for k, v in tt.to_diffusers_names(sd).items()})
    reference("taesd_z4_w16", m, 4, seed=2004, desc="taesd_z4_w16 (orig F32 == diffusers F16)")

    # 2. TAESD z=16, ComfyUI combined form, BF16 decoder + unrelated tensors to ignore.
    m, sd = build(16, seed=1016, round_dtype=torch.bfloat16)
    comfy = {k: v.bfloat16() for k, v in tt.to_comfy_names(sd).items()}
    g = torch.Generator().manual_seed(3016)
    comfy["taesd_encoder.0.weight"] = (torch.randn((16, 3, 3, 3), generator=g) * 0.1).bfloat16()
    comfy["vae_scale"] = torch.tensor(0.3611, dtype=torch.float32)
    comfy["vae_shift"] = torch.tensor(0.1159, dtype=torch.float32)
    save("taesd_z16_w16.comfy.safetensors", comfy)
    reference("taesd_z16_w16", m, 16, seed=2016, desc="taesd_z16_w16 comfy BF16")

    # 3. TAEF2 z=32 with the midblock GroupNorm pool branch (pool width 64, 4 groups), F32.
    m, sd = build(32, seed=1032, round_dtype=None, midblock_gn=True, pool_width=64)
    save("taef2_z32_w16.orig.safetensors", sd,
         {"format": "taesd", "width": str(WIDTH), "pool_width": "64", "pool_groups": "4"})
    reference("taef2_z32_w16", m, 32, seed=2032, desc="taef2_z32_w16 midblock_gn F32")

    total = 0
    for p in written:
        size = os.path.getsize(p)
        total += size
        print(f"wrote {os.path.relpath(p)} {size} bytes")
    print(f"total {total} bytes in {len(written)} files")


if __name__ == "__main__":
    main()

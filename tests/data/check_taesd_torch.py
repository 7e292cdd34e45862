#!/usr/bin/python3
"""Check tests/data/taesd_torch.py against the real upstream TAEF2 reference outputs.

Loads ../shared/models/taef2_decoder.safetensors (F16 -> float32) into
TaesdDecoder(32, midblock_gn=True), decodes ../shared/reference/taef2/{small,full}.latent in
fp32 on the CPU and compares with `decoded` from the matching .expected.safetensors; also prints
the PSNR of clamp(out, 0, 1) against `source`. Exits 1 if any max abs error exceeds 2e-4.

    /usr/bin/python3 tests/data/check_taesd_torch.py [--shared DIR] [--only small|full]
"""

import argparse
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import taesd_torch as tt  # noqa: E402

TOL = 2e-4


def psnr(a, b):
    mse = torch.mean((a.double() - b.double()) ** 2).item()
    return float("inf") if mse == 0 else 10.0 * math.log10(1.0 / mse)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    ap.add_argument("--shared", default=os.path.normpath(os.path.join(here, "..", "..", "..", "shared")))
    ap.add_argument("--only", choices=["small", "full"])
    args = ap.parse_args()

    torch.set_num_threads(os.cpu_count() or 1)
    model_path = os.path.join(args.shared, "models", "taef2_decoder.safetensors")
    sd, _ = tt.load_safetensors(model_path)
    dec = tt.TaesdDecoder(32, midblock_gn=True)
    dec.load_state_dict(tt.to_float32(sd), strict=True)
    dec.eval()
    print(f"model {model_path}: {len(sd)} tensors, dtypes {sorted({str(v.dtype) for v in sd.values()})}")

    ok = True
    for name in ["small", "full"]:
        if args.only and name != args.only:
            continue
        ref_dir = os.path.join(args.shared, "reference", "taef2")
        lat, _ = tt.load_safetensors(os.path.join(ref_dir, f"{name}.latent"))
        exp, _ = tt.load_safetensors(os.path.join(ref_dir, f"{name}.expected.safetensors"))
        x = lat["latent_tensor"].float()
        t0 = time.perf_counter()
        with torch.inference_mode():
            y = dec(x)
        dt = time.perf_counter() - t0
        want = exp["decoded"].float()
        if y.shape != want.shape:
            print(f"{name}: shape {tuple(y.shape)} != expected {tuple(want.shape)}")
            ok = False
            continue
        diff = (y - want).abs()
        maxabs, meanabs = diff.max().item(), diff.mean().item()
        src = exp["source"].float()
        yc = y.clamp(0, 1)
        p_ours = [psnr(yc[i], src[i]) for i in range(y.shape[0])]
        p_ref = [psnr(want[i].clamp(0, 1), src[i]) for i in range(y.shape[0])]
        good = maxabs <= TOL
        ok &= good
        print(f"{name}: latent {tuple(x.shape)} -> {tuple(y.shape)} in {dt:.2f} s; "
              f"max abs {maxabs:.3e} mean abs {meanabs:.3e} "
              f"PSNR vs source {' / '.join(f'{p:.2f}' for p in p_ours)} dB "
              f"(upstream {' / '.join(f'{p:.2f}' for p in p_ref)} dB) "
              f"{'OK' if good else 'FAIL (tol %.0e)' % TOL}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

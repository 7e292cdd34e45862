#!/usr/bin/env python3
"""Writes the small torch.save fixtures of tests/test-pth.c with real PyTorch (any 2.x):

  pth_features.pth    {"state_dict": OrderedDict(...), "epoch": 3}: F32, F16 views sharing one
                      storage at non-zero offsets, a BF16 nn.Parameter, an I64 scalar, an F64 tensor,
                      an empty tensor, a dimension of size 1 with a stride a row-major layout would not give
  pth_transposed.pth  a state dict with a transposed (non-contiguous) tensor
  pth_legacy.pth      the legacy format (_use_new_zipfile_serialization=False)

Run: python gen_pth.py (writes next to itself). The values are small integers, so the test can
check them exactly.
"""
import collections
import os

import torch

here = os.path.dirname(os.path.abspath(__file__))


def main():
    base = torch.arange(20, dtype=torch.float16)
    sd = collections.OrderedDict()
    sd["a.weight"] = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    sd["b"] = base[4:10]                       # storage offset 4, shared with "c"
    sd["c"] = base[10:20].view(2, 5)           # storage offset 10
    sd["p"] = torch.nn.Parameter(torch.tensor([1.5, -2.0], dtype=torch.bfloat16), requires_grad=False)
    sd["n"] = torch.tensor(7, dtype=torch.int64)
    sd["d"] = torch.tensor([0.25, 8.0], dtype=torch.float64)
    sd["e"] = torch.zeros(0, 3)
    sd["s"] = torch.arange(6, dtype=torch.float32).reshape(6, 1).t()  # [1, 6], strides (1, 1)
    torch.save({"state_dict": sd, "epoch": 3}, os.path.join(here, "pth_features.pth"))

    torch.save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3).t()}, os.path.join(here, "pth_transposed.pth"))
    torch.save({"w": torch.ones(2)}, os.path.join(here, "pth_legacy.pth"), _use_new_zipfile_serialization=False)


if __name__ == "__main__":
    main()

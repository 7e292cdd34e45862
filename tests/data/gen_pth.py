#!/usr/bin/env python3
"""Writes the small torch.save fixtures of tests/test-pth.c with real PyTorch (any 2.x):

  pth_features.pth    {"state_dict": OrderedDict(...), "epoch": 3}: F32, F16 views sharing one
                      storage at non-zero offsets, a BF16 nn.Parameter, an I64 scalar, an F64 tensor,
                      an empty tensor, a dimension of size 1 with a stride a row-major layout would not give
  pth_lightning.ckpt  a checkpoint as PyTorch Lightning 1.x saves one: the state dict beside
                      epoch, optimizer states (lists, floats, int keys, tuples, tensors) and
                      callbacks keyed by their class (a GLOBAL that is only named, never called)
  pth_transposed.pth  a state dict with a transposed (non-contiguous) tensor
  pth_legacy.pth      the legacy format (_use_new_zipfile_serialization=False; its storage keys
                      change from run to run)

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

    torch.manual_seed(0)
    model = torch.nn.Conv2d(2, 2, 1)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    model(torch.ones(1, 2, 1, 1)).sum().backward()
    opt.step()
    ckpt = {
        "epoch": 0, "global_step": 1, "pytorch-lightning_version": "1.4.2",
        "state_dict": collections.OrderedDict(("first_stage_model." + k, v) for k, v in model.state_dict().items()),
        "callbacks": {torch.optim.Adam: {"best_model_score": torch.tensor(0.5), "best_model_path": "last.ckpt"}},
        "optimizer_states": [opt.state_dict()], "lr_schedulers": [],
    }
    torch.save(ckpt, os.path.join(here, "pth_lightning.ckpt"))

    torch.save({"w": torch.arange(6, dtype=torch.float32).reshape(2, 3).t()}, os.path.join(here, "pth_transposed.pth"))
    torch.save({"w": torch.ones(2)}, os.path.join(here, "pth_legacy.pth"), _use_new_zipfile_serialization=False)


if __name__ == "__main__":
    main()

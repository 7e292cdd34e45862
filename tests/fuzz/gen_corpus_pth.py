#!/usr/bin/env python3
"""Write the seed corpus of the .pth fuzz target into corpus-pth/ (next to this file), with real
PyTorch (torch.save, so the seeds have the exact layout torch writes):

    /path/to/venv-with-torch/bin/python tests/fuzz/gen_corpus_pth.py

The tiny width-1 decoders of corpus-model/ as .pth (TAESD F16, TAEF2 BF16, TAEHV F32), one as a
checkpoint ({"state_dict": {"first_stage_model." + name: ...}, "global_step": 1}), and a state
dict of views sharing one storage, a Parameter and an int64 scalar. The loader test-pth reads the
fixtures of tests/data/gen_pth.py; these are seeds only.
"""

import collections
import json
import os
import struct

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus-pth")
DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}


def read_st(name):
    """the tensors of a corpus-model safetensors file, in file order"""
    with open(os.path.join(HERE, "corpus-model", name), "rb") as f:
        raw = f.read()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    sd = collections.OrderedDict()
    for key, t in header.items():
        if key == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        data = bytearray(raw[8 + n + begin:8 + n + end])
        sd[key] = torch.frombuffer(data, dtype=DTYPES[t["dtype"]]).reshape(t["shape"]).clone() if data else \
            torch.zeros(t["shape"], dtype=DTYPES[t["dtype"]])
    return sd


def zip64_only(raw):
    """the archive with the counts and offsets of its end record set to "see the ZIP64 record", as
    past 4 GiB (torch writes the ZIP64 end record and its locator into every file; the file must
    have no comment)"""
    sig, comment = struct.unpack("<I", raw[-22:-18])[0], struct.unpack("<H", raw[-2:])[0]
    assert sig == 0x06054B50 and comment == 0
    return raw[:-22] + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, dtype in (("taesd-w1", torch.float16), ("taef2-w1", torch.bfloat16), ("taehv-w1", torch.float32)):
        sd = collections.OrderedDict((k, v.to(dtype)) for k, v in read_st(name + ".safetensors").items())
        torch.save(sd, os.path.join(OUT, name + ".pth"))
    sd = read_st("kl-diffusers-names.safetensors")
    ckpt = {"state_dict": collections.OrderedDict(("first_stage_model." + k, v) for k, v in sd.items()),
            "global_step": 1}
    torch.save(ckpt, os.path.join(OUT, "kl-checkpoint.ckpt"))
    base = torch.arange(8, dtype=torch.float32)
    views = collections.OrderedDict(a=base[2:6].view(2, 2), b=base[6:],
                                    p=torch.nn.Parameter(torch.ones(3)), n=torch.tensor(5))
    torch.save({"model": views}, os.path.join(OUT, "views.pth"))
    with open(os.path.join(OUT, "views.pth"), "rb") as f:
        raw = f.read()
    with open(os.path.join(OUT, "views-zip64.pth"), "wb") as f:
        f.write(zip64_only(raw))


if __name__ == "__main__":
    main()

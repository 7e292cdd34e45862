#!/usr/bin/python3
"""Write the seed corpus of the model-loader fuzz target into corpus-model/ (next to this file).

    python3 tests/fuzz/gen_corpus.py

Tiny decoders of width 1 or 2 that load (TAESD, TAEF2, TAEHV, LTX-2.3, and MiniMax-H3 refused late: every code path of a load is reached
with a few kilobytes), decoder-shaped names of the other namings (refused, but through their
renaming code), and the crafted files of issue 11 that the loader must refuse naming the tensor:
zero dimensions beside absurd ones, block numbers at LONG_MAX, a NaN weight. Plain Python, no
dependencies; re-running rewrites byte-identical files. test-safetensors loads every file here and
checks what it says about the crafted ones.
"""

import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus-model")
SIZE = {"F32": 4, "F16": 2, "BF16": 2}


def values(name, n):
    """n small deterministic values, different per tensor"""
    seed = sum(name.encode())
    return [((seed + 37 * i) % 17 - 8) / 32.0 for i in range(n)]


def pack(dtype, vals):
    if dtype == "F32":
        return struct.pack("<%df" % len(vals), *vals)
    if dtype == "F16":
        return struct.pack("<%de" % len(vals), *vals)
    return b"".join(struct.pack("<f", v)[2:] for v in vals)  # BF16: the upper half of an f32


def write(name, tensors, poke=None, empty=None):
    """tensors: [(name, dtype, shape)] with generated data; poke: (name, index, value); empty: one
    more (name, dtype, shape) with no bytes at the end"""
    header, blobs, at = {}, [], 0
    order = sorted(tensors, key=lambda t: (-SIZE[t[1]], t[0]))  # as safetensors' writer: aligned
    for tname, dtype, shape in order:
        n = 1
        for d in shape:
            n *= d
        vals = values(tname, n)
        if poke and poke[0] == tname:
            vals[poke[1]] = poke[2]
        blob = pack(dtype, vals)
        header[tname] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + len(blob)]}
        blobs.append(blob)
        at += len(blob)
    if empty:
        header[empty[0]] = {"dtype": empty[1], "shape": list(empty[2]), "data_offsets": [at, at]}
    data = b"".join(blobs)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def conv(name, cout, cin, k, dtype, bias=True):
    t = [(name + ".weight", dtype, (cout, cin, k, k))]
    return t + [(name + ".bias", dtype, (cout,))] if bias else t


def taesd(z, pool, dtype):
    """TAESD decoder (MODELS.md C.1/C.2), width 1; pool: TAEF2's GroupNorm branch (4 channels)"""
    t = conv("1", 1, z, 3, dtype)
    for k in (3, 4, 5, 8, 9, 10, 13, 14, 15, 18):
        for j in (0, 2, 4):
            t += conv("%d.conv.%d" % (k, j), 1, 1, 3, dtype)
        if pool and k <= 5:
            t += conv("%d.pool.0" % k, 4, 1, 1, dtype, bias=False)
            t += [("%d.pool.1.weight" % k, dtype, (4,)), ("%d.pool.1.bias" % k, dtype, (4,))]
            t += conv("%d.pool.3" % k, 1, 4, 1, dtype, bias=False)
    for k in (7, 12, 17):
        t += conv(str(k), 1, 1, 3, dtype, bias=False)
    return t + conv("19", 3, 1, 3, dtype)


def taehv_frame(dtype):
    """what TAEHV family detection reads: first and last conv, the three TGrows (strides 1, 2, 2)"""
    t = conv("decoder.1", 1, 16, 3, dtype) + conv("decoder.22", 3, 1, 3, dtype)
    for k, s in ((7, 1), (13, 2), (19, 2)):
        t += [("decoder.%d.conv.weight" % k, dtype, (s, 1, 1, 1))]
    return t


def taehv(dtype):
    t = taehv_frame(dtype)
    for k in (3, 4, 5, 9, 10, 11, 15, 16, 17):
        t += conv("decoder.%d.conv.0" % k, 1, 2, 3, dtype)
        t += conv("decoder.%d.conv.2" % k, 1, 1, 3, dtype)
        t += conv("decoder.%d.conv.4" % k, 1, 1, 3, dtype)
    for k in (8, 14, 20):
        t += conv("decoder.%d" % k, 1, 1, 3, dtype, bias=False)
    return t


def conv3d(name, cout, cin, dtype):
    """a 3x3x3 conv's weight and bias"""
    return [(name + ".weight", dtype, (cout, cin, 3, 3, 3)), (name + ".bias", dtype, (cout,))]


def ltx23(dtype):
    """LTX-2.3's decoder (MODELS.md J.1) in Lightricks' names, widths 2 to 1: conv_in from the 128
    latent channels, a resnet per stage, its four upsamplers told by their rows per output channel
    (8: spatiotemporal, 2: temporal, 4: spatial), conv_out to 48, the latent statistics"""
    t = conv3d("decoder.conv_in.conv", 2, 128, dtype)
    widths = (2, 1, 1, 1, 1)      # the mid block's, then each stage's
    rows = (8, 8, 2, 4)           # each upsampler's conv rows
    for b, c in enumerate(widths):
        if b:
            t += conv3d("decoder.up_blocks.%d.conv.conv" % (2 * b - 1), rows[b - 1], widths[b - 1], dtype)
        for j in (1, 2):
            t += conv3d("decoder.up_blocks.%d.res_blocks.0.conv%d.conv" % (2 * b, j), c, c, dtype)
    t += conv3d("decoder.conv_out.conv", 48, 1, dtype)
    return t + [("per_channel_statistics.mean-of-means", dtype, (128,)),
                ("per_channel_statistics.std-of-means", dtype, (128,))]


def minimax(dtype):
    """MiniMax-H3's ViT decoder (MODELS.md J.3) in diffusers' names, one head of 64 and one block, whose
    proj_out of 3 rows is no 4x16x16 patch of RGB: refused after its q, k and v are joined and its
    LayerScales folded (the whole load path of the family in a few tens of kilobytes)"""
    d, f = 64, 4
    b = "decoder.transformer_blocks.0."
    t = [("post_quant_conv.weight", dtype, (24, 24, 1, 1, 1)), ("post_quant_conv.bias", dtype, (24,)),
         ("decoder.proj_in.weight", dtype, (d, 24)), ("decoder.proj_in.bias", dtype, (d,)),
         ("decoder.register_tokens", dtype, (1, 2, d)), (b + "norm1.weight", dtype, (d,)),
         (b + "norm2.weight", dtype, (d,)), (b + "scale1", dtype, (d,)), (b + "scale2", dtype, (d,))]
    for part in ("to_q", "to_k", "to_v", "to_out.0"):
        t += [(b + "attn." + part + ".weight", dtype, (d, d)), (b + "attn." + part + ".bias", dtype, (d,))]
    t += [(b + "ff.net.0.proj.weight", dtype, (2 * f, d)), (b + "ff.net.0.proj.bias", dtype, (2 * f,)),
          (b + "ff.net.2.weight", dtype, (d, f)), (b + "ff.net.2.bias", dtype, (d,)),
          ("decoder.norm_out.weight", dtype, (d,)), ("decoder.norm_out.bias", dtype, (d,)),
          ("decoder.proj_out.weight", dtype, (3, d)), ("decoder.proj_out.bias", dtype, (3,))]
    return t


def main():
    os.makedirs(OUT, exist_ok=True)
    write("taesd-w1.safetensors", taesd(4, False, "F16"))
    write("taef2-w1.safetensors", taesd(32, True, "BF16"))
    write("taehv-w1.safetensors", taehv("F32"))
    write("ltx23-w2.safetensors", ltx23("F16"))
    write("minimax-d64.safetensors", minimax("BF16"))
    write("taesd-nan.safetensors", taesd(4, False, "F16"), poke=("3.conv.2.weight", 0, float("nan")))

    # an empty tensor's other dimensions are unbounded by its (zero) bytes
    for name, dims in (("taehv-zero-dim", (2**40, 2**20, 0, 3)), ("taehv-zero-dim-overflow", (2**32, 2**31, 0, 3))):
        write(name + ".safetensors", taehv_frame("F16"), empty=("decoder.3.conv.0.weight", "F16", dims))

    # block numbers far past any decoder's
    write("kl-up-blocks-long-max.safetensors",
          [("decoder.up_blocks.0.resnets.0.norm1.weight", "F16", (1,)),
           ("decoder.up_blocks.9223372036854775807.a", "F16", (1,))])
    write("wan-resnets-long-max.safetensors",
          [("decoder.mid_block.resnets.0.norm1.gamma", "F16", (1,)),
           ("decoder.up_blocks.0.resnets.9223372036854775807.conv1.weight", "F16", (1,))])

    # the other namings' renaming code (refused: far from whole decoders)
    write("kl-diffusers-names.safetensors",
          conv("decoder.conv_in", 32, 4, 3, "F16") + conv("post_quant_conv", 4, 4, 1, "F16") +
          conv("decoder.up_blocks.0.resnets.0.conv1", 32, 32, 1, "F16") +
          [("decoder.up_blocks.0.resnets.0.norm1.weight", "F16", (32,)),
           ("decoder.mid_block.attentions.0.to_q.weight", "F16", (32, 32)),
           ("decoder.conv_norm_out.weight", "F16", (32,))])
    write("wan-diffusers-names.safetensors",
          [("decoder.conv_in.weight", "BF16", (4, 16, 1, 1, 1)), ("decoder.conv_in.bias", "BF16", (4,)),
           ("decoder.mid_block.resnets.0.norm1.gamma", "BF16", (4, 1, 1, 1)),
           ("decoder.up_blocks.0.resnets.1.conv1.weight", "BF16", (4, 4, 1, 1, 1)),
           ("decoder.up_blocks.0.upsamplers.0.resample.1.weight", "BF16", (4, 4, 1, 1))])
    write("wan-orig-names.safetensors",
          [("decoder.middle.0.residual.0.gamma", "F32", (4, 1, 1, 1)),
           ("decoder.conv1.weight", "F32", (4, 16, 1, 1, 1)), ("conv2.weight", "F32", (16, 16, 1, 1, 1))])


if __name__ == "__main__":
    main()

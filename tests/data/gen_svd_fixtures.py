#!/usr/bin/env python3
"""Generate the small, deterministic SVD temporal-decoder fixtures (tests/data/svd_*).

    /tmp/cpu-torch-venv/bin/python tests/data/gen_svd_fixtures.py [--out DIR]

The reference is the UPSTREAM implementation, diffusers' `AutoencoderKLTemporalDecoder`:
`decode(z, num_frames=n).sample` on a clip of 14 latent frames (SVD's length), whole (n = 14) and in
chunks the way diffusers' StableVideoDiffusionPipeline.decode_latents cuts it (`decode_chunk_size`
1 and 4, the last chunk shorter), and its first 5 frames as a clip of their own, fp32 on the CPU.

Random weights (fixed seed), block_out_channels (32, 32) (two levels: 2x upsampling; 32 channels
keep the 32 groups valid) and layers_per_block 2 as upstream (mid block: two SpatioTemporalResBlocks
around the attention; up blocks: three). The GroupNorm affines and the time_mixer mix_factors are
randomized too, so that every blend matters. Weights are rounded to bfloat16 *before* the reference
is computed and stored as BF16, so the decoder under test uses exactly the reference's numbers.

Two files with the same values:
  svd_b2.diffusers.safetensors  diffusers' names (`decoder.mid_block.resnets.N.spatial_res_block.*`,
                                `.temporal_res_block.*`, `.time_mixer.mix_factor`, `decoder.time_conv_out.*`)
  svd_b2.sgm.safetensors        the original Stability-AI/generative-models names (VideoDecoder:
                                `decoder.mid.block_N.{norm1,...,time_stack.in_layers.0,...,mix_factor}`,
                                `decoder.conv_out.time_mix_conv.*`) under `first_stage_model.`, as in
                                svd.safetensors, plus an encoder tensor the loader ignores
  svd_b2.latent                 `latent_tensor` [1, 4, 14, 6, 5] (NCTHW), the VAE's raw latents
  svd_b2.expected.safetensors   `chunk1`, `chunk4`, `whole`: [1, 3, 14, 12, 10] (NCTHW), and `whole5`:
                                [1, 3, 5, 12, 10], the first 5 latent frames as one call; unclamped
"""

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import taesd_torch as tt  # noqa: E402  (safetensors writer)

from diffusers import AutoencoderKLTemporalDecoder  # noqa: E402

BLOCKS = (32, 32)
FRAMES, H, W = 14, 6, 5


def sgm_name(key, levels):
    """diffusers' decoder key -> the original VideoDecoder name (None: not a decoder tensor)."""
    if not key.startswith("decoder."):
        return None
    k = key
    for a, b in ((".spatial_res_block.", "."),
                 (".temporal_res_block.norm1.", ".time_stack.in_layers.0."),
                 (".temporal_res_block.conv1.", ".time_stack.in_layers.2."),
                 (".temporal_res_block.norm2.", ".time_stack.out_layers.0."),
                 (".temporal_res_block.conv2.", ".time_stack.out_layers.3."),
                 (".time_mixer.mix_factor", ".mix_factor"),
                 ("decoder.time_conv_out.", "decoder.conv_out.time_mix_conv."),
                 ("decoder.conv_norm_out.", "decoder.norm_out."),
                 (".conv_shortcut.", ".nin_shortcut.")):
        k = k.replace(a, b)
    attn = {"group_norm": "norm", "to_q": "q", "to_k": "k", "to_v": "v", "to_out.0": "proj_out"}
    if k.startswith("decoder.mid_block.resnets."):
        n, rest = k[len("decoder.mid_block.resnets."):].split(".", 1)
        return f"decoder.mid.block_{int(n) + 1}.{rest}"
    if k.startswith("decoder.mid_block.attentions.0."):
        rest = k[len("decoder.mid_block.attentions.0."):]
        for a, b in attn.items():
            if rest.startswith(a + "."):
                return f"decoder.mid.attn_1.{b}{rest[len(a):]}"
        raise KeyError(key)
    if k.startswith("decoder.up_blocks."):
        i, rest = k[len("decoder.up_blocks."):].split(".", 1)
        level = levels - 1 - int(i)
        if rest.startswith("resnets."):
            return f"decoder.up.{level}.block.{rest[len('resnets.'):]}"
        if rest.startswith("upsamplers.0.conv."):
            return f"decoder.up.{level}.upsample.conv.{rest[len('upsamplers.0.conv.'):]}"
        raise KeyError(key)
    return k


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=HERE)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vae = AutoencoderKLTemporalDecoder(block_out_channels=BLOCKS, layers_per_block=2,
                                       down_block_types=("DownEncoderBlock2D",) * len(BLOCKS)).eval()
    g = torch.Generator().manual_seed(1)
    sd = vae.state_dict()
    for k, v in sd.items():
        if k.endswith("mix_factor"):
            v.copy_(torch.rand(v.shape, generator=g) * 4 - 2)        # sigmoid in (0.12, 0.88)
        elif ".norm" in k or "group_norm" in k or "conv_norm_out" in k:
            base = 1.0 if k.endswith(".weight") else 0.0
            v.copy_(base + (torch.rand(v.shape, generator=g) - 0.5) * 0.6)
        v.copy_(tt.round_to_dtype(v.float(), torch.bfloat16))
    vae.load_state_dict(sd)

    z = torch.randn(FRAMES, 4, H, W, generator=g)
    with torch.no_grad():
        def decode(chunk, frames=FRAMES):  # StableVideoDiffusionPipeline.decode_latents' loop
            return torch.cat([vae.decode(z[i:i + chunk], num_frames=z[i:i + chunk].shape[0]).sample
                              for i in range(0, frames, chunk)])
        outs = {"chunk1": decode(1), "chunk4": decode(4), "whole": decode(FRAMES), "whole5": decode(5, 5)}
    ncthw = {k: v.permute(1, 0, 2, 3).unsqueeze(0).contiguous() for k, v in outs.items()}
    for k, v in ncthw.items():
        print(k, tuple(v.shape), "max |whole - %s| = %.3g" % (k, (v - ncthw["whole"][:, :, :v.shape[2]]).abs().max().item()))

    dec = {k: v.to(torch.bfloat16) for k, v in sd.items() if k.startswith("decoder.")}
    meta = {"generator": "tests/data/gen_svd_fixtures.py"}
    tt.save_safetensors(os.path.join(args.out, "svd_b2.diffusers.safetensors"), dec, meta)
    sgm = {"first_stage_model." + sgm_name(k, len(BLOCKS)): v for k, v in dec.items()}
    sgm["first_stage_model.encoder.conv_in.bias"] = sd["encoder.conv_in.bias"].to(torch.bfloat16)
    tt.save_safetensors(os.path.join(args.out, "svd_b2.sgm.safetensors"), sgm, meta)
    tt.save_safetensors(os.path.join(args.out, "svd_b2.latent"),
                        {"latent_tensor": z.permute(1, 0, 2, 3).unsqueeze(0).contiguous(),
                         "latent_format_version_0": torch.zeros(0)}, meta)
    tt.save_safetensors(os.path.join(args.out, "svd_b2.expected.safetensors"), ncthw, meta)


if __name__ == "__main__":
    main()

"""Reference PyTorch TAESD / TAEF2 decoder and safetensors helpers for the tests.

Written from shared/design/MODELS.md (sections C.1, C.2, D item 6, E); no upstream code is
copied.  Needs only torch and numpy (Debian's /usr/bin/python3 has both).

    import taesd_torch as tt
    sd, meta = tt.load_safetensors("taef2_decoder.safetensors")
    dec = tt.TaesdDecoder(32, midblock_gn=True)
    dec.load_state_dict(tt.to_float32(sd))
    rgb = dec(latent)            # [B,3,8h,8w], NOT clamped (about [0,1])

State-dict keys are the ORIGINAL upstream names (`1.weight`, `3.conv.0.weight`,
`3.pool.1.weight`, `7.weight`, `19.bias`, ...); see `to_diffusers_names` and
`to_comfy_names` for the other two namings.
"""

import json
import os
import re
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = [
    "load_safetensors", "load_safetensors_numpy", "save_safetensors",
    "to_float32", "round_to_dtype",
    "Clamp", "Upsample2x", "Block", "TaesdDecoder",
    "to_diffusers_names", "from_diffusers_names", "to_comfy_names", "from_comfy_names",
]

# --------------------------------------------------------------------------------------------
# safetensors (MODELS.md §E), json + numpy only
# --------------------------------------------------------------------------------------------

# dtype name -> (numpy storage dtype, element size, torch dtype or None)
_ST_DTYPES = {
    "F64": (np.dtype("<f8"), 8, torch.float64),
    "F32": (np.dtype("<f4"), 4, torch.float32),
    "F16": (np.dtype("<f2"), 2, torch.float16),
    "BF16": (np.dtype("<i2"), 2, torch.bfloat16),  # stored as int16 bit patterns
    "I64": (np.dtype("<i8"), 8, torch.int64),
    "I32": (np.dtype("<i4"), 4, torch.int32),
    "I16": (np.dtype("<i2"), 2, torch.int16),
    "I8": (np.dtype("i1"), 1, torch.int8),
    "U8": (np.dtype("u1"), 1, torch.uint8),
    "BOOL": (np.dtype("?"), 1, torch.bool),
}
_TORCH_TO_ST = {v[2]: k for k, v in _ST_DTYPES.items()}
_NUMPY_TO_ST = {
    np.dtype("float64"): "F64", np.dtype("float32"): "F32", np.dtype("float16"): "F16",
    np.dtype("int64"): "I64", np.dtype("int32"): "I32", np.dtype("int16"): "I16",
    np.dtype("int8"): "I8", np.dtype("uint8"): "U8", np.dtype("bool"): "BOOL",
}


def _read_raw(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 8:
        raise ValueError(f"{path}: too short for a safetensors file")
    (n,) = struct.unpack("<Q", data[:8])
    if n > 100_000_000 or 8 + n > len(data):
        raise ValueError(f"{path}: bad header length {n}")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", None) or {}
    buf = memoryview(data)[8 + n:]
    out = {}
    for name, info in header.items():
        st = info["dtype"]
        if st not in _ST_DTYPES:
            raise ValueError(f"{path}: tensor {name}: unsupported dtype {st}")
        npdt, size, _ = _ST_DTYPES[st]
        shape = tuple(int(d) for d in info["shape"])
        b, e = info["data_offsets"]
        numel = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if e - b != numel * size or e > len(buf):
            raise ValueError(f"{path}: tensor {name}: bad data_offsets {b},{e}")
        arr = np.frombuffer(buf[b:e], dtype=npdt).reshape(shape).copy()
        out[name] = (st, arr)
    return out, meta


def load_safetensors(path):
    """Return ({name: torch.Tensor in the file's dtype}, metadata dict). BF16 -> torch.bfloat16."""
    raw, meta = _read_raw(path)
    out = {}
    for name, (st, arr) in raw.items():
        t = torch.from_numpy(arr)
        if st == "BF16":
            t = t.view(torch.bfloat16)
        out[name] = t
    return out, meta


def load_safetensors_numpy(path):
    """Return ({name: np.ndarray}, metadata). F16 stays float16; BF16 is widened to float32."""
    raw, meta = _read_raw(path)
    out = {}
    for name, (st, arr) in raw.items():
        if st == "BF16":
            bits = arr.reshape(-1).view(np.uint16).astype(np.uint32) << 16
            arr = bits.view(np.float32).reshape(arr.shape)
        out[name] = arr
    return out, meta


def _as_st(value):
    """(dtype name, shape, bytes) for a torch tensor or numpy array."""
    if isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        if t.dtype not in _TORCH_TO_ST:
            raise ValueError(f"unsupported torch dtype {t.dtype}")
        st = _TORCH_TO_ST[t.dtype]
        if t.dtype == torch.bfloat16:
            t = t.view(torch.int16)
        arr = t.numpy()
    else:
        arr = np.asarray(value)
        if arr.dtype not in _NUMPY_TO_ST:
            raise ValueError(f"unsupported numpy dtype {arr.dtype}")
        st = _NUMPY_TO_ST[arr.dtype]
    shape = list(arr.shape)  # (np.ascontiguousarray would turn a 0-d array into 1-d)
    raw = arr.astype(arr.dtype.newbyteorder("<"), copy=False).tobytes(order="C")
    return st, shape, raw


def save_safetensors(path, tensors, metadata=None):
    """Write {name: torch.Tensor | np.ndarray} (F32/F16/BF16/...), widest dtype first then name,
    header padded with spaces to a multiple of 8. metadata: {str: str} or None."""
    items = []
    for name, value in tensors.items():
        st, shape, raw = _as_st(value)
        items.append((-_ST_DTYPES[st][1], name, st, shape, raw))
    items.sort(key=lambda x: (x[0], x[1]))
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    off = 0
    for _, name, st, shape, raw in items:
        header[name] = {"dtype": st, "shape": shape, "data_offsets": [off, off + len(raw)]}
        off += len(raw)
    hj = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hj += b" " * ((-len(hj)) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hj)))
        f.write(hj)
        for item in items:
            f.write(item[4])


def to_float32(sd):
    """Copy of a state dict with every floating tensor converted to float32."""
    return {k: (v.float() if v.is_floating_point() else v) for k, v in sd.items()}


def round_to_dtype(t, dtype):
    """Round a float32 tensor through `dtype` (torch.float16 / torch.bfloat16) and back, so the
    float32 value is exactly representable in that dtype."""
    return t.to(dtype).to(torch.float32)


# --------------------------------------------------------------------------------------------
# What the fixture generators (gen_*_fixtures.py) share
# --------------------------------------------------------------------------------------------

def uni(g, shape, bound):
    """Uniform [-bound, bound) in float64 from generator g."""
    return (torch.rand(shape, generator=g, dtype=torch.float64) * 2 - 1) * bound


def fan_in(shape):
    """Inputs per output of a weight of this shape (the product of all but the first dimension)."""
    n = 1
    for d in shape[1:]:
        n *= d
    return n


def round_f16_bf16(t):
    """float32 values exactly representable in both BF16 and F16: BF16 rounding, magnitudes below
    2^-14 (F16's smallest normal) flushed to 0; checked."""
    r = t.float().to(torch.bfloat16).float()
    r[r.abs() < 2.0 ** -14] = 0.0
    assert torch.equal(r.to(torch.float16).float(), r) and torch.equal(r.to(torch.bfloat16).float(), r)
    return r


def describe(y):
    """Shape and statistics of a tensor, for a generator's printout."""
    return (f"{tuple(y.shape)} min {y.min().item():.4f} max {y.max().item():.4f} "
            f"mean {y.mean().item():.4f} std {y.std().item():.4f}")


def latent_file(z, generator, space):
    """The tensors and metadata of a ComfyUI `.latent` file holding z."""
    return ({"latent_tensor": z, "latent_format_version_0": torch.zeros(0)},
            {"generator": generator, "space": space})


def report_written(paths):
    """Print each file written with its size, and the total."""
    total = 0
    for p in paths:
        size = os.path.getsize(p)
        total += size
        print(f"wrote {os.path.relpath(p)} {size} bytes")
    print(f"total {total} bytes in {len(paths)} files")


# --------------------------------------------------------------------------------------------
# Decoder (MODELS.md §C.1, §C.2)
# --------------------------------------------------------------------------------------------

class Clamp(nn.Module):
    """Soft input clamp tanh(x/3)*3 (parameter-free; index 0)."""

    def forward(self, x):
        return torch.tanh(x / 3.0) * 3.0


class Upsample2x(nn.Module):
    """Nearest-neighbour 2x upsampling: out[c,y,x] = in[c,y>>1,x>>1] (parameter-free)."""

    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


def _conv3(cin, cout, bias=True):
    return nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=bias)


class Block(nn.Module):
    """TAESD residual block (n -> n): ReLU(conv(x) + x), conv = conv3,ReLU,conv3,ReLU,conv3.
    With midblock_gn, first x <- x + pool.3(ReLU(GroupNorm(pool.0(x)))) (FLUX.2 variant)."""

    def __init__(self, width, midblock_gn=False, pool_width=256, pool_groups=4):
        super().__init__()
        self.conv = nn.Sequential(
            _conv3(width, width), nn.ReLU(),
            _conv3(width, width), nn.ReLU(),
            _conv3(width, width),
        )
        if midblock_gn:
            self.pool = nn.Sequential(
                nn.Conv2d(width, pool_width, kernel_size=1, bias=False),
                nn.GroupNorm(pool_groups, pool_width, eps=1e-5, affine=True),
                nn.ReLU(),
                nn.Conv2d(pool_width, width, kernel_size=1, bias=False),
            )
        else:
            self.pool = None

    def forward(self, x):
        if self.pool is not None:
            x = x + self.pool(x)
        return F.relu(self.conv(x) + x)


class TaesdDecoder(nn.Sequential):
    """TAESD decoder: latent [B,z,h,w] -> image [B,3,8h,8w] (unclamped, about [0,1]).

    Sequential indices match the original checkpoints (0,2,6,11,16 are parameter-free)."""

    def __init__(self, z, width=64, pool_width=256, pool_groups=4, midblock_gn=False):
        def blk(gn=False):
            return Block(width, midblock_gn=gn, pool_width=pool_width, pool_groups=pool_groups)

        super().__init__(
            Clamp(),                                   # 0
            _conv3(z, width), nn.ReLU(),               # 1, 2
            blk(midblock_gn), blk(midblock_gn), blk(midblock_gn),  # 3, 4, 5
            Upsample2x(), _conv3(width, width, bias=False),        # 6, 7
            blk(), blk(), blk(),                       # 8, 9, 10
            Upsample2x(), _conv3(width, width, bias=False),        # 11, 12
            blk(), blk(), blk(),                       # 13, 14, 15
            Upsample2x(), _conv3(width, width, bias=False),        # 16, 17
            blk(),                                     # 18
            _conv3(width, 3),                          # 19
        )
        self.z = z
        self.width = width
        self.midblock_gn = midblock_gn

    @classmethod
    def from_state_dict(cls, sd):
        """Build a decoder whose shapes fit a state dict in original, diffusers or ComfyUI naming
        (MODELS.md §D item 6) and load it as float32."""
        if any(k.startswith("taesd_decoder.") for k in sd):
            sd = from_comfy_names(sd)
        elif any(k.startswith("decoder.layers.") for k in sd):
            sd = from_diffusers_names(sd)
        sd = to_float32(sd)
        w1 = sd["1.weight"]
        width, z = int(w1.shape[0]), int(w1.shape[1])
        gn = "3.pool.0.weight" in sd
        pw = int(sd["3.pool.0.weight"].shape[0]) if gn else 256
        m = cls(z, width=width, pool_width=pw, midblock_gn=gn)
        m.load_state_dict(sd)
        return m


# --------------------------------------------------------------------------------------------
# Key renaming (MODELS.md §C.1)
# --------------------------------------------------------------------------------------------

_LEAD = re.compile(r"^(\d+)(\..*)$")


def to_diffusers_names(sd):
    """Original `K.rest` -> diffusers `decoder.layers.{K-1}.rest`."""
    out = {}
    for k, v in sd.items():
        m = _LEAD.match(k)
        if not m:
            raise ValueError(f"not an original TAESD decoder key: {k}")
        out[f"decoder.layers.{int(m.group(1)) - 1}{m.group(2)}"] = v
    return out


def from_diffusers_names(sd):
    """diffusers `decoder.layers.{K-1}.rest` -> original `K.rest` (other keys dropped)."""
    out = {}
    for k, v in sd.items():
        if k.startswith("decoder.layers."):
            m = _LEAD.match(k[len("decoder.layers."):])
            out[f"{int(m.group(1)) + 1}{m.group(2)}"] = v
    return out


def to_comfy_names(sd, prefix="taesd_decoder."):
    """Original names -> ComfyUI combined form `taesd_decoder.<orig>`."""
    return {prefix + k: v for k, v in sd.items()}


def from_comfy_names(sd, prefix="taesd_decoder."):
    """ComfyUI combined form -> original names (keys without the prefix are dropped)."""
    return {k[len(prefix):]: v for k, v in sd.items() if k.startswith(prefix)}

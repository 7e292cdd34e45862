#!/usr/bin/env python3
"""Decode latents held in numpy arrays, as a diffusion pipeline in Python has them, with vaedecode.

The latents go into the pipeline through appsrc, one latent frame per buffer, and the decoded
frames come back through appsink as numpy arrays; vaedecode's progress messages are read from
the bus while it runs. `decode()` is the part to reuse: give it the latents of one image batch,
[N, C, h, w] (N images), or of one video, [C, T, h, w] (T latent frames of a causal video
decoder such as Wan 2.1 or TAEHV: latent frame 0 gives one frame, each later one four), and the
model file; it returns the frames as uint8 [frames, H, W, 3].

    pipelines/numpy-decode.py MODEL LATENT OUT.npy [vaedecode PROPERTY=VALUE ...]

reads the latent tensor of a safetensors `.latent` file (ComfyUI's SaveLatent) into numpy,
decodes it and saves the frames with numpy.save. Needs python3-gi, gir1.2-gst-plugins-base-1.0
and python3-numpy (Debian), and the plugin where GStreamer finds it (the build tree is used when
the script runs from a checkout). Run as a script by an interpreter that lacks them (a pyenv or
venv `python3` first on the PATH), it runs itself again under Debian's /usr/bin/python3, which
has them once those packages are installed.
"""

import json
import os
import struct
import sys
import threading

SYSTEM_PYTHON = "/usr/bin/python3"
PACKAGES = "python3-gi python3-numpy gir1.2-gst-plugins-base-1.0"


def _missing_imports():
    """Why numpy or GStreamer's introspection cannot be imported here, or None."""
    try:
        import numpy  # noqa: F401
        import gi

        for ns in ("Gst", "GstApp", "GstVideo"):
            gi.require_version(ns, "1.0")
        from gi.repository import Gst, GstApp, GstVideo  # noqa: F401
    except (ImportError, ValueError) as e:
        return str(e)
    return None


def _use_an_interpreter_that_has_them():
    """As a script: go on here if numpy and gi import, else run again under /usr/bin/python3 (a
    pyenv or venv python3 found first on the PATH has neither), else say what to install."""
    why = _missing_imports()
    if why is None:
        return
    here = os.path.realpath(sys.executable) if sys.executable else ""
    if os.access(SYSTEM_PYTHON, os.X_OK) and os.path.realpath(SYSTEM_PYTHON) != here \
            and not os.environ.get("VAE_NUMPY_DECODE_REEXEC"):
        os.environ["VAE_NUMPY_DECODE_REEXEC"] = "1"  # (once: no loop if that one lacks them too)
        os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + sys.argv[1:])
    sys.exit(f"numpy-decode.py: {why} (interpreter {sys.executable or '?'}).\n"
             f"It needs numpy and GStreamer's Python bindings: on Debian/Ubuntu "
             f"`sudo apt-get install {PACKAGES}`, then run it with {SYSTEM_PYTHON}.")


if __name__ == "__main__":
    _use_an_interpreter_that_has_them()

import numpy as np  # noqa: E402  (after the interpreter check)

import gi  # noqa: E402

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
gi.require_version("GstVideo", "1.0")
from gi.repository import Gst, GstApp, GstVideo  # noqa: E402  (after require_version)

DTYPES = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}


def read_latent(path, name="latent_tensor"):
    """The tensor `name` of a safetensors file as a float32 array (bf16 widened exactly)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        if name not in header:
            raise ValueError(f"{path}: no tensor named {name}")
        t = header[name]
        if t["dtype"] not in DTYPES:
            raise ValueError(f"{path}: {name} is {t['dtype']}, not F32, F16 or BF16")
        begin, end = t["data_offsets"]
        f.seek(8 + n + begin)
        raw = np.frombuffer(f.read(end - begin), dtype=DTYPES[t["dtype"]]).reshape(t["shape"])
    if t["dtype"] == "BF16":
        return (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float32)


def decode(latents, model, video=False, fps=(16, 1), properties=()):
    """Frames [frames, H, W, 3] (uint8 RGB) of `latents`: [N, C, h, w], or [C, T, h, w] if video."""
    Gst.init(None)
    latents = np.ascontiguousarray(latents, dtype=np.float32)
    frames_in = latents.transpose(1, 0, 2, 3) if video else latents  # [T or N, C, h, w]
    _, c, h, w = frames_in.shape
    pipeline = Gst.parse_launch(
        "appsrc name=src format=time is-live=false block=true max-bytes=0 ! "
        f"vaedecode {' '.join(properties)} name=dec ! video/x-raw,format=RGB ! "
        "appsink name=sink sync=false"
    )
    dec = pipeline.get_by_name("dec")
    dec.set_property("model-file", model)
    src = pipeline.get_by_name("src")
    src.set_property("max-buffers", 2)  # (bounded: the feeder waits for the decoder)
    src.set_caps(Gst.Caps.from_string(
        f"video/x-latent,type=float32,channels={c},width={w},height={h},framerate={fps[0]}/{fps[1]}"))
    sink = pipeline.get_by_name("sink")
    frame_ns = Gst.util_uint64_scale_int(Gst.SECOND, fps[1], fps[0])

    def feed():
        t = 0
        for i, lat in enumerate(frames_in):
            n = 4 if video and i > 0 else 1  # frames this latent frame decodes to
            buf = Gst.Buffer.new_wrapped(lat.tobytes())
            buf.pts, buf.duration = t * frame_ns, n * frame_ns
            t += n
            if src.emit("push-buffer", buf) != Gst.FlowReturn.OK:
                return
        src.emit("end-of-stream")

    feeder = threading.Thread(target=feed)
    bus = pipeline.get_bus()
    out = []
    pipeline.set_state(Gst.State.PLAYING)
    feeder.start()
    try:
        while True:
            msg = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.WARNING | Gst.MessageType.ELEMENT)
            while msg:
                if msg.type == Gst.MessageType.ERROR:
                    err, dbg = msg.parse_error()
                    raise RuntimeError(f"{msg.src.get_name()}: {err.message} ({dbg})")
                if msg.type == Gst.MessageType.WARNING:
                    print(f"warning: {msg.parse_warning()[0].message}", file=sys.stderr)
                elif msg.get_structure().get_name() == "vaedecode-progress":
                    s = msg.get_structure()
                    print(f"progress: {s.get_value('frames')} frames decoded", file=sys.stderr)
                msg = bus.pop_filtered(Gst.MessageType.ERROR | Gst.MessageType.WARNING | Gst.MessageType.ELEMENT)
            sample = sink.try_pull_sample(Gst.SECOND // 10)
            if sample is None:
                if sink.is_eos():
                    break
                continue
            info = GstVideo.VideoInfo.new_from_caps(sample.get_caps())
            buf = sample.get_buffer()
            ok, m = buf.map(Gst.MapFlags.READ)
            stride = info.stride[0]
            rows = np.frombuffer(m.data, dtype=np.uint8, count=stride * info.height).reshape(info.height, stride)
            out.append(rows[:, : info.width * 3].reshape(info.height, info.width, 3).copy())
            buf.unmap(m)
    finally:
        src.emit("end-of-stream")
        pipeline.set_state(Gst.State.NULL)
        feeder.join()
    return np.stack(out)


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    model, path, dest = argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    build = os.path.normpath(os.path.join(here, "..", "build", "gst"))  # (logical: a symlinked checkout)
    if os.path.isdir(build):
        os.environ["GST_PLUGIN_PATH"] = build + os.pathsep + os.environ.get("GST_PLUGIN_PATH", "")
    lat = read_latent(path)
    if lat.ndim == 5:  # [B, C, T, h, w]: the first video
        frames = decode(lat[0], model, video=True, properties=argv[4:])
    else:
        frames = decode(lat, model, properties=argv[4:])
    np.save(dest, frames)
    print(f"wrote {frames.shape[0]} frames of {frames.shape[2]}x{frames.shape[1]} to {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

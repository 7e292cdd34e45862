#!/usr/bin/python3
"""The Python and network examples of pipelines/, run as a user runs them, against the plain
local pipeline `filesrc ! latentparse ! vaedecode`: pipelines/numpy-decode.py (appsrc from numpy,
appsink to numpy) must give the same RGB bytes, frame for frame, and pipelines/network-decode.sh
(RTP over TCP on loopback) the same PNG files. Cases: the real TAEF2 decoder on the shared
latents (images) and the TAEHV fixture (a causal video: 4 latent frames, 13 frames)."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile

import numpy as np

src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
shared = os.environ.get("VAE_SHARED_DIR", os.path.join(src, "..", "shared"))
data = os.environ.get("VAE_TEST_DATA", os.path.join(src, "tests", "data"))
failed = 0
# a registry of this run's own (as test-launch.sh): none that an earlier build left behind
registry_dir = tempfile.TemporaryDirectory()
os.environ["GST_REGISTRY_1_0"] = os.path.join(registry_dir.name, "registry.bin")


def check(ok, what):
    global failed
    print(("ok: " if ok else "FAIL: ") + what)
    failed += not ok


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)
    if r.returncode != 0:
        print(f"{' '.join(cmd)}: exit {r.returncode}\n{r.stdout}{r.stderr}")
    return r.returncode == 0


def local_frames(model, latent, props, tmp):
    """[frames, H, W, 3] of filesrc ! latentparse ! vaedecode as RGB bytes; and its PNG files, made
    as network-decode.sh makes them (vaedecode's own format, videoconvert, pngenc)"""
    raw = os.path.join(tmp, "local.rgb")
    head = ["gst-launch-1.0", "-q", "filesrc", f"location={latent}", "!", "latentparse", "!", "vaedecode",
            f"model-file={model}", *props, "!"]
    ok = run(head + ["video/x-raw,format=RGB", "!", "filesink", f"location={raw}"]) and \
        run(head + ["videoconvert", "!", "pngenc", "!", "multifilesink", f"location={tmp}/local-%02d.png"])
    return np.fromfile(raw, dtype=np.uint8) if ok else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def describe_python(exe):
    """what the PATH's python3 is: its real path and whether numpy and gi import there"""
    r = subprocess.run([exe, "-c", "import sys; print(sys.executable)\ntry:\n import numpy, gi\n print('has numpy and gi')"
                        "\nexcept ImportError as e:\n print('lacks', e.name)"], capture_output=True, text=True, timeout=60)
    return " ".join(r.stdout.split())


def case(name, model, latent, props, n_frames, W, H, path_python=None):
    with tempfile.TemporaryDirectory() as tmp:
        ref = local_frames(model, latent, props, tmp)
        check(ref is not None and ref.size == n_frames * H * W * 3,
              f"{name}: the local pipeline gives {n_frames} frames of {W}x{H}")
        if ref is None or ref.size != n_frames * H * W * 3:
            return
        ref = ref.reshape(n_frames, H, W, 3)
        check(float(ref.std()) > 5, f"{name}: the frames are not flat (std {ref.std():.1f})")

        # numpy-decode.py under this interpreter, and under the python3 first on the PATH
        for python, what in [(sys.executable, "numpy-decode.py"),
                             (path_python, f"python3 pipelines/numpy-decode.py (python3 = {path_python})")]:
            if not python:
                continue
            out = os.path.join(tmp, "np.npy")
            if run([python, os.path.join(src, "pipelines", "numpy-decode.py"), model, latent, out, *props]):
                got = np.load(out)
                same = got.shape == ref.shape and np.array_equal(got, ref)
                check(same, f"{what} {name}: {got.shape}, "
                      f"{'the same bytes' if same else 'NOT the bytes'} of the local pipeline")
            else:
                check(False, f"{what} {name} ran")

        net = os.path.join(tmp, "net")
        if run([os.path.join(src, "pipelines", "network-decode.sh"), model, latent, net, str(free_port()), *props]):
            pngs = sorted(os.listdir(net))
            same = len(pngs) == n_frames and all(
                open(os.path.join(net, p), "rb").read() == open(os.path.join(tmp, f"local-{i:02d}.png"), "rb").read()
                for i, p in enumerate(pngs))
            check(same, f"network-decode.sh {name}: {len(pngs)} PNG files, "
                  f"{'the same as' if same else 'NOT the same as'} the local pipeline's")
        else:
            check(False, f"network-decode.sh {name} ran")


# the python3 a user's shell finds (here it may be pyenv's, without numpy or gi)
path_python = shutil.which("python3")
if path_python:
    print(f"python3 on the PATH: {path_python} ({describe_python(path_python)})")
case("taef2 (real weights, 2 images)", os.path.join(shared, "models", "taef2_decoder.safetensors"),
     os.path.join(shared, "reference", "taef2", "small.latent"), [], 2, 192, 128, path_python)
case("taehv (Wan 2.1 fixture, 4 latent frames)", os.path.join(data, "taew21_nf32.safetensors"),
     os.path.join(data, "taew21_nf32.latent"), [], 13, 56, 40)
print(f"{failed} failed")
sys.exit(1 if failed else 0)

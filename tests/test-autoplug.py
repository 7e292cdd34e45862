#!/usr/bin/python3
"""Latent files in the autopluggers, as an application sees them (Debian's python3-gi): playbin,
uridecodebin, decodebin (filesrc ! decodebin, and behind a queue: latentparse in push mode) and
playbin3 (parsebin) read from their bus, gst-discoverer-1.0 run as a user runs it, with the decoder
chosen from GST_VAE_MODEL_PATH.

- Nothing hangs: a file that ends before its first whole frame ends in an ERROR within a second
  (it used to leave playbin PREROLLING for ever: latentparse pushed its caps before it found the
  frame missing, so decodebin exposed a pad that never got data, and dropped the error), and
  200 playbin PLAYING -> NULL cycles finish (latentparse read its header and pushed its caps in
  its state change, so that the streaming thread waited for playbin's lock, held by the
  application's state change, which waited for latentparse's state lock).
- A refusal reaches the application as the top-level error text, not "Your GStreamer installation
  is missing a plug-in." with the reason in the debug details: latentparse's (a header it cannot
  use), vaedecode's (a model path whose files were all refused, and why).
- The model path's policy: a file is taken only where its real path is inside a model directory
  (a link to one outside is refused), and a workflow's vae-name is refused only where `..` is
  one of its path components.
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get('VAE_SHARED_DIR', os.path.join(SRC, '..', 'shared'))
DATA = os.environ.get('VAE_TEST_DATA', os.path.join(SRC, 'tests', 'data'))
FULL = os.path.join(SHARED, 'reference', 'taef2', 'full.latent')
MODELS = os.path.join(SHARED, 'models')
DECODER = os.path.join(MODELS, 'taef2_decoder.safetensors')

CYCLES = len(sys.argv) == 3 and sys.argv[1] == '--cycles'
if not CYCLES:
    TMP = tempfile.mkdtemp(prefix='test-autoplug-')
    # a registry of this run's own (the plugin path is the build tree's: tests/meson.build),
    # which the child process of test_cycles shares
    os.environ['GST_REGISTRY_1_0'] = os.path.join(TMP, 'registry.bin')

import gi  # noqa: E402

gi.require_version('Gst', '1.0')
from gi.repository import Gst  # noqa: E402

MISSING = 'missing a plug-in'
passed = failed = 0


def ok(name):
    global passed
    passed += 1
    print('ok:', name, flush=True)


def bad(name, why):
    global failed
    failed += 1
    print('FAIL: %s: %s' % (name, why), flush=True)


def safetensors(path, tensors, metadata=None, data=None):
    """a safetensors file: tensors maps a name to (dtype, shape, nbytes); zero data unless given"""
    hdr, off = {}, 0
    for name, (dtype, shape, nbytes) in tensors.items():
        hdr[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [off, off + nbytes]}
        off += nbytes
    if metadata:
        hdr['__metadata__'] = metadata
    h = json.dumps(hdr).encode()
    h += b' ' * (-len(h) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h)
        f.write(data if data is not None else bytes(off))
    return path


def comfy_latent(path, vae_name):
    """the shared TAEF2 latents in a ComfyUI SaveLatent file whose workflow loaded VAE vae_name"""
    with open(FULL, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        hdr = json.loads(f.read(n))
        body = f.read()
    prompt = {'3': {'inputs': {'seed': 1}, 'class_type': 'KSampler'},
              '8': {'inputs': {'vae_name': vae_name}, 'class_type': 'VAELoader'},
              '9': {'inputs': {'samples': ['3', 0]}, 'class_type': 'SaveLatent'}}
    t = hdr['latent_tensor']
    return safetensors(path, {'latent_tensor': (t['dtype'], t['shape'], len(body))},
                       {'prompt': json.dumps(prompt)}, body)


def model_dir(name, files=(), links=()):
    """a model directory: files copied in (name, source), links made (name, target)"""
    d = os.path.join(TMP, name)
    os.makedirs(d)
    for f, src in files:
        os.makedirs(os.path.dirname(os.path.join(d, f)), exist_ok=True)
        shutil.copy(src, os.path.join(d, f))
    for f, target in links:
        os.symlink(target, os.path.join(d, f))
    return d


class Outcome:
    """what an autoplugging bin posted until it prerolled, failed or timed out"""

    def __init__(self):
        self.kind = 'timeout'       # 'preroll', 'error' or 'timeout'
        self.error = self.debug = ''
        self.warnings = []
        self.model = None           # the file of vaedecode's vaedecode-model message
        self.seconds = 0.0

    def __str__(self):
        return '%s after %.2f s: %s%s' % (self.kind, self.seconds, self.error,
                                          ' (%s)' % self.debug.replace('\n', ' | ') if self.debug else '')


def run(pipeline, timeout=10.0):
    """set to PAUSED and read the bus until ASYNC_DONE (of the pipeline), ERROR or timeout"""
    out = Outcome()
    bus = pipeline.get_bus()
    t0 = time.monotonic()
    # a state change that never returns (a deadlock) ends the test
    watchdog = threading.Timer(timeout + 30, hung, [pipeline.get_name()])
    watchdog.start()
    pipeline.set_state(Gst.State.PAUSED)
    while True:
        left = timeout - (time.monotonic() - t0)
        msg = bus.timed_pop(int(max(left, 0) * Gst.SECOND)) if left > 0 else None
        if msg is None:
            break
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            out.kind, out.error, out.debug = 'error', err.message, dbg or ''
            break
        if msg.type == Gst.MessageType.WARNING:
            out.warnings.append(msg.parse_warning()[0].message)
        elif msg.type == Gst.MessageType.ELEMENT and msg.get_structure().get_name() == 'vaedecode-model':
            out.model = msg.get_structure().get_string('file')
        elif msg.type == Gst.MessageType.ASYNC_DONE and msg.src == pipeline:
            out.kind = 'preroll'
            break
    out.seconds = time.monotonic() - t0
    pipeline.set_state(Gst.State.NULL)
    watchdog.cancel()
    return out


def hung(name):
    bad(name, 'a state change hung (deadlock)')
    print('%d passed, %d failed' % (passed, failed), flush=True)
    shutil.rmtree(TMP, ignore_errors=True)
    os._exit(1)


def playbin(path, factory='playbin'):
    p = Gst.ElementFactory.make(factory)
    p.set_property('uri', Gst.filename_to_uri(path))
    p.set_property('video-sink', Gst.ElementFactory.make('fakesink'))
    p.set_property('audio-sink', Gst.ElementFactory.make('fakesink'))
    return p


def autopluggers(path):
    """playbin, uridecodebin, filesrc ! decodebin (latentparse in pull mode), filesrc ! queue !
    decodebin (in push mode) and playbin3 (parsebin) on the file"""
    uri = Gst.filename_to_uri(path)
    return [('playbin', playbin(path)),
            ('uridecodebin', Gst.parse_launch('uridecodebin uri=%s ! fakesink' % uri)),
            ('decodebin', Gst.parse_launch('filesrc location="%s" ! decodebin ! fakesink' % path)),
            ('decodebin in push mode',
             Gst.parse_launch('filesrc location="%s" ! queue ! decodebin ! fakesink' % path)),
            ('playbin3', playbin(path, 'playbin3'))]


def discoverer(path, timeout=30):
    """gst-discoverer-1.0's output and seconds"""
    t0 = time.monotonic()
    try:
        r = subprocess.run(['gst-discoverer-1.0', path], capture_output=True, text=True,
                           timeout=timeout)
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        out = 'killed after %d s' % timeout
    return out, time.monotonic() - t0


def expect_error(name, path, needle, limit=1.0, discover=True):
    """every autoplugger ends in an ERROR whose top-level text holds needle, within limit s;
    gst-discoverer-1.0 names it"""
    for bin_name, p in autopluggers(path):
        o = run(p)
        if o.kind != 'error':
            bad('%s, %s' % (name, bin_name), 'no error: %s' % o)
        elif needle not in o.error:
            bad('%s, %s' % (name, bin_name), "the error's text does not hold '%s': %s" % (needle, o))
        elif o.seconds > limit:
            bad('%s, %s' % (name, bin_name), 'the error came after %.2f s' % o.seconds)
        else:
            ok('%s, %s: %s' % (name, bin_name, o.error))
    if not discover:
        return
    out, seconds = discoverer(path)
    if needle in out and MISSING not in out and seconds < 5:
        ok('%s, gst-discoverer-1.0 (%.2f s)' % (name, seconds))
    else:
        bad('%s, gst-discoverer-1.0' % name, 'after %.2f s, no %s in:\n%s' % (seconds, needle, out))


# ---- 1. a file cut before its first whole frame ----------------------------------------------

def test_cut():
    os.environ['GST_VAE_MODEL_PATH'] = MODELS
    with open(FULL, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        f.seek(0)
        cut = f.read(8 + n + 4096)
    path = os.path.join(TMP, 'cut.latent')
    with open(path, 'wb') as f:
        f.write(cut)
    expect_error('a file cut before its first frame', path,
                 "Truncated latent file: tensor 'latent_tensor' needs 1597440 bytes but the "
                 "stream ended after 4096 of them, before its first frame")


# ---- 2. playbin PLAYING -> NULL in a loop ------------------------------------------------------

def cycles(n):
    """(run in a child process) n playbin PLAYING -> NULL cycles: NULL after 0 to 16 ms, or
    once PLAYING (every twentieth cycle: the first frame decoded, the second being decoded)"""
    playing = 0
    for i in range(n):
        p = playbin(FULL)
        p.set_state(Gst.State.PLAYING)
        delay = (i % 9) * 0.002
        if i % 20 == 19:
            ret, state, _ = p.get_state(10 * Gst.SECOND)
            playing += state == Gst.State.PLAYING
        elif i % 3 == 0:
            p.get_state(int(delay * Gst.SECOND) + 1)
        else:
            time.sleep(delay)
        p.set_state(Gst.State.NULL)
    print('cycles done, %d of %d waited for PLAYING reached it' % (playing, n // 20), flush=True)


def test_cycles():
    os.environ['GST_VAE_MODEL_PATH'] = MODELS
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, __file__, '--cycles', '200'], capture_output=True,
                           text=True, timeout=150)
        out = r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        out = 'hung: killed after 150 s'
    if 'cycles done, 10 of 10' in out:
        ok('200 playbin PLAYING -> NULL cycles with a model path (%.1f s): %s'
           % (time.monotonic() - t0, out.strip()))
    else:
        bad('200 playbin PLAYING -> NULL cycles with a model path', out[-2000:])


# ---- 3. refusals as the top-level error ----------------------------------------------------------

def test_refused_latents():
    os.environ['GST_VAE_MODEL_PATH'] = MODELS
    cases = [
        ('a zero width', 'F32', [1, 4, 8, 0], "Latent tensor 'latent_tensor' is empty (a dimension is 0)"),
        ('a width of 65536', 'F32', [1, 1, 1, 65536], "has an absurd size: 1 channels of 65536x1"),
        ('a 1-D tensor', 'F32', [16], "Latent tensor 'latent_tensor' has 1 dimensions; expected"),
        ('a 6-D tensor', 'F32', [1, 1, 1, 1, 2, 2], "Latent tensor 'latent_tensor' has 6 dimensions"),
        ('I64 latents', 'I64', [1, 4, 8, 8], "Latent tensor 'latent_tensor' is I64; latents must be"),
    ]
    for name, dtype, shape, needle in cases:
        numel = 1
        for n in shape:
            numel *= n
        nbytes = (8 if dtype == 'I64' else 4) * numel
        path = safetensors(os.path.join(TMP, name.replace(' ', '_') + '.latent'),
                           {'latent_tensor': (dtype, shape, nbytes)})
        expect_error(name, path, needle)


def malicious_pth(path):
    """a torch archive whose pickle calls posix.system (as tests/test-pth.c builds them)"""
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_STORED) as z:
        z.writestr('arch/data.pkl', b'\x80\x02cposix\nsystem\nX\x02\x00\x00\x00ls\x85R.')
        z.writestr('arch/byteorder', b'little')
        z.writestr('arch/data/0', struct.pack('<2f', 1.5, -2.0))
    return path


def test_refused_models():
    d = model_dir('evil')
    malicious_pth(os.path.join(d, 'x.pth'))
    os.environ['GST_VAE_MODEL_PATH'] = d
    expect_error('a model path whose only file is a malicious .pth', FULL,
                 "which holds no decoder: %s/x.pth was refused: arch/data.pkl, byte 24: global "
                 "'posix.system' is refused" % d)

    d = model_dir('cut')
    with open(DECODER, 'rb') as f:
        half = f.read(os.path.getsize(DECODER) // 2)
    with open(os.path.join(d, 'half.safetensors'), 'wb') as f:
        f.write(half)
    os.environ['GST_VAE_MODEL_PATH'] = d
    expect_error('a model path whose only file is a truncated safetensors', FULL,
                 'which holds no decoder: %s/half.safetensors was refused: truncated: ' % d)

    os.environ.pop('GST_VAE_MODEL_PATH')
    expect_error('no model path', FULL, 'No model file: set the model-file property')


# ---- 4. the model path's policy ------------------------------------------------------------

def test_policy():
    outside = model_dir('outside', [('taef2_decoder.safetensors', DECODER)])

    # a link to a decoder outside the model path is refused, a link inside it is taken
    d = model_dir('link-out', links=[('evil.safetensors', os.path.join(outside, 'taef2_decoder.safetensors'))])
    os.environ['GST_VAE_MODEL_PATH'] = d
    o = run(playbin(FULL))
    needle = '%s/evil.safetensors was refused: it resolves to %s/taef2_decoder.safetensors, outside the model path' % (d, outside)
    if o.kind == 'error' and needle in o.error:
        ok('a link out of the model path is refused')
    else:
        bad('a link out of the model path is refused', o)

    d = model_dir('link-in', [('sub/taef2_decoder.safetensors', DECODER)],
                  links=[('taef2.safetensors', 'sub/taef2_decoder.safetensors')])
    os.environ['GST_VAE_MODEL_PATH'] = d
    o = run(playbin(FULL))
    if o.kind == 'preroll' and o.model == os.path.join(d, 'taef2.safetensors'):
        ok('a link inside the model path is taken')
    else:
        bad('a link inside the model path is taken', '%s, model %s' % (o, o.model))

    # a workflow's vae-name that is such a link: refused, the latents' channels choose
    d = model_dir('named-out', [('taef2.safetensors', DECODER)],
                  links=[('evil.safetensors', os.path.join(outside, 'taef2_decoder.safetensors'))])
    os.environ['GST_VAE_MODEL_PATH'] = d
    o = run(playbin(comfy_latent(os.path.join(TMP, 'named-out.latent'), 'evil.safetensors')))
    if o.kind == 'preroll' and o.model == os.path.join(d, 'taef2.safetensors') and any(
            'resolves to %s/taef2_decoder.safetensors, outside the model path' % outside in w
            for w in o.warnings):
        ok("a vae-name that links out of the model path is refused")
    else:
        bad("a vae-name that links out of the model path is refused",
            '%s, model %s, warnings %s' % (o, o.model, o.warnings))

    # a link in one model directory to a file in another
    d2 = model_dir('link-across', links=[('across.safetensors', os.path.join(outside, 'taef2_decoder.safetensors'))])
    os.environ['GST_VAE_MODEL_PATH'] = d2 + ':' + model_dir('empty')
    o = run(playbin(FULL))
    os.environ['GST_VAE_MODEL_PATH'] = d2 + ':' + outside
    o2 = run(playbin(FULL))
    if o.kind == 'error' and 'outside the model path' in o.error and o2.kind == 'error' \
            and '2 decoders' in o2.error:
        ok('a link to another model directory is taken')
    else:
        bad('a link to another model directory is taken', '%s; %s' % (o, o2))

    # the workflow's vae-name: `..` refused as a path component only
    d = model_dir('named', [('taef2..decoder.safetensors', DECODER), ('other.safetensors', DECODER),
                            ('sub/x.safetensors', DECODER)])
    os.environ['GST_VAE_MODEL_PATH'] = d
    shutil.copy(DECODER, os.path.join(TMP, 'x.safetensors'))
    for vae_name, chosen in [('taef2..decoder.safetensors', 'taef2..decoder.safetensors'),
                             ('sub/x.safetensors', 'sub/x.safetensors'),
                             ('../x.safetensors', None), ('sub/../../x.safetensors', None),
                             ('..', None), ('/etc/passwd', None)]:
        o = run(playbin(comfy_latent(os.path.join(TMP, 'named.latent'), vae_name)))
        name = "vae-name '%s' %s" % (vae_name, 'taken' if chosen else 'refused')
        if chosen and o.kind == 'preroll' and o.model == os.path.join(d, chosen):
            ok(name)
        elif not chosen and o.kind == 'error' and '2 decoders' in o.error and \
                "is not a file name in the model path" in o.error:
            ok(name)
        else:
            bad(name, '%s, model %s' % (o, o.model))


def test_images_for_video():
    """image latents ([B, 16, H, W], Qwen-Image's kind) from a model path that holds only a Wan 2.1
    VAE: decoded by it (one-frame clips), not refused for want of an image decoder; beside a
    16-channel image decoder, the image decoder"""
    lat = safetensors(os.path.join(TMP, 'images16.latent'),
                      {'latent_tensor': ('F32', [2, 16, 5, 7], 2 * 16 * 5 * 7 * 4)})
    wan = os.path.join(DATA, 'wan21_b4.orig.safetensors')
    img = os.path.join(DATA, 'taesd_z16_w16.comfy.safetensors')
    for name, files, want in [('only a Wan VAE', [('wan_2.1_vae.safetensors', wan)], 'wan_2.1_vae'),
                              ('a Wan VAE and an image decoder', [('wan_2.1_vae.safetensors', wan),
                                                                  ('taef1_decoder.safetensors', img)],
                               'taef1_decoder')]:
        os.environ['GST_VAE_MODEL_PATH'] = model_dir('images-' + want + str(len(files)), files)
        o = run(playbin(lat))
        if o.kind == 'preroll' and o.model and want in o.model:
            ok('image latents, %s: %s' % (name, os.path.basename(o.model)))
        else:
            bad('image latents, %s' % name, '%s, model %s' % (o, o.model))


def main():
    if CYCLES:
        Gst.init(None)
        cycles(int(sys.argv[2]))
        return 0
    Gst.init(None)
    only = sys.argv[1:]
    try:
        for t in [test_cut, test_refused_latents, test_refused_models, test_policy, test_images_for_video,
                  test_cycles]:
            if not only or t.__name__ in only:
                t()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

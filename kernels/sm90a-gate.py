#!/usr/bin/env python3
# The sm_90a gate of the Hopper conv tiles (vae-gpu-conv.cu), beside the resource gate of the CUDA
# build (kernels/meson.build): compiles the conv kernels for sm_90a alone with ptxas's report and
# fails the build where ptxas had to serialize a wgmma or inject a warpgroup wait or arrive (its
# advisories C7515-C7519, which are "info", not warnings: the kernel stays correct and loses the
# overlap it exists for), or spilled; then, where the toolkit has cuobjdump, checks that each
# Hopper kernel's SASS holds HGMMA (the wgmma itself) and UTMALDG (its TMA copies).
# Usage: sm90a-gate.py NVCC ARGS... -o OUTPUT.cubin (the nvcc command line, run as given)
import os
import re
import shutil
import subprocess
import sys


def main():
    cmd = sys.argv[1:]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    report = p.stdout
    if p.returncode:
        sys.stdout.write(report)
        return p.returncode
    bad = [line for line in report.splitlines() if re.search(r'\(C75\d\d\)', line) or 'serialized' in line]
    if bad:
        sys.exit('sm90a-gate.py: ptxas serialized the Hopper conv\'s wgmma or waited for it:\n  ' + '\n  '.join(bad))
    out = cmd[cmd.index('-o') + 1]
    cuobjdump = shutil.which('cuobjdump', path=os.path.dirname(os.path.realpath(cmd[0])))
    if not cuobjdump:
        print('sm90a-gate.py: no cuobjdump beside nvcc: the SASS is not checked (ptxas\'s report is)')
        return 0
    sass = subprocess.run([cuobjdump, '-sass', out], stdout=subprocess.PIPE, text=True, check=True).stdout
    kernels = re.split(r'\n\s*Function : ', sass)
    hopper = [k for k in kernels if k.startswith('_Z21vae_gpu_conv90_kernel')]
    missing = [k.split('\n', 1)[0] for k in hopper if 'HGMMA' not in k or 'UTMALDG' not in k]
    if not hopper or missing:
        sys.exit('sm90a-gate.py: no HGMMA or UTMALDG in the SASS of: ' + (', '.join(missing) or 'any Hopper kernel'))
    print(f'sm90a-gate.py: {len(hopper)} Hopper conv kernels, HGMMA and UTMALDG in each')
    return 0


if __name__ == '__main__':
    sys.exit(main())

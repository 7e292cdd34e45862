#!/usr/bin/env python3
# Compiles one kernel source as HIP and holds it to the resource gate, the HIP twin of the ptxas
# flags of the CUDA build (kernels/meson.build): a kernel that spills registers or uses scratch
# (private segment) on any target fails the build, named with the target. A spill is a slowdown
# that no test would see, and no AMD GPU runs our tests.
# Usage: hip-compile.py CLANG ARGS... -o OUTPUT (the clang command line, run as given; the code
# object of every target in OUTPUT's fat binary is then read with the LLVM tools beside CLANG).
import os
import re
import subprocess
import sys
import tempfile


def tool(clang, name):
    path = os.path.join(os.path.dirname(os.path.realpath(clang)), name)
    if not os.access(path, os.X_OK):
        sys.exit(f'hip-compile.py: no {name} beside {clang} (LLVM\'s tools come with its clang)')
    return path


def main():
    cmd = sys.argv[1:]
    rc = subprocess.call(cmd)
    if rc:
        return rc
    clang, out = cmd[0], cmd[cmd.index('-o') + 1]
    bundler, objcopy, readelf = (tool(clang, n) for n in ('clang-offload-bundler', 'llvm-objcopy', 'llvm-readelf'))
    bad = []
    with tempfile.TemporaryDirectory() as tmp:
        fatbin = os.path.join(tmp, 'fatbin')
        subprocess.check_call([objcopy, '--dump-section=.hip_fatbin=' + fatbin, out, os.path.join(tmp, 'host.o')])
        targets = subprocess.check_output([bundler, '--list', '--type=o', '--input=' + fatbin], text=True).split()
        for t in (t for t in targets if t.startswith('hip')):
            code = os.path.join(tmp, 'code.o')
            subprocess.check_call([bundler, '--unbundle', '--type=o', '--targets=' + t, '--input=' + fatbin,
                                   '--output=' + code])
            notes = subprocess.check_output([readelf, '--notes', code], text=True)
            # the metadata (YAML): a kernel per item of amdhsa.kernels ('  - '), its fields indented by 4
            for kernel in re.split(r'\n  - \.', notes)[1:]:
                name = re.search(r'^    \.name:\s+(\S+)', kernel, re.M)
                fields = dict(re.findall(r'^    \.(private_segment_fixed_size|[sv]gpr_spill_count):\s+(\d+)', kernel,
                                         re.M))
                if name and any(int(v) for v in fields.values()):
                    bad.append(f'{t.split("--")[-1]}: {name.group(1)}: ' +
                               ', '.join(f'{k} {v}' for k, v in sorted(fields.items())))
    if bad:
        os.remove(out)
        sys.stderr.write(f'resource gate: {out}: kernels spill registers or use scratch\n  ' + '\n  '.join(bad) + '\n')
        return 1
    return 0


sys.exit(main())

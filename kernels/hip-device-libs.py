#!/usr/bin/env python3
# The device libraries the HIP build links (docs/gpu.md, "HIP backend"): a folder of links to the
# installed ones, plus the ISA-version file of every target they lack. Debian 12's
# rocm-device-libs (ROCm 5.2) stop at gfx940/gfx1036, and clang links oclc_isa_version_<target>.bc
# for each --offload-arch; that file holds one constant, the target's version as
# major * 1000 + minor * 100 + stepping (gfx1151: 11051), which is what these are made of.
# usage: hip-device-libs.py CLANG SRC_DIR OUT_DIR ARCH...

import os
import subprocess
import sys


def isa_version(arch):
    digits = arch[len('gfx'):]   # gfx90a -> 9, 0, 10; gfx1151 -> 11, 5, 1
    return int(digits[:-2]) * 1000 + int(digits[-2], 16) * 100 + int(digits[-1], 16)


def main():
    clang, src, out, archs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(src):
        if name.endswith('.bc'):
            link = os.path.join(out, name)
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(os.path.join(src, name), link)
    for arch in archs:
        bc = os.path.join(out, 'oclc_isa_version_%s.bc' % arch[len('gfx'):])
        if os.path.exists(bc):
            continue
        ll = bc[:-3] + '.ll'
        with open(ll, 'w') as f:
            f.write('target triple = "amdgcn-amd-amdhsa"\n'
                    '@__oclc_ISA_version = linkonce_odr protected local_unnamed_addr addrspace(4) '
                    'constant i32 %d, align 4\n' % isa_version(arch))
        subprocess.run([clang, '--target=amdgcn-amd-amdhsa', '-nogpulib', '-x', 'ir', '-c', '-emit-llvm', '-O0',
                        ll, '-o', bc], check=True)
        os.remove(ll)


if __name__ == '__main__':
    main()

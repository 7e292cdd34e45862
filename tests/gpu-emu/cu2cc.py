#!/usr/bin/env python3
# Rewrites a kernel source (kernels/*.cu) for the host C++ compiler, line for line, changing only
# the two spellings that no header can reach (tests/gpu-emu/README.md):
#   k<<<grid, block, smem, s>>>(args)  ->  k ->* vae_emu_config("k", ..., strided, grid, ...) ->* vae_emu_args(args)
#                                          (strided: grid is vae_gpu_blocks(...), a grid-stride loop's)
#   extern __shared__ T name[];        ->  #define name ((T *) vae_emu_dyn_smem("name"))
#   __shared__ T a[N][M], b[K];        ->  references into the block's checked shared memory
# Usage: cu2cc.py in.cu out.cc
import re
import sys

SHARED = re.compile(r'^(\s*)(extern\s+)?__shared__\s+(?:__align__\((\d+)\)\s+)?([A-Za-z_][\w:<> ]*?)\s+'
                    r'([A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*(?:,\s*[A-Za-z_]\w*\s*(?:\[[^\]]*\]\s*)*)*);(.*)$')
DECL = re.compile(r'([A-Za-z_]\w*)\s*((?:\[[^\]]*\]\s*)*)')


def shared(m):
    indent, ext, align, typ, decls, rest = m.groups()
    if ext:
        name = DECL.match(decls.strip()).group(1)
        return '#define %s ((%s *) vae_emu_dyn_smem("%s"))' % (name, typ, name)
    out = []
    for d in decls.split(','):
        name, dims = DECL.match(d.strip()).groups()
        dims = dims.replace(' ', '')
        out.append('static const char vae_emu_key_%s = 0; %s (&%s)%s = *(%s (*)%s) vae_emu_static_smem('
                   '&vae_emu_key_%s, "%s", sizeof(%s%s), %s);' % (name, typ, name, dims, typ, dims, name, name, typ,
                                                                  dims, align or 'alignof(%s)' % typ))
    return indent + ' '.join(out) + rest


def launch(line):
    i = line.find('<<<')
    if i < 0:
        return line
    name = re.search(r'([\w:]+(?:<[^;]*?>)?)\s*$', line[:i])
    name = name.group(1) if name else 'kernel'
    strided = 'true' if line[i + 3:].lstrip().startswith('vae_gpu_blocks(') else 'false'
    line = (line[:i] + ' ->* vae_emu_config("%s", __PRETTY_FUNCTION__, __FILE__, __LINE__, %s, ' % (name, strided) +
            line[i + 3:])
    return line


def main():
    src, dst = sys.argv[1], sys.argv[2]
    out = ['#line 1 "%s"' % src]
    for line in open(src).read().split('\n'):
        m = SHARED.match(line)
        out.append(shared(m) if m else launch(line))
    open(dst, 'w').write('\n'.join(out).replace('>>>(', ') ->* vae_emu_args('))


main()

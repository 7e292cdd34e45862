// The oracle of test-gmma: wgmma's shared-memory operand layouts and register fragments as CuTe
// (NVIDIA's CUTLASS, its layout algebra, compiled on the host) builds them, printed for the
// emulator's own reading of the PTX ISA to be checked against (gmma-layouts.sh writes
// gmma-layouts.txt with it). For each canonical layout (K-major at 16 and 32 bits, MN-major at 16,
// each with no swizzle and the 32-, 64- and 128-byte swizzles), a tile of several wgmma K blocks
// made by tile_to_shape from CuTe's atom: per K block the descriptor make_gmma_desc gives (start
// offset, leading and stride byte offsets, base offset, layout type) and the 16-byte chunk that
// holds each chunk's first element (the generator checks that each chunk's elements are
// contiguous). Then the accumulator fragment of m64nNk16 (N = 24) and the A fragment from
// registers: thread t's value v at element m + 64 n.
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>

#include <cstdio>
#include <cstdlib>

using namespace cute;

template <class T, GMMA::Major MJ, class Atom, class MN, class KB>
static void emit(const char * name, int mode, Atom atom, MN mn, KB kb, int kbs) {
    alignas(1024) static T smem[16384];
    auto           layout = tile_to_shape(atom, make_shape(mn, kb * Int<4>{}));
    auto           t      = make_tensor(make_smem_ptr(smem), layout);
    constexpr int  E = sizeof(T), V = 16 / E;
    const int      M = size(mn), K = size(kb);
    printf("case %s %d %s %d %d %d %d\n", name, E, MJ == GMMA::Major::K ? "K" : "MN", mode, M, kbs, K);
    for (int b = 0; b < kbs; b++) {
        auto                 tk = local_tile(t, make_shape(mn, kb), make_coord(0, b));
        const GmmaDescriptor d  = GMMA::make_gmma_desc<MJ>(tk);
        printf("kb %ld %d %d %d %d\n", (long) (raw_pointer_cast(tk.data()) - smem) * E,
               d.bitfield.leading_byte_offset_ * 16, d.bitfield.stride_byte_offset_ * 16, d.bitfield.base_offset_,
               d.bitfield.layout_type_);
        for (int o = 0; o < M * K / V; o++) {
            // K-major: rows i, then chunks along k; MN-major: k, then chunks along i
            const int  i = MJ == GMMA::Major::K ? o / (K / V) : o % (M / V) * V;
            const int  k = MJ == GMMA::Major::K ? o % (K / V) * V : o / (M / V);
            const long a = (long) (&tk(i, k) - smem) * E;
            for (int e = 1; e < V; e++) {
                const long x = (long) ((MJ == GMMA::Major::K ? &tk(i, k + e) : &tk(i + e, k)) - smem) * E;
                if (x != a + e * E || a % 16) {
                    fprintf(stderr, "%s: the chunk of (%d, %d) is not 16 contiguous bytes\n", name, i, k);
                    exit(1);
                }
            }
            printf("%ld%c", a / 16, o + 1 == M * K / V ? '\n' : ' ');
        }
    }
}

int main() {
    using B = cutlass::bfloat16_t;
    using F = cutlass::tfloat32_t;
    printf("# made by gmma-layouts.sh (gmma-layouts.cpp, CuTe of nvidia-cutlass 4.2.0.0): wgmma operand layouts\n"
           "# case NAME ELEM_BYTES MAJOR MODE MN KBLOCKS KELEMS; per K block: kb START LBO SBO BASE_OFFSET MODE\n"
           "# (bytes), then the 16-byte chunk (byte offset / 16) of each chunk's first element, K-major: rows, then\n"
           "# chunks along k; MN-major: k, then chunks along MN. fragment C|A 64 N: thread t's values' m + 64 n\n");
    emit<B, GMMA::Major::K>("bf16-K-inter", 0, GMMA::Layout_K_INTER_Atom<B>{}, Int<16>{}, Int<16>{}, 4);
    emit<B, GMMA::Major::K>("bf16-K-sw32", 3, GMMA::Layout_K_SW32_Atom<B>{}, Int<16>{}, Int<16>{}, 4);
    emit<B, GMMA::Major::K>("bf16-K-sw64", 2, GMMA::Layout_K_SW64_Atom<B>{}, Int<16>{}, Int<16>{}, 4);
    emit<B, GMMA::Major::K>("bf16-K-sw128", 1, GMMA::Layout_K_SW128_Atom<B>{}, Int<16>{}, Int<16>{}, 4);
    emit<F, GMMA::Major::K>("tf32-K-inter", 0, GMMA::Layout_K_INTER_Atom<F>{}, Int<16>{}, Int<8>{}, 4);
    emit<F, GMMA::Major::K>("tf32-K-sw32", 3, GMMA::Layout_K_SW32_Atom<F>{}, Int<16>{}, Int<8>{}, 4);
    emit<F, GMMA::Major::K>("tf32-K-sw64", 2, GMMA::Layout_K_SW64_Atom<F>{}, Int<16>{}, Int<8>{}, 4);
    emit<F, GMMA::Major::K>("tf32-K-sw128", 1, GMMA::Layout_K_SW128_Atom<F>{}, Int<16>{}, Int<8>{}, 4);
    emit<B, GMMA::Major::MN>("bf16-MN-inter", 0, GMMA::Layout_MN_INTER_Atom<B>{}, Int<128>{}, Int<16>{}, 2);
    emit<B, GMMA::Major::MN>("bf16-MN-sw32", 3, GMMA::Layout_MN_SW32_Atom<B>{}, Int<128>{}, Int<16>{}, 2);
    emit<B, GMMA::Major::MN>("bf16-MN-sw64", 2, GMMA::Layout_MN_SW64_Atom<B>{}, Int<128>{}, Int<16>{}, 2);
    emit<B, GMMA::Major::MN>("bf16-MN-sw128", 1, GMMA::Layout_MN_SW128_Atom<B>{}, Int<128>{}, Int<16>{}, 2);
    printf("fragment C 64 24\n");
    GMMA::CLayout_64xN<24> c;
    for (int t = 0; t < 128; t++) {
        for (int v = 0; v < 12; v++) {
            printf("%d%c", int(c(t, v)), v == 11 ? '\n' : ' ');
        }
    }
    printf("fragment A 64 16\n");
    GMMA::ALayout_64x16 a;
    for (int t = 0; t < 128; t++) {
        for (int v = 0; v < 8; v++) {
            printf("%d%c", int(a(t, v)), v == 7 ? '\n' : ' ');
        }
    }
}

// Liveness-based placement of activations in one arena (see vae-plan.h): a node's block is freed
// after its last reader, and the next block goes in the first gap that fits.

#include "vae-plan.h"

#include <stdlib.h>

struct plan_block {
    size_t offset, size;
    int    owner; // node index, -1 when free
};

// first fit among the gaps between live blocks, else at the end
static size_t plan_place(const struct plan_block * live, int n_live, size_t size) {
    size_t at = 0;
    for (bool moved = true; moved;) {
        moved = false;
        for (int i = 0; i < n_live; i++) {
            if (live[i].owner >= 0 && at < live[i].offset + live[i].size && live[i].offset < at + size) {
                at    = live[i].offset + live[i].size;
                moved = true;
            }
        }
    }
    return at;
}

bool vae_plan_arena(const struct vae_graph * g, struct vae_plan_node * plan, size_t align, size_t * arena_bytes) {
    const int           n    = g->n_nodes;
    int *               last = malloc((size_t) n * 2 * sizeof(int)), *until = last + n;
    struct plan_block * live = calloc((size_t) n, sizeof(*live));
    if (!last || !live) {
        free(last);
        free(live);
        return false;
    }
    for (int i = 0; i < n; i++) {
        last[i] = i;
    }
    for (int i = 0; i < n; i++) {
        for (int s = 0; s < VAE_MAX_SRC; s++) {
            const struct vae_tensor * src = g->nodes[i]->src[s];
            if (src && src->op != VAE_OP_WEIGHT) {
                last[src->index] = i;
            }
        }
    }
    last[g->output->index] = n; // the output outlives the run
    // blocks are freed after until[]: their last reader, or an output that an earlier node writes
    // (the node's inputs then live until that output is placed; last[] still decides what a node
    // takes over)
    for (int i = 0; i < n; i++) {
        until[i] = last[i];
    }
    for (int i = 0; i < n; i++) {
        const struct vae_tensor * w = plan[i].written_by;
        for (int s = 0; w && s < VAE_MAX_SRC; s++) {
            if (w->src[s] && w->src[s]->op != VAE_OP_WEIGHT && until[w->src[s]->index] < i) {
                until[w->src[s]->index] = i;
            }
        }
    }
    size_t peak = 0;
    for (int i = 0; i < n; i++) {
        const size_t              front = plan[i].front;
        const size_t              size  = (front + plan[i].bytes + align - 1) / align * align;
        const struct vae_tensor * heir  = plan[i].heir_of;
        if (heir && last[heir->index] == i && live[heir->index].size == size && front == 0 &&
            plan[heir->index].front == 0) {
            live[i]                 = live[heir->index];
            live[i].owner           = i;
            live[heir->index].owner = -1;
            plan[i].inherited       = true;
        } else {
            live[i].size      = size;
            live[i].offset    = plan_place(live, i, size);
            live[i].owner     = i;
            plan[i].inherited = false;
        }
        plan[i].offset = live[i].offset + front;
        if (live[i].offset + size > peak) {
            peak = live[i].offset + size;
        }
        for (int j = 0; j <= i; j++) { // (j == i: a node nothing reads)
            if (live[j].owner == j && until[j] == i) {
                live[j].owner = -1;
            }
        }
    }
    *arena_bytes = peak;
    free(last);
    free(live);
    return true;
}

// The activation memory plan every backend uses: one arena, each node's output placed from the
// nodes' lifetimes (first fit among the blocks still live), so the peak is known at prepare,
// before the first frame. A node may take over the block of a source that dies at it (in place:
// norms, a conv writing over its residual); the backend says which, since only it knows which of
// its kernels may write over an input.

#pragma once

#include "vae-backend.h"

struct vae_plan_node {
    size_t                    bytes;     // in: its output's size
    size_t                    front;     // in: room it needs right before its output (state frames)
    const struct vae_tensor * heir_of;   // in: a source whose block it may take over, or NULL
    const struct vae_tensor * written_by; // in: the node that writes this output, where an earlier one does
                                          //   (an RMS norm in its conv's epilogue), or NULL: that node's
                                          //   sources then live until this output is placed
    size_t                    offset;    // out: of its output in the arena (after the front room)
    bool                      inherited; // out: it took over heir_of's block
};

// plan g's nodes (plan[i] for g->nodes[i]), blocks aligned to `align` bytes; returns the arena size.
// The output stays live to the end. NULL when out of host memory.
bool vae_plan_arena(const struct vae_graph * g, struct vae_plan_node * plan, size_t align, size_t * arena_bytes);

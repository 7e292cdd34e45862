// The helpers every family's graph builder uses: a build in progress with its first error, the
// model's weights taken into the graph with their shapes checked, the convs most blocks are made
// of, and the causal video decoders' pieces chained into a whole-sequence graph or built one step
// at a time for the tiled decode. Family files call these; these call only the weight store
// (vae-weights.h) and the graph (vae-backend.h), never a family or the loader.

#pragma once

#include "vae-model.h"

#ifdef __cplusplus
extern "C" {
#endif

// the graph being built and the first error met
struct vae_builder {
    const struct vae_model * model;
    struct vae_graph *       g;
    char *                   err;
    size_t                   err_size;
    bool                     failed;
    int                      n_slots;        // state slots numbered so far
    int                      a;              // frames per latent frame of the stream a centred conv built now
                                             //   reads (VAE_CENTRED), set by the family as it builds
};

// start a graph for model (false after a message); finish it with out as its output (NULL: the
// build failed, the graph is freed)
bool               vae_builder_init(struct vae_builder * b, const struct vae_model * model, char * err, size_t err_size);
struct vae_graph * vae_builder_finish(struct vae_builder * b, struct vae_tensor * out);
// the graph weight for the model tensor named by fmt, checked against shape (-1: any size; n_dims
// of them), its data made (vae_model_weight_data); NULL after setting the builder's error
struct vae_tensor * vae_builder_weight(struct vae_builder * b, int n_dims, const int64_t * shape, const char * fmt, ...)
    __attribute__((format(printf, 4, 5)));
// the k x k conv `name` (`name.weight`, and `name.bias` when bias) on x, with residual r (or NULL),
// applied to nearest2x(x) when upsample
struct vae_tensor * vae_builder_conv2d(struct vae_builder * b, struct vae_tensor * x, const char * name, int k,
                                       bool bias, struct vae_tensor * r, enum vae_act act, bool upsample);
// the conv `name` (`name.weight` [Cout, Cin, kt, k, k] and `name.bias`) on x, adding r (or NULL): a
// causal conv on the next state slot (edges: enum vae_causal_edges, 0 for Wan's zeros; SeedVR2's
// history replicates the first frame, HunyuanVideo 1.5's the edge pixels too; LTX-2's are centred,
// on a stream of b->a frames per latent frame), or for kt = k = 1
// the same 1x1 conv on each frame
struct vae_tensor * vae_builder_conv3d(struct vae_builder * b, struct vae_tensor * x, const char * name, int kt, int k,
                                       struct vae_tensor * r, int edges);
// fail the build with a message (returns NULL for convenience)
struct vae_tensor * vae_builder_fail(struct vae_builder * b, const char * fmt, ...) __attribute__((format(printf, 2, 3)));

// What a causal video decoder's family gives (Wan 2.1/2.2, SeedVR2): its head (through the mid
// block, on whole frames) and its steps (see vae_causal_step). The whole-sequence graph chains
// them; the tiled decode runs the steps one at a time over tiles of a frame.
struct vae_causal_family {
    // the steps of model (at most max), in order
    int (*steps)(const struct vae_model * model, struct vae_causal_step * steps, int max);
    // x [N, z, h, w] -> the head's output [N, steps[0].cin, h, w], in the build b; NULL: none, the
    // steps start on the latents
    struct vae_tensor * (*head)(struct vae_builder * b, struct vae_tensor * x);
    // step s on x, r the activation of its residual slot (NULL: none; a centred step's at its own
    // output's frames) and stats the input holding the whole frame's statistics (NULL: each frame
    // its own); first: the step that starts a stream; b->a is s->rate
    struct vae_tensor * (*step)(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                struct vae_tensor * r, struct vae_tensor * stats, bool first);
};

// f's whole-sequence graph (vae_model_build_graph's contract): the head, then the steps in
// order, each residual step reading the activation its slot kept, delayed by the frames the
// centred steps since it was kept lag (VAE_OP_DELAY)
struct vae_graph * vae_causal_build(const struct vae_causal_family * f, const struct vae_model * model, int n, int h,
                                    int w, bool first, char * err, size_t err_size);
// f's head alone, and one step alone (vae_model_causal_head_build, vae_model_causal_step_build)
struct vae_graph * vae_causal_head_build(const struct vae_causal_family * f, const struct vae_model * model, int h,
                                         int w, char * err, size_t err_size);
struct vae_graph * vae_causal_step_build(const struct vae_causal_family * f, const struct vae_model * model,
                                         const struct vae_causal_step * s, int h, int w, bool first, char * err,
                                         size_t err_size);

#ifdef __cplusplus
}
#endif

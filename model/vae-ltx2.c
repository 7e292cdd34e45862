// Graph builder for the LTX-2 and LTX-2.3 video VAE decoders (MODELS.md J.1; diffusers'
// AutoencoderKLLTX2Video, Lightricks' original names as ComfyUI's files hold them): 128 latent
// channels, 32x in space (a 4x4 unpatchify after three 2x upsamplers), 8x in time, 1 + 8 (T - 1)
// frames. Its convs are 3x3x3 and **centred** in time: each pads the clip with one copy of its
// first frame in front and one of its last behind, so a frame depends on later latents too. It
// streams exactly anyway: every conv runs as a causal conv whose output is a frame late
// (VAE_CENTRED), a resnet's residual is delayed to match (VAE_OP_DELAY), and a stream starts with
// a graph of lookahead + 1 latent frames whose convs pad with the first frame and drop the frame
// they cannot give (VAE_CENTRED_START: what is left is exactly the real frames); later steps take
// n latent frames and give 8 n frames, as late as the lags add up. At the end the state is told
// the stream's length and the session flushes it with steps whose latents are never read: each
// conv reads its stream's last frame in place of those after it, the clip's end padding. So
// memory is a few frames per layer, fixed, and a frame comes out `lookahead` latent frames after
// its own (vae_model.lookahead: 22 for the released 2.0, 14 for 2.3, from the graph).
//
// 2.0: every upsampler is spatiotemporal (2x2x2, conv to 4 C_in channels) with a residual, the
// input rearranged the same way and repeated over the channels; spatial padding "reflect". 2.3:
// spatiotemporal, spatiotemporal, temporal and spatial upsamplers without residual, zeros. Neither
// is in the weights but the upsamplers' shapes are, so the variant comes from them. The loader
// reorders each upsampler conv's rows into frame_split's and pixel_shuffle's order, adds the
// residual as a 0/1 channel map, and orders conv_out's rows for two pixel shuffles (upstream's
// unpatchify takes the width offset before the height one). Norms are per-pixel RMS over the
// channels without weights (eps 1e-8). latents_mean and latents_std, in the file, give the
// normalized latent space: z = x * std + mean.

#include "vae-family.h"
#include "vae-weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LTX2_EPS        1e-8f
#define LTX2_MAX_LAYERS 96
#define LTX2_STATS      "per_channel_statistics."

enum ltx2_kind {
    LTX2_CONV_IN,  // conv_in on the latents                                 name: conv_in
    LTX2_RES,      // x + conv2(SiLU(RMS(conv1(SiLU(RMS(x))))))              name: the resnet
    LTX2_UP,       // conv (+ residual map), frame_split(st), pixel_shuffle  name: the upsampler block
    LTX2_HEAD,     // conv_out(SiLU(RMS(x))), two pixel shuffles
};

// one layer, in order; st, sh (= sw): an upsampler's factors in time and space
struct ltx2_layer {
    enum ltx2_kind kind;
    char           name[48];
    int            st, sh;
};

// the layers of m (at most max): conv_in, the mid block's resnets (flat block 0), then per stage
// its upsampler (block 2i + 1) and resnets (block 2i + 2), then the head
static int ltx2_layers(const struct vae_model * m, struct ltx2_layer * l, int max) {
    int n = 0;
    l[n++] = (struct ltx2_layer) { LTX2_CONV_IN, "decoder.conv_in.conv", 1, 1 };
    for (int blk = 0; blk <= VAE_NAME_MAX_INDEX && n + 2 < max; blk++) {
        char name[48];
        snprintf(name, sizeof(name), "decoder.up_blocks.%d", blk);
        if (blk % 2 == 1) {
            const int rows = vae_model_dim(m, name, ".conv.conv.weight", 0);
            if (!rows) {
                break;
            }
            // the factors from the rows per output channel: the width of the resnets after it (of
            // conv_out after the last; every released stage has resnets, and a stage without them
            // is refused: the next upsampler's input is not the output's width)
            char next[48], after[48];
            snprintf(next, sizeof(next), "decoder.up_blocks.%d.res_blocks.0", blk + 1);
            snprintf(after, sizeof(after), "decoder.up_blocks.%d", blk + 2);
            int c = vae_model_dim(m, next, ".conv1.conv.weight", 1);
            if (!c && !vae_model_dim(m, after, ".conv.conv.weight", 0)) {
                c = vae_model_dim(m, "decoder.conv_out", ".conv.weight", 1);
            }
            const int  f  = c > 0 && rows % c == 0 ? rows / c : 0;
            const bool ok = f == 2 || f == 4 || f == 8; // (st 0: not an upsampler's shape; the build says so)
            l[n] = (struct ltx2_layer) { LTX2_UP, "", ok ? (f == 4 ? 1 : 2) : 0, f == 2 ? 1 : 2 };
            snprintf(l[n++].name, sizeof(l->name), "%s", name);
            continue;
        }
        for (int j = 0; j <= VAE_NAME_MAX_INDEX && n + 2 < max; j++) {
            snprintf(name, sizeof(name), "decoder.up_blocks.%d.res_blocks.%d", blk, j);
            if (!vae_model_dim(m, name, ".conv1.conv.weight", 0)) {
                break;
            }
            l[n] = (struct ltx2_layer) { LTX2_RES, "", 1, 1 };
            snprintf(l[n++].name, sizeof(l->name), "%s", name);
        }
    }
    l[n++] = (struct ltx2_layer) { LTX2_HEAD, "decoder.conv_out.conv", 1, 1 };
    return n;
}

// the frames a stream lags at the output (in output frames) after the layers: a centred conv adds
// one at its rate, a temporal upsampler doubles the rate and drops the clip's first frame. A graph
// that starts a stream of n latent frames gives 8 n - lag frames; a later one 8 n.
static int ltx2_lag(const struct ltx2_layer * l, int n) {
    int lag = 0;
    for (int i = 0; i < n; i++) {
        lag = l[i].kind == LTX2_RES ? lag + 2 : l[i].kind == LTX2_UP && l[i].st == 2 ? 2 * (lag + 1) + 1 : lag + 1;
    }
    return lag;
}

enum ltx2_naming {
    LTX2_NAMING_ORIG,       // `decoder.up_blocks.N.res_blocks.J.*` flat, `per_channel_statistics.*` (canonical)
    LTX2_NAMING_DIFFUSERS,  // `decoder.mid_block.resnets.J.*`, `decoder.up_blocks.I.upsamplers.0.*`, `latents_mean`
};

// a centred conv_in (`.conv.` inside) of 128 latent channels and the resnets in either naming; an
// LTX-2 checkpoint holds its VAE under `vae.`
static int ltx2_recognise(const struct vae_st_header * hdr, struct vae_naming * naming, char * err, size_t err_size) {
    (void) err, (void) err_size;
    static const char * const prefixes[] = { "", "vae." };
    for (size_t p = 0; p < 2; p++) {
        char key[96];
        snprintf(key, sizeof(key), "%sdecoder.conv_in.conv.weight", prefixes[p]);
        const struct vae_st_tensor * in = vae_st_header_find(hdr, key);
        if (!in || in->n_dims != 5 || in->shape[1] != 128) {
            continue;
        }
        naming->prefix = prefixes[p];
        snprintf(key, sizeof(key), "%sdecoder.up_blocks.0.res_blocks.0.conv1.conv.weight", prefixes[p]);
        if (vae_st_header_find(hdr, key)) {
            naming->kind = LTX2_NAMING_ORIG;
            return 1;
        }
        snprintf(key, sizeof(key), "%sdecoder.mid_block.resnets.0.conv1.conv.weight", prefixes[p]);
        if (vae_st_header_find(hdr, key)) {
            naming->kind = LTX2_NAMING_DIFFUSERS;
            return 1;
        }
    }
    return 0;
}

// diffusers' names -> the original ones (the inverse of diffusers' conversion); the decoder's and
// the two statistics the normalized space needs; the rest of the file (encoder, other statistics)
// is not the decoder's
static char * ltx2_canonical_name(const char * key, const struct vae_naming * naming) {
    long         num;
    const char * rest;
    char *       name;
    if (strcmp(key, "latents_mean") == 0 || strcmp(key, LTX2_STATS "mean-of-means") == 0) {
        return strdup(LTX2_STATS "mean-of-means");
    }
    if (strcmp(key, "latents_std") == 0 || strcmp(key, LTX2_STATS "std-of-means") == 0) {
        return strdup(LTX2_STATS "std-of-means");
    }
    if (strncmp(key, "decoder.", 8) != 0) {
        return NULL;
    }
    if (naming->kind == LTX2_NAMING_ORIG) {
        return strdup(key);
    }
    if ((name = vae_name_swap_head(key, "decoder.mid_block.", "decoder.up_blocks.0."))) {
        return vae_name_replace(name, ".resnets.", ".res_blocks.");
    }
    if (strncmp(key, "decoder.up_blocks.", 18) == 0 && (num = vae_name_index(key + 18, &rest)) >= 0 &&
        num < VAE_NAME_MAX_INDEX / 2) {
        const bool up = strncmp(rest, ".upsamplers.0.", 14) == 0;
        if ((name = malloc(strlen(rest) + 40))) {
            sprintf(name, "decoder.up_blocks.%ld%s", up ? 2 * num + 1 : 2 * num + 2, up ? rest + 13 : rest);
        }
        return vae_name_replace(name, ".resnets.", ".res_blocks.");
    }
    return strdup(key);
}

// upsampler `name` (factors st x sh x sh, F = st sh sh) from Cin to C = rows / F channels: conv row
// o F + (t sh + y) sh + x gives output channel o at frame offset t and pixel offset (y, x); its rows
// become t (C sh sh) + o sh sh + y sh + x, frame_split's and pixel_shuffle's order. With residual
// (2.0), that row adds input channel (o mod Cin/F) F + (t sh + y) sh + x (upstream's rearrangement
// of the input, repeated over the channels), a 0/1 map `<name>.residual.weight`
static bool ltx2_upsampler(struct vae_model * m, const struct ltx2_layer * l, bool residual, char * err,
                           size_t err_size) {
    char wname[80], bname[80], name[80];
    snprintf(wname, sizeof(wname), "%s.conv.conv.weight", l->name);
    snprintf(bname, sizeof(bname), "%s.conv.conv.bias", l->name);
    const struct vae_weight * w = vae_model_weight(m, wname), *bias = vae_model_weight(m, bname);
    const int64_t F = (int64_t) l->st * l->sh * l->sh, n = w->shape[0], cin = w->shape[1], c = F ? n / F : 0;
    if (!l->st || !bias || bias->n_dims != 1 || bias->shape[0] != n ||
        (residual && (cin < F || cin % F || c % (cin / F)))) {
        snprintf(err, err_size, "%s: tensor '%s' or its bias is missing, or it is not an upsampler to 2, 4 or 8 times "
                 "the channels of the layer after it%s", vae_family_name(m->family), wname,
                 residual ? " whose residual repeats its input's" : "");
        return false;
    }
    int32_t * from = malloc((size_t) n * sizeof(int32_t));
    int32_t * map  = NULL;
    if (from && residual) {
        snprintf(name, sizeof(name), "%s.residual.weight", l->name);
        map = vae_weights_add_rows(m, name, n, cin, NULL, err, err_size);
    }
    bool ok = from && (!residual || map);
    for (int64_t k = 0; ok && k < n; k++) { // k = t C sh sh + o sh sh + p, p = y sh + x
        const int64_t p = k % (l->sh * l->sh), o = k / (l->sh * l->sh) % c, t = k / (c * l->sh * l->sh);
        const int64_t sub = t * l->sh * l->sh + p;
        from[k] = (int32_t) (o * F + sub);
        if (map) {
            map[k] = (int32_t) (o % (cin / F) * F + sub);
        }
    }
    // (w and bias moved with the weight added: found again)
    ok = ok && vae_weights_set_rows((struct vae_weight *) vae_model_weight(m, wname), from, err, err_size) &&
         vae_weights_set_rows((struct vae_weight *) vae_model_weight(m, bname), from, err, err_size);
    if (!from) {
        snprintf(err, err_size, "out of memory");
    }
    free(from);
    return ok;
}

// conv_out's rows for two pixel shuffles: row 16 c + 8 i2 + 4 j2 + 2 i1 + j1 (height offset
// 2 i1 + i2, width offset 2 j1 + j2) is upstream's c 16 + (2 j1 + j2) 4 + 2 i1 + i2
static int32_t ltx2_head_row(int32_t k, int32_t n) {
    (void) n;
    const int32_t c = k / 16, i2 = k / 8 % 2, j2 = k / 4 % 2, i1 = k / 2 % 2, j1 = k % 2;
    return c * 16 + (2 * j1 + j2) * 4 + 2 * i1 + i2;
}

static bool ltx2_prepare(struct vae_model * m, const struct vae_st_header * hdr, enum vae_family want, char * err,
                         size_t err_size) {
    (void) hdr, (void) want;
    static const char * const refused[] = { "decoder.timestep_scale_multiplier", "decoder.last_scale_shift_table",
                                            "decoder.up_blocks.0.res_blocks.0.per_channel_scale1",
                                            "decoder.up_blocks.2.conv_in.conv1.conv.weight",
                                            "decoder.up_blocks.2.res_blocks.0.conv_shortcut.weight" };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        if (vae_model_weight(m, refused[i])) {
            snprintf(err, err_size, "the LTX decoder holds '%s': a timestep-conditioned, noise-injecting or "
                     "channel-changing decoder (LTX-Video 0.9), not the LTX-2 / 2.3 VAE decoded here", refused[i]);
            return false;
        }
    }
    struct ltx2_layer l[LTX2_MAX_LAYERS];
    const int         n  = ltx2_layers(m, l, LTX2_MAX_LAYERS);
    int               up = 0, st = 0;
    for (int i = 0; i < n; i++) {
        up += l[i].kind == LTX2_UP;
        st += l[i].kind == LTX2_UP && l[i].st == 2 && l[i].sh == 2;
    }
    // 2.0: three spatiotemporal upsamplers (with residual; reflect); 2.3: four, one of them temporal
    // and one spatial (neither; zeros)
    const bool v20 = up == 3 && st == 3;
    m->family      = v20 ? VAE_FAMILY_LTX2 : VAE_FAMILY_LTX23;
    m->family_certain = true;
    m->latent_channels = 128;
    for (int i = 0; i < n; i++) {
        if (l[i].kind == LTX2_UP && !ltx2_upsampler(m, &l[i], v20, err, err_size)) {
            return false;
        }
    }
    const struct vae_weight * out  = vae_model_weight(m, "decoder.conv_out.conv.weight");
    const struct vae_weight * bias = vae_model_weight(m, "decoder.conv_out.conv.bias");
    if (out && out->shape[0] == 48 &&
        (!vae_weights_reorder_rows((struct vae_weight *) out, ltx2_head_row, err, err_size) ||
         (bias && bias->shape[0] == 48 && !vae_weights_reorder_rows((struct vae_weight *) bias, ltx2_head_row, err, err_size)))) {
        return false;
    }
    const char * stats[] = { LTX2_STATS "mean-of-means", LTX2_STATS "std-of-means" };
    for (int i = 0; i < 2; i++) {
        struct vae_weight * s = (struct vae_weight *) vae_model_weight(m, stats[i]);
        if (s) {
            s->aux = true;
        }
    }
    int scale = 4, frames = 1;
    for (int i = 0; i < n; i++) {
        scale *= l[i].kind == LTX2_UP ? l[i].sh : 1;
        frames *= l[i].kind == LTX2_UP ? l[i].st : 1;
    }
    const int lag        = ltx2_lag(l, n);
    m->own_space         = VAE_SPACE_RAW;
    m->scale             = scale;
    m->frames_per_latent = frames;
    m->lookahead         = (lag + 1 + frames - 1) / frames - 1; // the start takes 8 n - lag >= 1 frames
    m->min_side          = v20 ? 2 : 1;                          // (reflect padding needs 2 pixels)
    m->out_scale         = 0.5f; // [-1, 1] -> [0, 1]
    m->out_offset        = 0.5f;
    return true;
}

// the diffusion model's x = (z - mean) / std, both from the file
static bool ltx2_affine(const struct vae_model * m, float * div, float * add, char * err, size_t err_size) {
    const struct vae_weight * mw = vae_model_weight(m, LTX2_STATS "mean-of-means");
    const struct vae_weight * sw = vae_model_weight(m, LTX2_STATS "std-of-means");
    if (!mw || !sw || mw->n_dims != 1 || sw->n_dims != 1 || mw->shape[0] != 128 || sw->shape[0] != 128) {
        snprintf(err, err_size, "%s: the file has no latent statistics of 128 channels ('latents_mean' and "
                 "'latents_std', or '" LTX2_STATS "mean-of-means' and 'std-of-means') for normalized latents: feed it "
                 "raw ones", vae_family_name(m->family));
        return false;
    }
    const float * mean = vae_model_weight_data(m, mw, err, err_size);
    const float * std  = mean ? vae_model_weight_data(m, sw, err, err_size) : NULL;
    for (int c = 0; std && c < 128; c++) {
        if (!(std[c] > 0.0f)) {
            snprintf(err, err_size, "%s: latent standard deviation %d is %g, not positive", vae_family_name(m->family),
                     c, std[c]);
            return false;
        }
        div[c] = 1.0f / std[c];
        add[c] = mean[c];
    }
    return std != NULL;
}

// ---- the graph ------------------------------------------------------------------------------

enum ltx2_step_kind {
    LTX2_STEP_CONV_IN,  // conv_in on the latents
    LTX2_STEP_RES_A,    // conv1(SiLU(RMS(x))) of resnet `name`            (keeps x in slot 0)
    LTX2_STEP_RES_B,    // r + conv2(SiLU(RMS(x)))
    LTX2_STEP_UP,       // conv (+ residual map of r: 2.0), frame_split, pixel_shuffle of upsampler `name`
    LTX2_STEP_HEAD,     // conv_out(SiLU(RMS(x))), two pixel shuffles
};

// the layers as centred steps, each reaching one pixel around (a resnet is two): their channels
// from the weights, their stream's rate from the temporal upsamplers before them. 2.0's upsampler
// keeps its own input (slot 0) for its residual, which the chain delays by its frame.
static int ltx2_steps(const struct vae_model * m, struct vae_causal_step * steps, int max) {
    struct ltx2_layer l[LTX2_MAX_LAYERS];
    const int         n_layers = ltx2_layers(m, l, LTX2_MAX_LAYERS);
    const bool        v20      = m->family == VAE_FAMILY_LTX2;
    int               n = 0, rate = 1;
    for (int i = 0; i < n_layers && n + 2 <= max; i++) {
        struct vae_causal_step * s = &steps[n];
        char                     name[80];
        *s = (struct vae_causal_step) { .up = 1, .frames = 1, .res = -1, .centred = 1, .rate = rate };
        snprintf(s->name, sizeof(s->name), "%s", l[i].name);
        switch (l[i].kind) {
            case LTX2_CONV_IN:
                s->kind = LTX2_STEP_CONV_IN;
                s->cin  = m->latent_channels;
                s->cout = vae_model_dim(m, "decoder.conv_in", ".conv.weight", 0);
                break;
            case LTX2_RES:
                snprintf(name, sizeof(name), "%s.conv1", l[i].name);
                s->kind = LTX2_STEP_RES_A, s->save = 1;
                s->cin  = vae_model_dim(m, name, ".conv.weight", 1);
                s->cout = vae_model_dim(m, name, ".conv.weight", 0);
                steps[++n] = *s;
                s       = &steps[n];
                snprintf(name, sizeof(name), "%s.conv2", l[i].name);
                s->kind = LTX2_STEP_RES_B, s->save = 0, s->res = 0, s->rin = steps[n - 1].cin;
                s->cin  = vae_model_dim(m, name, ".conv.weight", 1);
                s->cout = vae_model_dim(m, name, ".conv.weight", 0);
                break;
            case LTX2_UP: {
                const int rows = vae_model_dim(m, l[i].name, ".conv.conv.weight", 0), f = l[i].st * l[i].sh * l[i].sh;
                s->kind   = LTX2_STEP_UP;
                s->cin    = vae_model_dim(m, l[i].name, ".conv.conv.weight", 1);
                s->cout   = f ? rows / f : 0;
                s->up     = l[i].sh;
                s->frames = l[i].st ? l[i].st : 1;
                s->save   = v20, s->res = v20 ? 0 : -1, s->rin = v20 ? s->cin : 0;
                rate *= s->frames;
                break;
            }
            case LTX2_HEAD:
                s->kind = LTX2_STEP_HEAD;
                s->cin  = vae_model_dim(m, "decoder.conv_out", ".conv.weight", 1);
                s->cout = 3, s->up = 4;
                break;
        }
        n++;
    }
    return n;
}

// the centred conv `name` (`.weight` [Cout, Cin, 3, 3, 3], `.bias`) on x, adding r
static struct vae_tensor * ltx2_conv(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                     struct vae_tensor * r, int edges) {
    return x ? vae_builder_conv3d(b, x, name, 3, 3, r, edges) : NULL;
}

// SiLU(RMS(x)) then the centred conv `name`
static struct vae_tensor * ltx2_norm_conv(struct vae_builder * b, struct vae_tensor * x, const char * name,
                                          struct vae_tensor * r, int edges) {
    x = x ? vae_graph_rms_norm_eps(b->g, x, LTX2_EPS, NULL, NULL, NULL, VAE_ACT_SILU) : NULL;
    return ltx2_conv(b, x, name, r, edges);
}

// step s on x [n, C, h, w] (r: the residual at the output's frames); start: the graph that starts
// a stream, whose centred ops give the frames they can (VAE_CENTRED_START); otherwise a conv's
// first compute since a reset fills its state with its first frame (a tile's step starting the
// stream: the frame it gives then is none of the clip's)
static struct vae_tensor * ltx2_step(struct vae_builder * b, const struct vae_causal_step * s, struct vae_tensor * x,
                                     struct vae_tensor * r, struct vae_tensor * stats, bool start) {
    (void) stats;
    const bool v20   = b->model->family == VAE_FAMILY_LTX2;
    const int  edges = VAE_CENTRED | VAE_CAUSAL_FIRST_FRAME | (v20 ? VAE_CAUSAL_REFLECT : 0) |
                      (start ? VAE_CENTRED_START : 0);
    char       name[80];
    switch (s->kind) {
        case LTX2_STEP_CONV_IN:
            return ltx2_conv(b, x, "decoder.conv_in.conv", NULL, edges);        // [n', C, h, w]
        case LTX2_STEP_RES_A:
            snprintf(name, sizeof(name), "%s.conv1.conv", s->name);
            return ltx2_norm_conv(b, x, name, NULL, edges);
        case LTX2_STEP_RES_B:
            snprintf(name, sizeof(name), "%s.conv2.conv", s->name);
            return ltx2_norm_conv(b, x, name, r, edges);                         // [n' (- 2 start), C, h, w]
        case LTX2_STEP_UP:
            if (r) { // 2.0: the input, its channels mapped as the conv's rows
                snprintf(name, sizeof(name), "%s.residual", s->name);
                r = vae_builder_conv2d(b, r, name, 1, false, NULL, VAE_ACT_NONE, false);
            }
            snprintf(name, sizeof(name), "%s.conv.conv", s->name);
            x = !s->rin || r ? ltx2_conv(b, x, name, r, edges) : NULL;          // [n'', F C, h, w]
            if (x && !s->cout) {
                return vae_builder_fail(b, "%s: tensor '%s.weight' gives %lld channels, not 2, 4 or 8 times those "
                                        "of the layer after it", vae_family_name(b->model->family), name,
                                        (long long) x->ne[1]);
            }
            if (x && s->frames == 2) { // (a stream's first frame, the clip's padding, is dropped)
                x = vae_graph_frame_split_drop(b->g, x, 2, start ? 1 : 0);      // [2 n'' (- 1), C sh sh, h, w]
            }
            return x && s->up == 2 ? vae_graph_pixel_shuffle(b->g, x) : x;       // [.., C, 2 h, 2 w]
        default:
            x = ltx2_norm_conv(b, x, "decoder.conv_out.conv", NULL, edges);     // [N, 48, H, W]
            if (x && x->ne[1] != 48) {
                return vae_builder_fail(b, "%s: tensor 'decoder.conv_out.conv.weight' gives %lld channels, not 48",
                                        vae_family_name(b->model->family), (long long) x->ne[1]);
            }
            x = x ? vae_graph_pixel_shuffle(b->g, x) : NULL;                     // [N, 12, 2H, 2W]
            return x ? vae_graph_pixel_shuffle(b->g, x) : NULL;                  // [N, 3, 4H, 4W]
    }
}

static const struct vae_causal_family ltx2_causal_family = {
    /* .steps = */ ltx2_steps,
    /* .head  = */ NULL,
    /* .step  = */ ltx2_step,
};

// the steps chained on x [n, 128, h, w]: a step of the stream, or the one that starts it ->
// [8 n (- lag), 3, 32 h, 32 w]
static struct vae_graph * ltx2_build(const struct vae_model * m, int n, int h, int w, bool start, char * err,
                                     size_t err_size) {
    struct ltx2_layer l[LTX2_MAX_LAYERS];
    if (start && m->frames_per_latent * n - ltx2_lag(l, ltx2_layers(m, l, LTX2_MAX_LAYERS)) < 1) {
        snprintf(err, err_size, "%s: a stream starts with %d latent frames, not %d", vae_family_name(m->family),
                 m->lookahead + 1, n);
        return NULL;
    }
    return vae_causal_build(&ltx2_causal_family, m, n, h, w, start, err, err_size);
}

// raw latents; normalized ones through the file's per-channel statistics
static const struct vae_variant ltx2_variants[] = {
    { VAE_FAMILY_LTX2, "ltx2",
      "LTX-2 video VAE (128 ch, 32x, 8 frames per latent; centred in time: frames come 22 latent frames late; "
      "normalized z = x * std + mean, from the file)", 128, true, .affine = ltx2_affine },
    { VAE_FAMILY_LTX23, "ltx2.3",
      "LTX-2.3 video VAE (128 ch, 32x, 8 frames per latent; centred in time: frames come 14 latent frames late; "
      "normalized z = x * std + mean, from the file)", 128, true, .affine = ltx2_affine },
};

const struct vae_family_desc vae_ltx2_family = {
    /* .name           = */ "LTX-2",
    /* .keys           = */ "'decoder.conv_in.conv.weight' of 128 inputs with "
                            "'decoder.up_blocks.0.res_blocks.0.conv1.conv.weight' or "
                            "'decoder.mid_block.resnets.0.conv1.conv.weight'",
    /* .style          = */ NULL,
    /* .variants       = */ VAE_VARIANTS(ltx2_variants),
    /* .recognise      = */ ltx2_recognise,
    /* .canonical_name = */ ltx2_canonical_name,
    /* .prepare        = */ ltx2_prepare,
    /* .build          = */ ltx2_build,
    /* .causal         = */ &ltx2_causal_family,
};

// Loading a decoder file: recognising its family from key names and shapes (MODELS.md §D),
// mapping its naming onto the canonical one the builders use, and converting the weights to f32
// once. A file that is not a decoder we know is refused with a message that says what was looked
// for and what was found, so a user who picked the wrong file learns which one it was.

#include "vae-model.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char * family_names[VAE_FAMILY_COUNT] = {
    [VAE_FAMILY_AUTO] = "auto",     [VAE_FAMILY_TAESD] = "taesd", [VAE_FAMILY_TAESDXL] = "taesdxl",
    [VAE_FAMILY_TAESD3] = "taesd3", [VAE_FAMILY_TAEF1] = "taef1", [VAE_FAMILY_TAEF2] = "taef2",
};

const char * vae_family_name(enum vae_family family) {
    return family < VAE_FAMILY_COUNT ? family_names[family] : "?";
}

enum vae_family vae_family_from_name(const char * name) {
    for (int i = 0; i < VAE_FAMILY_COUNT; i++) {
        if (strcmp(name, family_names[i]) == 0) {
            return (enum vae_family) i;
        }
    }
    return VAE_FAMILY_COUNT;
}

void vae_model_free(struct vae_model * model) {
    if (!model) {
        return;
    }
    for (int i = 0; i < model->n_weights; i++) {
        free(model->weights[i].name);
        free(model->weights[i].data);
    }
    free(model->weights);
    free(model);
}

const struct vae_weight * vae_model_weight(const struct vae_model * model, const char * name) {
    for (int i = 0; i < model->n_weights; i++) {
        if (strcmp(model->weights[i].name, name) == 0) {
            return &model->weights[i];
        }
    }
    return NULL;
}

static bool model_has(const struct vae_st_header * hdr, const char * name) {
    return vae_st_header_find(hdr, name) != NULL;
}

static bool model_has_prefix(const struct vae_st_header * hdr, const char * prefix) {
    for (int i = 0; i < hdr->n_tensors; i++) {
        if (strncmp(hdr->tensors[i].name, prefix, strlen(prefix)) == 0) {
            return true;
        }
    }
    return false;
}

// families that MODELS.md describes but that this build has no builder for yet
static const char * model_other_family(const struct vae_st_header * hdr) {
    static const struct {
        const char * key, * what;
    } known[] = {
        { "decoder.middle.0.residual.0.gamma", "a Wan 2.x VAE (original naming)" },
        { "decoder.mid_block.resnets.0.norm1.gamma", "a Wan 2.x VAE (diffusers naming)" },
        { "decoder.22.bias", "a TAEHV video decoder" },
        { "decoder.up_blocks.0.resnets.0.norm1.weight", "an AutoencoderKL decoder (diffusers naming)" },
        { "decoder.conv_in.weight", "an AutoencoderKL decoder (LDM naming)" },
        { "first_stage_model.decoder.conv_in.weight", "an AutoencoderKL decoder inside a full checkpoint" },
        { "vae.decoder.conv_in.weight", "an AutoencoderKL decoder inside a full checkpoint" },
    };
    for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (model_has(hdr, known[i].key)) {
            return known[i].what;
        }
    }
    return NULL;
}

// the canonical TAESD name of a file key, or NULL to ignore the key; mode 0: original names,
// 1: diffusers (`decoder.layers.K-1.`), 2: ComfyUI (`taesd_decoder.` + original)
static char * model_taesd_name(const char * key, int mode) {
    if (mode == 2) {
        if (strncmp(key, "taesd_decoder.", 14) != 0) {
            return NULL;
        }
        key += 14;
    }
    if (mode == 1) {
        static const char prefix[] = "decoder.layers.";
        if (strncmp(key, prefix, sizeof(prefix) - 1) != 0 || !isdigit((unsigned char) key[sizeof(prefix) - 1])) {
            return NULL;
        }
        char *     end;
        const long k = strtol(key + sizeof(prefix) - 1, &end, 10);
        if (*end != '.' || k > 1000) {
            return NULL;
        }
        char * name = malloc(strlen(end) + 8);
        if (name) {
            sprintf(name, "%ld%s", k + 1, end);
        }
        return name;
    }
    return isdigit((unsigned char) key[0]) ? strdup(key) : NULL;
}

static bool model_load_weights(struct vae_model * m, const struct vae_st_header * hdr, int mode, char * err,
                               size_t err_size) {
    m->weights = calloc((size_t) hdr->n_tensors, sizeof(*m->weights));
    if (!m->weights) {
        snprintf(err, err_size, "out of memory");
        return false;
    }
    for (int i = 0; i < hdr->n_tensors; i++) {
        const struct vae_st_tensor * t    = &hdr->tensors[i];
        char *                       name = model_taesd_name(t->name, mode);
        if (!name) {
            continue;
        }
        struct vae_weight * w = &m->weights[m->n_weights++];
        w->name               = name;
        if (!vae_dtype_is_float(t->dtype)) {
            snprintf(err, err_size, "tensor '%s' is %s; decoder weights must be F32, F16 or BF16", t->name,
                     vae_dtype_name(t->dtype));
            return false;
        }
        w->n_dims = t->n_dims;
        memcpy(w->shape, t->shape, sizeof(w->shape));
        w->data = malloc(t->numel ? t->numel * sizeof(float) : 1);
        if (!w->data) {
            snprintf(err, err_size, "out of memory converting tensor '%s'", t->name);
            return false;
        }
        vae_dtype_to_f32(t->dtype, t->data, w->data, t->numel);
    }
    return true;
}

// pick the family of a TAESD-layout decoder from its widths, or check the one the user named
static bool model_taesd_family(struct vae_model * m, enum vae_family want, char * err, size_t err_size) {
    const struct vae_weight * first = vae_model_weight(m, "1.weight");
    if (!first || first->n_dims != 4) {
        snprintf(err, err_size, "TAESD-style names but no 4-D '1.weight' (the first decoder conv)");
        return false;
    }
    const int  z    = (int) first->shape[1];
    const bool pool = vae_model_weight(m, "3.pool.0.weight") != NULL;
    m->latent_channels = z;
    if (want == VAE_FAMILY_AUTO) {
        m->family_certain = true;
        if (z == 4 && !pool) {
            m->family         = VAE_FAMILY_TAESD;
            m->family_certain = false; // taesd and taesdxl share shapes
        } else if (z == 16 && !pool) {
            m->family         = VAE_FAMILY_TAESD3;
            m->family_certain = false; // taesd3 and taef1 share shapes
        } else if (z == 32 && pool) {
            m->family = VAE_FAMILY_TAEF2;
        } else {
            snprintf(err, err_size,
                     "TAESD-style decoder with %d latent channels%s: not a known variant (taesd/taesdxl: 4, "
                     "taesd3/taef1: 16, taef2: 32 with the mid-block GroupNorm)",
                     z, pool ? " and a mid-block GroupNorm" : "");
            return false;
        }
        return true;
    }
    const int  want_z    = want == VAE_FAMILY_TAEF2 ? 32 : (want == VAE_FAMILY_TAESD3 || want == VAE_FAMILY_TAEF1) ? 16 : 4;
    const bool want_pool = want == VAE_FAMILY_TAEF2;
    if (z != want_z || pool != want_pool) {
        snprintf(err, err_size, "model-family %s takes %d latent channels%s, but the file's decoder has %d%s",
                 vae_family_name(want), want_z, want_pool ? " with a mid-block GroupNorm" : "", z,
                 pool ? " with a mid-block GroupNorm" : "");
        return false;
    }
    m->family         = want;
    m->family_certain = true;
    return true;
}

struct vae_model * vae_model_load(const char * path, enum vae_family family, char * err, size_t err_size) {
    struct vae_st_file * file = vae_st_file_open(path, err, err_size);
    if (!file) {
        return NULL;
    }
    const struct vae_st_header * hdr = file->hdr;
    struct vae_model *           m   = calloc(1, sizeof(*m));
    bool                         ok  = m != NULL;
    int                          mode;
    if (!ok) {
        snprintf(err, err_size, "out of memory");
    } else if (model_has(hdr, "taesd_decoder.1.weight")) {
        mode = 2;
    } else if (model_has(hdr, "decoder.layers.0.weight")) {
        mode = 1;
    } else if (model_has(hdr, "1.weight") && model_has(hdr, "3.conv.0.weight")) {
        mode = 0;
    } else {
        ok = false;
        const char * other = model_other_family(hdr);
        if (other) {
            snprintf(err, err_size, "'%s' is %s, which this build cannot decode yet (it decodes the TAESD family)",
                     path, other);
        } else if (model_has(hdr, "0.weight") && model_has(hdr, "14.weight")) {
            snprintf(err, err_size, "'%s' is a TAESD encoder (keys 0.weight .. 14.weight), not a decoder", path);
        } else if (model_has_prefix(hdr, "taesd_encoder.")) {
            snprintf(err, err_size, "'%s' holds a TAESD encoder (taesd_encoder.*) but no decoder", path);
        } else {
            snprintf(err, err_size,
                     "'%s' matches no decoder family: looked for TAESD keys ('1.weight' with '3.conv.0.weight', "
                     "'decoder.layers.0.weight', 'taesd_decoder.1.weight'), AutoencoderKL ('decoder.conv_in.weight'), "
                     "Wan ('decoder.middle.0.residual.0.gamma') and TAEHV ('decoder.22.bias'); its %d tensors start "
                     "with '%s'",
                     path, hdr->n_tensors, hdr->n_tensors ? hdr->tensors[0].name : "(none)");
        }
    }
    if (ok && family != VAE_FAMILY_AUTO && family >= VAE_FAMILY_COUNT) {
        snprintf(err, err_size, "unknown model family %d", (int) family);
        ok = false;
    }
    ok = ok && model_load_weights(m, hdr, mode, err, err_size) && model_taesd_family(m, family, err, err_size);
    vae_st_file_close(file);
    if (ok) {
        m->own_space  = VAE_SPACE_NORMALIZED;
        m->out_scale  = 1.0f; // TAESD decodes to about [0, 1]
        m->out_offset = 0.0f;
        snprintf(m->description, sizeof(m->description), "%s%s decoder, %d latent channels, %d tensors",
                 vae_family_name(m->family), m->family_certain ? "" : " (or a family with the same shapes)",
                 m->latent_channels, m->n_weights);
        // build once to check that every tensor the graph needs is there with its shape
        struct vae_graph * g = vae_model_build_graph(m, 1, 1, 1, err, err_size);
        ok                   = g != NULL;
        vae_graph_free(g);
    }
    if (!ok) {
        vae_model_free(m);
        return NULL;
    }
    return m;
}

bool vae_model_space_affine(const struct vae_model * model, enum vae_space space, float * scale, float * shift,
                            char * err, size_t err_size) {
    float s = 1.0f, b = 0.0f;
    if (space == VAE_SPACE_RAW && space != model->own_space) {
        // TAESD decoders take the diffusion model's latents: (raw - shift) * scale
        float raw_shift = 0.0f;
        switch (model->family) {
            case VAE_FAMILY_TAESD:   s = 0.18215f; break;
            case VAE_FAMILY_TAESDXL: s = 0.13025f; break;
            case VAE_FAMILY_TAESD3:  s = 1.5305f, raw_shift = 0.0609f; break;
            case VAE_FAMILY_TAEF1:   s = 0.3611f, raw_shift = 0.1159f; break;
            default:
                snprintf(err, err_size,
                         "%s has no constants to convert raw latents: feed it the diffusion model's (normalized) latents",
                         vae_family_name(model->family));
                return false;
        }
        if (!model->family_certain) {
            snprintf(err, err_size,
                     "a %d-channel TAESD decoder cannot tell which latent scale it needs (%s): set model-family to "
                     "convert raw latents",
                     model->latent_channels,
                     model->latent_channels == 4 ? "taesd 0.18215 or taesdxl 0.13025" : "taesd3 or taef1");
            return false;
        }
        b = -raw_shift * s;
    }
    for (int c = 0; c < model->latent_channels; c++) {
        scale[c] = s;
        shift[c] = b;
    }
    return true;
}

struct vae_graph * vae_model_build_graph(const struct vae_model * model, int n, int h, int w, char * err,
                                         size_t err_size) {
    return vae_taesd_build(model, n, h, w, err, err_size);
}

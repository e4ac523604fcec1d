/*
 * Packed weights stored in compiled model files (docs/format.md, section
 * PACK).
 *
 * A constant input that a build reorders into a oneDNN layout (build.c's
 * pack_deferred and dnn_const_input) is recorded in its dnn_node with a tag
 * saying what the packed bytes depend on:
 *
 *     onednn=2.6.3+N/A isa=avx512_core xxh3=5c1f0e...  (the hash: 16 hex digits)
 *
 * the oneDNN version (dnnl_version(): major.minor.patch+commit), the CPU
 * ISA its kernels were picked for (dnnl_get_effective_cpu_isa(), which
 * DNNL_MAX_CPU_ISA lowers), and an XXH3 hash of everything else that
 * decides the bytes: the source memory descriptor (plain, the slice a
 * split node's piece packs), the packed one (dims, padded dims, offsets,
 * strides, inner blocks, extra flags), the scale, the input index, the
 * piece's byte offset into the constant, and the packed size. Files
 * written before the hash was XXH3 have "md=" and a 64-bit FNV-1a there:
 * their tags never match, the weights are packed afresh and the reason is
 * said (an older minfer wrote them).
 *
 * 1. minfer compile: dnn_export_packed hands every recorded pack of a
 *    prepared node to the host, which stores the bytes and tag.
 * 2. A session from the compiled file: before packing, dnn_packed_take asks
 *    the host for the node's stored packs (minfer_host_api.packed_consts)
 *    and takes one whose tag is exactly the one it would record and whose
 *    size is the packed descriptor's: the memory is then created over the
 *    file's read-only mapping, with no copy and no reorder (oneDNN only
 *    reads weights). Otherwise it packs from the plain copy as without a
 *    compiled file, and says why once per session at the info level (the
 *    version, the ISA or the layout differs).
 * Packs made from anything but the host's constant (rnn.c's permuted gate
 * weights) or into formats other than plain blocking are not recorded:
 * they are packed at every session as before.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onednn.h"

/* header-only (libxxhash-dev's xxhash.h): no library beside oneDNN's */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* Adds v to the hash, as 8 little-endian bytes (the same tag on any host). */
static void put(XXH3_state_t *h, int64_t v) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)((uint64_t)v >> (8 * i));
    XXH3_64bits_update(h, b, sizeof b);
}

/* Hashes the fields of a blocked md that decide its bytes; 0 when md is
 * not plain blocking (winograd, RNN-packed: not recorded). */
static int md_hash(XXH3_state_t *h, const dnnl_memory_desc_t *md) {
    if (md->format_kind != dnnl_blocked || md->ndims < 0 || md->ndims > DNNL_MAX_NDIMS)
        return 0;
    const dnnl_blocking_desc_t *bd = &md->format_desc.blocking;
    if (bd->inner_nblks < 0 || bd->inner_nblks > DNNL_MAX_NDIMS)
        return 0;
    put(h, md->ndims);
    put(h, md->data_type);
    put(h, md->offset0);
    for (int d = 0; d < md->ndims; d++) {
        put(h, md->dims[d]);
        put(h, md->padded_dims[d]);
        put(h, md->padded_offsets[d]);
        put(h, bd->strides[d]);
    }
    put(h, bd->inner_nblks);
    for (int k = 0; k < bd->inner_nblks; k++) {
        put(h, bd->inner_blks[k]);
        put(h, bd->inner_idxs[k]);
    }
    uint32_t adj;
    memcpy(&adj, &md->extra.scale_adjust, sizeof adj);
    put(h, (int64_t)md->extra.flags);
    put(h, md->extra.compensation_mask);
    put(h, adj);
    put(h, md->extra.asymm_compensation_mask);
    return 1;
}

static const char *isa_name(dnnl_cpu_isa_t isa) {
    switch (isa) {
    case dnnl_cpu_isa_all: return "all";
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx512_mic: return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    default: return NULL;
    }
}

/* "onednn=VERSION isa=ISA": the part of a tag that depends on the library
 * and the CPU, not on the node. */
static void tag_prefix(char *out, size_t size) {
    const dnnl_version_t *v = dnnl_version();
    dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
    const char *name = isa_name(isa);
    char isa_buf[24];
    if (!name) {
        snprintf(isa_buf, sizeof isa_buf, "%#x", (unsigned)isa);
        name = isa_buf;
    }
    snprintf(out, size, "onednn=%d.%d.%d+%s isa=%s", v ? v->major : 0, v ? v->minor : 0,
             v ? v->patch : 0, v && v->hash ? v->hash : "?", name);
}

/* The tag of packing constant input `input` of the node being prepared
 * from src (of md have) into want times scale; 0 when such a pack is not
 * stored (src is not inside the host's constant, or a format the hash does
 * not cover). */
static int make_tag(const dnn_ctx *ctx, int input, const dnnl_memory_desc_t *have,
                    const void *src, const dnnl_memory_desc_t *want, float scale, char *tag,
                    size_t size) {
    const minfer_node_desc *node = ctx->pack_node;
    const minfer_value_desc *v = node && input >= 0 ? minfer_kit_input(node, (size_t)input) : NULL;
    if (!v || !v->const_data || !src)
        return 0;
    uintptr_t base = (uintptr_t)v->const_data, at = (uintptr_t)src;
    if (at < base || at - base >= v->const_nbytes)
        return 0;
    XXH3_state_t h;
    XXH3_64bits_reset(&h);
    uint32_t sbits;
    memcpy(&sbits, &scale, sizeof sbits);
    if (!md_hash(&h, have) || !md_hash(&h, want))
        return 0;
    put(&h, sbits);
    put(&h, input);
    put(&h, (int64_t)(at - base));
    put(&h, (int64_t)dnnl_memory_desc_get_size(want));
    char prefix[96];
    tag_prefix(prefix, sizeof prefix);
    int k = snprintf(tag, size, "%s xxh3=%016" PRIx64, prefix, XXH3_64bits_digest(&h));
    return k > 0 && (size_t)k < size;
}

/* The value of field "name=" in a tag, into out ("" when absent). */
static void tag_field(const char *tag, const char *name, char *out, size_t size) {
    size_t len = strlen(name);
    out[0] = '\0';
    for (const char *p = tag; p && *p; p = strchr(p, ' ')) {
        while (*p == ' ')
            p++;
        if (strncmp(p, name, len) == 0 && p[len] == '=') {
            const char *e = strchr(p, ' ');
            size_t n = e ? (size_t)(e - p) - len - 1 : strlen(p + len + 1);
            snprintf(out, size, "%.*s", (int)(n < size ? n : size - 1), p + len + 1);
            return;
        }
    }
}

/* Says once per session why a stored pack was not used. */
static void explain_once(dnn_ctx *ctx, const char *stored, const char *mine) {
    if (ctx->pack_warned || !ctx->api->log)
        return;
    ctx->pack_warned = 1;
    char a[64], b[64], c[24];
    const char *why = "the packed layout differs (another oneDNN build, thread count or split "
                      "of the node)";
    char buf[192];
    tag_field(stored, "onednn", a, sizeof a);
    tag_field(mine, "onednn", b, sizeof b);
    tag_field(stored, "md", c, sizeof c);
    if (c[0]) {
        why = "an older minfer wrote them (an md= layout hash, now xxh3=)";
    } else if (strcmp(a, b) != 0) {
        snprintf(buf, sizeof buf, "they were packed by oneDNN %s and this is oneDNN %s", a, b);
        why = buf;
    } else {
        tag_field(stored, "isa", a, sizeof a);
        tag_field(mine, "isa", b, sizeof b);
        if (strcmp(a, b) != 0) {
            snprintf(buf, sizeof buf, "they were packed for the CPU ISA %s and oneDNN runs %s "
                     "here", a, b);
            why = buf;
        }
    }
    ctx->api->log(ctx->host, MINFER_LOG_INFO,
                  "onednn: node '%s': the compiled model's packed weights are not used (%s); "
                  "packing them from the plain copy (said once per session)",
                  ctx->pack_node ? ctx->pack_node->name : "?", why);
}

/* Records a pack of n (for export) when it has a tag. */
static void record(dnn_node *n, int input, const char *tag, const void *data, size_t bytes) {
    if (n->n_packed >= DNN_MAX_OWNED)
        return;
    struct dnn_packed *r = &n->packed[n->n_packed++];
    r->input = input;
    r->data = data;
    r->bytes = bytes;
    snprintf(r->tag, sizeof r->tag, "%s", tag);
}

int dnn_packed_take(dnn_b *b, dnn_node *n, int mem, const dnnl_memory_desc_t *have,
                    const void *src, const dnnl_memory_desc_t *want, float scale) {
    dnn_ctx *ctx = b->ctx;
    int input = n->mems[mem].index;
    char tag[DNN_TAG_MAX];
    size_t count = 0;
    if (!ctx->pack_node || !MINFER_HOST_HAS(ctx->api, packed_consts))
        return 0;
    const minfer_packed_const *c =
        ctx->api->packed_consts(ctx->host, ctx->pack_node, "onednn", &count);
    if (!c || !count || !make_tag(ctx, input, have, src, want, scale, tag, sizeof tag))
        return 0;
    size_t bytes = dnnl_memory_desc_get_size(want);
    const char *other = NULL;
    for (size_t k = 0; k < count; k++) {
        if (c[k].struct_size < sizeof c[k] || c[k].input != (uint32_t)input || !c[k].tag)
            continue;
        if (strcmp(c[k].tag, tag) != 0 || c[k].bytes != bytes ||
            (uintptr_t)c[k].data % DNN_ALIGN != 0) {
            other = other ? other : c[k].tag;
            continue;
        }
        /* oneDNN reads weights only: the read-only mapping serves. */
        if (dnnl_memory_set_data_handle(n->mems[mem].mem, (void *)(uintptr_t)c[k].data) !=
            dnnl_success)
            return 0;
        record(n, input, tag, c[k].data, bytes);
        if (ctx->api->log)
            ctx->api->log(ctx->host, MINFER_LOG_VERBOSE,
                          "onednn: node '%s': input %d's packed weights (%zu bytes) used in "
                          "place from the compiled model", ctx->pack_node->name, input, bytes);
        return 1;
    }
    if (other)
        explain_once(ctx, other, tag);
    return 0;
}

void dnn_packed_note(dnn_b *b, dnn_node *n, int mem, const dnnl_memory_desc_t *have,
                     const void *src, const dnnl_memory_desc_t *want, float scale,
                     const void *data) {
    char tag[DNN_TAG_MAX];
    int input = n->mems[mem].index;
    if (make_tag(b->ctx, input, have, src, want, scale, tag, sizeof tag))
        record(n, input, tag, data, dnnl_memory_desc_get_size(want));
}

void dnn_packed_export(const dnn_node *const *builds, int nb, const minfer_node_desc *node,
                       void (*emit)(void *arg, const minfer_packed_const *c), void *arg) {
    const void *seen[(2 + DNN_MAX_PIECES) * DNN_MAX_OWNED];
    size_t n_seen = 0;
    for (int i = 0; i < nb; i++)
        for (int k = 0; k < builds[i]->n_packed; k++) {
            const struct dnn_packed *r = &builds[i]->packed[k];
            size_t j = 0;
            while (j < n_seen && seen[j] != r->data)
                j++;
            if (j < n_seen || (size_t)r->input >= node->n_inputs)
                continue;
            seen[n_seen++] = r->data;
            minfer_packed_const c = {sizeof c, (uint32_t)r->input, r->tag, r->data, r->bytes};
            emit(arg, &c);
        }
}

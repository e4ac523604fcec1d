/*
 * minfer compile MODEL.onnx -o MODEL.mfc [--providers LIST]: optimizes a
 * model as a session does and writes it in minfer's compiled format
 * (docs/format.md), which every command and minfer_session_create load
 * without re-optimizing, with the weights mapped from the file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "minfer/compile.h"

static const char *CMD = "compile";

static void print_help(void) {
    printf("usage: minfer compile MODEL.onnx -o MODEL.mfc [options]\n"
           "\n"
           "Builds a session for MODEL.onnx (optimization, shape inference, placement)\n"
           "and writes its optimized graph and weights to one file in minfer's compiled\n"
           "format (docs/format.md): a checked header, sections with xxHash\n"
           "checksums, weights aligned for use in place from a read-only mapping.\n"
           "Every command takes the result as MODEL; sessions from it skip parsing and\n"
           "optimization, and processes running it share the weights' pages.\n"
           "\n"
           "options:\n"
           "  -o, --output FILE  where to write the compiled model (required)\n"
           "  --force            replace FILE if it exists\n"
           "  --providers LIST   the provider list to compile for (recorded in the file;\n"
           "                     default: MINFER_PROVIDERS, else the default order)\n"
           "  --threads N        threads of the compiling session (0: one per CPU, the\n"
           "                     default): oneDNN's packed weights are stored as a session\n"
           "                     of this many threads packs them, and used by sessions of\n"
           "                     the same count (others pack again)\n"
           "  --opt-level N      optimization level 0..3 (default: MINFER_OPT_LEVEL, else 3)\n"
           "  --no-pack          leave out the weights the providers pre-packed (oneDNN's\n"
           "                     PACK section; stored by default; MINFER_COMPILE_PACK=0)\n"
           "  -h, --help         show this help\n");
}

int cmd_compile(int argc, char **argv) {
    const char *out = NULL, *providers = NULL, *threads_s = NULL;
    int force = 0, threads = -1, no_pack = 0;
    const cli_opt opts[] = {{"output", 'o', &out, NULL, NULL},
                            {"providers", 0, &providers, NULL, NULL},
                            {"threads", 0, &threads_s, NULL, NULL},
                            {"no-pack", 0, NULL, &no_pack, NULL},
                            {"force", 0, NULL, &force, NULL}};
    char **pos = calloc((size_t)argc + 1, sizeof *pos);
    size_t n_pos = 0;
    int help = 0, rc;
    minfer_options *opt = NULL;
    cli_out file = {0};
    minfer_compiled_info *info = NULL;

    if (!pos) {
        fprintf(stderr, "minfer compile: out of memory\n");
        return CLI_FAIL;
    }
    rc = cli_parse(CMD, argc, argv, opts, sizeof opts / sizeof opts[0], pos, &n_pos, &help);
    if (rc)
        goto done;
    if (help) {
        print_help();
        goto done;
    }
    if (n_pos != 1 || !out) {
        fprintf(stderr, "minfer compile: expected MODEL and -o OUT.mfc (see 'minfer compile "
                        "--help')\n");
        rc = CLI_USAGE;
        goto done;
    }
    if (threads_s &&
        (rc = cli_parse_int(CMD, "--threads", threads_s, 0, MINFER_MAX_THREADS, &threads)))
        goto done;
    rc = CLI_FAIL;
    /* -o naming the model itself (by any path: same device and inode)
     * would replace the source with its compiled form, --force or not. */
    struct stat src_st, out_st;
    if (stat(pos[0], &src_st) == 0 && stat(out, &out_st) == 0 && src_st.st_dev == out_st.st_dev &&
        src_st.st_ino == out_st.st_ino) {
        fprintf(stderr, "minfer compile: cannot write the compiled model to '%s': it is the model "
                        "being compiled ('%s')\n", out, pos[0]);
        goto done;
    }
    /* minfer_compile_model reads it (core/session/compile_model.c); this process
     * has no other thread yet. */
    if (no_pack && setenv("MINFER_COMPILE_PACK", "0", 1) != 0) {
        fprintf(stderr, "minfer compile: cannot set MINFER_COMPILE_PACK\n");
        goto done;
    }
    minfer_status st = cli_make_options(providers, threads, &opt);
    if (st != MINFER_OK) {
        fprintf(stderr, "minfer compile: %s\n", cli_error(st));
        goto done;
    }
    info = malloc(sizeof *info);
    if (!info) {
        fprintf(stderr, "minfer compile: out of memory\n");
        goto done;
    }
    if (cli_out_begin(CMD, "the compiled model", out, force, &file) != 0)
        goto done;
    if ((st = minfer_compile_model(pos[0], file.tmp, opt)) != MINFER_OK ||
        (st = minfer_compiled_info_read(file.tmp, info)) != MINFER_OK) {
        fprintf(stderr, "minfer compile: %s\n", cli_error(st));
        goto done;
    }
    if (cli_out_commit(CMD, "the compiled model", &file) != 0)
        goto done;
    printf("wrote %s: %llu bytes, %zu nodes, %zu weights (%llu bytes), optimization level %d, "
           "providers %s\n",
           out, (unsigned long long)info->file_size, info->n_nodes, info->n_weights,
           (unsigned long long)info->weight_bytes, info->opt_level, info->providers);
    rc = CLI_OK;
done:
    cli_out_abort(&file);
    minfer_options_free(opt);
    free(info);
    free(pos);
    return rc;
}

/* The bytes a file starts with, to tell a compiled model by its magic. */
static int has_magic(const char *path) {
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    return minfer_is_compiled(head, n);
}

int cli_describe_compiled(const char *path, json_t *root) {
    if (!has_magic(path))
        return 0;
    minfer_compiled_info *ci = malloc(sizeof *ci);
    minfer_status st = ci ? minfer_compiled_info_read(path, ci) : MINFER_ERR_NOMEM;
    if (st != MINFER_OK) {
        if (!root)
            printf("compiled model: (%s)\n", cli_error(st));
        free(ci);
        return 1;
    }
    if (!root) {
        printf("compiled model: format version %u, written by minfer %s, %llu bytes, flags %#x\n",
               ci->format_version, ci->minfer_version, (unsigned long long)ci->file_size,
               ci->flags);
        printf("compiled for: optimization level %d, providers %s (not optimized again)\n",
               ci->opt_level, ci->providers[0] ? ci->providers : "-");
        printf("  weights: %zu tensors, %llu bytes, used in place from a read-only mapping\n",
               ci->n_weights, (unsigned long long)ci->weight_bytes);
        if (ci->n_packed)
            printf("  packed constants: %zu blobs, %llu bytes, tag %s\n", ci->n_packed,
                   (unsigned long long)ci->packed_bytes, ci->packed_tag);
        for (size_t i = 0; i < ci->n_sections; i++)
            printf("  section %-4s offset %12llu size %12llu xxh3 %016llx\n",
                   ci->sections[i].name, (unsigned long long)ci->sections[i].offset,
                   (unsigned long long)ci->sections[i].size,
                   (unsigned long long)ci->sections[i].checksum);
    } else {
        json_t *o = json_object(), *secs = json_array();
        json_object_set_new(o, "format_version", json_integer(ci->format_version));
        json_object_set_new(o, "minfer_version", cli_json_str(ci->minfer_version));
        json_object_set_new(o, "flags", json_integer(ci->flags));
        json_object_set_new(o, "file_size", json_integer((json_int_t)ci->file_size));
        json_object_set_new(o, "opt_level", json_integer(ci->opt_level));
        json_object_set_new(o, "providers", cli_json_str(ci->providers));
        json_object_set_new(o, "weights", json_integer((json_int_t)ci->n_weights));
        json_object_set_new(o, "weight_bytes", json_integer((json_int_t)ci->weight_bytes));
        json_object_set_new(o, "packed", json_integer((json_int_t)ci->n_packed));
        json_object_set_new(o, "packed_bytes", json_integer((json_int_t)ci->packed_bytes));
        json_object_set_new(o, "packed_tag", cli_json_str(ci->packed_tag));
        for (size_t i = 0; i < ci->n_sections; i++) {
            json_t *s = json_object();
            json_object_set_new(s, "name", cli_json_str(ci->sections[i].name));
            json_object_set_new(s, "offset", json_integer((json_int_t)ci->sections[i].offset));
            json_object_set_new(s, "size", json_integer((json_int_t)ci->sections[i].size));
            json_array_append_new(secs, s);
        }
        json_object_set_new(o, "sections", secs);
        json_object_set_new(root, "compiled", o);
    }
    free(ci);
    return 1;
}

/* Files minfer reads and writes (fileio.c): opened without blocking, checked
 * to be regular files, and written whole or not at all. */
#ifndef MINFER_CORE_FILEIO_H
#define MINFER_CORE_FILEIO_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "minfer/minfer.h"

/* Opens path read-only without blocking on a FIFO or a device (O_NONBLOCK,
 * cleared once fstat says it is a regular file) and without leaking the
 * descriptor to child processes. *fd and *size on success; else
 * MINFER_ERR_IO naming `what` (e.g. "external data file") and path, with
 * nothing open. */
minfer_status mf_open_regular(const char *path, const char *what, int *fd, uint64_t *size);
/* The same, as a stdio stream for reading: *f and *size on success. */
minfer_status mf_fopen_regular(const char *path, const char *what, FILE **f, uint64_t *size);

/* A file being written: a temporary file in path's directory that
 * mf_outfile_commit renames over path, so path holds either its old
 * contents or the complete new ones, never a part. */
typedef struct mf_outfile {
    FILE *f; /* write here */
    char *tmp, *path;
} mf_outfile;

/* Starts writing path. Refuses (MINFER_ERR_IO) a path that exists and is
 * neither a regular file nor a symbolic link: a device, FIFO or directory
 * is never replaced. A symbolic link at path is replaced, its target left
 * alone; a regular file keeps its permission bits. */
minfer_status mf_outfile_open(mf_outfile *o, const char *path);
/* Flushes, syncs and closes the temporary file and renames it over path.
 * Any write, flush, sync, close or rename error fails it (MINFER_ERR_IO,
 * naming path and the reason) and removes the temporary file. Either way o
 * is finished with. */
minfer_status mf_outfile_commit(mf_outfile *o);
/* Gives up: closes and removes the temporary file; path is untouched. A
 * no-op on a finished or zeroed mf_outfile. */
void mf_outfile_abort(mf_outfile *o);
/* Writes size bytes to path through an mf_outfile. */
minfer_status mf_write_file(const char *path, const void *data, size_t size);

#endif

/*
 * Files minfer reads and writes.
 *
 * Reading: a path from a model or a test directory is untrusted. A FIFO
 * there would block open() forever and a device could be read without end,
 * so files are opened with O_NONBLOCK (which makes open() of a FIFO return
 * at once) and refused unless fstat() says they are regular files; stat()
 * first spares devices even the open().
 *
 * Writing: a profile, a saved model or a tensor file is written to a new
 * temporary file in the destination's directory, synced, and renamed over
 * the destination, so a failed write (a full disk, /dev/full, a quota)
 * leaves the old file alone and is reported, and no reader sees half a
 * file. A symbolic link at the destination is replaced, not followed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/internal.h"

static const char *kind_name(mode_t m) {
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a regular file";
}

minfer_status mf_open_regular(const char *path, const char *what, int *fd, uint64_t *size) {
    struct stat sb;
    *fd = -1;
    if (stat(path, &sb) != 0)
        return mf_error(MINFER_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return mf_error(MINFER_ERR_IO, "%s '%s' is not a regular file (it is %s)", what, path,
                        kind_name(sb.st_mode));
    /* It may have been swapped since: check what was opened. */
    int f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (f < 0)
        return mf_error(MINFER_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(errno));
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return mf_error(MINFER_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return mf_error(MINFER_ERR_IO, "%s '%s' is not a regular file (it is %s)", what, path,
                        kind_name(sb.st_mode));
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return mf_error(MINFER_ERR_IO, "cannot open %s '%s': %s", what, path, strerror(e));
    }
    *fd = f;
    *size = (uint64_t)sb.st_size;
    return MINFER_OK;
}

minfer_status mf_fopen_regular(const char *path, const char *what, FILE **f, uint64_t *size) {
    int fd;
    *f = NULL;
    minfer_status st = mf_open_regular(path, what, &fd, size);
    if (st != MINFER_OK)
        return st;
    if (!(*f = fdopen(fd, "rb"))) {
        close(fd);
        return mf_error(MINFER_ERR_NOMEM, "out of memory opening %s '%s'", what, path);
    }
    return MINFER_OK;
}

minfer_status mf_outfile_open(mf_outfile *o, const char *path) {
    static atomic_uint counter;
    struct stat sb;
    int have_old = 0, fd = -1;
    o->f = NULL;
    o->tmp = o->path = NULL;
    if (!path || !path[0])
        return mf_error(MINFER_ERR_INVALID_ARG, "cannot write a file with an empty name");
    if (lstat(path, &sb) == 0) {
        struct stat tb;
        /* A link to a device (/dev/stdout) is no file to replace either. */
        if (S_ISLNK(sb.st_mode) && stat(path, &tb) == 0 && !S_ISREG(tb.st_mode))
            return mf_error(MINFER_ERR_IO, "cannot write '%s': it is a link to %s", path,
                            kind_name(tb.st_mode));
        if (!S_ISREG(sb.st_mode) && !S_ISLNK(sb.st_mode))
            return mf_error(MINFER_ERR_IO, "cannot write '%s': it exists and is %s", path,
                            kind_name(sb.st_mode));
        have_old = S_ISREG(sb.st_mode);
    } else if (errno != ENOENT) {
        return mf_error(MINFER_ERR_IO, "cannot write '%s': %s", path, strerror(errno));
    }
    /* ".NAME.PID-N.tmp" beside path: the same file system, so rename() is
     * atomic, and a leftover (after a crash) is visibly temporary. */
    const char *slash = strrchr(path, '/');
    size_t dir_len = slash ? (size_t)(slash - path) + 1 : 0;
    size_t cap = strlen(path) + 48;
    o->path = mf_strdup(path);
    o->tmp = mf_malloc(cap);
    if (!o->path || !o->tmp) {
        mf_outfile_abort(o);
        return mf_error(MINFER_ERR_NOMEM, "cannot write '%s': out of memory", path);
    }
    for (int tries = 0; fd < 0 && tries < 100; tries++) {
        snprintf(o->tmp, cap, "%.*s.%s.%ld-%u.tmp", (int)dir_len, path, path + dir_len,
                 (long)getpid(), atomic_fetch_add(&counter, 1));
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        o->tmp = NULL; /* not ours to remove */
        mf_outfile_abort(o);
        return mf_error(MINFER_ERR_IO, "cannot write '%s': cannot create a temporary file in its "
                        "directory: %s", path, strerror(e));
    }
    if (have_old)
        (void)fchmod(fd, sb.st_mode & 07777); /* best effort: the new file keeps its mode */
    o->f = fdopen(fd, "wb");
    if (!o->f) {
        int e = errno;
        close(fd);
        mf_outfile_abort(o);
        return mf_error(MINFER_ERR_IO, "cannot write '%s': %s", path, strerror(e));
    }
    return MINFER_OK;
}

minfer_status mf_outfile_commit(mf_outfile *o) {
    const char *step = "writing";
    int e = 0;
    if (!o->f)
        return mf_error(MINFER_ERR_INVALID_ARG, "mf_outfile_commit: not open");
    /* errno of a failed fprintf may have been overwritten since; a flush
     * of what is left usually fails again and says why. */
    errno = 0;
    int flushed = fflush(o->f);
    if (flushed != 0 || ferror(o->f)) {
        e = flushed != 0 && errno ? errno : EIO;
    } else if (fsync(fileno(o->f)) != 0 && errno != EINVAL) {
        e = errno; /* EINVAL: a file system that cannot sync; nothing lost */
        step = "syncing";
    }
    int closed = fclose(o->f);
    o->f = NULL;
    if (!e && closed != 0) {
        e = errno ? errno : EIO;
        step = "closing";
    }
    if (!e && rename(o->tmp, o->path) != 0) {
        e = errno;
        step = "renaming the temporary file over";
    }
    if (e) {
        minfer_status st = mf_error(MINFER_ERR_IO, "error %s '%s': %s", step, o->path, strerror(e));
        mf_outfile_abort(o);
        return st;
    }
    free(o->tmp);
    free(o->path);
    o->tmp = o->path = NULL;
    return MINFER_OK;
}

void mf_outfile_abort(mf_outfile *o) {
    if (o->f)
        fclose(o->f);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    o->f = NULL;
    o->tmp = o->path = NULL;
}

minfer_status mf_write_file(const char *path, const void *data, size_t size) {
    mf_outfile o;
    minfer_status st = mf_outfile_open(&o, path);
    if (st != MINFER_OK)
        return st;
    if (size && fwrite(data, 1, size, o.f) != size) {
        st = mf_error(MINFER_ERR_IO, "error writing '%s': %s", path, strerror(errno));
        mf_outfile_abort(&o);
        return st;
    }
    return mf_outfile_commit(&o);
}

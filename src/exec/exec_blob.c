/*  exec_blob - the puts recorded for replay (see exec_blob.h). */
#include "exec_blob.h"
#include "exec_proto.h"
#include "exec_spill.h"
#include "../util/util_err.h"
#include "../util/util_fs.h"
#include "../util/util_hash.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *
exec_blob_path(const char *blobs, const uint8_t fp[16], char *out, size_t n)
{
    /* not snprintf: this runs for every put recorded, and snprintf was
       1,300 instructions of it (callgrind, doc/benchmarks.md, 2026-11-29) */
    size_t d = strlen(blobs);
    if (d + 1 + 32 + 4 >= n) { /* too long: cut, as before */
        char hex[33];
        util_hex(hex, fp, 16);
        snprintf(out, n, "%s/%s.lz4", blobs, hex);
        return out;
    }
    memcpy(out, blobs, d);
    out[d] = '/';
    util_hex(out + d + 1, fp, 16);
    memcpy(out + d + 33, ".lz4", 5);
    return out;
}

int
exec_blob_write(const char *blobs, const uint8_t fp[16], const void *data, size_t n,
                int *fresh)
{
    char path[4200];
    int rc;
    *fresh = 0;
    exec_blob_path(blobs, fp, path, sizeof path);
    if (access(path, F_OK) == 0)
        return 0; /* the same bytes, recorded before */
    if ((rc = util_private_dir(blobs)))
        return rc;
    if ((rc = exec_spill_write(path, data, n)))
        return util_err_ctx(rc, "recording a put of %zu bytes in %s", n, blobs);
    *fresh = 1;
    return 0;
}

int
exec_blob_read(const char *blobs, const uint8_t fp[16], size_t size, uint8_t **out)
{
    char path[4200], hex[33];
    uint8_t got[16];
    exec_blob_path(blobs, fp, path, sizeof path);
    uint8_t *buf = malloc(size ? size : 1);
    if (!buf)
        return util_err(LUX_ENOMEM, "out of memory for a recorded put of %zu bytes", size);
    int rc = exec_spill_read(path, buf, size);
    if (rc) {
        free(buf);
        if (rc == LUX_ENOTFOUND)
            return util_err(LUX_ENOTFOUND, "%s: not recorded", path);
        return util_err_ctx(rc, "recorded put %s", path);
    }
    exec_fingerprint(got, buf, size);
    if (memcmp(got, fp, 16) != 0) {
        util_hex(hex, got, 16);
        free(buf);
        return util_err(LUX_ECORRUPT, "recorded put %s: its bytes hash to %s, not to its name: "
                        "it was altered", path, hex);
    }
    *out = buf;
    return 0;
}

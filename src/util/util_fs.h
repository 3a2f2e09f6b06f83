/*  util_fs - files and directories: private directories for sockets and
    data, whole-file reads, and atomic whole-file writes. */
#ifndef UTIL_FS_H_INCLUDED
#define UTIL_FS_H_INCLUDED

#include <stddef.h>
#include <sys/types.h>

/* Create path and its parents with mode (existing directories are kept);
   0 or LUX_EIO. */
int util_mkdirs(const char *path, mode_t mode);

/* Create path with mode 0700, or check that an existing one is a directory
   owned by us and not open to group or others; 0, LUX_EIO or LUX_EAUTH. */
int util_private_dir(const char *path);

/* Read a whole file into a NUL-terminated malloc'd buffer; NULL and the
   error message set when it cannot. */
char *util_read_file(const char *path, size_t *len);

/* Write a whole file by writing a temporary beside it, fsync, rename;
   0 or LUX_EIO. */
int util_write_file(const char *path, const void *p, size_t n, mode_t mode);

/* Whether path exists. */
int util_exists(const char *path);

/* The absolute path of the running executable into out; 0 or LUX_EIO. */
int util_self_exe(char *out, size_t n);

/* Make path absolute (relative to the current directory) into out. */
int util_abspath(const char *path, char *out, size_t n);

#endif

/*  db_vfs - the log writer's WAL writes gathered, one write per commit
    (see db_vfs.c). */
#ifndef DB_VFS_H_INCLUDED
#define DB_VFS_H_INCLUDED

#include <sqlite3.h>

#define DB_VFS_NAME "lux-wal"

/* Register the VFS (not as the default); SQLITE_OK or SQLite's code.
   Call once, before opening with it; safe to call again. */
int db_vfs_register(void);

/* A VFS that wraps another one (base): every method of the VFS itself
   passes to base, but xOpen, which the wrapper gives, and xDelete, which
   it may give (NULL: base's). szfile is the wrapper's file struct before
   base's own (szOsFile = szfile + base's). The wrapper reads base back
   as db_vfs_base(v). Shared by the log writer's VFS and the tests'
   fault-injecting one, so that a method SQLite adds is passed on in one
   place. */
void db_vfs_wrap(sqlite3_vfs *out, sqlite3_vfs *base, const char *name, int szfile,
                 int (*xopen)(sqlite3_vfs *, const char *, sqlite3_file *, int, int *),
                 int (*xdelete)(sqlite3_vfs *, const char *, int));
#define db_vfs_base(v) ((sqlite3_vfs *) (v)->pAppData)

#endif

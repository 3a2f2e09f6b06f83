/*  db_vfs - the log writer's WAL writes gathered, one write per commit
    (see db_vfs.c). */
#ifndef DB_VFS_H_INCLUDED
#define DB_VFS_H_INCLUDED

#define DB_VFS_NAME "lux-wal"

/* Register the VFS (not as the default); SQLITE_OK or SQLite's code.
   Call once, before opening with it; safe to call again. */
int db_vfs_register(void);

#endif

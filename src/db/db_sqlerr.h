/*  db_sqlerr - a failed SQLite call as a Lux error: the code by the kind
    of failure, the message naming the file, the step and SQLite's words. */
#ifndef DB_SQLERR_H_INCLUDED
#define DB_SQLERR_H_INCLUDED

#include <sqlite3.h>

/* Set the error message "path: what: SQLite's message" from db's last
   error and return its code: LUX_EIO for an I/O error or a full disk,
   LUX_ECORRUPT for a damaged file or not a database, LUX_EREADONLY,
   else LUX_ESQL. */
int db_sqlerr(sqlite3 *db, const char *path, const char *what);

#endif

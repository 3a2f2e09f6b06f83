/*  db_sqlerr - a failed SQLite call as a Lux error (see db_sqlerr.h). */
#include "db_sqlerr.h"
#include "../util/util_err.h"

int
db_sqlerr(sqlite3 *db, const char *path, const char *what)
{
    int code = sqlite3_extended_errcode(db) & 0xff;
    int rc = LUX_ESQL;
    if (code == SQLITE_IOERR || code == SQLITE_FULL)
        rc = LUX_EIO;
    else if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
        rc = LUX_ECORRUPT;
    else if (code == SQLITE_READONLY)
        rc = LUX_EREADONLY;
    return util_err(rc, "%s: %s: %s", path, what, sqlite3_errmsg(db));
}

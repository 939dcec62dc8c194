/// libpq (the relay role's PostgreSQL store), bound on first use: only a `postgresql://` --store loads it.
///
/// Rows from `scripts/lazy-library-table libpq.so.5 postgresql/libpq-fe.h --symbols …` (the functions
/// Sources/Store/PostgresConnection.swift calls); none is variadic or a data symbol.
#include "lazy_library.h"

#include <postgresql/libpq-fe.h>

#define LAZY_LIBRARY lazy_pq
#define PQ_FUNCTIONS(F, V, M) \
    F(int, PQcancel, (PGcancel *a0, char *a1, int a2), (a0, a1, a2)) \
    V(void, PQclear, (PGresult *a0), (a0)) \
    F(char *, PQcmdTuples, (PGresult *a0), (a0)) \
    F(PGconn *, PQconnectdbParams, (const char *const *a0, const char *const *a1, int a2), (a0, a1, a2)) \
    V(void, PQconninfoFree, (PQconninfoOption *a0), (a0)) \
    F(PQconninfoOption *, PQconninfoParse, (const char *a0, char **a1), (a0, a1)) \
    F(char *, PQerrorMessage, (const PGconn *a0), (a0)) \
    F(PGresult *, PQexec, (PGconn *a0, const char *a1), (a0, a1)) \
    F(PGresult *, PQexecPrepared, (PGconn *a0, const char *a1, int a2, const char *const *a3, const int *a4, const int *a5, int a6), (a0, a1, a2, a3, a4, a5, a6)) \
    V(void, PQfinish, (PGconn *a0), (a0)) \
    F(char *, PQfname, (const PGresult *a0, int a1), (a0, a1)) \
    V(void, PQfreeCancel, (PGcancel *a0), (a0)) \
    V(void, PQfreemem, (void *a0), (a0)) \
    F(Oid, PQftype, (const PGresult *a0, int a1), (a0, a1)) \
    F(PGcancel *, PQgetCancel, (PGconn *a0), (a0)) \
    F(int, PQgetisnull, (const PGresult *a0, int a1, int a2), (a0, a1, a2)) \
    F(int, PQgetlength, (const PGresult *a0, int a1, int a2), (a0, a1, a2)) \
    F(char *, PQgetvalue, (const PGresult *a0, int a1, int a2), (a0, a1, a2)) \
    F(int, PQnfields, (const PGresult *a0), (a0)) \
    F(int, PQntuples, (const PGresult *a0), (a0)) \
    F(PGresult *, PQprepare, (PGconn *a0, const char *a1, const char *a2, int a3, const Oid *a4), (a0, a1, a2, a3, a4)) \
    F(char *, PQresultErrorField, (const PGresult *a0, int a1), (a0, a1)) \
    F(ExecStatusType, PQresultStatus, (const PGresult *a0), (a0)) \
    F(PQnoticeProcessor, PQsetNoticeProcessor, (PGconn *a0, PQnoticeProcessor a1, void *a2), (a0, a1, a2)) \
    F(ConnStatusType, PQstatus, (const PGconn *a0), (a0)) \
    F(PGTransactionStatusType, PQtransactionStatus, (const PGconn *a0), (a0))

LAZY_DEFINE_LIBRARY(lazy_pq, "libpq.so.5", "libpq5", PQ_FUNCTIONS)

/// zlib (the mesh's compressed file packets), bound on first use.
///
/// Rows from `scripts/lazy-library-table libz.so.1 zlib.h`; `deflateInit2` and `inflateInit2` are macros over
/// the `_` functions listed here.
#include "lazy_library.h"

#include <zlib.h>

#define LAZY_LIBRARY lazy_z
#define ZLIB_FUNCTIONS(F, V, M) \
    F(int, deflate, (z_streamp a0, int a1), (a0, a1)) \
    F(uLong, deflateBound, (z_streamp a0, uLong a1), (a0, a1)) \
    F(int, deflateEnd, (z_streamp a0), (a0)) \
    F(int, deflateInit2_, (z_streamp a0, int a1, int a2, int a3, int a4, int a5, const char *a6, int a7), (a0, a1, a2, a3, a4, a5, a6, a7)) \
    F(int, inflate, (z_streamp a0, int a1), (a0, a1)) \
    F(int, inflateEnd, (z_streamp a0), (a0)) \
    F(int, inflateInit2_, (z_streamp a0, int a1, const char *a2, int a3), (a0, a1, a2, a3))

LAZY_DEFINE_LIBRARY(lazy_z, "libz.so.1", "zlib1g", ZLIB_FUNCTIONS)

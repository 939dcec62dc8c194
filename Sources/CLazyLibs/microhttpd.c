/// GNU libmicrohttpd (`job serve-relay`'s HTTP server): the functions `job` calls, bound on first use.
#include "lazy_library.h"

#include <stdarg.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

#define LAZY_LIBRARY lazy_microhttpd
#define MICROHTTPD_FUNCTIONS(F, V, M)                                                                             \
    M(MHD_start_daemon_va)                                                                                       \
    M(MHD_get_connection_info)                                                                                   \
    V(void, MHD_stop_daemon, (struct MHD_Daemon *daemon), (daemon))                                              \
    F(MHD_socket, MHD_quiesce_daemon, (struct MHD_Daemon *daemon), (daemon))                                     \
    F(struct MHD_Response *, MHD_create_response_from_buffer, (size_t size, void *buffer,                        \
                                                               enum MHD_ResponseMemoryMode mode), (size, buffer, mode)) \
    F(enum MHD_Result, MHD_add_response_header, (struct MHD_Response *response, const char *header,              \
                                                 const char *content), (response, header, content))             \
    V(void, MHD_destroy_response, (struct MHD_Response *response), (response))                                   \
    F(enum MHD_Result, MHD_queue_response, (struct MHD_Connection *connection, unsigned int status_code,         \
                                            struct MHD_Response *response), (connection, status_code, response)) \
    F(int, MHD_get_connection_values, (struct MHD_Connection *connection, enum MHD_ValueKind kind,               \
                                       MHD_KeyValueIterator iterator, void *iterator_cls),                       \
      (connection, kind, iterator, iterator_cls))                                                                \
    V(void, MHD_suspend_connection, (struct MHD_Connection *connection), (connection))                           \
    V(void, MHD_resume_connection, (struct MHD_Connection *connection), (connection))

LAZY_DEFINE_LIBRARY(lazy_microhttpd, "libmicrohttpd.so.12", "libmicrohttpd12", MICROHTTPD_FUNCTIONS)

/* MHD_start_daemon is variadic (a list of options ended by MHD_OPTION_END); the library also exports the same
   entry point taking a va_list, which passes the options on whatever their types. */
struct MHD_Daemon *MHD_start_daemon(unsigned int flags, uint16_t port, MHD_AcceptPolicyCallback apc, void *apc_cls,
                                    MHD_AccessHandlerCallback dh, void *dh_cls, ...) {
    va_list options;
    va_start(options, dh_cls);
    struct MHD_Daemon *daemon = LAZY_REAL(MHD_start_daemon_va)(flags, port, apc, apc_cls, dh, dh_cls, options);
    va_end(options);
    return daemon;
}

/* MHD_get_connection_info is variadic too, with no va_list form; the info types job asks for
   (MHD_CONNECTION_INFO_CONNECTION_FD, MHD_CONNECTION_INFO_CLIENT_ADDRESS) take no further argument, so none is
   passed on. */
const union MHD_ConnectionInfo *MHD_get_connection_info(struct MHD_Connection *connection, enum MHD_ConnectionInfoType info_type, ...) {
    return LAZY_REAL(MHD_get_connection_info)(connection, info_type);
}

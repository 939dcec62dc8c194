#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// MHD_start_daemon is variadic (Swift cannot call it): the daemon the HTTPServer module runs, over an
/// already listening socket, with an epoll thread pool for I/O, suspend/resume (handlers run on the caller's own
/// workers), every limit set explicitly, and a callback told when each connection starts and closes (called
/// before libmicrohttpd closes the connection's socket).
static inline struct MHD_Daemon *mhd_shim_start(int listen_fd, unsigned int threads, unsigned int connection_limit,
                                                unsigned int per_ip_limit, unsigned int timeout_seconds, size_t memory_limit,
                                                MHD_AccessHandlerCallback handler, void *handler_cls,
                                                MHD_RequestCompletedCallback completed, void *completed_cls,
                                                MHD_NotifyConnectionCallback connection_notify, void *notify_cls) {
    return MHD_start_daemon(MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME, 0, NULL, NULL, handler, handler_cls,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket) listen_fd,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_ip_limit,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeout_seconds,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, memory_limit,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, connection_notify, notify_cls,
                            MHD_OPTION_END);
}

/// The connection's socket (MHD_get_connection_info is variadic), or -1.
static inline int mhd_shim_connection_fd(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int) info->connect_fd;
}

/// The connection's peer address as text (IPv4 or IPv6) in `buffer` (at least INET6_ADDRSTRLEN bytes); 0, or -1
/// when it is neither.
static inline int mhd_shim_client_address(struct MHD_Connection *connection, char *buffer, socklen_t size) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    if (info == NULL || info->client_addr == NULL) return -1;
    const struct sockaddr *address = info->client_addr;
    if (address->sa_family == AF_INET) {
        return inet_ntop(AF_INET, &((const struct sockaddr_in *) address)->sin_addr, buffer, size) == NULL ? -1 : 0;
    }
    if (address->sa_family == AF_INET6) {
        return inet_ntop(AF_INET6, &((const struct sockaddr_in6 *) address)->sin6_addr, buffer, size) == NULL ? -1 : 0;
    }
    return -1;
}

#endif

/// ngtcp2 (QUIC for the grants links): the functions `job` calls, bound on first use.
#include "lazy_library.h"

#include <ngtcp2/ngtcp2.h>

#define LAZY_LIBRARY lazy_ngtcp2
#define NGTCP2_FUNCTIONS(F, V, M)                                                                                 \
    F(int, ngtcp2_accept, (ngtcp2_pkt_hd *dest, const uint8_t *pkt, size_t pktlen), (dest, pkt, pktlen))         \
    V(void, ngtcp2_cid_init, (ngtcp2_cid *cid, const uint8_t *data, size_t datalen), (cid, data, datalen))       \
    F(int, ngtcp2_conn_client_new_versioned,                                                                     \
      (ngtcp2_conn **pconn, const ngtcp2_cid *dcid, const ngtcp2_cid *scid, const ngtcp2_path *path,            \
       uint32_t client_chosen_version, int callbacks_version, const ngtcp2_callbacks *callbacks,                 \
       int settings_version, const ngtcp2_settings *settings, int transport_params_version,                      \
       const ngtcp2_transport_params *params, const ngtcp2_mem *mem, void *user_data),                           \
      (pconn, dcid, scid, path, client_chosen_version, callbacks_version, callbacks, settings_version, settings, \
       transport_params_version, params, mem, user_data))                                                        \
    F(int, ngtcp2_conn_server_new_versioned,                                                                     \
      (ngtcp2_conn **pconn, const ngtcp2_cid *dcid, const ngtcp2_cid *scid, const ngtcp2_path *path,            \
       uint32_t client_chosen_version, int callbacks_version, const ngtcp2_callbacks *callbacks,                 \
       int settings_version, const ngtcp2_settings *settings, int transport_params_version,                      \
       const ngtcp2_transport_params *params, const ngtcp2_mem *mem, void *user_data),                           \
      (pconn, dcid, scid, path, client_chosen_version, callbacks_version, callbacks, settings_version, settings, \
       transport_params_version, params, mem, user_data))                                                        \
    V(void, ngtcp2_conn_del, (ngtcp2_conn *conn), (conn))                                                        \
    V(void, ngtcp2_conn_extend_max_offset, (ngtcp2_conn *conn, uint64_t datalen), (conn, datalen))               \
    F(int, ngtcp2_conn_extend_max_stream_offset, (ngtcp2_conn *conn, int64_t stream_id, uint64_t datalen),       \
      (conn, stream_id, datalen))                                                                                \
    V(void, ngtcp2_conn_get_connection_close_error, (ngtcp2_conn *conn, ngtcp2_connection_close_error *ccerr),  \
      (conn, ccerr))                                                                                             \
    F(ngtcp2_tstamp, ngtcp2_conn_get_expiry, (ngtcp2_conn *conn), (conn))                                        \
    F(uint8_t, ngtcp2_conn_get_tls_alert, (ngtcp2_conn *conn), (conn))                                           \
    F(int, ngtcp2_conn_handle_expiry, (ngtcp2_conn *conn, ngtcp2_tstamp ts), (conn, ts))                         \
    F(int, ngtcp2_conn_open_bidi_stream, (ngtcp2_conn *conn, int64_t *pstream_id, void *stream_user_data),       \
      (conn, pstream_id, stream_user_data))                                                                      \
    F(int, ngtcp2_conn_read_pkt_versioned, (ngtcp2_conn *conn, const ngtcp2_path *path, int pkt_info_version,   \
                                            const ngtcp2_pkt_info *pi, const uint8_t *pkt, size_t pktlen,        \
                                            ngtcp2_tstamp ts), (conn, path, pkt_info_version, pi, pkt, pktlen, ts)) \
    V(void, ngtcp2_conn_set_tls_native_handle, (ngtcp2_conn *conn, void *tls_native_handle),                     \
      (conn, tls_native_handle))                                                                                 \
    F(int, ngtcp2_conn_shutdown_stream, (ngtcp2_conn *conn, int64_t stream_id, uint64_t app_error_code),         \
      (conn, stream_id, app_error_code))                                                                         \
    F(ngtcp2_ssize, ngtcp2_conn_write_connection_close_versioned,                                                \
      (ngtcp2_conn *conn, ngtcp2_path *path, int pkt_info_version, ngtcp2_pkt_info *pi, uint8_t *dest,           \
       size_t destlen, const ngtcp2_connection_close_error *ccerr, ngtcp2_tstamp ts),                            \
      (conn, path, pkt_info_version, pi, dest, destlen, ccerr, ts))                                              \
    F(ngtcp2_ssize, ngtcp2_conn_writev_stream_versioned,                                                         \
      (ngtcp2_conn *conn, ngtcp2_path *path, int pkt_info_version, ngtcp2_pkt_info *pi, uint8_t *dest,           \
       size_t destlen, ngtcp2_ssize *pdatalen, uint32_t flags, int64_t stream_id, const ngtcp2_vec *datav,       \
       size_t datavcnt, ngtcp2_tstamp ts),                                                                       \
      (conn, path, pkt_info_version, pi, dest, destlen, pdatalen, flags, stream_id, datav, datavcnt, ts))        \
    V(void, ngtcp2_connection_close_error_default, (ngtcp2_connection_close_error *ccerr), (ccerr))              \
    V(void, ngtcp2_connection_close_error_set_application_error,                                                 \
      (ngtcp2_connection_close_error *ccerr, uint64_t error_code, const uint8_t *reason, size_t reasonlen),      \
      (ccerr, error_code, reason, reasonlen))                                                                    \
    V(void, ngtcp2_connection_close_error_set_transport_error_liberr,                                            \
      (ngtcp2_connection_close_error *ccerr, int liberr, const uint8_t *reason, size_t reasonlen),               \
      (ccerr, liberr, reason, reasonlen))                                                                        \
    V(void, ngtcp2_connection_close_error_set_transport_error_tls_alert,                                         \
      (ngtcp2_connection_close_error *ccerr, uint8_t tls_alert, const uint8_t *reason, size_t reasonlen),        \
      (ccerr, tls_alert, reason, reasonlen))                                                                     \
    F(int, ngtcp2_is_bidi_stream, (int64_t stream_id), (stream_id))                                              \
    V(void, ngtcp2_path_storage_zero, (ngtcp2_path_storage *ps), (ps))                                           \
    F(int, ngtcp2_pkt_decode_version_cid, (ngtcp2_version_cid *dest, const uint8_t *data, size_t datalen,        \
                                           size_t short_dcidlen), (dest, data, datalen, short_dcidlen))          \
    V(void, ngtcp2_settings_default_versioned, (int settings_version, ngtcp2_settings *settings),                \
      (settings_version, settings))                                                                              \
    V(void, ngtcp2_transport_params_default_versioned, (int transport_params_version, ngtcp2_transport_params *params), \
      (transport_params_version, params))

LAZY_DEFINE_LIBRARY(lazy_ngtcp2, "libngtcp2.so.9", "libngtcp2-9", NGTCP2_FUNCTIONS)

/// ngtcp2 + GnuTLS glue for one QUIC connection: see cquic.h.
#include "cquic.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/eventfd.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>
#include <gnutls/gnutls.h>
#include <gnutls/abstract.h>
#include <gnutls/crypto.h>

/// TLS 1.3 only, raw public keys both ways, the suites and groups iroh offers, no middlebox compatibility mode.
static const char *const PRIORITY =
    "NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:"
    "-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:"
    "-CTYPE-ALL:+CTYPE-CLI-RAWPK:+CTYPE-SRV-RAWPK:%DISABLE_TLS13_COMPAT_MODE";

/// The DER prefix of an Ed25519 SubjectPublicKeyInfo; the key's 32 bytes follow.
static const uint8_t SPKI_PREFIX[12] = {0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00};

/// Flow-control windows: one exchange's frames are at most 64 KiB + 4 bytes each.
#define STREAM_WINDOW (256 * 1024)
#define CONN_WINDOW (512 * 1024)

struct vq_creds {
    gnutls_certificate_credentials_t cred;
};

/// One queued piece of stream data, kept until the peer acknowledged all of it (ngtcp2 retransmits from it).
typedef struct chunk {
    struct chunk *next;
    uint64_t offset;   // stream offset of data[0]
    size_t length;
    uint8_t data[];
} chunk;

struct vq_conn {
    ngtcp2_conn *conn;
    gnutls_session_t session;
    ngtcp2_crypto_conn_ref ref;
    int is_server;
    uint8_t expected[32];
    uint8_t peer[32];
    int has_peer;
    int wrong_peer;
    int established;
    int ended;          // over: no more packets
    int closing;        // a CONNECTION_CLOSE is due
    int reason;
    uint64_t code;
    ngtcp2_connection_close_error ccerr;
    uint8_t prefix[VQ_CID_PREFIX];
    uint8_t odcid[20];
    size_t odcid_length;
    struct sockaddr_storage local, remote;
    socklen_t local_length, remote_length;
    // The exchange's stream.
    int64_t stream;     // -1 until opened
    uint8_t *recv;
    size_t recv_start, recv_end, recv_capacity;
    int recv_fin, recv_reset;
    chunk *send_head, *send_tail;
    uint64_t send_queued;  // stream offset after the last queued byte
    uint64_t send_sent;    // stream offset handed to ngtcp2
    uint64_t send_acked;   // stream offset acknowledged
    int fin_wanted, fin_sent;
};

int vq_eventfd(void) { return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC); }

uint64_t vq_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void random_bytes(uint8_t *out, size_t length) {
    if (gnutls_rnd(GNUTLS_RND_RANDOM, out, length) != 0) abort();
}

// ---- Credentials ----

/// Called by GnuTLS when the peer's certificate arrives: it must be a raw Ed25519 key; a client also checks it is
/// the endpoint it dialled. Non-zero refuses the handshake.
static int verify_peer(gnutls_session_t session) {
    ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(session);
    vq_conn *c = ref->user_data;
    if (gnutls_certificate_type_get2(session, GNUTLS_CTYPE_PEERS) != GNUTLS_CRT_RAWPK) return -1;
    unsigned count = 0;
    const gnutls_datum_t *certs = gnutls_certificate_get_peers(session, &count);
    if (certs == NULL || count < 1 || certs[0].size != 44 || memcmp(certs[0].data, SPKI_PREFIX, 12) != 0) return -1;
    memcpy(c->peer, certs[0].data + 12, 32);
    c->has_peer = 1;
    if (!c->is_server && memcmp(c->peer, c->expected, 32) != 0) {
        c->wrong_peer = 1;
        return -1;
    }
    return 0;
}

vq_creds *vq_creds_new(const uint8_t *seed, const uint8_t *pub) {
    vq_creds *creds = calloc(1, sizeof *creds);
    if (!creds) return NULL;
    gnutls_privkey_t key = NULL;
    gnutls_pcert_st *pcert = gnutls_malloc(sizeof *pcert);
    uint8_t spki[44];
    memcpy(spki, SPKI_PREFIX, 12);
    memcpy(spki + 12, pub, 32);
    gnutls_datum_t x = {(unsigned char *)pub, 32}, k = {(unsigned char *)seed, 32}, der = {spki, 44};
    if (!pcert || gnutls_certificate_allocate_credentials(&creds->cred) != 0) goto fail;
    if (gnutls_privkey_init(&key) != 0 || gnutls_privkey_import_ecc_raw(key, GNUTLS_ECC_CURVE_ED25519, &x, NULL, &k) != 0) goto fail;
    if (gnutls_pcert_import_rawpk_raw(pcert, &der, GNUTLS_X509_FMT_DER, 0, 0) != 0) goto fail;
    // The credentials own the key and the certificate from here on.
    if (gnutls_certificate_set_key(creds->cred, NULL, 0, pcert, 1, key) != 0) goto fail;
    gnutls_certificate_set_verify_function(creds->cred, verify_peer);
    return creds;
fail:
    if (key) gnutls_privkey_deinit(key);
    if (creds->cred) gnutls_certificate_free_credentials(creds->cred);
    free(creds);
    return NULL;
}

void vq_creds_free(vq_creds *creds) {
    if (!creds) return;
    gnutls_certificate_free_credentials(creds->cred);
    free(creds);
}

// ---- ngtcp2 callbacks ----

static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref) { return ((vq_conn *)ref->user_data)->conn; }

static void rand_cb(uint8_t *dest, size_t length, const ngtcp2_rand_ctx *ctx) {
    (void)ctx;
    random_bytes(dest, length);
}

static int new_cid_cb(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token, size_t cidlen, void *user_data) {
    (void)conn;
    vq_conn *c = user_data;
    uint8_t data[VQ_CID_LENGTH];
    memcpy(data, c->prefix, VQ_CID_PREFIX);
    random_bytes(data + VQ_CID_PREFIX, VQ_CID_LENGTH - VQ_CID_PREFIX);
    (void)cidlen;
    ngtcp2_cid_init(cid, data, VQ_CID_LENGTH);
    random_bytes(token, NGTCP2_STATELESS_RESET_TOKENLEN);
    return 0;
}

static int handshake_completed_cb(ngtcp2_conn *conn, void *user_data) {
    (void)conn;
    vq_conn *c = user_data;
    if (!c->has_peer) return NGTCP2_ERR_CALLBACK_FAILURE;
    c->established = 1;
    return 0;
}

static int recv_stream_data_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                               const uint8_t *data, size_t length, void *user_data, void *stream_user_data) {
    (void)offset; (void)stream_user_data;
    vq_conn *c = user_data;
    if (c->stream != stream_id) {
        // Not the exchange's stream: its data is not wanted, but its credit is given back.
        ngtcp2_conn_extend_max_offset(conn, length);
        return 0;
    }
    if (length > 0) {
        if (c->recv_start > 0 && c->recv_end + length > c->recv_capacity) {
            memmove(c->recv, c->recv + c->recv_start, c->recv_end - c->recv_start);
            c->recv_end -= c->recv_start;
            c->recv_start = 0;
        }
        if (c->recv_end + length > c->recv_capacity) {
            size_t capacity = c->recv_capacity ? c->recv_capacity : 16384;
            while (capacity < c->recv_end + length) capacity *= 2;
            uint8_t *grown = realloc(c->recv, capacity);
            if (!grown) return NGTCP2_ERR_CALLBACK_FAILURE;
            c->recv = grown;
            c->recv_capacity = capacity;
        }
        memcpy(c->recv + c->recv_end, data, length);
        c->recv_end += length;
    }
    if (flags & NGTCP2_STREAM_DATA_FLAG_FIN) c->recv_fin = 1;
    return 0;
}

static int stream_open_cb(ngtcp2_conn *conn, int64_t stream_id, void *user_data) {
    vq_conn *c = user_data;
    // The first bidirectional stream the client opens carries the exchange; any other is refused.
    if (c->is_server && c->stream < 0 && ngtcp2_is_bidi_stream(stream_id)) {
        c->stream = stream_id;
        return 0;
    }
    ngtcp2_conn_shutdown_stream(conn, stream_id, 0);
    return 0;
}

static int stream_reset_cb(ngtcp2_conn *conn, int64_t stream_id, uint64_t final_size, uint64_t code, void *user_data,
                           void *stream_user_data) {
    (void)conn; (void)final_size; (void)code; (void)stream_user_data;
    vq_conn *c = user_data;
    if (stream_id == c->stream) c->recv_reset = 1;
    return 0;
}

static int stream_close_cb(ngtcp2_conn *conn, uint32_t flags, int64_t stream_id, uint64_t code, void *user_data,
                           void *stream_user_data) {
    (void)conn; (void)flags; (void)code; (void)stream_user_data;
    vq_conn *c = user_data;
    if (stream_id == c->stream && !c->recv_fin) c->recv_reset = 1;
    return 0;
}

static int acked_cb(ngtcp2_conn *conn, int64_t stream_id, uint64_t offset, uint64_t length, void *user_data,
                    void *stream_user_data) {
    (void)conn; (void)stream_user_data;
    vq_conn *c = user_data;
    if (stream_id != c->stream) return 0;
    if (offset + length > c->send_acked) c->send_acked = offset + length;
    while (c->send_head && c->send_head->offset + c->send_head->length <= c->send_acked) {
        chunk *done = c->send_head;
        c->send_head = done->next;
        if (!c->send_head) c->send_tail = NULL;
        free(done);
    }
    return 0;
}

static void fill_callbacks(ngtcp2_callbacks *cb, int server) {
    memset(cb, 0, sizeof *cb);
    if (server) cb->recv_client_initial = ngtcp2_crypto_recv_client_initial_cb;
    else {
        cb->client_initial = ngtcp2_crypto_client_initial_cb;
        cb->recv_retry = ngtcp2_crypto_recv_retry_cb;
    }
    cb->recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb;
    cb->encrypt = ngtcp2_crypto_encrypt_cb;
    cb->decrypt = ngtcp2_crypto_decrypt_cb;
    cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
    cb->update_key = ngtcp2_crypto_update_key_cb;
    cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
    cb->delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
    cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
    cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
    cb->rand = rand_cb;
    cb->get_new_connection_id = new_cid_cb;
    cb->handshake_completed = handshake_completed_cb;
    cb->recv_stream_data = recv_stream_data_cb;
    cb->stream_open = stream_open_cb;
    cb->stream_reset = stream_reset_cb;
    cb->stream_close = stream_close_cb;
    cb->acked_stream_data_offset = acked_cb;
}

static void fill_settings(ngtcp2_settings *settings, uint64_t handshake_timeout_ms) {
    ngtcp2_settings_default(settings);
    settings->initial_ts = vq_now();
    settings->handshake_timeout = handshake_timeout_ms * NGTCP2_MILLISECONDS;
    settings->max_window = CONN_WINDOW;
    settings->max_stream_window = STREAM_WINDOW;
}

static void fill_params(ngtcp2_transport_params *params, int server, uint64_t idle_timeout_ms) {
    ngtcp2_transport_params_default(params);
    params->initial_max_data = CONN_WINDOW;
    params->initial_max_stream_data_bidi_local = STREAM_WINDOW;
    params->initial_max_stream_data_bidi_remote = STREAM_WINDOW;
    params->initial_max_stream_data_uni = 0;
    // One exchange per connection: the server lets the client open one bidirectional stream, the client none.
    params->initial_max_streams_bidi = server ? 1 : 0;
    params->initial_max_streams_uni = 0;
    params->max_idle_timeout = idle_timeout_ms * NGTCP2_MILLISECONDS;
    params->active_connection_id_limit = 2;
}

static vq_conn *conn_alloc(const struct sockaddr *local, socklen_t local_length, const struct sockaddr *remote,
                           socklen_t remote_length) {
    vq_conn *c = calloc(1, sizeof *c);
    if (!c || local_length > sizeof c->local || remote_length > sizeof c->remote) { free(c); return NULL; }
    memcpy(&c->local, local, local_length);
    memcpy(&c->remote, remote, remote_length);
    c->local_length = local_length;
    c->remote_length = remote_length;
    c->stream = -1;
    c->ref.get_conn = get_conn;
    c->ref.user_data = c;
    ngtcp2_connection_close_error_default(&c->ccerr);
    return c;
}

static int session_new(vq_conn *c, vq_creds *creds, int server, const char *alpns, size_t alpn_count) {
    unsigned flags = (server ? GNUTLS_SERVER : GNUTLS_CLIENT) | GNUTLS_ENABLE_RAWPK | GNUTLS_NO_END_OF_EARLY_DATA;
    if (gnutls_init(&c->session, flags) != 0) { c->session = NULL; return -1; }
    if ((server ? ngtcp2_crypto_gnutls_configure_server_session(c->session)
                : ngtcp2_crypto_gnutls_configure_client_session(c->session)) != 0) return -1;
    if (gnutls_priority_set_direct(c->session, PRIORITY, NULL) != 0) return -1;
    if (gnutls_credentials_set(c->session, GNUTLS_CRD_CERTIFICATE, creds->cred) != 0) return -1;
    if (server) gnutls_certificate_server_set_request(c->session, GNUTLS_CERT_REQUIRE);
    gnutls_datum_t names[8];
    size_t count = 0;
    const char *cursor = alpns;
    while (count < alpn_count && count < 8) {
        names[count].data = (unsigned char *)cursor;
        names[count].size = (unsigned)strlen(cursor);
        cursor += names[count].size + 1;
        count++;
    }
    if (gnutls_alpn_set_protocols(c->session, names, (unsigned)count, GNUTLS_ALPN_MANDATORY) != 0) return -1;
    gnutls_session_set_ptr(c->session, &c->ref);
    ngtcp2_conn_set_tls_native_handle(c->conn, c->session);
    return 0;
}

static ngtcp2_path path_of(vq_conn *c) {
    ngtcp2_path path;
    memset(&path, 0, sizeof path);
    path.local.addr = (ngtcp2_sockaddr *)&c->local;
    path.local.addrlen = c->local_length;
    path.remote.addr = (ngtcp2_sockaddr *)&c->remote;
    path.remote.addrlen = c->remote_length;
    return path;
}

vq_conn *vq_client_new(vq_creds *creds, const struct sockaddr *local, socklen_t local_length,
                       const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *expected, const char *alpn, uint64_t idle_timeout_ms, uint64_t handshake_timeout_ms) {
    vq_conn *c = conn_alloc(local, local_length, remote, remote_length);
    if (!c) return NULL;
    memcpy(c->expected, expected, 32);
    random_bytes(c->prefix, VQ_CID_PREFIX);
    uint8_t dcid_bytes[VQ_CID_LENGTH], scid_bytes[VQ_CID_LENGTH];
    random_bytes(dcid_bytes, sizeof dcid_bytes);
    memcpy(scid_bytes, c->prefix, VQ_CID_PREFIX);
    random_bytes(scid_bytes + VQ_CID_PREFIX, VQ_CID_LENGTH - VQ_CID_PREFIX);
    ngtcp2_cid dcid, scid;
    ngtcp2_cid_init(&dcid, dcid_bytes, sizeof dcid_bytes);
    ngtcp2_cid_init(&scid, scid_bytes, sizeof scid_bytes);
    ngtcp2_callbacks callbacks;
    ngtcp2_settings settings;
    ngtcp2_transport_params params;
    fill_callbacks(&callbacks, 0);
    fill_settings(&settings, handshake_timeout_ms);
    fill_params(&params, 0, idle_timeout_ms);
    ngtcp2_path path = path_of(c);
    if (ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &path, NGTCP2_PROTO_VER_V1, &callbacks, &settings, &params,
                               NULL, c) != 0) { free(c); return NULL; }
    if (session_new(c, creds, 0, alpn, 1) != 0) { vq_conn_free(c); return NULL; }
    return c;
}

int vq_decode_dcid(const uint8_t *packet, size_t length, uint8_t *dcid, size_t *dcid_length, int *is_initial) {
    ngtcp2_version_cid vc;
    if (length == 0 || ngtcp2_pkt_decode_version_cid(&vc, packet, length, VQ_CID_LENGTH) != 0) return -1;
    if (vc.dcidlen > 20) return -1;
    int long_header = (packet[0] & 0x80) != 0;
    if (long_header && vc.version != NGTCP2_PROTO_VER_V1) return -1;
    memcpy(dcid, vc.dcid, vc.dcidlen);
    *dcid_length = vc.dcidlen;
    // Long header, packet type Initial (bits 0x30 == 0) in QUIC v1.
    *is_initial = long_header && ((packet[0] & 0x30) == 0);
    return 0;
}

int vq_initial_has_token(const uint8_t *packet, size_t length) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, packet, length) != 0 || hd.version != NGTCP2_PROTO_VER_V1) return -1;
    return hd.token.len > 0 ? 1 : 0;
}

ssize_t vq_write_retry(const uint8_t *packet, size_t length, const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *secret, uint8_t *out, size_t capacity) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, packet, length) != 0 || hd.version != NGTCP2_PROTO_VER_V1) return -1;
    uint8_t scid_bytes[VQ_CID_LENGTH];
    random_bytes(scid_bytes, sizeof scid_bytes);
    ngtcp2_cid retry_scid;
    ngtcp2_cid_init(&retry_scid, scid_bytes, sizeof scid_bytes);
    uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
    ngtcp2_ssize token_length = ngtcp2_crypto_generate_retry_token(token, secret, VQ_RETRY_SECRET_LENGTH, hd.version,
                                                                   (const ngtcp2_sockaddr *)remote, remote_length,
                                                                   &retry_scid, &hd.dcid, vq_now());
    if (token_length < 0) return -1;
    ngtcp2_ssize n = ngtcp2_crypto_write_retry(out, capacity, hd.version, &hd.scid, &retry_scid, &hd.dcid, token,
                                               (size_t)token_length);
    return n < 0 ? -1 : n;
}

vq_conn *vq_server_new(vq_creds *creds, const struct sockaddr *local, socklen_t local_length,
                       const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *packet, size_t length, const uint8_t *prefix, const uint8_t *secret,
                       const char *alpns, size_t alpn_count, uint64_t idle_timeout_ms, uint64_t handshake_timeout_ms) {
    ngtcp2_pkt_hd hd;
    if (ngtcp2_accept(&hd, packet, length) != 0 || hd.version != NGTCP2_PROTO_VER_V1) return NULL;
    ngtcp2_cid odcid;
    int retried = hd.token.len > 0;
    if (retried && ngtcp2_crypto_verify_retry_token(&odcid, hd.token.base, hd.token.len, secret, VQ_RETRY_SECRET_LENGTH,
                                                    hd.version, (const ngtcp2_sockaddr *)remote, remote_length, &hd.dcid,
                                                    10 * NGTCP2_SECONDS, vq_now()) != 0) return NULL;
    vq_conn *c = conn_alloc(local, local_length, remote, remote_length);
    if (!c) return NULL;
    c->is_server = 1;
    memcpy(c->prefix, prefix, VQ_CID_PREFIX);
    memcpy(c->odcid, hd.dcid.data, hd.dcid.datalen);
    c->odcid_length = hd.dcid.datalen;
    uint8_t scid_bytes[VQ_CID_LENGTH];
    memcpy(scid_bytes, prefix, VQ_CID_PREFIX);
    random_bytes(scid_bytes + VQ_CID_PREFIX, VQ_CID_LENGTH - VQ_CID_PREFIX);
    ngtcp2_cid scid;
    ngtcp2_cid_init(&scid, scid_bytes, sizeof scid_bytes);
    ngtcp2_callbacks callbacks;
    ngtcp2_settings settings;
    ngtcp2_transport_params params;
    fill_callbacks(&callbacks, 1);
    fill_settings(&settings, handshake_timeout_ms);
    fill_params(&params, 1, idle_timeout_ms);
    if (retried) {
        // The client came back with our Retry's token: the original id is in it, the Retry's id is ours.
        params.original_dcid = odcid;
        params.retry_scid = hd.dcid;
        params.retry_scid_present = 1;
    } else {
        params.original_dcid = hd.dcid;
    }
    params.stateless_reset_token_present = 1;
    random_bytes(params.stateless_reset_token, sizeof params.stateless_reset_token);
    ngtcp2_path path = path_of(c);
    if (ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &path, hd.version, &callbacks, &settings, &params,
                               NULL, c) != 0) { free(c); return NULL; }
    if (session_new(c, creds, 1, alpns, alpn_count) != 0) { vq_conn_free(c); return NULL; }
    return c;
}

void vq_conn_free(vq_conn *c) {
    if (!c) return;
    if (c->conn) ngtcp2_conn_del(c->conn);
    if (c->session) gnutls_deinit(c->session);
    while (c->send_head) {
        chunk *next = c->send_head->next;
        free(c->send_head);
        c->send_head = next;
    }
    free(c->recv);
    free(c);
}

/// Marks the connection to end with `reason`, sending a CONNECTION_CLOSE carrying the error `rv` stands for.
static int fail(vq_conn *c, int rv, int reason) {
    c->reason = reason;
    if (rv == NGTCP2_ERR_CRYPTO) {
        uint8_t alert = ngtcp2_conn_get_tls_alert(c->conn);
        ngtcp2_connection_close_error_set_transport_error_tls_alert(&c->ccerr, alert, NULL, 0);
        c->code = 0x100 + alert;
    } else {
        ngtcp2_connection_close_error_set_transport_error_liberr(&c->ccerr, rv, NULL, 0);
    }
    c->closing = 1;
    return 1;
}

static void record_peer_close(vq_conn *c) {
    ngtcp2_connection_close_error peer;
    ngtcp2_conn_get_connection_close_error(c->conn, &peer);
    c->reason = peer.type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_APPLICATION ? VQ_END_PEER_APPLICATION : VQ_END_PEER_TRANSPORT;
    c->code = peer.error_code;
}

int vq_read(vq_conn *c, const uint8_t *packet, size_t length, const struct sockaddr *local, socklen_t local_length,
            const struct sockaddr *remote, socklen_t remote_length) {
    if (c->ended) return 2;
    if (c->closing) return 1;
    ngtcp2_path path;
    memset(&path, 0, sizeof path);
    path.local.addr = (ngtcp2_sockaddr *)local;
    path.local.addrlen = local_length;
    path.remote.addr = (ngtcp2_sockaddr *)remote;
    path.remote.addrlen = remote_length;
    ngtcp2_pkt_info pi = {0};
    int rv = ngtcp2_conn_read_pkt(c->conn, &path, &pi, packet, length, vq_now());
    if (rv == 0) return 0;
    if (rv == NGTCP2_ERR_DRAINING) { record_peer_close(c); c->ended = 1; return 2; }
    if (rv == NGTCP2_ERR_DROP_CONN) { c->reason = VQ_END_DROPPED; c->ended = 1; return 2; }
    if (rv == NGTCP2_ERR_CRYPTO || rv == NGTCP2_ERR_CALLBACK_FAILURE) {
        if (c->wrong_peer) return fail(c, rv, VQ_END_WRONG_PEER);
        if (ngtcp2_conn_get_tls_alert(c->conn) != 0 || rv == NGTCP2_ERR_CRYPTO) return fail(c, NGTCP2_ERR_CRYPTO, VQ_END_LOCAL_TLS);
    }
    return fail(c, rv, VQ_END_LOCAL_ERROR);
}

ssize_t vq_write(vq_conn *c, uint8_t *out, size_t capacity) {
    if (c->ended) return -1;
    ngtcp2_path_storage ps;
    ngtcp2_path_storage_zero(&ps);
    ngtcp2_pkt_info pi;
    uint64_t now = vq_now();
    if (c->closing) {
        c->ended = 1;
        ngtcp2_ssize n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, &pi, out, capacity, &c->ccerr, now);
        return n > 0 ? n : -1;
    }
    for (;;) {
        ngtcp2_vec vec[8];
        size_t count = 0;
        int64_t stream = -1;
        uint32_t flags = NGTCP2_WRITE_STREAM_FLAG_NONE;
        if (c->stream >= 0 && (c->send_sent < c->send_queued || (c->fin_wanted && !c->fin_sent))) {
            stream = c->stream;
            for (chunk *k = c->send_head; k && count < 8; k = k->next) {
                uint64_t end = k->offset + k->length;
                if (end <= c->send_sent) continue;
                uint64_t skip = c->send_sent > k->offset ? c->send_sent - k->offset : 0;
                vec[count].base = k->data + skip;
                vec[count].len = k->length - skip;
                count++;
            }
            if (c->fin_wanted && (count == 0 || c->send_tail->offset + c->send_tail->length == c->send_queued)) {
                // FIN rides with the last queued bytes (or alone).
                int all = 1;
                uint64_t total = 0;
                for (size_t i = 0; i < count; i++) total += vec[i].len;
                all = c->send_sent + total == c->send_queued;
                if (all) flags |= NGTCP2_WRITE_STREAM_FLAG_FIN;
            }
        }
        ngtcp2_ssize accepted = -1;
        ngtcp2_ssize n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, out, capacity, &accepted, flags, stream,
                                                   count ? vec : NULL, count, now);
        if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED || n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND) {
            // The stream cannot take more now: send whatever else is due without it.
            n = ngtcp2_conn_writev_stream(c->conn, &ps.path, &pi, out, capacity, NULL, NGTCP2_WRITE_STREAM_FLAG_NONE,
                                          -1, NULL, 0, now);
            accepted = -1;
        }
        if (n < 0) {
            fail(c, (int)n, VQ_END_LOCAL_ERROR);
            c->ended = 1;
            return -1;
        }
        if (accepted >= 0 && stream >= 0) {
            c->send_sent += (uint64_t)accepted;
            if ((flags & NGTCP2_WRITE_STREAM_FLAG_FIN) && c->send_sent == c->send_queued) c->fin_sent = 1;
        }
        // No ngtcp2_conn_update_pkt_tx_time: without it ngtcp2 does not pace. Its pacer, fed the default 333 ms
        // initial RTT, would space a handshake flight's datagrams tens of milliseconds apart; the congestion
        // window still bounds what is in flight.
        return n;
    }
}

uint64_t vq_expiry(vq_conn *c) { return c->ended ? UINT64_MAX : ngtcp2_conn_get_expiry(c->conn); }

int vq_handle_expiry(vq_conn *c) {
    if (c->ended) return 1;
    if (c->closing) return 0;
    int rv = ngtcp2_conn_handle_expiry(c->conn, vq_now());
    if (rv == 0) return 0;
    c->reason = rv == NGTCP2_ERR_IDLE_CLOSE ? VQ_END_IDLE : rv == NGTCP2_ERR_HANDSHAKE_TIMEOUT ? VQ_END_HANDSHAKE_TIMEOUT : VQ_END_LOCAL_ERROR;
    c->ended = 1;
    return 1;
}

int vq_established(vq_conn *c) { return c->established; }
int vq_ended(vq_conn *c) { return c->ended || c->closing; }
int vq_end_reason(vq_conn *c) { return c->reason; }
uint64_t vq_end_code(vq_conn *c) { return c->code; }

int vq_peer_key(vq_conn *c, uint8_t *out) {
    if (!c->has_peer) return 0;
    memcpy(out, c->peer, 32);
    return 1;
}

size_t vq_alpn(vq_conn *c, char *out, size_t capacity) {
    gnutls_datum_t selected;
    if (gnutls_alpn_get_selected_protocol(c->session, &selected) != 0 || selected.size + 1 > capacity) return 0;
    memcpy(out, selected.data, selected.size);
    out[selected.size] = 0;
    return selected.size;
}

size_t vq_original_dcid(vq_conn *c, uint8_t *out) {
    memcpy(out, c->odcid, c->odcid_length);
    return c->odcid_length;
}

int vq_open_stream(vq_conn *c) {
    if (c->stream >= 0) return 0;
    int64_t id;
    if (ngtcp2_conn_open_bidi_stream(c->conn, &id, NULL) != 0) return -1;
    c->stream = id;
    return 0;
}

int vq_has_stream(vq_conn *c) { return c->stream >= 0; }

size_t vq_recv_take(vq_conn *c, uint8_t *out, size_t capacity) {
    size_t available = c->recv_end - c->recv_start;
    size_t n = available < capacity ? available : capacity;
    if (n == 0) return 0;
    memcpy(out, c->recv + c->recv_start, n);
    c->recv_start += n;
    if (c->recv_start == c->recv_end) c->recv_start = c->recv_end = 0;
    return n;
}

size_t vq_recv_buffered(vq_conn *c) { return c->recv_end - c->recv_start; }

int vq_recv_finished(vq_conn *c) {
    if (c->recv_reset) return 2;
    return c->recv_fin && c->recv_end == c->recv_start ? 1 : 0;
}

void vq_consumed(vq_conn *c, size_t count) {
    if (c->stream < 0 || count == 0 || c->ended || c->closing) return;
    ngtcp2_conn_extend_max_stream_offset(c->conn, c->stream, count);
    ngtcp2_conn_extend_max_offset(c->conn, count);
}

int vq_send(vq_conn *c, const uint8_t *data, size_t length) {
    if (length == 0) return 0;
    if (c->fin_wanted) return -1;
    chunk *k = malloc(sizeof *k + length);
    if (!k) return -1;
    k->next = NULL;
    k->offset = c->send_queued;
    k->length = length;
    memcpy(k->data, data, length);
    if (c->send_tail) c->send_tail->next = k; else c->send_head = k;
    c->send_tail = k;
    c->send_queued += length;
    return 0;
}

void vq_send_fin(vq_conn *c) { c->fin_wanted = 1; }

size_t vq_send_unacked(vq_conn *c) { return (size_t)(c->send_queued - c->send_acked); }

void vq_close(vq_conn *c, uint64_t code) {
    if (c->ended || c->closing) return;
    ngtcp2_connection_close_error_set_application_error(&c->ccerr, code, NULL, 0);
    c->reason = VQ_END_LOCAL_CLOSE;
    c->closing = 1;
}

/// One QUIC v1 connection (ngtcp2) with TLS 1.3 over RFC 7250 raw Ed25519 public keys (GnuTLS), as iroh speaks it.
///
/// This is C because Swift cannot call what it is made of: ngtcp2's versioned-struct macros, and the callbacks
/// ngtcp2 and GnuTLS call back into (stream data, acknowledgements, connection ids, the peer-key check). It holds
/// no socket and no thread: the owner (Swift's `QUICEndpoint` event loop) feeds it datagrams, asks it for
/// datagrams to send, and moves stream bytes in and out. Not thread-safe: one thread owns a connection.
#ifndef BACKGROUNDJOBS_CQUIC_H
#define BACKGROUNDJOBS_CQUIC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>

/// Length of every connection id this side chooses: an 8-byte routing prefix, then 10 random bytes.
#define VQ_CID_LENGTH 18
#define VQ_CID_PREFIX 8

typedef struct vq_creds vq_creds;
typedef struct vq_conn vq_conn;

/// Why a connection ended (`vq_end_reason`).
enum vq_end {
    VQ_END_NONE = 0,
    VQ_END_IDLE = 1,            ///< the QUIC idle timeout passed
    VQ_END_HANDSHAKE_TIMEOUT = 2,
    VQ_END_PEER_APPLICATION = 3, ///< the peer closed with an application error code
    VQ_END_PEER_TRANSPORT = 4,  ///< the peer closed with a transport error (a TLS alert is 0x100 + alert)
    VQ_END_WRONG_PEER = 5,      ///< the server's key is not the endpoint id dialled
    VQ_END_LOCAL_TLS = 6,       ///< our TLS stack refused the handshake (no common ALPN, no client key, bad signature)
    VQ_END_LOCAL_ERROR = 7,     ///< any other protocol or local failure
    VQ_END_LOCAL_CLOSE = 8,     ///< we closed it
    VQ_END_DROPPED = 9,         ///< ngtcp2 dropped it at once (a first packet that does not decrypt: garbage)
};

/// Credentials for our endpoint key: `seed` is the 32-byte Ed25519 secret, `pub` its public key. NULL on failure.
vq_creds *vq_creds_new(const uint8_t *seed, const uint8_t *pub);
void vq_creds_free(vq_creds *creds);

/// A non-blocking, close-on-exec eventfd (the event loop's wake-up), or -1.
int vq_eventfd(void);

/// Monotonic clock in nanoseconds (ngtcp2's time base).
uint64_t vq_now(void);

/// A client connection dialling the endpoint `expected` (32-byte key) with the one protocol `alpn`.
vq_conn *vq_client_new(vq_creds *creds, const struct sockaddr *local, socklen_t local_length,
                       const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *expected, const char *alpn, uint64_t idle_timeout_ms, uint64_t handshake_timeout_ms);

/// Decodes a datagram's destination connection id (short headers: `VQ_CID_LENGTH` bytes). Returns 0 and fills
/// `dcid` (up to 20 bytes), `dcid_length`, `is_initial` (a long-header Initial of QUIC v1); -1 for anything that
/// is not a QUIC v1 packet this side could handle.
int vq_decode_dcid(const uint8_t *packet, size_t length, uint8_t *dcid, size_t *dcid_length, int *is_initial);

/// Length of the secret Retry tokens are sealed with.
#define VQ_RETRY_SECRET_LENGTH 32

/// 1 when a first Initial carries a token (the client answered a Retry), 0 when not, -1 when it is no Initial.
int vq_initial_has_token(const uint8_t *packet, size_t length);

/// Writes into `out` a stateless Retry answering the first Initial `packet` from `remote`: a token sealing the
/// client's address and original destination id with `secret`, and a fresh random server id. Returns the length,
/// or -1. No connection state is made: only a client that receives it at its address can come back with the token.
ssize_t vq_write_retry(const uint8_t *packet, size_t length, const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *secret, uint8_t *out, size_t capacity);

/// A server connection for a first Initial datagram, with connection ids starting with `prefix`
/// (`VQ_CID_PREFIX` bytes) and the protocols `alpns` (NUL-separated, `alpn_count` of them). NULL when the datagram
/// is not an acceptable first Initial (garbage, too short, wrong version, a token that is not a valid Retry token
/// for this address sealed with `secret` in the last 10 s): the caller drops it.
vq_conn *vq_server_new(vq_creds *creds, const struct sockaddr *local, socklen_t local_length,
                       const struct sockaddr *remote, socklen_t remote_length,
                       const uint8_t *packet, size_t length, const uint8_t *prefix, const uint8_t *secret,
                       const char *alpns, size_t alpn_count, uint64_t idle_timeout_ms, uint64_t handshake_timeout_ms);

void vq_conn_free(vq_conn *conn);

/// Feeds one datagram. Returns 0 when the connection lives on, 1 when it must end (call `vq_write` once more to
/// get its CONNECTION_CLOSE, if any), 2 when it is over (drop it now).
int vq_read(vq_conn *conn, const uint8_t *packet, size_t length, const struct sockaddr *local, socklen_t local_length,
            const struct sockaddr *remote, socklen_t remote_length);

/// Writes the next datagram to send into `out` (at least 1500 bytes). Returns its length, 0 when there is nothing
/// to send now, -1 when the connection is over (after its close packet, if one was due, was returned).
ssize_t vq_write(vq_conn *conn, uint8_t *out, size_t capacity);

/// When the connection's next timer fires (vq_now() clock); UINT64_MAX when none.
uint64_t vq_expiry(vq_conn *conn);
/// Handles expired timers: 0 to go on, 1 when the connection ended (idle or handshake timeout).
int vq_handle_expiry(vq_conn *conn);

/// 1 once the TLS handshake completed (the peer's key checked, the protocol chosen).
int vq_established(vq_conn *conn);
/// 1 once the connection is over or closing.
int vq_ended(vq_conn *conn);
/// Why it ended (`enum vq_end`) and the peer's or our error code.
int vq_end_reason(vq_conn *conn);
uint64_t vq_end_code(vq_conn *conn);
/// Copies the peer's 32-byte key into `out`; 0 when none was presented.
int vq_peer_key(vq_conn *conn, uint8_t *out);
/// The protocol ALPN chose, NUL-terminated in `out`; its length, or 0.
size_t vq_alpn(vq_conn *conn, char *out, size_t capacity);
/// The connection ids this side issued for the connection (each `VQ_CID_LENGTH` bytes); the original destination
/// id a client chose is `vq_original_dcid`.
size_t vq_original_dcid(vq_conn *conn, uint8_t *out);

/// Client: opens the one bidirectional stream (after the handshake). 0 on success.
int vq_open_stream(vq_conn *conn);
/// 1 once the exchange's stream exists (opened here, or by the client on a server).
int vq_has_stream(vq_conn *conn);
/// Moves up to `capacity` received stream bytes into `out`; returns how many. Flow control is extended only by
/// `vq_consumed`.
size_t vq_recv_take(vq_conn *conn, uint8_t *out, size_t capacity);
/// Bytes received and not yet taken.
size_t vq_recv_buffered(vq_conn *conn);
/// 1 when the peer finished its side (all bytes taken), 2 when it reset the stream.
int vq_recv_finished(vq_conn *conn);
/// Gives `count` bytes of flow-control credit back to the peer.
void vq_consumed(vq_conn *conn, size_t count);
/// Queues bytes to send on the stream (copied). 0 on success.
int vq_send(vq_conn *conn, const uint8_t *data, size_t length);
/// Finishes our side of the stream (FIN after the queued bytes).
void vq_send_fin(vq_conn *conn);
/// Queued bytes the peer has not acknowledged yet.
size_t vq_send_unacked(vq_conn *conn);
/// Closes the connection with an application error code (the next `vq_write` returns the CONNECTION_CLOSE).
void vq_close(vq_conn *conn, uint64_t code);

#endif

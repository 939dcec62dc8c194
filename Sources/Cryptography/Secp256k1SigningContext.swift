import CSecp256k1
import CShims

/// The one libsecp256k1 context used for signing and public-key derivation, created once per process.
///
/// Creating a context precomputes tables and costs far more than a signature, so keys share this
/// one instead of making their own. It is randomized once at creation (side-channel blinding) and
/// never mutated afterwards, which makes concurrent use from several threads safe per libsecp256k1's
/// rules. It lives for the whole process and is never destroyed. Verification, parsing and recovery
/// need no precomputation and use `secp256k1_context_static` instead.
final class Secp256k1SigningContext: @unchecked Sendable {
    // @unchecked: `pointer` is only passed as `const secp256k1_context *` after init.
    static let shared = Secp256k1SigningContext()

    let pointer: OpaquePointer

    private init() {
        // SECP256K1_CONTEXT_NONE (1 << 0): libsecp256k1 0.2 makes every context capable of everything.
        guard let context = secp256k1_context_create(UInt32(SECP256K1_FLAGS_TYPE_CONTEXT)) else {
            fatalError("secp256k1_context_create failed")  // only on allocation failure
        }
        // Blinding is hardening, not a correctness requirement: if the random source fails here,
        // the context stays valid and unblinded, and signing still works.
        if var seed = try? SecureRandom.bytes(count: 32) {
            _ = secp256k1_context_randomize(context, seed)
            cleanse(&seed)
        }
        pointer = context
    }
}

/// libsecp256k1's built-in static context: enough for parsing, serializing, verifying and recovering.
var secp256k1StaticContext: OpaquePointer {
    // The shim returns the address of a library constant, which is never NULL.
    shim_secp256k1_context_static()!
}

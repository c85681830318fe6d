import COpenSSL

/// PBKDF2-HMAC-SHA256 (RFC 8018) from OpenSSL's libcrypto, for `pbkdf2-sha256` token hashes.
///
/// Deliberately slow (that is the point of a KDF), so it never runs on a loop: parked
/// `hello`s call it on libuv's thread pool (`TokenVerification`), and `--hash-token` calls it
/// once. OpenSSL's implementation is thread-safe and needs no initialisation in 3.x.
enum PBKDF2 {
    /// Bytes of key derived: SHA-256's output size, as the `token_hash` stores.
    static let keyBytes = 32

    /// Derives a 32-byte key.
    /// - Parameters:
    ///   - token: the secret (the token's UTF-8 bytes).
    ///   - salt: the salt.
    ///   - iterations: the iteration count (at least 1).
    /// - Returns: the key, or nil when OpenSSL reports a failure.
    static func sha256(token: [UInt8], salt: [UInt8], iterations: Int) -> [UInt8]? {
        guard iterations >= 1, iterations <= Int(Int32.max), token.count <= Int(Int32.max),
              salt.count <= Int(Int32.max) else { return nil }
        var key = [UInt8](repeating: 0, count: keyBytes)
        let status = token.withUnsafeBufferPointer { secret in
            salt.withUnsafeBufferPointer { saltBytes in
                key.withUnsafeMutableBufferPointer { out in
                    secret.withMemoryRebound(to: CChar.self) { password in
                        PKCS5_PBKDF2_HMAC(password.baseAddress, Int32(token.count), saltBytes.baseAddress, Int32(salt.count),
                                          Int32(iterations), EVP_sha256(), Int32(keyBytes), out.baseAddress)
                    }
                }
            }
        }
        return status == 1 ? key : nil
    }

    /// The derivation in the broker's shape, for `PendingVerification.verify`.
    static let derivation: @Sendable ([UInt8], [UInt8], Int) -> [UInt8]? = { token, salt, iterations in
        sha256(token: token, salt: salt, iterations: iterations)
    }
}

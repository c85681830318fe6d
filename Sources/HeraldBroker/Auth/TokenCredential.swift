/// A user's token as the daemon keeps it: a hashing scheme, a salt and the hash, never the token.
///
/// Two schemes. `pbkdf2-sha256:<iterations>:<salt hex>:<key hex>` (what `heraldd --hash-token`
/// prints) is *slow* on purpose, so a stolen config costs an attacker that much per guess; the
/// broker never computes it (it has no crypto library and must not stall a loop): the server
/// derives the key off the loop (`PendingVerification`) and asks `matches(derivedKey:)`.
/// `sha256:<salt hex>:<digest hex>`, SHA-256(salt ‖ token), is the older *fast* form, still
/// accepted with a warning; a plain `token` (for development) is kept the same way with an
/// empty salt. Every comparison looks at all 32 bytes, whatever the first difference.
public struct TokenCredential: Sendable, Hashable {
    /// How the stored hash was made from the token.
    public enum Scheme: Sendable, Hashable {
        /// SHA-256(salt ‖ token): one hash, computed inline.
        case sha256
        /// PBKDF2-HMAC-SHA256(token, salt, iterations), 32 bytes: computed off the loop.
        case pbkdf2SHA256(iterations: Int)
    }

    /// How `digest` was made.
    public let scheme: Scheme
    /// Bytes mixed into the hash with the token.
    public let salt: [UInt8]
    /// The hash (SHA-256 digest or PBKDF2 derived key), 32 bytes.
    public let digest: [UInt8]

    /// The prefix of an old, fast `token_hash` value.
    public static let scheme = "sha256"
    /// The prefix of a slow `token_hash` value.
    public static let slowScheme = "pbkdf2-sha256"
    /// Accepted PBKDF2 iteration counts: fewer than 1,000 defeats the purpose, more than
    /// 10,000,000 would make one `hello` cost many seconds.
    public static let iterationRange = 1_000...10_000_000
    /// Accepted PBKDF2 salt sizes in bytes (NIST SP 800-132 asks for at least 16; 8 is the floor).
    public static let slowSaltBytes = 8...64
    /// Longest token accepted: a longer one in `hello` is wrong without being hashed, so a
    /// peer cannot make the daemon hash megabytes per user.
    public static let maxTokenBytes = 4_096

    /// A credential from a plain token (the config's `token`).
    /// - Parameter token: the token's UTF-8 bytes.
    public init(plainToken token: [UInt8]) {
        scheme = .sha256
        salt = []
        digest = SHA256.hash(token)
    }

    /// Parses `pbkdf2-sha256:<iterations>:<salt hex>:<64 hex digits>` or
    /// `sha256:<salt hex>:<64 hex digits>`.
    /// - Parameter hash: the config's `token_hash` text.
    /// - Returns: nil when it is neither (a pbkdf2 salt has 8…64 bytes and its iterations are in
    ///   `iterationRange`; a sha256 salt may be empty, at most 64 bytes).
    public init?(hash: String) {
        let parts = hash.split(separator: ":", omittingEmptySubsequences: false)
        if parts.count == 4, parts[0] == Substring(Self.slowScheme) {
            guard parts[1].utf8.count <= 9, parts[1].utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let iterations = Int(parts[1]), Self.iterationRange.contains(iterations),
                  parts[2].utf8.count <= 128, let salt = SHA256.bytes(hex: String(parts[2])),
                  Self.slowSaltBytes.contains(salt.count),
                  let key = SHA256.bytes(hex: String(parts[3])), key.count == 32 else { return nil }
            self.init(scheme: .pbkdf2SHA256(iterations: iterations), salt: salt, digest: key)
            return
        }
        guard parts.count == 3, parts[0] == Substring(Self.scheme), parts[1].utf8.count <= 128,
              let salt = SHA256.bytes(hex: String(parts[1])),
              let digest = SHA256.bytes(hex: String(parts[2])), digest.count == 32 else { return nil }
        self.init(scheme: .sha256, salt: salt, digest: digest)
    }

    /// A credential from its parts (the server builds slow ones for `--hash-token`).
    /// - Parameters:
    ///   - scheme: how `digest` was made.
    ///   - salt: the salt.
    ///   - digest: the 32-byte hash.
    public init(scheme: Scheme, salt: [UInt8], digest: [UInt8]) {
        self.scheme = scheme
        self.salt = salt
        self.digest = digest
    }

    /// Whether checking a token against this credential needs the slow KDF (off the loop).
    public var isSlow: Bool {
        if case .pbkdf2SHA256 = scheme { return true }
        return false
    }

    /// The PBKDF2 iteration count, or nil for the fast scheme.
    public var iterations: Int? {
        if case .pbkdf2SHA256(let iterations) = scheme { return iterations }
        return nil
    }

    /// The old `token_hash` text for a token and a salt (fast scheme; tests and migration).
    /// - Parameters:
    ///   - token: the token's UTF-8 bytes.
    ///   - salt: random bytes.
    /// - Returns: `sha256:<salt hex>:<hex of SHA-256(salt ‖ token)>`.
    public static func hashLine(token: [UInt8], salt: [UInt8]) -> String {
        Self.scheme + ":" + SHA256.hex(salt) + ":" + SHA256.hex(SHA256.hash(salt + token))
    }

    /// This credential as the config's `token_hash` text.
    public var line: String {
        switch scheme {
        case .sha256:
            return Self.scheme + ":" + SHA256.hex(salt) + ":" + SHA256.hex(digest)
        case .pbkdf2SHA256(let iterations):
            return Self.slowScheme + ":" + String(iterations) + ":" + SHA256.hex(salt) + ":" + SHA256.hex(digest)
        }
    }

    /// Whether `token` is this credential's token, for the fast scheme; a slow credential
    /// answers false (its key must be derived off the loop, see `matches(derivedKey:)`).
    /// - Parameter token: the bytes a client sent in `hello`.
    /// - Returns: true on a match.
    public func accepts(_ token: [UInt8]) -> Bool {
        guard scheme == .sha256 else { return false }
        var hasher = SHA256()
        hasher.update(salt)
        hasher.update(token)
        return matches(derivedKey: hasher.finalize())
    }

    /// Whether a key derived from a token (with this credential's scheme, salt and
    /// iterations) is the stored one, comparing every byte whatever the first difference.
    /// - Parameter candidate: the derived key or digest, 32 bytes.
    /// - Returns: true on a match.
    public func matches(derivedKey candidate: [UInt8]) -> Bool {
        var difference: UInt8 = candidate.count == 32 ? 0 : 1
        for index in 0..<32 {
            let stored = index < digest.count ? digest[index] : 0
            let offered = index < candidate.count ? candidate[index] : 0
            difference |= stored ^ offered
        }
        return difference == 0 && digest.count == 32
    }
}

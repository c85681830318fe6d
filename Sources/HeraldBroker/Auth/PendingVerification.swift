import HeraldWire

/// A `hello` parked until its token has been checked against the slow credentials.
///
/// The broker makes one when no fast credential and no cached verdict settles a `hello`
/// (`Broker+Auth`); the server takes it (`Broker.takeVerification(for:)`), runs `verify`
/// on a thread off the loop, and hands the result back with
/// `Broker.completeVerification(of:accepted:now:)`, which answers the `hello` as it would
/// have been answered at once. Everything the answer needs is copied in here, because the
/// request line is gone by then.
public struct PendingVerification: Sendable {
    /// A key derivation: the token, the salt and the iteration count in, the 32-byte key
    /// out (nil when the derivation failed; the credential then does not match).
    public typealias KeyDerivation = @Sendable (_ token: [UInt8], _ salt: [UInt8], _ iterations: Int) -> [UInt8]?

    /// The token sent in `hello`.
    public let token: [UInt8]
    /// The slow credentials to try, each once.
    public let credentials: [TokenCredential]
    /// The key of the verifications in flight: the token's key in the verified-token cache,
    /// followed by a zero byte and the user's name when the `hello` named one.
    let fingerprint: [UInt8]
    /// The raw JSON of the `hello`'s `rid`, echoed in the answer.
    let rid: [UInt8]?
    /// The user the `hello` named (`user`), whose credential alone is tried; nil: every user's.
    var userName: String? = nil
    /// What a wrong token counts against (`Broker.failureKey`).
    var failureKey: [UInt8] = []
    /// Whether this check holds one of the key's attempts (`AuthFailureTable.reserve`); a
    /// `hello` following another's verification of the same token does not.
    var reserved = false
    /// The rest of the `hello`, applied once the token is accepted.
    let greeting: Greeting

    /// Derives a key for every credential (no early exit, so the time says nothing about
    /// which one matched) and returns those that accept the token.
    ///
    /// Pure and thread-safe: runs on a thread-pool thread, touching nothing of the broker.
    /// - Parameter derive: the KDF (OpenSSL's PBKDF2 in the server).
    /// - Returns: the accepting credentials, usually none or one.
    public func verify(derive: KeyDerivation) -> Set<TokenCredential> {
        var accepted = Set<TokenCredential>()
        for credential in credentials {
            guard let iterations = credential.iterations,
                  let key = derive(token, credential.salt, iterations) else { continue }
            if credential.matches(derivedKey: key) { accepted.insert(credential) }
        }
        return accepted
    }
}

/// The parts of a `hello` besides its token, parsed before the token is settled.
struct Greeting: Sendable {
    /// The display name to set.
    var name: [UInt8]?
    /// The echo flag to set.
    var echo: Bool?
    /// The `info` to show in presence (raw JSON), and its `instance`.
    var info: [UInt8]?
    var instance: [UInt8]?
    /// The first bad field, answered instead of `ok` once authenticated.
    var problem: HeraldError?
}

/// Tokens recently proven to belong to a slow credential, so the next `hello` with the same
/// token skips the KDF (a reconnect storm costs microseconds, not a PBKDF2 each).
///
/// Keyed by HMAC-SHA256 of the token under a random key made at start, so the table holds
/// nothing that could be brute-forced offline more cheaply than the config's own hashes. Only
/// successes are stored, never failures, and at most `capacity` of them: the oldest entry is
/// overwritten first (a ring of keys beside the dictionary), so each use is O(1).
struct VerifiedTokenCache {
    /// The HMAC key, 64 bytes (one SHA-256 block).
    private let key: [UInt8]
    /// Known tokens (their keyed hash) → the slow credential that accepted them.
    private var entries: [[UInt8]: TokenCredential] = [:]
    /// Keys in insertion order; `next` is the slot to overwrite once full.
    private var ring: [[UInt8]] = []
    private var next = 0
    /// The most entries kept.
    let capacity: Int

    /// Creates an empty cache.
    /// - Parameters:
    ///   - capacity: entries kept at most.
    ///   - randomWord: the source of the per-process key (the broker's CSPRNG).
    init(capacity: Int = 4_096, randomWord: () -> UInt64) {
        self.capacity = max(1, capacity)
        var key: [UInt8] = []
        for _ in 0..<8 {
            let word = randomWord()
            for shift in stride(from: 0, to: 64, by: 8) { key.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
        self.key = key
    }

    /// How many tokens are remembered.
    var count: Int { entries.count }

    /// The cache key of a token: HMAC-SHA256(key, token).
    func fingerprint(of token: [UInt8]) -> [UInt8] {
        var inner = SHA256()
        inner.update(key.map { $0 ^ 0x36 })
        inner.update(token)
        var outer = SHA256()
        outer.update(key.map { $0 ^ 0x5c })
        outer.update(inner.finalize())
        return outer.finalize()
    }

    /// The slow credential that accepted this token before, if it is remembered.
    func credential(for fingerprint: [UInt8]) -> TokenCredential? {
        entries[fingerprint]
    }

    /// Remembers that `credential` accepted the token with this fingerprint.
    mutating func remember(_ fingerprint: [UInt8], accepted credential: TokenCredential) {
        if entries.updateValue(credential, forKey: fingerprint) != nil { return }
        if ring.count < capacity {
            ring.append(fingerprint)
            return
        }
        entries[ring[next]] = nil
        ring[next] = fingerprint
        next = (next + 1) % capacity
    }
}

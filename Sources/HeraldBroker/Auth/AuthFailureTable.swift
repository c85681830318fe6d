/// Wrong tokens per key, and the keys blocked for sending too many. A key is a peer
/// address, or an address and a user name (`hello` with `user`: a guesser at one user's
/// token blocks that user at that address, not everyone behind the address).
///
/// A fixed window per key: it opens at the first failure and counts failures for
/// `windowMs`; reaching `limit` within it blocks the key for `blockMs`, after which it
/// starts afresh. A success does not reset the count: one valid token must not launder
/// guesses at the others. Checks under way count too (`reserve`): a token sent to be
/// verified off the loop holds one of the key's `limit` until its verdict, so `hello`s sent
/// all at once cannot have more tokens checked than the limit allows. The table is
/// bounded: a peer with many addresses (all of 127.0.0.0/8 is loopback) can only push old
/// entries out, and each `hello` costs one dictionary lookup. Entries live in a ring of
/// `capacity` slots in order of their first use; once full, a new key overwrites the oldest.
struct AuthFailureTable {
    /// What is known about one address.
    private struct Entry {
        /// When the current counting window opened (ms).
        var windowStart: Int
        /// Failures in that window.
        var failures: Int
        /// Until when `hello`s are refused (ms); 0 when not blocked.
        var blockedUntil: Int
        /// Checks under way (tokens being verified off the loop).
        var pending = 0
    }

    /// What one recorded failure led to.
    struct Outcome: Equatable {
        /// Failures in the address's current window, this one included.
        var failures: Int
        /// When this failure blocked the address, until when (ms).
        var blockedUntil: Int?
    }

    private var entries: [[UInt8]: Entry] = [:]
    private var ring: [[UInt8]] = []
    private var next = 0
    /// The most addresses remembered.
    let capacity: Int

    /// Creates an empty table. - Parameter capacity: addresses remembered at most.
    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Addresses remembered.
    var count: Int { entries.count }

    /// Whether `hello`s from this address are refused now.
    func isBlocked(_ address: [UInt8], now: Int) -> Bool {
        guard let entry = entries[address] else { return false }
        return now < entry.blockedUntil
    }

    /// Whether one more token from `key` may be checked off the loop now: the key is not
    /// blocked and its failures in the window plus its checks under way stay below `limit`.
    func mayCheck(_ key: [UInt8], now: Int, limit: Int, windowMs: Int) -> Bool {
        guard let entry = entries[key] else { return true }
        if now < entry.blockedUntil { return false }
        let expired = entry.blockedUntil != 0 || now - entry.windowStart >= windowMs
        return (expired ? 0 : entry.failures) + entry.pending < limit
    }

    /// A check of a token from `key` starts: it holds one of the key's attempts until
    /// `release`.
    mutating func reserve(_ key: [UInt8], now: Int) {
        var entry = entries[key] ?? insert(key, now: now)
        entry.pending += 1
        entries[key] = entry
    }

    /// A check reserved for `key` ended (its verdict follows: a failure is counted then).
    mutating func release(_ key: [UInt8]) {
        guard var entry = entries[key], entry.pending > 0 else { return }
        entry.pending -= 1
        entries[key] = entry
    }

    /// Counts a wrong token from `address`.
    /// - Parameters:
    ///   - address: the peer address (`Session.peer`).
    ///   - now: the monotonic clock in ms.
    ///   - limit: failures within the window that block (`auth_fail_limit`).
    ///   - windowMs: the window (`auth_fail_window_ms`).
    ///   - blockMs: how long a block lasts (`auth_block_ms`).
    /// - Returns: the count and, when this failure blocked the address, until when.
    mutating func recordFailure(from address: [UInt8], now: Int, limit: Int, windowMs: Int, blockMs: Int) -> Outcome {
        var entry = entries[address] ?? insert(address, now: now)
        let expired = entry.blockedUntil != 0 ? now >= entry.blockedUntil : now - entry.windowStart >= windowMs
        if expired { entry = Entry(windowStart: now, failures: 0, blockedUntil: 0, pending: entry.pending) }
        entry.failures += 1
        var blocked: Int?
        if entry.failures >= limit && entry.blockedUntil == 0 {
            entry.blockedUntil = now + blockMs
            blocked = entry.blockedUntil
        }
        entries[address] = entry
        return Outcome(failures: entry.failures, blockedUntil: blocked)
    }

    /// Makes room for a new address (forgetting the oldest when full) and returns its entry.
    private mutating func insert(_ address: [UInt8], now: Int) -> Entry {
        if ring.count < capacity {
            ring.append(address)
        } else {
            entries[ring[next]] = nil
            ring[next] = address
            next = (next + 1) % capacity
        }
        return Entry(windowStart: now, failures: 0, blockedUntil: 0)
    }
}

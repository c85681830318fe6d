/// What the broker keeps to make guessing tokens expensive and strangers cheap (issue 12):
/// failures per address, tokens already verified, the connections still to authenticate,
/// and the counters and log events about them. One value so `Broker` holds it in one field.
struct AuthenticationState {
    /// Wrong tokens per peer address and the addresses blocked for them.
    var failures: AuthFailureTable
    /// Tokens a slow credential accepted recently.
    var verifiedTokens: VerifiedTokenCache
    /// Connections not yet authenticated, oldest first.
    var unauthenticated = UnauthenticatedSessions()
    /// Tokens being verified off the loop (by fingerprint) → the other sessions whose
    /// `hello` carried the same token and wait for that one verdict.
    var verificationsInFlight: [[UInt8]: [Session]] = [:]
    /// Events for the server's log, oldest first; bounded so an undrained broker (a test, the
    /// fuzzer) cannot grow it without end.
    var events: [AuthEvent] = []
    /// `hello`s with a wrong token since start (`auth_failures`).
    var failureCount = 0
    /// `hello`s refused because their address was blocked (`auth_blocked`).
    var blockedCount = 0

    /// The most events kept between two drains; later ones are dropped.
    static let eventCapacity = 4_096

    /// Creates the state. - Parameters: capacity: addresses remembered; randomWord: unused
    /// for the cache key, which always comes from the system CSPRNG: it is a secret no test
    /// needs to repeat, and drawing it from an injected source would shift that source's
    /// sequence (reply tokens a test expects).
    init(failureCapacity: Int, randomWord: () -> UInt64) {
        failures = AuthFailureTable(capacity: failureCapacity)
        verifiedTokens = VerifiedTokenCache(randomWord: Broker.secureRandomWord)
    }

    /// Queues an event for the log unless the queue is full.
    mutating func log(_ event: AuthEvent) {
        if events.count < Self.eventCapacity { events.append(event) }
    }
}

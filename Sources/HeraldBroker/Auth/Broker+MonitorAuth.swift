/// The monitor's credential check (`monitor_auth`, issue 37), on the same books as `hello`.
///
/// A request names its user (HTTP Basic always does), so it is judged like a `hello` with
/// `user`: failures count against the address and that name in the one failure table
/// (`auth.failures`), a blocked key is refused before anything is hashed, a check of a slow
/// credential holds one of the key's attempts while it runs off the loop, and a verified
/// token is remembered in the verified-token cache, so a scraper polling every few seconds
/// pays one PBKDF2 in the daemon's life, not one a scrape. The monitor can therefore not be
/// used to guess tokens faster than `hello` allows, nor `hello` to guess around it.
extension Broker {
    /// Judges one request's credentials, without a KDF when possible.
    /// - Parameters:
    ///   - user: the Basic user name.
    ///   - token: the Basic password, the user's token.
    ///   - peer: the peer's address (the form of `Session.peer`).
    ///   - client: names the request in log lines (`h7`).
    ///   - now: the monotonic clock in ms.
    /// - Returns: the verdict, or a verification to run off the loop.
    public func checkMonitorCredentials(user: String, token: [UInt8], peer: [UInt8], client: String,
                                        now: Int) -> MonitorAccess {
        lastNow = now
        let named = config.auth.users.first { $0.name == user }
        let key = monitorFailureKey(peer: peer, user: named?.name)
        if auth.failures.isBlocked(key, now: now) {
            auth.blockedCount += 1
            auth.log(AuthEvent(.refusedWhileBlocked, client: client, peer: String(decoding: peer, as: UTF8.self)))
            return .blocked
        }
        guard let named else {
            countFailure(key: key, client: client, peer: peer, now: now)
            return .rejected
        }
        let slow = token.count <= TokenCredential.maxTokenBytes && named.credential.isSlow
        let fingerprint = slow ? auth.verifiedTokens.fingerprint(of: token) : []
        var known: Set<TokenCredential> = []
        if slow, let credential = auth.verifiedTokens.credential(for: fingerprint) { known.insert(credential) }
        if let found = config.auth.user(for: token, accepted: known, among: named) {
            return found.isAdmin ? .admin : .notAdmin
        }
        guard slow else {
            countFailure(key: key, client: client, peer: peer, now: now)
            return .rejected
        }
        guard auth.failures.mayCheck(key, now: now, limit: config.auth.failLimit, windowMs: config.auth.failWindowMs) else {
            auth.blockedCount += 1
            auth.log(AuthEvent(.refusedWhileBlocked, client: client, peer: String(decoding: peer, as: UTF8.self)))
            return .blocked
        }
        auth.failures.reserve(key, now: now)
        var pending = PendingVerification(token: token, credentials: [named.credential], fingerprint: fingerprint,
                                          rid: nil, greeting: Greeting())
        pending.userName = named.name
        pending.failureKey = key
        pending.reserved = true
        return .verify(pending)
    }

    /// The verdict on a verification `checkMonitorCredentials` asked for, against the users
    /// configured now (a SIGHUP may have come in between). A wrong token is counted even when
    /// the HTTP client has gone meanwhile; the check's attempt is given back either way.
    /// - Parameters:
    ///   - pending: the verification, as `checkMonitorCredentials` returned it.
    ///   - accepted: the credentials that accepted the token (`PendingVerification.verify`).
    ///   - peer: the peer's address.
    ///   - client: names the request in log lines.
    ///   - now: the monotonic clock in ms.
    /// - Returns: `.admin`, `.notAdmin` or `.rejected`.
    public func completeMonitorCheck(_ pending: PendingVerification, accepted: Set<TokenCredential>, peer: [UInt8],
                                     client: String, now: Int) -> MonitorAccess {
        lastNow = now
        if pending.reserved { auth.failures.release(pending.failureKey) }
        let named = pending.userName.flatMap { name in config.auth.users.first { $0.name == name } }
        guard let named, let found = config.auth.user(for: pending.token, accepted: accepted, among: named) else {
            countFailure(key: pending.failureKey, client: client, peer: peer, now: now)
            return .rejected
        }
        if found.credential.isSlow { auth.verifiedTokens.remember(pending.fingerprint, accepted: found.credential) }
        return found.isAdmin ? .admin : .notAdmin
    }

    /// The failure-table key of a monitor request: the address and the named user, the key
    /// of a `hello` that names that user; the address alone for a name no one has (as a
    /// `hello` naming an unknown user counts).
    private func monitorFailureKey(peer: [UInt8], user: String?) -> [UInt8] {
        guard let user else { return peer }
        return peer + [0] + Array(user.utf8)
    }
}

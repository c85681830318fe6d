import HeraldWire

/// Authentication: who a connection is, and what happens before it says so.
///
/// When users are configured a new connection may only `hello` and `ping`, with lines
/// limited to `auth.maxLine`, until a `hello` carries a token of a configured user; a wrong
/// token is `forbidden` and closes the connection, and one that has not authenticated
/// within `auth.timeoutMs` is closed from the broker's deadline queue. All of this state
/// lives in the `Session` (`isAuthenticated`, `user`, `presentedToken`). A token that only a
/// slow credential can judge parks its `hello` (`PendingVerification`, completed in
/// `Broker+Verification`); failures, blocks and the pre-auth cap are in `auth`.
extension Broker {
    /// What `authenticate` made of a `hello`'s token.
    enum HelloVerdict {
        /// Authenticated (or nothing to authenticate): go on with `name` and `echo`.
        case proceed
        /// Answered already (`forbidden`, `too_many_attempts`, `limit`); nothing more to do.
        case answered
        /// Parked until the token is verified off the loop.
        case parked
    }

    /// The longest line the server should accept from this connection now.
    /// - Parameter session: the connection.
    /// - Returns: `max_line`, or the smaller pre-auth limit until it has authenticated.
    public func lineLimit(for session: Session) -> Int {
        session.isAuthenticated ? config.maxLine : min(config.maxLine, config.auth.maxLine)
    }

    /// At connect: with auth on, the connection starts unauthenticated and its deadline
    /// runs; when that makes too many unauthenticated connections, the oldest one goes.
    func beginAuthentication(_ session: Session, now: Int) {
        guard config.auth.isEnabled, !session.closeAfterFlush else { return }
        session.isAuthenticated = false
        deadlines.schedule(at: now + config.auth.timeoutMs, kind: .auth, id: session.id)
        auth.unauthenticated.insert(session.id)
        evictOldestUnauthenticated(now: now)
    }

    /// Closes the oldest unauthenticated connections while there are more than
    /// `max_unauthenticated` (never more than `max_connections`).
    private func evictOldestUnauthenticated(now: Int) {
        let cap = min(config.auth.maxUnauthenticated, config.maxConnections)
        while auth.unauthenticated.count > cap, let id = auth.unauthenticated.oldest() {
            guard let victim = sessions[id], !victim.closeAfterFlush else {
                auth.unauthenticated.remove(id)
                continue
            }
            let saved = current
            current = RequestContext()
            fail(victim, HeraldError(.limit, "too many unauthenticated connections (max_unauthenticated "
                + String(cap) + "); closing the oldest"), now: now)
            close(victim, now: now)
            current = saved
            auth.log(AuthEvent(.evictedUnauthenticated(limit: cap), client: clientName(victim), peer: peerName(victim)))
        }
    }

    /// Before any op: only `hello` and `ping` until authenticated, then the user's permissions.
    func authorize(_ op: Op, for session: Session) throws(HeraldError) {
        guard session.isAuthenticated else {
            if op == .hello || op == .ping { return }
            throw HeraldError(.authRequired, "authenticate first: {\"op\":\"hello\",\"token\":…}")
        }
        guard session.hasUser, let user = session.user else { return }
        try checkPermission(op, of: user)
    }

    /// `hello`'s token, settled without a KDF when possible: a blocked key is refused, fast
    /// credentials are hashed, the verified-token cache is asked; otherwise, with slow
    /// credentials configured, the `hello` is parked for the server to verify off the loop,
    /// if the key has an attempt left (failures and checks under way below `auth_fail_limit`).
    /// With `user`, only that user's credential is tried and failures count against the
    /// address and that name, so a guesser at one user's token does not lock out the others
    /// behind the same address (a Unix socket is one address).
    func authenticate(_ session: Session, now: Int) throws(HeraldError) -> HelloVerdict {
        let token = try scanner.string(.token)
        guard config.auth.isEnabled else {
            if let token { session.presentedToken = token }
            return .proceed
        }
        guard let token else {
            if session.isAuthenticated { return .proceed }
            throw HeraldError(.authRequired, "hello needs 'token': this daemon requires authentication")
        }
        let userName = try scanner.string(.user).map { String(decoding: $0, as: UTF8.self) }
        let named = userName.flatMap { name in config.auth.users.first { $0.name == name } }
        let key = failureKey(of: session, user: named?.name)
        if auth.failures.isBlocked(key, now: now) {
            refuseBlocked(session, now: now)
            return .answered
        }
        let candidates = named.map { [$0] } ?? config.auth.users
        let slow = token.count <= TokenCredential.maxTokenBytes && candidates.contains { $0.credential.isSlow }
        let fingerprint = slow ? auth.verifiedTokens.fingerprint(of: token) : []
        var known: Set<TokenCredential> = []
        if slow, let credential = auth.verifiedTokens.credential(for: fingerprint) { known.insert(credential) }
        // A `user` no one is configured as: a wrong token, counted against the address.
        let nameKnown = userName == nil || named != nil
        if nameKnown, let user = config.auth.user(for: token, accepted: known, among: named) {
            return admit(user, token: token, for: session, greeting: scanGreeting(), now: now) ? .proceed : .answered
        }
        guard slow, nameKnown else {
            reject(session, key: key, now: now)
            return .answered
        }
        return park(session, token: token, fingerprint: fingerprint, user: named, key: key, now: now)
    }

    /// What a wrong token from this connection counts against: its address, or its address
    /// and the user it named (a NUL between them: neither holds one).
    func failureKey(of session: Session, user: String?) -> [UInt8] {
        guard let user else { return session.peer }
        return session.peer + [0] + Array(user.utf8)
    }

    /// Parks a `hello` for verification off the loop. When the same token is being verified
    /// already against the same credentials (a reconnect storm after a restart, or one guess
    /// from many sockets), the session follows that verification instead of starting a KDF
    /// of its own; otherwise the check takes one of the key's attempts, and with none left
    /// the `hello` is `too_many_attempts` without a KDF.
    private func park(_ session: Session, token: [UInt8], fingerprint: [UInt8], user: AuthUser?, key: [UInt8],
                      now: Int) -> HelloVerdict {
        let inFlight = user.map { fingerprint + [0] + Array($0.name.utf8) } ?? fingerprint
        let follows = auth.verificationsInFlight[inFlight] != nil
        if !follows {
            guard auth.failures.mayCheck(key, now: now, limit: config.auth.failLimit, windowMs: config.auth.failWindowMs) else {
                refuseBlocked(session, now: now)
                return .answered
            }
            auth.failures.reserve(key, now: now)
        }
        var pending = PendingVerification(
            token: token, credentials: user.map { [$0.credential] } ?? config.auth.slowCredentials,
            fingerprint: inFlight, rid: current.ridRaw.map { Array($0) }, greeting: scanGreeting())
        pending.userName = user?.name
        pending.failureKey = key
        pending.reserved = !follows
        session.pendingVerification = pending
        session.verificationTaken = false
        session.followsVerification = follows
        auth.verificationsInFlight[inFlight, default: []].append(contentsOf: follows ? [session] : [])
        return .parked
    }

    /// The rest of a `hello` once its token is settled: `name` and `echo`, parsed in the
    /// order the inline path always used, so an error names the first bad field.
    func scanGreeting() -> Greeting {
        var greeting = Greeting()
        do throws(HeraldError) {
            if let name = try scanner.string(.name) {
                guard name.count <= 255 else { throw HeraldError(.badField, "field 'name' is longer than 255 bytes") }
                greeting.name = name
            }
            greeting.echo = try scanner.bool(.echo)
            try scanInfo(into: &greeting)
        } catch {
            greeting.problem = error
        }
        return greeting
    }

    /// Applies a greeting and answers `{"ok":"hello","client":…}`, or throws its problem.
    func greet(_ session: Session, _ greeting: Greeting) throws(HeraldError) {
        if let name = greeting.name { session.name = name }
        if let problem = greeting.problem { throw problem }
        if let echo = greeting.echo { session.echo = echo }
        if let info = greeting.info {
            session.info = info
            session.instance = greeting.instance
        }
        answer(session, .hello) { out in
            out.appendRaw(#","client":"#)
            out.append(contentsOf: session.quotedClientID)
        }
    }

    /// A token accepted for `user`: charged to the user's account (or refused with `limit`
    /// past its `connections`), then the session takes the user.
    /// - Returns: false when the connection was refused and is closing.
    /// In cluster mode a connection past this node's grant of the user's `connections` parks
    /// behind a `lease` call first (false: answered when it is back, with `greeting`).
    func admit(_ user: AuthUser, token: [UInt8], for session: Session, greeting: @autoclosure () -> Greeting,
               now: Int) -> Bool {
        guard leaseConnection(of: session, to: user, token: token, greeting: greeting(), now: now) else { return false }
        guard chargeConnection(of: session, to: user) else {
            fail(session, HeraldError(.limit, "user \"" + user.name + "\" has its limit of "
                + String(user.limits.connections) + " connections; closing"), now: now)
            close(session, now: now)
            auth.log(AuthEvent(.userConnectionLimit(user: user.name, limit: user.limits.connections),
                               client: clientName(session), peer: peerName(session)))
            return false
        }
        let wasAuthenticated = session.isAuthenticated
        adopt(user, token: token, for: session)
        if wasAuthenticated { endForbiddenSubscriptions(of: session) }
        return true
    }

    /// In cluster mode, a grant of one more of `user`'s connections for this node, unless
    /// it holds one, or the user's own limit refuses it here anyway (`chargeConnection`).
    /// - Returns: false when the `hello` was parked behind a `lease` call, or refused with
    ///   `limit` and is closing (the cluster has none left).
    private func leaseConnection(of session: Session, to user: AuthUser, token: [UInt8],
                                 greeting: @autoclosure () -> Greeting, now: Int) -> Bool {
        if let account = session.account, account.name == user.name { return true }
        let used = accounts[user.name]?.connections ?? 0
        guard used < user.limits.connections else { return true }
        do throws(HeraldError) {
            return try leaseOne(.connections, used: used, limit: user.limits.connections, user: user.name, for: session,
                                retry: { .hello(user: user.name, token: token, greeting: greeting()) })
        } catch {
            fail(session, HeraldError(.limit, error.message + "; closing"), now: now)
            close(session, now: now)
            auth.log(AuthEvent(.userConnectionLimit(user: user.name, limit: user.limits.connections),
                               client: clientName(session), peer: peerName(session)))
            return false
        }
    }

    /// A wrong token: counted against `key` (which may block it), answered `forbidden` and
    /// closed.
    func reject(_ session: Session, key: [UInt8], now: Int) {
        countFailure(of: session, key: key, now: now)
        fail(session, HeraldError(.forbidden, "token not accepted; closing"), now: now)
        close(session, now: now)
    }

    /// Counts a wrong token against `key` (the address, or the address and the named user),
    /// which may block it; also for a connection that left while its token was being verified.
    func countFailure(of session: Session, key: [UInt8], now: Int) {
        countFailure(key: key, client: clientName(session), peer: session.peer, now: now)
    }

    /// Counts a wrong token against `key` for a `hello` or a monitor request (`client`
    /// names it in the log, `peer` is its address), which may block the key.
    func countFailure(key: [UInt8], client: String, peer: [UInt8], now: Int) {
        auth.failureCount += 1
        let outcome = auth.failures.recordFailure(
            from: key, now: now, limit: config.auth.failLimit,
            windowMs: config.auth.failWindowMs, blockMs: config.auth.blockMs)
        let peerText = String(decoding: peer, as: UTF8.self)
        auth.log(AuthEvent(.rejected(failures: outcome.failures), client: client, peer: peerText))
        if outcome.blockedUntil != nil {
            auth.log(AuthEvent(.blocked(failures: outcome.failures, blockMs: config.auth.blockMs),
                               client: client, peer: peerText))
        }
    }

    /// A `hello` from a blocked address: `too_many_attempts`, closed, nothing hashed.
    private func refuseBlocked(_ session: Session, now: Int) {
        auth.blockedCount += 1
        auth.log(AuthEvent(.refusedWhileBlocked, client: clientName(session), peer: peerName(session)))
        fail(session, HeraldError(.tooManyAttempts, "too many failed hellos from this address (and user); try again later; closing"),
             now: now)
        close(session, now: now)
    }

    /// The auth deadline passed: an unauthenticated connection is told and closed, unless
    /// its `hello` is being verified (then the delay is the daemon's, and the verdict decides).
    func expireAuthentication(of id: ConnectionID, now: Int) {
        guard let session = sessions[id], !session.isAuthenticated, !session.closeAfterFlush,
              !session.awaitsVerification else { return }
        current = RequestContext()
        fail(session, HeraldError(.authRequired, "not authenticated within auth_timeout_ms ("
            + String(config.auth.timeoutMs) + " ms); closing"), now: now)
        close(session, now: now)
    }

    /// Applies the current users to every connection, after SIGHUP replaced `config`.
    ///
    /// Auth turned off: everyone is unrestricted. Otherwise every authenticated connection's
    /// token is checked again, without a KDF: fast credentials are hashed, and a slow one
    /// matches when it is the credential the connection authenticated with or the one the
    /// verified-token cache holds for its token. One no user accepts any more (its user
    /// removed, its token changed, or auth newly on and it never gave a token) gets
    /// `forbidden` and is closed; the others take their user's new permissions, and
    /// subscriptions those no longer allow end with
    /// `{"removed":PATTERN,"sub":NAME,"reason":"forbidden"}`. Connections still
    /// authenticating keep their deadline.
    /// - Parameter now: the monotonic clock in ms.
    public func applyAuthSettings(now: Int) {
        lastNow = now
        guard config.auth.isEnabled else {
            liftAuthentication()
            flushSystemEvents()
            return
        }
        var verdicts: [RecheckKey: AuthUser?] = [:]
        for session in sessions.values where !session.closeAfterFlush && session.isAuthenticated {
            var user: AuthUser?
            if let token = session.presentedToken {
                let key = RecheckKey(token: token, credential: session.user?.credential)
                if let known = verdicts[key] {
                    user = known
                } else {
                    user = recheck(token, previously: session.user?.credential)
                    verdicts[key] = user
                }
            }
            guard let user, let token = session.presentedToken else {
                current = RequestContext()
                fail(session, HeraldError(.forbidden, "token no longer accepted after a configuration reload; closing"), now: now)
                close(session, now: now)
                continue
            }
            moveConnection(of: session, to: user)
            adopt(user, token: token, for: session)
            endForbiddenSubscriptions(of: session)
            revokeRights(of: session, now: now)
        }
        revokeSharedRights(now: now)
        flushSystemEvents()
    }

    /// Auth was turned off: every connection is unrestricted and uncharged.
    private func liftAuthentication() {
        for session in sessions.values where !session.closeAfterFlush {
            session.user = nil
            releaseConnection(of: session)
            if !session.isAuthenticated {
                session.isAuthenticated = true
                deadlines.cancel(kind: .auth, id: session.id)
            }
        }
        auth.unauthenticated.removeAll()
    }

    /// The user a live connection's token belongs to under the new users, without a KDF.
    private func recheck(_ token: [UInt8], previously credential: TokenCredential?) -> AuthUser? {
        var known: Set<TokenCredential> = []
        if let credential, credential.isSlow { known.insert(credential) }
        if config.auth.hasSlowCredentials, token.count <= TokenCredential.maxTokenBytes,
           let cached = auth.verifiedTokens.credential(for: auth.verifiedTokens.fingerprint(of: token)) {
            known.insert(cached)
        }
        return config.auth.user(for: token, accepted: known)
    }

    private func adopt(_ user: AuthUser, token: [UInt8], for session: Session) {
        session.user = user
        session.presentedToken = token
        attachRate(to: session, user: user)
        if !session.isAuthenticated {
            session.isAuthenticated = true
            deadlines.cancel(kind: .auth, id: session.id)
            auth.unauthenticated.remove(session.id)
        }
    }

    /// Ends the session's subscriptions its user may no longer make, telling the client.
    func endForbiddenSubscriptions(of session: Session) {
        guard let rule = session.user?.subscribe, !rule.isUnrestricted else { return }
        let revoked = session.subscriptions.values
            .filter { !rule.permits(pattern: $0.pattern) }
            .sorted { $0.serial < $1.serial }
        for subscription in revoked {
            end(subscription)
            write(session) { out in
                out.appendRaw(#"{"removed":"#)
                out.appendJSONString(subscription.pattern)
                out.appendRaw(#","sub":"#)
                out.append(contentsOf: subscription.quotedName)
                out.appendRaw(#","reason":"forbidden"}"#)
                out.append(UInt8(ascii: "\n"))
            }
        }
    }

    /// Auth events queued since the last call, oldest first, for the server's log.
    public func takeAuthEvents() -> [AuthEvent] {
        guard !auth.events.isEmpty else { return [] }
        defer { auth.events.removeAll(keepingCapacity: true) }
        return auth.events
    }

    func clientName(_ session: Session) -> String { String(decoding: session.clientID, as: UTF8.self) }

    func peerName(_ session: Session) -> String { String(decoding: session.peer, as: UTF8.self) }
}

/// A token and the credential a connection authenticated with: one SIGHUP verdict each.
private struct RecheckKey: Hashable {
    let token: [UInt8]
    let credential: TokenCredential?
}

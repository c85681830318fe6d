import HeraldWire

/// Authentication: who a connection is, and what happens before it says so.
///
/// When users are configured a new connection may only `hello` and `ping`, with lines
/// limited to `auth.maxLine`, until a `hello` carries a token of a configured user; a wrong
/// token is `forbidden` and closes the connection, and one that has not authenticated
/// within `auth.timeoutMs` is closed from the broker's deadline queue. All of this state
/// lives in the `Session` (`isAuthenticated`, `user`, `presentedToken`).
extension Broker {
    /// The longest line the server should accept from this connection now.
    /// - Parameter session: the connection.
    /// - Returns: `max_line`, or the smaller pre-auth limit until it has authenticated.
    public func lineLimit(for session: Session) -> Int {
        session.isAuthenticated ? config.maxLine : min(config.maxLine, config.auth.maxLine)
    }

    /// At connect: with auth on, the connection starts unauthenticated and its deadline runs.
    func beginAuthentication(_ session: Session, now: Int) {
        guard config.auth.isEnabled, !session.closeAfterFlush else { return }
        session.isAuthenticated = false
        deadlines.schedule(at: now + config.auth.timeoutMs, kind: .auth, id: session.id)
    }

    /// Before any op: only `hello` and `ping` until authenticated, then the user's permissions.
    func authorize(_ op: Op, for session: Session) throws(HeraldError) {
        guard session.isAuthenticated else {
            if op == .hello || op == .ping { return }
            throw HeraldError(.authRequired, "authenticate first: {\"op\":\"hello\",\"token\":…}")
        }
        guard let user = session.user else { return }
        try checkPermission(op, of: user)
    }

    /// `hello`'s token. - Returns: false when the token was wrong (the connection is
    /// then answered `forbidden` and closing), true to go on with the rest of `hello`.
    func authenticate(_ session: Session, now: Int) throws(HeraldError) -> Bool {
        let token = try scanner.string(.token)
        guard config.auth.isEnabled else {
            if let token { session.presentedToken = token }
            return true
        }
        guard let token else {
            if session.isAuthenticated { return true }
            throw HeraldError(.authRequired, "hello needs 'token': this daemon requires authentication")
        }
        guard let user = config.auth.user(for: token) else {
            fail(session, HeraldError(.forbidden, "token not accepted; closing"), now: now)
            close(session, now: now)
            return false
        }
        let wasAuthenticated = session.isAuthenticated
        adopt(user, token: token, for: session)
        if wasAuthenticated { endForbiddenSubscriptions(of: session) }
        return true
    }

    /// The auth deadline passed: an unauthenticated connection is told and closed.
    func expireAuthentication(of id: ConnectionID, now: Int) {
        guard let session = sessions[id], !session.isAuthenticated, !session.closeAfterFlush else { return }
        current = RequestContext()
        fail(session, HeraldError(.authRequired, "not authenticated within auth_timeout_ms ("
            + String(config.auth.timeoutMs) + " ms); closing"), now: now)
        close(session, now: now)
    }

    /// Applies the current users to every connection, after SIGHUP replaced `config`.
    ///
    /// Auth turned off: everyone is unrestricted. Otherwise every authenticated connection's
    /// token is checked again: one no user accepts any more (its user removed, its token
    /// changed, or auth newly on and it never gave a token) gets `forbidden` and is closed;
    /// the others take their user's new permissions, and subscriptions those no longer
    /// allow end with `{"removed":PATTERN,"sub":NAME,"reason":"forbidden"}`. Connections still
    /// authenticating keep their deadline.
    /// - Parameter now: the monotonic clock in ms.
    public func applyAuthSettings(now: Int) {
        lastNow = now
        var verdicts: [[UInt8]: AuthUser?] = [:]
        for session in sessions.values where !session.closeAfterFlush {
            guard config.auth.isEnabled else {
                session.user = nil
                if !session.isAuthenticated {
                    session.isAuthenticated = true
                    deadlines.cancel(kind: .auth, id: session.id)
                }
                continue
            }
            guard session.isAuthenticated else { continue }
            let user: AuthUser?
            if let token = session.presentedToken {
                if let known = verdicts[token] {
                    user = known
                } else {
                    user = config.auth.user(for: token)
                    verdicts[token] = user
                }
            } else {
                user = nil
            }
            guard let user, let token = session.presentedToken else {
                current = RequestContext()
                fail(session, HeraldError(.forbidden, "token no longer accepted after a configuration reload; closing"), now: now)
                close(session, now: now)
                continue
            }
            adopt(user, token: token, for: session)
            endForbiddenSubscriptions(of: session)
            revokeRights(of: session, now: now)
        }
        revokeSharedRights(now: now)
        flushSystemEvents()
    }

    private func adopt(_ user: AuthUser, token: [UInt8], for session: Session) {
        session.user = user
        session.presentedToken = token
        if !session.isAuthenticated {
            session.isAuthenticated = true
            deadlines.cancel(kind: .auth, id: session.id)
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
}

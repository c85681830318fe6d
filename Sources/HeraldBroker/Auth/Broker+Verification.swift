import HeraldWire

/// Parked `hello`s: the server takes each one, verifies its token off the loop, and hands the
/// verdict back here, where the `hello` is answered exactly as the inline path answers it.
extension Broker {
    /// The parked `hello` of this connection, once: the server runs `verify` on it off the
    /// loop and holds the connection's further lines until `completeVerification`.
    /// - Parameter session: a connection the server just fed lines for.
    /// - Returns: the verification to run, or nil when none waits or it was taken already.
    public func takeVerification(for session: Session) -> PendingVerification? {
        guard let pending = session.pendingVerification, !session.verificationTaken, !session.followsVerification else {
            return nil
        }
        session.verificationTaken = true
        return pending
    }

    /// Answers a parked `hello` with the verdict from off the loop, and every `hello` that
    /// carried the same token meanwhile and waited for this verdict.
    ///
    /// The user is resolved against the users configured *now* (a SIGHUP may have come in
    /// between). A wrong token counts against the peer's address even when the connection
    /// has gone meanwhile; a connection that is still open is answered `ok` (or its bad
    /// `name`/`echo`, or `limit` past the user's connections), or `forbidden` and closed.
    /// A slow credential's success is remembered in the verified-token cache.
    /// - Parameters:
    ///   - session: the connection whose `hello` was parked.
    ///   - accepted: the slow credentials that accepted its token (`PendingVerification.verify`).
    ///   - now: the monotonic clock in ms.
    /// - Returns: the other sessions answered with this verdict: the server resumes their
    ///   held lines on their own loops.
    @discardableResult
    public func completeVerification(of session: Session, accepted: Set<TokenCredential>, now: Int) -> [Session] {
        guard let pending = session.pendingVerification else { return [] }
        let followers = session.followsVerification ? [] : auth.verificationsInFlight.removeValue(forKey: pending.fingerprint) ?? []
        answer(session, pending, accepted: accepted, now: now)
        for follower in followers {
            if let own = follower.pendingVerification { answer(follower, own, accepted: accepted, now: now) }
        }
        flushSystemEvents()
        return followers
    }

    private func answer(_ session: Session, _ pending: PendingVerification, accepted: Set<TokenCredential>, now: Int) {
        lastNow = now
        session.pendingVerification = nil
        session.verificationTaken = false
        session.followsVerification = false
        if pending.reserved { auth.failures.release(pending.failureKey) }
        let isOpen = sessions[session.id] === session && !session.closeAfterFlush
        answeringParkedHello(pending) {
            guard config.auth.isEnabled else {
                guard isOpen else { return }
                session.presentedToken = pending.token
                finishGreeting(session, pending.greeting, now: now)
                return
            }
            let named = pending.userName.flatMap { name in config.auth.users.first { $0.name == name } }
            guard pending.userName == nil || named != nil,
                  let user = config.auth.user(for: pending.token, accepted: accepted, among: named) else {
                let key = pending.failureKey
                if isOpen { reject(session, key: key, now: now) } else { countFailure(of: session, key: key, now: now) }
                return
            }
            if user.credential.isSlow {
                // The token's own key: `pending.fingerprint` of a `hello` that named its
                // user is the in-flight key (the user's name appended), which no lookup uses.
                auth.verifiedTokens.remember(auth.verifiedTokens.fingerprint(of: pending.token), accepted: user.credential)
            }
            guard isOpen, admit(user, token: pending.token, for: session, greeting: pending.greeting, now: now) else { return }
            finishGreeting(session, pending.greeting, now: now)
        }
    }

    private func finishGreeting(_ session: Session, _ greeting: Greeting, now: Int) {
        do throws(HeraldError) {
            try greet(session, greeting)
            session.errorRun = 0
        } catch {
            fail(session, error, now: now)
        }
    }

    /// Runs `body` with `current` set to the parked `hello`'s op and `rid`, so its answers
    /// echo them as they would have at once.
    private func answeringParkedHello(_ pending: PendingVerification, _ body: () -> Void) {
        let op = Self.quotedHello
        op.withUnsafeBytes { opRaw in
            if let rid = pending.rid {
                rid.withUnsafeBytes { ridRaw in
                    current = RequestContext(opRaw: opRaw, ridRaw: ridRaw)
                    body()
                }
            } else {
                current = RequestContext(opRaw: opRaw, ridRaw: nil)
                body()
            }
        }
        current = RequestContext()
    }

    /// `"hello"` as raw JSON, the `op` echoed in a parked `hello`'s answers.
    private static let quotedHello: [UInt8] = Array(#""hello""#.utf8)
}

import HeraldBroker

/// What the operator reads about authentication: failed `hello`s with the peer address,
/// blocked addresses, refusals, and credentials that should be re-hashed.
extension Server {
    /// Logs the broker's auth events (drained once per flush pass, outside the lock).
    ///
    /// A wrong token and a block are `warn` (someone guessed); a refusal while blocked is
    /// `debug`, so a peer hammering a blocked address cannot flood the log.
    func log(_ events: [AuthEvent]) {
        for event in events {
            // A monitor request (`h7`, `monitor_auth`) is counted on the same books as a hello.
            let what = event.client.hasPrefix("h") ? "monitor request" : "hello"
            switch event.kind {
            case .rejected(let failures):
                logger.warn(what + " refused: token not accepted",
                            ["client": event.client, "peer": event.peer, "failures": failures])
            case .blocked(let failures, let blockMs):
                logger.warn("address blocked after failed hellos",
                            ["peer": event.peer, "failures": failures, "block_ms": blockMs])
            case .refusedWhileBlocked:
                logger.debug(what + " refused: address blocked", ["client": event.client, "peer": event.peer])
            case .userConnectionLimit(let user, let limit):
                logger.warn("hello refused: user at its connections limit",
                            ["client": event.client, "peer": event.peer, "user": user, "limit": limit])
            case .evictedUnauthenticated(let limit):
                logger.info("closed the oldest unauthenticated connection (max_unauthenticated)",
                            ["client": event.client, "peer": event.peer, "limit": limit])
            case .kicked(let by, let user):
                logger.warn("connection kicked by an admin", ["client": event.client, "peer": event.peer, "by": by, "by_user": user])
            }
        }
    }

    /// Resumes a connection whose parked `hello` another connection's verification answered,
    /// on the connection's own loop: always through its inbox, so it runs after the callback
    /// that answered it, whichever loop that was.
    /// - Parameter id: the waiting connection.
    func resumeHeldLines(of id: ConnectionID) {
        worker(for: id).post(.resume(id))
    }

    /// Logs a warning per user whose `token_hash` is the old fast `sha256:` form.
    func warnAboutFastHashes(_ config: Config) {
        for name in config.fastHashUsers {
            logger.warn("token_hash uses the fast sha256 scheme; re-hash it with heraldd --hash-token (pbkdf2-sha256)",
                        ["user": name])
        }
    }
}

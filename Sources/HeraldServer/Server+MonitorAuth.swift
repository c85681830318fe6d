import HeraldBroker

/// The locked monitor (`monitor_auth`, issue 37): every path but `/healthz` needs HTTP Basic
/// credentials of a user with `admin: true`.
///
/// The broker judges them on the books `hello` keeps (`Broker+MonitorAuth`): the same failure
/// table per address (and user), the same verified-token cache. A token only PBKDF2 can judge
/// is verified on libuv's thread pool (`TokenVerification`, as a parked `hello`'s), never on
/// the main loop, and the connection waits meanwhile without reading (it may still be closed
/// to make room for a `/healthz` probe; its verdict is counted all the same).
extension Server {
    /// Judges a request's credentials and answers it (here, or after the KDF).
    /// - Parameters:
    ///   - request: a request for a locked path.
    ///   - connection: its connection, waiting for the answer.
    func checkMonitorCredentials(of request: HTTPRequest, on connection: MonitorConnection) {
        guard let credentials = BasicCredentials(authorization: request.header("authorization")) else {
            connection.answer(.unauthorized, to: request)
            return
        }
        let now = main.now
        let peer = connection.peer.hostBytes
        let client = "h" + String(connection.id)
        let (access, events) = shared.withLock { broker in
            (broker.checkMonitorCredentials(user: credentials.user, token: credentials.token, peer: peer,
                                            client: client, now: now), broker.takeAuthEvents())
        }
        log(events)
        settle(access, request: request, on: connection)
    }

    /// Carries out a verdict: the page, 403, 401, 429, or a verification off the loop.
    private func settle(_ access: MonitorAccess, request: HTTPRequest, on connection: MonitorConnection) {
        switch access {
        case .admin:
            guard let monitor else { return }
            connection.answer(monitor.respond(to: request), to: request)
        case .notAdmin:
            connection.answer(.plain(.forbidden, "the monitor is for users with admin: true"), to: request)
        case .rejected:
            connection.answer(.unauthorized, to: request)
        case .blocked:
            connection.answer(.plain(.tooManyRequests, "too many failed attempts from this address (and user); try again later"),
                              to: request)
        case .verify(let pending):
            connection.awaitVerdict()
            let job = TokenVerification(pending) { [self] job, cancelled in
                verdictArrived(job, cancelled: cancelled, request: request, on: connection)
            }
            guard job.start(on: main.loop) else {
                logger.error("cannot queue a token verification for the monitor", ["http": "h" + String(connection.id)])
                connection.close()
                return
            }
        }
    }

    /// Back on the main loop: the broker counts the verdict, then the request is answered if
    /// its connection is still there.
    private func verdictArrived(_ job: TokenVerification, cancelled: Bool, request: HTTPRequest,
                                on connection: MonitorConnection) {
        let now = main.now
        let peer = connection.peer.hostBytes
        let client = "h" + String(connection.id)
        let accepted = cancelled ? [] : job.accepted
        let (access, events) = shared.withLock { broker in
            (broker.completeMonitorCheck(job.pending, accepted: accepted, peer: peer, client: client, now: now),
             broker.takeAuthEvents())
        }
        log(events)
        guard !cancelled, connection.awaitsAnswer else { return }
        settle(access, request: request, on: connection)
    }
}

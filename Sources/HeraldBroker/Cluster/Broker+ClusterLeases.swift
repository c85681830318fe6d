import HeraldWire

/// Per-user `connections`, `subscriptions` and `channels` across the cluster (issue 32,
/// item 7): each node counts its users' use as alone, and takes part of each user's limit
/// as a grant from Redis (`UserLeases`, the `lease` script). An op that would pass the
/// node's grant parks its connection behind a `lease` call, like a state op, and runs again
/// when the answer is in: with more granted it goes on, with nothing left anywhere it is
/// `limit`, naming the cluster. Alone (or without auth) nothing here runs.
extension Broker {
    /// Whether `session` may take one more of `kind` for `user` as far as the cluster goes.
    /// - Parameters:
    ///   - used: what the user holds of it on this node now.
    ///   - limit: the user's figure.
    ///   - retry: the request to run again when the `lease` call answers.
    /// - Returns: true: go on; false: parked behind a `lease` call (answer nothing now).
    /// - Throws: `limit` when the grant was just asked for and the cluster had none left.
    func leaseOne(_ kind: LeaseKind, used: Int, limit: Int, user: String, for session: Session,
                  retry: () -> LeaseRetry) throws(HeraldError) -> Bool {
        guard let cluster else { return true }
        let key = UserLeases.Key(user: user, kind: kind)
        let granted = cluster.leases.granted(key)
        guard used >= granted else { return true }
        if retryingLease {
            throw HeraldError(.limit, "user \"" + user + "\" holds its limit of " + String(limit) + " "
                + Self.leaseNoun(kind) + " across the cluster (user_limits." + Self.leaseNoun(kind) + ")")
        }
        var waiting = ClusterState.Waiting(session: session, op: .ping, opRaw: current.opRaw.map { Array($0) },
                                           rid: current.ridRaw.map { Array($0) }, subscription: nil, catchUp: nil)
        waiting.exclusive = true
        waiting.lease = key
        waiting.retry = retry()
        let wanted = max(UserLeases.chunk(of: limit), used + 1 - granted)
        cluster.leases.asking(key, now: lastNow)
        _ = cluster.call(.lease, channel: nil, arguments: [
            Array(String(cluster.nodeIndex).utf8), Array(kind.rawValue.utf8), Array(user.utf8),
            Array(String(limit).utf8), Array(String(wanted).utf8),
        ], waiting: waiting)
        session.clusterCalls += 1
        session.exclusiveClusterCalls += 1
        return false
    }

    /// `leaseOne` for a request read from a line: when it parks, the line is kept to run
    /// again and the request unwinds with an error nobody is sent (`parkedForLease`).
    func leaseOneOrPark(_ kind: LeaseKind, used: Int, limit: Int, user: String, for session: Session) throws(HeraldError) {
        guard cluster != nil else { return }
        let line = scanner.lineCopy
        guard try leaseOne(kind, used: used, limit: limit, user: user, for: session, retry: { .line(line) }) else {
            current.parkedForLease = true
            throw HeraldError(.limit, "waiting for a cluster grant")
        }
    }

    /// A `lease` call came back: the grant grows by what Redis granted, and the request runs
    /// again (now admitted, or refused `limit` with nothing left in the cluster).
    func leaseAnswered(_ waiting: ClusterState.Waiting, key: UserLeases.Key, result: ClusterValue, _ cluster: ClusterState) {
        let amount = result.elements?.first?.int ?? 0
        cluster.leases.answered(key, granted: amount)
        let session = waiting.session
        guard sessions[session.id] === session, !session.closeAfterFlush, let retry = waiting.retry else { return }
        if case .failure = result {
            return withStoredLeaseRequest(waiting) { failUnavailable(session, result) }
        }
        retryingLease = true
        defer { retryingLease = false }
        switch retry {
        case .line(let line):
            stats.msgsIn -= 1
            line.withUnsafeBytes { handleLine($0, from: session, now: lastNow) }
        case .hello(let name, let token, let greeting):
            withStoredLeaseRequest(waiting) {
                guard let user = config.auth.users.first(where: { $0.name == name }) else {
                    fail(session, HeraldError(.forbidden, "token not accepted; closing"), now: lastNow)
                    return close(session, now: lastNow)
                }
                guard admit(user, token: token, for: session, greeting: greeting, now: lastNow) else { return }
                do throws(HeraldError) {
                    try greet(session, greeting)
                    session.errorRun = 0
                } catch {
                    fail(session, error, now: lastNow)
                }
            }
        }
    }

    /// Runs `body` with `current` pointing at the stored `op` and `rid` of a parked request.
    private func withStoredLeaseRequest(_ waiting: ClusterState.Waiting, _ body: () -> Void) {
        let op = waiting.opRaw ?? []
        let rid = waiting.rid ?? []
        op.withUnsafeBytes { opBytes in
            rid.withUnsafeBytes { ridBytes in
                current = RequestContext()
                current.opRaw = waiting.opRaw == nil ? nil : opBytes
                current.ridRaw = waiting.rid == nil ? nil : ridBytes
                body()
                current = RequestContext()
            }
        }
    }

    /// From `tick`: gives back what each grant holds beyond its use once nothing asked more
    /// of it for `UserLeases.idleMs`, one `unlease` call per figure.
    func giveBackIdleLeases(now: Int) {
        guard let cluster else { return }
        let surplus = cluster.leases.takeIdleSurplus(now: now) { key in leaseUse(of: key) }
        for (key, amount) in surplus {
            cluster.send(.unlease, arguments: [Array(String(cluster.nodeIndex).utf8), Array(key.kind.rawValue.utf8),
                                               Array(key.user.utf8), Array(String(amount).utf8)])
        }
    }

    /// What the user of `key` holds of its figure on this node now.
    func leaseUse(of key: UserLeases.Key) -> Int {
        guard let account = accounts[key.user] else { return 0 }
        switch key.kind {
        case .connections: return account.connections
        case .subscriptions: return account.subscriptions
        case .channels: return account.channels
        }
    }

    /// The grants this node holds, as `kind user amount` triples (`leaseResync`).
    public func clusterLeaseGrants() -> [[UInt8]] {
        guard let cluster else { return [] }
        var out: [[UInt8]] = []
        for (key, grant) in cluster.leases.grants where grant.granted > 0 {
            out += [Array(key.kind.rawValue.utf8), Array(key.user.utf8), Array(String(grant.granted).utf8)]
        }
        return out
    }

    private static func leaseNoun(_ kind: LeaseKind) -> String {
        switch kind {
        case .connections: return "connections"
        case .subscriptions: return "subscriptions"
        case .channels: return "channels"
        }
    }
}

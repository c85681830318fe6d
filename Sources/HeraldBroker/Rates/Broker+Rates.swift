/// Rate limits per user (issue 37, item 3; docs/protocol.md, "Rate limits"): `pub_per_s`,
/// `bytes_in_per_s` and `ops_per_s` of `user_limits` (or a user's own `limits`), token
/// buckets shared by the user's connections (`UserRate`). The broker charges each line and
/// each `pub`; the server asks `rateWait` before each line and, when it says wait, holds the
/// connection's lines and stops reading it until then (`Connection+Throttle`).
///
/// What it costs a user without rates: one flag test per line and per `pub`. What a hostile
/// user makes it cost: nothing grows with its traffic (one `UserRate` per configured user
/// with rates, made when it first connects and kept for its counter); its held connections
/// cost their loop one timer entry each.
extension Broker {
    /// Gives `session` its user's rates (none when the user has no rate figures).
    func attachRate(to session: Session, user: AuthUser) {
        guard UserRate.applies(to: user.limits) else {
            session.rate = nil
            return
        }
        let rate: UserRate
        if let known = rates[user.name] {
            known.update(user.limits, now: lastNow)
            rate = known
        } else {
            rate = UserRate(name: user.name, limits: user.limits, now: lastNow)
            rates[user.name] = rate
        }
        session.rate = rate
    }

    /// Charges a line of `count` bytes (without its newline) to the session's user.
    @inline(__always)
    func chargeRate(line count: Int, of session: Session, now: Int) {
        guard session.hasRate else { return }
        session.rate?.chargeLine(bytes: count + 1, now: now)
    }

    /// How long (ms) the session must wait before its next line for its user's rates;
    /// 0: go on. Asked by the server before each line of a rate-limited session.
    public func rateWait(for session: Session, now: Int) -> Int {
        guard session.hasRate, let rate = session.rate else { return 0 }
        return rate.waitMs(now: now)
    }

    /// Per user with rates, the milliseconds its connections were held (`/metrics`).
    public func throttledTimes() -> [(user: String, ms: Int)] {
        rates.values.map { ($0.name, $0.heldMs) }.sorted { $0.user < $1.user }
    }

    /// Cluster mode, from the tick: once a second, tells Redis how many connections each
    /// rate-limited user has here (a user that had some last time and has none now says 0
    /// once), so every node hears the totals (`ClusterRateScripts.share`).
    func shareRatesIfDue(now: Int) {
        guard let cluster, !rates.isEmpty, now - lastRateShare >= 1_000 else { return }
        lastRateShare = now
        var arguments: [[UInt8]] = [Array(String(cluster.nodeIndex).utf8)]
        for (name, rate) in rates {
            let count = accounts[name]?.connections ?? 0
            guard count > 0 || rate.reportedConnections > 0 else { continue }
            rate.reportedConnections = count
            arguments += [Array(name.utf8), Array(String(count).utf8)]
        }
        guard arguments.count > 1 else { return }
        cluster.send(.rateShare, arguments: arguments)
    }

    /// Cluster mode: this node's share of `user`'s rates is `local` of its `total`
    /// connections across the nodes.
    public func setRateShare(user: String, local: Int, total: Int, now: Int) {
        rates[user]?.setShare(local: local, total: total, now: now)
    }
}

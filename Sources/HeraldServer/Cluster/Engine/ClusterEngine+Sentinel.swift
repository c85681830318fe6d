import HeraldBroker

/// One primary at a time under Sentinel (issue 31, docs/cluster.md "Failover and
/// fail-stop"). The sentinels' notices (`SentinelWatch`) reach every node within
/// milliseconds; a node that hears a replica is about to be promoted fences the primary it
/// is on (`RedisFence`: `CLIENT PAUSE … WRITE`, every client's writes held there), and one
/// that hears the switch fences the old primary and only then drops its links, which
/// reconnect where the sentinels say. So no write lands on the old primary once any node
/// can write to the new one; a node still on the old one has its writes held until it
/// moves too, and dropping that connection discards them unexecuted (they are answered
/// `unavailable`). The poll once a period stays as the fallback (a missed notice, a
/// sentinel link down), and moves the same way.
extension ClusterEngine {
    /// How long a fence holds the old primary's writes: past the sentinel's promotion check
    /// (about a second) with room; a failover that aborts lifts it at once (`UNPAUSE`).
    static let fencePauseMs = 5_000

    /// The primary the links are on now.
    var currentPrimary: RedisAddress { RedisAddress(host: commands.host, port: commands.port) }

    /// Starts listening to the sentinels' notices.
    func startSentinelWatch() {
        sentinelWatch?.onNotice = { [unowned self] notice in heard(notice) }
        sentinelWatch?.start()
    }

    /// A sentinel's notice about the cluster's master.
    func heard(_ notice: SentinelWatch.Notice) {
        switch notice {
        case .promoting(let primary):
            guard primary == currentPrimary, fencedPrimary != primary else { return }
            server.logger.warn("cluster: Sentinel is promoting a replica; fencing the current primary's writes", ["primary": primary.description])
            fence(primary) { _ in }
        case .switched(let from, let to):
            guard to != currentPrimary else { return }
            server.logger.warn("cluster: Sentinel switched the primary; fencing the old one and moving", ["from": from.description, "to": to.description])
            move(from: currentPrimary)
        case .aborted:
            guard let primary = fencedPrimary else { return }
            fencedPrimary = nil
            server.logger.warn("cluster: the failover was aborted; lifting the fence", ["primary": primary.description])
            fences.append(RedisFence(primary, command: RedisFence.unpause, credentials: settings.redisCredentials,
                                     loop: server.main.loop) { _ in })
        }
    }

    /// Fences `primary` (unless this node fenced it already), then cuts every link: what
    /// waits for an answer there is answered `unavailable` now (a graceful disconnect would
    /// wait for the writes the fence holds), and the links reconnect where the sentinels say.
    func move(from primary: RedisAddress) {
        guard movingFrom != primary else { return }
        let cut = { [unowned self] in
            movingFrom = nil
            guard currentPrimary == primary else { return }
            for link in [commands, messages, control] { link.cut("Sentinel moved the primary") }
        }
        guard fencedPrimary != primary else { return cut() }
        movingFrom = primary
        fence(primary) { _ in cut() }
    }

    /// Sends the fence to `primary`; `then` runs once it is confirmed or failed (a refusal,
    /// `NOPERM` in an ACL setup without `+client|pause`, is logged once: the move goes on
    /// without a fence).
    private func fence(_ primary: RedisAddress, then: @escaping (String?) -> Void) {
        fencedPrimary = primary
        fences.removeAll(where: \.isFinished)
        fences.append(RedisFence(primary, command: RedisFence.pause(ms: Self.fencePauseMs), credentials: settings.redisCredentials,
                                 loop: server.main.loop) { [unowned self] failure in
            if let failure, failure.hasPrefix("NOPERM") || failure.hasPrefix("ERR") {
                server.logger.warn("cluster: could not fence the old primary (CLIENT PAUSE refused); moving without a fence",
                                   ["primary": primary.description, "error": failure])
            }
            then(failure)
        })
    }

    /// The poll: asks the sentinels (one short query, off the loop's critical path) and
    /// moves when they name another primary.
    func followSentinel() {
        fences.removeAll(where: \.isFinished)
        guard let sentinel, commands.isConnected || messages.isConnected || control.isConnected else { return }
        sentinel.resolve { [weak self] address in
            guard let self, let address, address != currentPrimary else { return }
            server.logger.warn("cluster: Sentinel names another Redis primary; reconnecting",
                               ["from": currentPrimary.description, "to": address.description])
            move(from: currentPrimary)
        }
    }
}

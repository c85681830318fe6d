import CLibUV
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

    /// Fences `primary` (unless this node fenced it already), reads every event the old
    /// primary published before the fence (`drainThenCut`), then cuts every link: what waits
    /// for an answer there is answered `unavailable` now (a graceful disconnect would wait for
    /// the writes the fence holds), and the links reconnect where the sentinels say.
    func move(from primary: RedisAddress) {
        guard movingFrom != primary else { return }
        movingFrom = primary
        movingSince = uv_hrtime()
        guard fencedPrimary != primary else { return drainThenCut(primary) }
        fence(primary) { [unowned self] _ in drainThenCut(primary) }
    }

    /// The events the old primary published before the fence may still be on their way on
    /// the subscription link: a node that cut it then would resume below what another node
    /// delivered, and could publish a `seq` that node's subscribers already saw. A
    /// `SUBSCRIBE` to a marker channel is answered after everything queued before it on that
    /// connection, so its confirmation means every earlier event arrived. Bounded by
    /// `moveTimeoutNs` (`everyPeriod`), for an old primary that stopped answering.
    private func drainThenCut(_ primary: RedisAddress) {
        guard movingFrom == primary else { return }
        guard messages.isConnected else { return cutLinks(leaving: primary) }
        let marker = Array((prefix + "drained:" + String(nodeIndex)).utf8)
        let sent = messages.subscribe([marker]) { [unowned self] reply in
            guard reply.elements?.first?.bytes == Array("subscribe".utf8) else { return }
            cutLinks(leaving: primary)
        }
        if !sent { cutLinks(leaving: primary) }
    }

    /// How long a move may wait for the fence and the drain.
    static let moveTimeoutNs: UInt64 = 1_000_000_000

    /// Ends a move off `primary`: cuts every link still on it.
    func cutLinks(leaving primary: RedisAddress) {
        guard movingFrom == primary else { return }
        movingFrom = nil
        movingSince = nil
        guard currentPrimary == primary else { return }
        for link in [commands, messages, control] { link.cut("Sentinel moved the primary") }
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
        if let from = movingFrom, let since = movingSince, uv_hrtime() &- since > Self.moveTimeoutNs { cutLinks(leaving: from) }
        guard let sentinel, commands.isConnected || messages.isConnected || control.isConnected else { return }
        sentinel.resolve { [weak self] address in
            guard let self, let address, address != currentPrimary else { return }
            server.logger.warn("cluster: Sentinel names another Redis primary; reconnecting",
                               ["from": currentPrimary.description, "to": address.description])
            move(from: currentPrimary)
        }
    }
}

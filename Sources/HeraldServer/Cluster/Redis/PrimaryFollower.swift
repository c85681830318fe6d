import CLibUV

/// One primary at a time under Sentinel, for one Redis shard (issue 31, docs/cluster.md
/// "Failover and fail-stop"; issue 33: every shard that names its own sentinels has one).
/// The sentinels' notices (`SentinelWatch`) reach every node within milliseconds; a node
/// that hears a replica is about to be promoted fences the primary its links are on
/// (`RedisFence`: `CLIENT PAUSE … WRITE`, every client's writes held there), and one that
/// hears the switch fences the old primary and only then drops its links, which reconnect
/// where the sentinels say. So no write lands on the old primary once any node can write to
/// the new one; a node still on the old one has its writes held until it moves too, and
/// dropping that connection discards them unexecuted (they are answered `unavailable`). The
/// poll once a period (`poll`) stays as the fallback (a missed notice, a sentinel link down),
/// and moves the same way.
///
/// Handle rules as `RedisLink`: only the main loop's thread calls it; `close` closes what it
/// opened.
final class PrimaryFollower {
    /// How long a fence holds the old primary's writes: past the sentinel's promotion check
    /// (about a second) with room; a failover that aborts lifts it at once (`UNPAUSE`).
    static let fencePauseMs = 5_000
    /// A fence is sent again once this old (the poll renews it while the failover that set
    /// it has neither switched nor aborted: a promotion slowed by load can outlast one
    /// pause, and writes held by an expired pause would land on the old primary).
    static let fenceRenewNs: UInt64 = 2_000_000_000
    /// How long a fence is renewed at most before it is given up (the sentinels'
    /// failover has then failed without a notice; the poll still moves if they name
    /// another primary).
    static let fenceHoldNs: UInt64 = 60_000_000_000
    /// How long a fence sent on the promotion notice may take to land (nothing waits for
    /// it; closing its link earlier could leave the old primary unfenced).
    static let promotionFenceTimeoutMs: UInt64 = 2_000
    /// How long a move may wait for the fence and the drain.
    static let moveTimeoutNs: UInt64 = 1_000_000_000

    /// Asks the sentinels for the primary (the links' `resolve`, and the poll).
    let resolver: SentinelResolver
    private let watch: SentinelWatch
    private let credentials: RedisCredentials?
    private let loop: UnsafeMutablePointer<uv_loop_t>
    private let logger: Logger
    /// Which shard, for logs (`primary` for shard 0, `shard N` for the others).
    private let name: String
    /// The command link: where the links are now.
    private let commands: RedisLink
    /// The subscription link, drained before a move (`drainThenCut`).
    private let messages: RedisLink
    /// Every link to this shard, cut by a move.
    private let links: [RedisLink]
    /// The marker channel the drain subscribes to (it names the node, whose index may change).
    var marker: () -> [UInt8] = { [] }
    /// The primary this node last fenced, the one it is moving from, and since when.
    private(set) var fencedPrimary: RedisAddress?
    /// When the fence on `fencedPrimary` was first sent and last sent (for renewal).
    private var fencedSince: UInt64 = 0
    private var fenceSentAt: UInt64 = 0
    private(set) var movingFrom: RedisAddress?
    private var movingSince: UInt64?
    private var fences: [RedisFence] = []

    /// A follower of the shard `sentinel` names, moving `links` (`commands` and `messages`
    /// among them); `credentials` are the primary's (for the fence).
    init(_ sentinel: SentinelSettings, name: String, commands: RedisLink, messages: RedisLink, links: [RedisLink],
         credentials: RedisCredentials?, logger: Logger, loop: UnsafeMutablePointer<uv_loop_t>) {
        resolver = SentinelResolver(sentinel, loop: loop)
        watch = SentinelWatch(sentinel, loop: loop)
        self.name = name
        self.commands = commands
        self.messages = messages
        self.links = links
        self.credentials = credentials
        self.logger = logger
        self.loop = loop
        for link in links { link.resolve = { [unowned self] done in resolver.resolve(done) } }
    }

    /// The primary the links are on now.
    var currentPrimary: RedisAddress { RedisAddress(host: commands.host, port: commands.port) }

    /// Starts listening to the sentinels' notices.
    func start() {
        watch.onNotice = { [unowned self] notice in heard(notice) }
        watch.start()
    }

    /// Closes the sentinel links.
    func close() {
        resolver.close()
        watch.close()
    }

    /// A sentinel's notice about the watched master.
    func heard(_ notice: SentinelWatch.Notice) {
        switch notice {
        case .promoting(let primary):
            guard primary == currentPrimary, fencedPrimary != primary else { return }
            logger.warn("cluster: Sentinel is promoting a replica; fencing the current primary's writes",
                        ["shard": name, "primary": primary.description])
            fence(primary, timeoutMs: Self.promotionFenceTimeoutMs) { _ in }
        case .switched(let from, let to):
            guard to != currentPrimary else { return }
            logger.warn("cluster: Sentinel switched the primary; fencing the old one and moving",
                        ["shard": name, "from": from.description, "to": to.description])
            move(from: currentPrimary)
        case .aborted:
            guard let primary = fencedPrimary else { return }
            fencedPrimary = nil
            logger.warn("cluster: the failover was aborted; lifting the fence", ["shard": name, "primary": primary.description])
            fences.append(RedisFence(primary, command: RedisFence.unpause, credentials: credentials, loop: loop) { _ in })
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
    /// `moveTimeoutNs` (`poll`), for an old primary that stopped answering.
    private func drainThenCut(_ primary: RedisAddress) {
        guard movingFrom == primary else { return }
        guard messages.isConnected else { return cutLinks(leaving: primary) }
        let sent = messages.subscribe([marker()]) { [unowned self] reply in
            guard reply.elements?.first?.bytes == Array("subscribe".utf8) else { return }
            cutLinks(leaving: primary)
        }
        if !sent { cutLinks(leaving: primary) }
    }

    /// Ends a move off `primary`: cuts every link still on it.
    private func cutLinks(leaving primary: RedisAddress) {
        guard movingFrom == primary else { return }
        movingFrom = nil
        movingSince = nil
        guard currentPrimary == primary else { return }
        for link in links { link.cut("Sentinel moved the primary") }
    }

    /// Sends the fence to `primary`; `then` runs once it is confirmed or failed (a refusal,
    /// `NOPERM` in an ACL setup without `+client|pause`, is logged: the move goes on without
    /// a fence).
    private func fence(_ primary: RedisAddress, timeoutMs: UInt64 = RedisFence.timeoutMs,
                       then: @escaping (String?) -> Void) {
        let now = uv_hrtime()
        if fencedPrimary != primary { fencedSince = now }
        fencedPrimary = primary
        fenceSentAt = now
        fences.removeAll(where: \.isFinished)
        fences.append(RedisFence(primary, command: RedisFence.pause(ms: Self.fencePauseMs), credentials: credentials,
                                 timeoutMs: timeoutMs, loop: loop) { [unowned self] failure in
            if let failure, failure.hasPrefix("NOPERM") || failure.hasPrefix("ERR") {
                logger.warn("cluster: could not fence the old primary (CLIENT PAUSE refused); moving without a fence",
                            ["shard": name, "primary": primary.description, "error": failure])
            }
            then(failure)
        })
    }

    /// Sends the fence again while the primary this node fenced is still the one its links
    /// are on and no move is under way (a switch or an abort ends that), for at most
    /// `fenceHoldNs`.
    private func renewFence(now: UInt64) {
        guard let primary = fencedPrimary, primary == currentPrimary, movingFrom == nil,
              now &- fenceSentAt >= Self.fenceRenewNs else { return }
        guard now &- fencedSince < Self.fenceHoldNs else {
            fencedPrimary = nil
            logger.warn("cluster: no switch or abort heard since the fence; letting it lapse",
                        ["shard": name, "primary": primary.description])
            return
        }
        fence(primary, timeoutMs: Self.promotionFenceTimeoutMs) { _ in }
    }

    /// The poll, once a period: ends a move that waited too long, and asks the sentinels
    /// (one short query, off the loop's critical path), moving when they name another
    /// primary.
    func poll() {
        fences.removeAll(where: \.isFinished)
        renewFence(now: uv_hrtime())
        if let from = movingFrom, let since = movingSince, uv_hrtime() &- since > Self.moveTimeoutNs { cutLinks(leaving: from) }
        guard links.contains(where: \.isConnected) else { return }
        resolver.resolve { [weak self] address in
            guard let self, let address, address != currentPrimary else { return }
            logger.warn("cluster: Sentinel names another Redis primary; reconnecting",
                        ["shard": name, "from": currentPrimary.description, "to": address.description])
            move(from: currentPrimary)
        }
    }
}

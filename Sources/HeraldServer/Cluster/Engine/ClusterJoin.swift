import CHiredis
#if canImport(Glibc)
import Glibc
#endif

/// Joining and leaving a cluster, with hiredis's blocking API at start and stop (before
/// and after the loops run), so an unreachable Redis stops start-up with a clear error.
///
/// Joining takes the node's index (`INCR {p}node_index`: never reused, so client ids
/// `index << 32 | n` never repeat), makes the data set's epoch if there is none
/// (`SET {p}epoch … NX`), and registers the node (`{p}nodes`, `{p}alive:INDEX` with a TTL
/// the engine refreshes). With `cluster.sentinel` it first asks the sentinels for the
/// primary (`SentinelLookup`), and the engine's links start there.
struct ClusterJoin {
    /// This node's index for this life.
    let nodeIndex: Int
    /// The data set's epoch.
    let epoch: String
    /// The Redis (primary) it joined through.
    let primary: RedisAddress
    /// How many replicas the primary had (`ROLE`), asked under Sentinel only (else 0).
    var replicas = 0

    /// Joins the cluster. - Throws: `ClusterError` naming Redis's address and what failed.
    static func join(_ settings: ClusterSettings, epochCandidate: String) throws(ClusterError) -> ClusterJoin {
        let primary = try settings.sentinel.map { sentinel throws(ClusterError) in
            try SentinelLookup.primary(of: sentinel, credentials: settings.redisCredentials)
        } ?? settings.redisAddress
        let link = try BlockingRedis(primary, credentials: settings.redisCredentials)
        defer { link.close() }
        let p = settings.keyPrefix
        guard case .integer(let index) = try link.run(["INCR", p + "node_index"]) else {
            throw ClusterError("Redis at \(primary): INCR node_index did not give an integer")
        }
        try checkShardList(settings, link, primary)
        _ = try link.run(["SET", p + "epoch", epochCandidate, "NX"])
        guard case .string(let epoch) = try link.run(["GET", p + "epoch"]) else {
            throw ClusterError("Redis at \(primary): no epoch")
        }
        _ = try link.run(["HSET", p + "nodes", String(index), settings.node])
        _ = try link.run(["SET", p + "alive:" + String(index), "1", "PX", String(settings.nodeTimeoutMs)])
        var joined = ClusterJoin(nodeIndex: index, epoch: String(decoding: epoch, as: UTF8.self), primary: primary)
        if settings.sentinel != nil, case .array(let role)? = try? link.run(["ROLE"]), role.count > 2 {
            joined.replicas = role[2].elements?.count ?? 0
        }
        return joined
    }

    /// Records the shard list on shard 0 (`{p}shards`) when none is, else checks this
    /// node's against it: the same count, and the same shards after the first (the first is
    /// where the record is, whatever address this node reaches it by). A node whose list
    /// differs would place channels where the others do not look: it does not start.
    static func checkShardList(_ settings: ClusterSettings, _ link: BlockingRedis, _ primary: RedisAddress) throws(ClusterError) {
        let key = settings.keyPrefix + "shards"
        let mine = settings.shardList
        _ = try link.run(["SET", key, mine, "NX"])
        guard case .string(let bytes) = try link.run(["GET", key]) else { return }
        let recorded = String(decoding: bytes, as: UTF8.self)
        if recorded.hasPrefix("resharding") {
            throw ClusterError("the cluster's data is being moved (\(recorded)): run the same heraldd --reshard again to "
                + "finish it, then start the nodes with the new cluster.shards")
        }
        guard !Self.sameShards(recorded, mine) else { return }
        throw ClusterError("the shard list differs from the cluster's: this node has [\(mine)], Redis at \(primary) records "
            + "[\(recorded)]; give every node the same cluster.shards in the same order, or move the data with "
            + "heraldd --reshard (docs/operations.md, \"Changing the shard list\")")
    }

    /// Whether two recorded shard lists place channels alike (shard 0 compared by place only).
    static func sameShards(_ one: String, _ other: String) -> Bool {
        let a = one.split(separator: ",", omittingEmptySubsequences: false)
        let b = other.split(separator: ",", omittingEmptySubsequences: false)
        return a.count == b.count && a.dropFirst().elementsEqual(b.dropFirst())
    }

    /// Leaves: forgets the node's interest and liveness and tells the others. Best effort (a
    /// node that cannot reach Redis at stop is left to the TTL). Its entry in `{p}nodes`
    /// stays, marked `{p}left:INDEX`, so the next reaper publishes `$sys.node.down` with
    /// `reason:"left"` (`ClusterScripts.reap`).
    static func leave(_ settings: ClusterSettings, nodeIndex: Int) {
        guard let link = try? BlockingRedis(settings.redisAddress, credentials: settings.redisCredentials) else { return }
        defer { link.close() }
        let p = settings.keyPrefix
        let node = String(nodeIndex)
        // Queue groups: this node's member counts go, so no event is assigned to it, on
        // every shard (each holds a copy for its channels' scripts).
        var groups: [String] = []
        if case .array(let entries)? = try? link.run(["SMEMBERS", p + "i:" + node]) {
            groups = entries.compactMap(\.bytes).filter { $0.contains(32) }.map { p + "g:" + String(decoding: $0, as: UTF8.self) }
        }
        for group in groups { _ = try? link.run(["HDEL", group, node]) }
        for shard in settings.otherShards where !shard.host.isEmpty {
            guard let other = try? BlockingRedis(RedisAddress(host: shard.host, port: shard.port),
                                                 credentials: shard.credentials) else { continue }
            for group in groups { _ = try? other.run(["HDEL", group, node]) }
            _ = try? other.run(["DEL", p + "alive:" + node])
            other.close()
        }
        _ = try? link.run(["DEL", p + "i:" + node, p + "alive:" + node])
        _ = try? link.run(["SET", p + "left:" + node, "1", "PX", "60000"])
        _ = try? link.run(["PUBLISH", p + "interest", "l" + node])
    }
}

/// Why cluster mode could not start or go on.
struct ClusterError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) {
        self.description = description
    }
}

/// A blocking hiredis connection, for joining and leaving (and asking sentinels then) only.
final class BlockingRedis {
    private let context: UnsafeMutablePointer<redisContext>
    private let address: String

    /// Connects, waiting at most `timeoutSeconds` for the connection and then for each reply,
    /// and sends `AUTH` first when given credentials (a refusal throws Redis's words, never
    /// the password).
    init(_ target: RedisAddress, credentials: RedisCredentials? = nil, timeoutSeconds: Int = 2) throws(ClusterError) {
        address = target.description
        let timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        guard let made = redisConnectWithTimeout(target.host, Int32(target.port), timeout) else {
            throw ClusterError("cannot reach Redis at \(address): out of memory")
        }
        if made.pointee.err != 0 {
            let reason = withUnsafeBytes(of: made.pointee.errstr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            redisFree(made)
            throw ClusterError("cannot reach Redis at \(address): \(reason)")
        }
        _ = redisSetTimeout(made, timeout)
        context = made
        guard let credentials else { return }
        do throws(ClusterError) {
            _ = try run(credentials.authStrings)
        } catch {
            redisFree(made)
            throw ClusterError("Redis at \(address) refused the credentials (\(credentials)): "
                + String(error.description.dropFirst("Redis at \(address): ".count)))
        }
    }

    /// Runs one command and returns its reply. - Throws: when the connection fails or Redis
    /// answers with an error.
    func run(_ arguments: [String]) throws(ClusterError) -> RedisReply {
        let bytes = arguments.map { Array($0.utf8) }
        let lengths = bytes.map(\.count)
        let reply: UnsafeMutableRawPointer? = withPointers(bytes) { pointers in
            var argv = pointers
            return lengths.withUnsafeBufferPointer { counts in
                argv.withUnsafeMutableBufferPointer { argv in
                    redisCommandArgv(context, Int32(bytes.count), argv.baseAddress, counts.baseAddress)
                }
            }
        }
        guard let reply else { throw ClusterError("Redis at \(address): connection failed during \(arguments.first ?? "")") }
        defer { freeReplyObject(reply) }
        let value = RedisReply(UnsafePointer(reply.assumingMemoryBound(to: redisReply.self)))
        if case .error(let text) = value { throw ClusterError("Redis at \(address): \(text)") }
        return value
    }

    func close() {
        redisFree(context)
    }

    /// Calls `body` with C pointers to each argument's bytes (alive for the call).
    private func withPointers<R>(_ arguments: [[UInt8]], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
        var copies: [UnsafeMutablePointer<CChar>] = []
        defer { copies.forEach { $0.deallocate() } }
        for argument in arguments {
            let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, argument.count))
            argument.withUnsafeBufferPointer { source in
                source.withMemoryRebound(to: CChar.self) { if let base = $0.baseAddress { copy.update(from: base, count: argument.count) } }
            }
            copies.append(copy)
        }
        return body(copies.map { UnsafePointer($0) })
    }
}

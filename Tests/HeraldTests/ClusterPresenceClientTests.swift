import Herald
import HeraldTestSupport
import Testing

/// `RemotePresence` against two nodes over Redis (issue 36, cluster mode): members of every
/// node listed, a join on the other node seen, and a node's own count (`"node":NAME`) taken
/// as a reason to read the total, not as the total.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterPresenceClientTests {
    let room = Channel("room", "c")

    private func node(_ redis: TestRedis, _ name: String, extra: String = "") throws -> TestDaemon {
        try TestDaemon(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 1000 }, \#(extra)"#)
    }

    private func client(_ daemon: TestDaemon, name: String) async throws -> HeraldClient {
        let client = HeraldClient(configuration: ClientConfiguration(
            endpoint: .tcp(host: "127.0.0.1", port: daemon.port), name: name,
            reconnect: ReconnectPolicy(initialDelay: 0.05, maxDelay: 0.5), info: try RawJSON(encoding: Profile(name: name))))
        try await client.connect()
        return client
    }

    @Test func membersOfEveryNodeAndANodesCountReadAsTheTotal() async throws {
        let redis = try TestRedis()
        let first = try node(redis, "a")
        let second = try node(redis, "b", extra: "presence_max_members: 1")
        let watcher = try await client(first, name: "watcher")
        let ada = try await client(first, name: "Ada")
        let bob = try await client(second, name: "Bob")
        let cyd = try await client(second, name: "Cyd")
        defer { watcher.close(); ada.close(); bob.close(); cyd.close() }
        var tokens: [Subscription] = []
        for member in [ada, bob] {
            let token = try member.subscribe(raw: room) { _, _ in }
            try await token.ready()
            tokens.append(token)
        }
        let presence = try await watcher.presence(of: room, info: Profile.self, options: PresenceOptions(pageSize: 1))
        #expect(await eventually { Set(presence.members.compactMap(\.info?.name)) == ["Ada", "Bob"] })
        let changes = presence.changes()
        let seen = Task {
            var kinds: [String] = []
            for await change in changes {
                switch change {
                case .joined(let member): kinds.append("join \(member.info?.name ?? "?")")
                case .left: kinds.append("leave")
                case .count(let count): kinds.append("count \(count)")
                case .nodeCount: kinds.append("node count")
                case .resynced(let state):
                    kinds.append("resynced \(state.count)")
                    if state.count == 3 { return kinds }
                }
            }
            return kinds
        }

        // Cyd makes node b's second member: past its presence_max_members, node b tells its
        // own count ("node":"b", 2); the mirror reads the total instead of showing 2.
        let token = try cyd.subscribe(raw: room) { _, _ in }
        try await token.ready()
        tokens.append(token)
        let kinds = await seen.value
        #expect(kinds.last == "resynced 3")
        #expect(!kinds.contains { $0.hasPrefix("count") }, "a node's count is not the channel's: \(kinds)")
        #expect(presence.count == 3)
        #expect(Set(presence.members.compactMap(\.info?.name)) == ["Ada", "Bob", "Cyd"])
        withExtendedLifetime(tokens) {}
    }
}

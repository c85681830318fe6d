import Testing
import HeraldBroker
@testable import HeraldServer

/// The resync after an outage (`LockResync`), against the hypothesis of the cluster-shape
/// notes: "a node whose liveness lapsed may lose its locks on other nodes at their snapshot
/// and never announce them again, since the lock resync announces only differences". A
/// model of Redis's side of `lockResync` and `locks` (what each stores and announces) runs
/// the node's calls; the other node applies the announcements through `MirrorSync` and
/// `ClusterLockMessage`, as the engine does.
@Suite struct MirrorResyncTests {
    /// Redis's record of the locks, as `ClusterLockScripts` keep and announce it.
    private struct RedisModel {
        var records: [Int: Set<[UInt8]>] = [:]
        var version: Int
        var announced: [[UInt8]] = []

        mutating func run(_ call: LockResync.Call) {
            var arguments = call.arguments
            let node = String(decoding: arguments.removeFirst(), as: UTF8.self)
            if call.script == "locks" {
                let op = String(decoding: arguments.removeFirst(), as: UTF8.self)
                let owner = Int(String(decoding: arguments.removeFirst(), as: UTF8.self)) ?? 0
                records[owner, default: []].formUnion(arguments)
                return announce(op, node, owner, arguments)
            }
            var listed: Set<Int> = []
            while !arguments.isEmpty {
                let owner = Int(String(decoding: arguments.removeFirst(), as: UTF8.self)) ?? 0
                let count = Int(String(decoding: arguments.removeFirst(), as: UTF8.self)) ?? 0
                let wanted = Set(arguments.prefix(count))
                arguments.removeFirst(count)
                listed.insert(owner)
                let removed = (records[owner] ?? []).subtracting(wanted)
                let added = wanted.subtracting(records[owner] ?? [])
                records[owner] = wanted
                if !removed.isEmpty { announce("U", node, owner, Array(removed)) }
                if !added.isEmpty { announce("L", node, owner, Array(added)) }
            }
            for owner in records.keys where String(ClusterOwner.node(of: owner)) == node && !listed.contains(owner) {
                records[owner] = nil
                announce("X", node, owner, [])
            }
        }

        private mutating func announce(_ op: String, _ node: String, _ owner: Int, _ records: [[UInt8]]) {
            version += 1
            var message = Array("\(op)\(node) \(version) \(owner)".utf8)
            for record in records { message += Array(" \(record.count):".utf8) + record }
            announced.append(message)
        }
    }

    /// The other node's mirror of the locks, applying announcements as `LockMirror` does.
    private struct OtherNode {
        var sync = MirrorSync<ClusterLockMessage>()
        var locks: [Int: Set<[UInt8]>] = [:]

        mutating func hear(_ payload: [UInt8]) {
            guard let message = ClusterLockMessage(payload),
                  case .apply = sync.heard(.locks, version: message.version, message) else { return }
            apply(message)
        }

        mutating func apply(_ message: ClusterLockMessage) {
            switch message.op {
            case UInt8(ascii: "L"): locks[message.owner, default: []].formUnion(message.records)
            case UInt8(ascii: "U"): locks[message.owner]?.subtract(message.records)
            default: locks[message.owner] = nil
            }
            if locks[message.owner]?.isEmpty == true { locks[message.owner] = nil }
        }
    }

    private let owner = 1 << 32 | 7
    private let record = Array("P3:a.*".utf8)

    /// Node 2 mirrored node 1's lock, then Redis came back and node 2 read its exact lock
    /// snapshot while node 1's liveness key had lapsed: the snapshot left node 1 out.
    private func afterTheLapsedSnapshot() -> (RedisModel, OtherNode) {
        let redis = RedisModel(records: [owner: [record]], version: 20)
        var other = OtherNode()
        other.locks = [owner: [record]]
        _ = other.sync.snapshotRead(.locks, version: 20, policy: .exact)
        _ = other.sync.becomeReady()
        other.sync.startOver()
        other.sync.subscriptionRestarted()
        let snapshot: [Int: Set<[UInt8]>] = [:]
        _ = other.sync.snapshotRead(.locks, version: redis.version, policy: .exact)
        other.locks = snapshot
        _ = other.sync.becomeReady()
        return (redis, other)
    }

    @Test func theDifferencesAloneNeverBringTheLapsedNodesLocksBack() {
        var (redis, other) = afterTheLapsedSnapshot()
        let calls = LockResync.calls(node: 1, owned: [(owner, [record])])
        redis.run(calls[0])
        #expect(redis.announced.isEmpty, "Redis's record already holds the lock: no difference to announce")
        for payload in redis.announced { other.hear(payload) }
        #expect(other.locks[owner] == nil, "the hypothesis holds: node 2 lost node 1's lock for good")
    }

    @Test func theFullResyncAnnouncesEveryLockSoTheOtherNodeHasItAgain() {
        var (redis, other) = afterTheLapsedSnapshot()
        for call in LockResync.calls(node: 1, owned: [(owner, [record])]) { redis.run(call) }
        for payload in redis.announced { other.hear(payload) }
        #expect(other.locks[owner] == [record])
    }

    @Test func theResyncStillDropsWhatRedisKeptAndTheNodeNoLongerHolds() {
        var redis = RedisModel(records: [owner: [record, Array("P1:b".utf8)], 1 << 32 | 8: [record]], version: 20)
        var other = OtherNode()
        other.locks = redis.records
        _ = other.sync.snapshotRead(.locks, version: 20, policy: .exact)
        _ = other.sync.becomeReady()
        for call in LockResync.calls(node: 1, owned: [(owner, [record]), (1 << 32 | 9, [])]) { redis.run(call) }
        for payload in redis.announced { other.hear(payload) }
        #expect(other.locks == [owner: [record]], "a release and a departure lost in flight are made good")
    }
}

import CLibUV
import HeraldBroker

/// `locks {ch}` across nodes (docs/cluster.md, "Locks"): the lock table is mirrored on
/// every node, but the subscriptions are each node's own, so the asking node gathers the
/// lists: one `Q` node message to every other live node, their `A` answers merged, and the
/// parked request answered once all came or the barrier timeout passed (a node that does not
/// answer in time, or leaves, is left out; with Redis lost meanwhile it is `unavailable`).
extension ClusterEngine {
    /// A query waiting for answers: the parked call, the nodes still to answer, what came.
    struct LockQuery {
        let call: ClusterState.ScriptCall
        var waitingFor: Set<Int>
        var locked: [[UInt8]] = []
        var unlocked: [[UInt8]] = []
        var truncated = false
        let since: UInt64
    }

    /// Sends a `locksQuery` call's question to every other live node, or answers it at once
    /// when there is none.
    func gatherLocks(_ call: ClusterState.ScriptCall) {
        let nodes = Set(acknowledged.keys).subtracting([nodeIndex])
        guard !nodes.isEmpty, call.arguments.count == 3, let kind = call.arguments[0].first else {
            return finishLockQuery(LockQuery(call: call, waitingFor: [], since: 0))
        }
        nextLockQuery += 1
        lockQueries[nextLockQuery] = LockQuery(call: call, waitingFor: nodes, since: uv_hrtime())
        let question = ClusterNodeMessage.locksQuery(id: nextLockQuery, node: nodeIndex, kind: kind, user: call.arguments[2],
                                                     channel: call.arguments[1]).encoded
        for node in nodes.sorted() {
            commands.send([Array("PUBLISH".utf8), Array((prefix + "n:" + String(node)).utf8), question]) { _ in }
        }
    }

    /// Another node asks for this node's subscriptions on a channel (`l`) or under a
    /// channel-wide lock's pattern (`o`).
    func answerLockQuery(id: Int, node: Int, kind: UInt8, user: [UInt8], channel: [UInt8]) {
        let answer = server.shared.withLock { broker -> ClusterNodeMessage in
            if kind == UInt8(ascii: "a") {
                let admin = broker.adminAnswer(channel)
                return .locksAnswer(id: id, node: nodeIndex, truncated: admin.more, locked: admin.entries, unlocked: admin.counts)
            }
            if kind == UInt8(ascii: "p") {
                let page = broker.presencePage(for: channel)
                return .locksAnswer(id: id, node: nodeIndex, truncated: page.more, locked: page.members,
                                    unlocked: [Array(String(page.count).utf8)])
            }
            if kind == UInt8(ascii: "o") {
                let lists = broker.coveredLists(of: channel, forUserNamed: user)
                return .locksAnswer(id: id, node: nodeIndex, truncated: lists.truncated, locked: lists.covered, unlocked: [])
            }
            let lists = broker.lockLists(of: channel, forUserNamed: user)
            return .locksAnswer(id: id, node: nodeIndex, truncated: false, locked: lists.locked, unlocked: lists.unlocked)
        }
        commands.send([Array("PUBLISH".utf8), Array((prefix + "n:" + String(node)).utf8), answer.encoded]) { _ in }
    }

    /// A node's answer to one of this node's queries.
    func lockQueryAnswered(id: Int, from node: Int, truncated: Bool, locked: [[UInt8]], unlocked: [[UInt8]]) {
        guard var query = lockQueries[id], query.waitingFor.remove(node) != nil else { return }
        query.locked += locked
        query.unlocked += unlocked
        query.truncated = query.truncated || truncated
        settle(id, query)
    }

    /// Answers with what came the queries that waited past the barrier timeout, and every
    /// one once Redis is gone.
    func expireLockQueries(now: UInt64) {
        for (id, query) in lockQueries where !isReady || now &- query.since > Self.barrierTimeoutNs {
            lockQueries[id] = nil
            // Without Redis the other nodes' lists are unknown: `unavailable`, not a part.
            if isReady { finishLockQuery(query) } else { deliver(query.call, .disconnected) }
        }
    }

    /// A node left or was declared down: no query waits for it any more.
    func lockQueriesForget(node: Int) {
        for (id, var query) in lockQueries where query.waitingFor.remove(node) != nil { settle(id, query) }
    }

    /// Keeps `query`, or answers it when no node is left to answer.
    private func settle(_ id: Int, _ query: LockQuery) {
        guard query.waitingFor.isEmpty else {
            lockQueries[id] = query
            return
        }
        lockQueries[id] = nil
        finishLockQuery(query)
    }

    /// Answers the parked call; this node's own lists are read then, after every lock change
    /// heard before (some may wait behind a shard fence, `runInOrder`).
    private func finishLockQuery(_ query: LockQuery) {
        let result = RedisReply.array([.array(query.locked.map { .string($0) }), .array(query.unlocked.map { .string($0) }),
                                       .integer(query.truncated ? 1 : 0)])
        runInOrder { [unowned self] in deliver(query.call, result) }
    }
}

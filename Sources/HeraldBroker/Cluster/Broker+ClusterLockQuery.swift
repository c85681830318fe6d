import HeraldWire

extension Broker {
    /// A channel-wide `lock`/`unlock` on `pattern` in cluster mode: parks `session` until
    /// every other node listed the subscriptions the lock covers there (`locksQuery`), then
    /// answers with them and this node's (`coveredHere`).
    func askCoveredSubscriptions(of pattern: [UInt8], for session: Session, _ op: Op, released: Int,
                                 on cluster: ClusterState) {
        var waiting = ClusterState.Waiting(session: session, op: op, opRaw: current.opRaw.map { Array($0) },
                                           rid: current.ridRaw.map { Array($0) }, subscription: nil, catchUp: nil,
                                           channel: pattern)
        waiting.released = released
        waiting.exclusive = true
        _ = cluster.call(.locksQuery, channel: nil, arguments: [[UInt8(ascii: "o")], pattern, Array((session.user?.name ?? "").utf8)],
                         waiting: waiting)
        session.clusterCalls += 1
        session.exclusiveClusterCalls += 1
    }
}

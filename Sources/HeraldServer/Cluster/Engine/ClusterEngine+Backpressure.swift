/// Cluster backpressure, the engine's side (docs/cluster.md, "Backpressure and the control
/// link"). Two amounts are bounded by `cluster.max_outstanding_bytes` (the first also by
/// `cluster.max_outstanding_ops`): what this node sent on a command link (each shard's) and Redis has
/// not answered, and what Redis holds for the slowest live node's pub/sub connection
/// (`PubSubBacklog`). Past either bound, the flag (`ClusterBackpressure`) tells every loop
/// to pause the connections that queue cluster work; once both fell to half, the flag is
/// cleared and every loop resumes them. A flood is thus slowed to what Redis and the slowest
/// node take, through TCP, never refused: nothing is dropped, Redis never has to close a
/// node's connection for its output buffer, and the wait of anything queued behind the flood
/// on the link stays bounded.
extension ClusterEngine {
    /// Wires the backlog probe to this engine (at start).
    func startBackpressure() {
        // Asked while this node sends at least 1/64 of the byte bound per 100 ms (1.3 MB/s
        // at the default), or while its publishers are paused.
        pubSubBacklog.isWanted = { [unowned self] sent in
            guard let backpressure = server.clusterBackpressure else { return false }
            return backpressure.isCongested || sent >= backpressure.maxBytes / 64
        }
        pubSubBacklog.sentBytes = { [unowned self] in commands.sentBytes }
        pubSubBacklog.isLive = { [unowned self] node in acknowledged[node] != nil }
        pubSubBacklog.onChange = { [unowned self] in updateBackpressure() }
        pubSubBacklog.onOff = { [unowned self] reason in
            server.logger.warn("cluster: Redis does not list its pub/sub clients; a node slow to read its events is not waited for",
                               ["error": reason])
        }
    }

    /// Once per main-loop pass (after the pass's batch was sent) and after each backlog
    /// answer: sets the flag when an amount is over its bound, and, while the flag is set,
    /// makes sure a relief is coming: a watch on the command link for half its bounds,
    /// armed once the backlog is at most half its bound (each backlog answer looks again).
    func updateBackpressure() {
        guard let backpressure = server.clusterBackpressure else { return }
        // With several shards, each command link is bounded on its own: a flood of one
        // shard's channels pauses the connections until that shard caught up.
        let links = servingLinks.map(\.link)
        backpressure.noteSent(links.reduce(0) { $0 + $1.outstandingBytes })
        if links.contains(where: { $0.inFlight >= backpressure.maxOps || $0.outstandingBytes >= backpressure.maxBytes })
            || pubSubBacklog.largest >= backpressure.maxBytes {
            backpressure.congest()
        }
        if links.contains(where: { $0.inFlight > 0 }) || backpressure.isCongested { pubSubBacklog.keepAsking() }
        guard backpressure.isCongested, !links.contains(where: \.isWatchingDrain),
              pubSubBacklog.largest <= backpressure.maxBytes / 2 else {
            return
        }
        let halfOps = backpressure.maxOps / 2
        let halfBytes = backpressure.maxBytes / 2
        let over = links.first { $0.inFlight > halfOps || $0.outstandingBytes > halfBytes } ?? commands
        over.whenDrained(ops: halfOps, bytes: halfBytes) { [unowned self] in
            // The backlog may have grown meanwhile: then its next answer relieves.
            guard pubSubBacklog.largest <= (server.clusterBackpressure?.maxBytes ?? 0) / 2 else { return }
            // Another shard may still be over half: it is watched next.
            if servingLinks.contains(where: { $0.link.inFlight > halfOps || $0.link.outstandingBytes > halfBytes }) {
                return updateBackpressure()
            }
            relieveBackpressure()
        }
    }

    /// Clears the flag and tells every loop (this one included) to read its paused
    /// connections again.
    func relieveBackpressure() {
        server.clusterBackpressure?.relieve()
        for worker in server.workers { worker.post(.resumeReading) }
    }
}

import HeraldBroker

/// Cluster backpressure, a loop's side (docs/cluster.md, "Backpressure and the control
/// link"): each loop pauses and resumes only its own connections. At the end of a pass, when
/// the cluster is congested (`ClusterBackpressure`), it stops reading every connection whose
/// lines queued cluster work in that pass; on `Message.resumeReading`, which the engine sends
/// every loop once the outstanding amount fell to half, it reads them again.
///
/// Why every pause ends: a loop other than the main one that paused a connection wakes the
/// main loop, whose next pass has the engine look at the flag (`updateBackpressure`): it
/// either relieves at once or waits for the command link to drain to half, which happens at
/// the latest when Redis goes (every pending command is then answered). The relief is posted
/// after the pause, so it reaches the loop after it.
extension Worker {
    /// Pauses this pass's cluster writers when the cluster is congested, or when the events
    /// waiting for the engine and the bytes it has outstanding are over the byte bound
    /// together (a busy main loop must not take them as one oversized batch on top of a
    /// full link; the flag is then set here).
    /// - Parameter waitingBytes: `ClusterState.outboxBytes` at the end of the pass.
    /// - Returns: whether it paused any connection.
    func pauseClusterWriters(waitingBytes: Int) -> Bool {
        defer { clusterWriters.removeAll(keepingCapacity: true) }
        guard let backpressure = server.clusterBackpressure else { return false }
        if waitingBytes > 0 && waitingBytes + backpressure.sentBytes >= backpressure.maxBytes { backpressure.congest() }
        guard backpressure.isCongested else { return false }
        var paused: [Connection] = []
        shared.withLock { _ in
            for connection in clusterWriters where connection.pauseForBackpressure() { paused.append(connection) }
        }
        for connection in paused {
            connection.stopReadingForBackpressure()
            backpressured[connection.session.id] = connection
        }
        backpressure.countPaused(paused.count)
        return !paused.isEmpty
    }

    /// The engine relieved the cluster: every paused connection of this loop reads again
    /// (one broker lock for all), unless it holds lines (their framing restarts reading),
    /// its input ended, or it is closing.
    func resumeBackpressured() {
        guard !backpressured.isEmpty else { return }
        let waiting = Array(backpressured.values)
        backpressured.removeAll()
        let now = self.now
        var readable: [Connection] = []
        shared.withLock { broker in
            for connection in waiting where connection.endPause(broker, now: now) { readable.append(connection) }
        }
        server.clusterBackpressure?.countPaused(-waiting.count)
        for connection in readable { connection.startReading() }
    }

    /// A connection closed: it no longer counts as paused.
    func forgetBackpressured(_ connection: Connection) {
        guard backpressured.removeValue(forKey: connection.session.id) != nil else { return }
        server.clusterBackpressure?.countPaused(-1)
    }
}

import CLibUV
import HeraldBroker

/// The mirrored tables, the engine's side (`MirroredTable`, `MirrorSync`): the table
/// changes heard on the interest channel, the snapshot reads of a run, a node gone, and the
/// resync after an outage, each one loop over the tables.
extension ClusterEngine {
    /// The start of every script call: `EVALSHA SHA 0 PREFIX`.
    func scriptCall(_ script: String) -> [[UInt8]] {
        [Array("EVALSHA".utf8), scripts[script] ?? [], Array("0".utf8), Array(prefix.utf8)]
    }

    /// An interest-channel payload: applied, held or dropped when a table recognises it.
    /// - Returns: false when no table does (a membership message).
    func heardTableChange(_ payload: [UInt8]) -> Bool {
        for table in mirroredTables {
            guard let message = table.parse(payload) else { continue }
            switch message {
            case .malformed:
                server.logger.warn("cluster: malformed " + table.name + " message dropped", ["bytes": payload.count])
            case .unversioned(let change):
                applyInOrder(change, to: table, acknowledge: nil)
            case .change(let version, let change):
                guard case .apply(let acknowledge) = mirror.heard(table.tag, version: version, change) else { break }
                applyInOrder(change, to: table, acknowledge: acknowledge)
            }
            return true
        }
        return false
    }

    /// Reads `table`'s snapshot for run `run` (`ClusterScripts.liveNodes` at its start): a
    /// failed read starts getting ready over; the reply of an abandoned run is ignored.
    func readSnapshot(of table: any MirroredTable, run: Int) {
        guard let script = table.snapshotScript else { return }
        commands.send(scriptCall(script)) { [unowned self] reply in
            guard lifecycle.awaits(run: run, table: table.tag) else { return }
            guard let parts = reply.elements, let version = parts.first?.integer else {
                return startOverLater("reading the " + table.name + " table failed", reply.failure ?? "bad reply", run: run)
            }
            snapshotRead(Array(parts.dropFirst()), of: table, at: version)
            perform(lifecycle.snapshotRead(run: run, table: table.tag))
        }
    }

    /// Applies a snapshot read at `version`, then replays over it the changes held for the
    /// table that `MirrorSync` hands back.
    private func snapshotRead(_ entries: [RedisReply], of table: any MirroredTable, at version: Int) {
        let was = mirror.lastSeenVersion
        let read = mirror.snapshotRead(table.tag, version: version, policy: table.policy)
        if read.versionsWentBack { restartVersions(at: version, was: was) }
        table.applySnapshot(entries, at: version)
        for change in read.replay { apply(change, to: table) }
    }

    /// Applies a change to its table, unless it is this node's own and the table enters
    /// this node's rows when they are made (locks, links), not from their announcement: the
    /// "not mine" rule, once for every table (`MirrorTableTag.appliesOwnChanges`).
    func apply(_ change: MirrorChange, to table: any MirroredTable) {
        guard table.tag.appliesOwnChanges || change.node != nodeIndex else { return }
        table.apply(change)
    }

    /// A node left or was declared down: its rows go from every table, and held answers
    /// stop waiting for its acknowledgement.
    func nodeGone(_ node: Int) {
        flushFence()
        let now = server.main.now
        for table in mirroredTables { table.nodeGone(node) }
        server.shared.withLock { broker in
            broker.clusterNodeGone(node)
            broker.clusterSignalNodeGone(node, now: now)
        }
        acknowledged[node] = nil
        goneNodes.insert(node)
        takePresence(of: node)
        releaseBarriers(now: uv_hrtime())
        lockQueriesForget(node: node)
    }

    /// After Redis came back (or as a new incarnation): registers the node again (`rejoin`:
    /// a node the reaper declared down meanwhile starts a new incarnation instead), then
    /// resumes the channels' `seq`s, sends what was held, and every table's rows, in full (a
    /// Redis restarted without its data lost them; a node that read its snapshot meanwhile
    /// left them out).
    func registerAgain() {
        rejoin { [unowned self] in
            resumeSeqs()
            // What waited meanwhile first (removals queued while Redis was away among it),
            // then the tables made exactly what this node holds now: the resyncs come last.
            releaseHeld()
            retryUndeclares()
            for table in mirroredTables { table.resync() }
            resyncLeases()
            if incarnation.announcesOnReady {
                incarnation.announcesOnReady = false
                announceUp()
            }
            if incarnation.awaitsFirstReady {
                incarnation.becameReady()
                publishLiveness()
            }
            commands.flush()
            if isDownForLocks { markDown(false) }
            server.logger.info("cluster: registered again after Redis came back", ["tables": mirroredTables.count])
        }
    }

    /// Makes Redis's record of this node's grants of per-user limits exactly what it holds
    /// (`ClusterLeaseScripts.resync`), before any new `lease` call goes out.
    func resyncLeases() {
        let grants = server.shared.withLock { broker in broker.clusterLeaseGrants() }
        commands.send(scriptCall("leaseResync") + [Array(String(nodeIndex).utf8)] + grants) { _ in }
    }

    /// Takes a gone node's presence members from Redis (`ClusterPresenceScripts.take`): the
    /// first node to take them tells their leaves, so each leaves once.
    func takePresence(of node: Int) {
        commands.send(scriptCall("presenceTake") + [[], Array(String(node).utf8)]) { [unowned self] reply in
            guard let entries = reply.elements?.compactMap(\.bytes), !entries.isEmpty else { return }
            server.shared.withLock { broker in broker.presenceMembersOfGoneNode(entries) }
        }
    }
}

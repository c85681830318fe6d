/// The engine's way to readiness, as one value (pure: no Redis, clock or server): connect
/// the command link, load the scripts, have both subscriptions on, read every mirrored
/// table's snapshot in order, be ready. Each event the engine reports returns the action it
/// performs; a reply of an abandoned snapshot run is recognised by its run number.
struct ClusterLifecycle {
    /// Where the engine is.
    enum Phase: Equatable {
        /// The command link is not connected.
        case connecting
        /// The scripts are being loaded on the command link's current connection.
        case loadingScripts
        /// The scripts are loaded; the subscriptions are not both on yet.
        case subscribing
        /// Snapshot run `run` waits for the reply of the read of `table`.
        case readingSnapshot(run: Int, table: MirrorTableTag)
        /// Every table is read: the node serves the cluster.
        case ready
        /// Loading the scripts or reading a snapshot failed with the link up (Redis still
        /// `LOADING` its data, say): the next period starts over.
        case failed
    }

    /// What the engine does next.
    enum Action: Equatable {
        /// Nothing.
        case none
        /// Load the scripts on the command link.
        case loadScripts
        /// Read the snapshot of `table` for run `run`.
        case readSnapshot(run: Int, table: MirrorTableTag)
        /// Become ready; `again` when it was ready before (Redis came back: register again).
        case becomeReady(again: Bool)
    }

    /// The tables whose snapshots are read, in order.
    let tables: [MirrorTableTag]
    /// Where the engine is now.
    private(set) var phase: Phase = .connecting
    /// Whether the engine was ready before (so a new readiness follows a lost Redis).
    private(set) var wasReady = false
    /// The current snapshot run's number: a read's reply of another run is ignored.
    private(set) var run = 0
    /// How many of the two subscriptions Redis confirmed on the current connection.
    private(set) var subscriptions = 0

    /// A lifecycle that reads `tables`' snapshots in that order.
    init(tables: [MirrorTableTag]) {
        self.tables = tables
    }

    /// Whether the engine serves the cluster.
    var isReady: Bool { phase == .ready }

    /// The command link connected, or the scripts must be loaded again (`NOSCRIPT`, a retry
    /// after a failure): any snapshot run under way is abandoned.
    mutating func loadScripts() -> Action {
        run &+= 1
        phase = .loadingScripts
        return .loadScripts
    }

    /// Every script of the load started in run `run` loaded.
    mutating func scriptsLoaded(run: Int) -> Action {
        guard phase == .loadingScripts, run == self.run else { return .none }
        phase = .subscribing
        return startSnapshots()
    }

    /// The subscription link connected again: its subscriptions start over.
    mutating func subscriptionRestarted() {
        subscriptions = 0
    }

    /// Redis confirmed one of the two subscriptions.
    mutating func subscriptionConfirmed() -> Action {
        subscriptions += 1
        return startSnapshots()
    }

    /// The snapshot of `table` was read and applied in run `run`. - Returns: the next
    /// read, readiness, or nothing for a reply of an abandoned run.
    mutating func snapshotRead(run: Int, table: MirrorTableTag) -> Action {
        guard awaits(run: run, table: table), let at = tables.firstIndex(of: table) else { return .none }
        guard at + 1 < tables.count else {
            phase = .ready
            defer { wasReady = true }
            return .becomeReady(again: wasReady)
        }
        phase = .readingSnapshot(run: run, table: tables[at + 1])
        return .readSnapshot(run: run, table: tables[at + 1])
    }

    /// Whether a reply of run `run` for `table` is the one awaited.
    func awaits(run: Int, table: MirrorTableTag) -> Bool {
        phase == .readingSnapshot(run: run, table: table)
    }

    /// Loading the scripts or a snapshot read of run `run` failed with the link up: the run
    /// is abandoned and the next period starts over. - Returns: false for a failure of an
    /// abandoned run (ignored).
    mutating func failed(run: Int) -> Bool {
        guard run == self.run, phase != .connecting, phase != .failed else { return false }
        self.run &+= 1
        phase = .failed
        return true
    }

    /// A link dropped. `commandsConnected`, `messagesConnected`: which are still up.
    mutating func lost(commandsConnected: Bool, messagesConnected: Bool) {
        if !messagesConnected { subscriptions = 0 }
        switch phase {
        case _ where !commandsConnected:
            run &+= 1
            phase = .connecting
        case .ready, .readingSnapshot:
            run &+= 1
            phase = .subscribing
        case .connecting, .loadingScripts, .subscribing, .failed:
            break
        }
    }

    /// A period passed: a failed start is tried again while the command link is up.
    mutating func period(commandsConnected: Bool) -> Action {
        guard phase == .failed, commandsConnected else { return .none }
        return loadScripts()
    }

    /// Starts a snapshot run once the scripts are loaded and both subscriptions are on.
    private mutating func startSnapshots() -> Action {
        guard phase == .subscribing, subscriptions == 2, let first = tables.first else { return .none }
        phase = .readingSnapshot(run: run, table: first)
        return .readSnapshot(run: run, table: first)
    }
}

/// The sync rules every mirrored table shares, written once and pure (no Redis, clock, lock
/// or server): while the node waits for its snapshots, the changes it hears are held in one
/// queue in the order they arrived, whatever their table; each table's snapshot takes its
/// held changes back to be replayed over it; once ready, changes apply as they come. It
/// also keeps the highest version seen, which is what the node acknowledges, and notices
/// when Redis's versions went back.
///
/// `Change` is opaque here: the engine holds `MirrorChange`, the tests anything.
struct MirrorSync<Change> {
    /// A change heard while waiting, with its table and interest version.
    struct Held {
        /// The table it changes.
        let table: MirrorTableTag
        /// Its interest version.
        let version: Int
        /// The change itself.
        let change: Change
    }

    /// Where the node is in mirroring the tables.
    enum Phase {
        /// Reading the snapshots: `held` are the changes heard for tables not read yet (in
        /// arrival order), `synced` the tables read in this run, `floor` the highest version
        /// seen before the wait (a snapshot below it means Redis's versions went back).
        case waiting(held: [Held], synced: Set<MirrorTableTag>, floor: Int)
        /// Every table is read: changes apply as they come.
        case ready
    }

    /// What to do with a change just heard.
    enum Heard: Equatable {
        /// Apply it now, then acknowledge `acknowledge` when there is one (never while the
        /// node is not ready: it has not applied everything below that version yet).
        case apply(acknowledge: Int?)
        /// Kept, to be replayed over its table's snapshot.
        case held
    }

    /// What follows from a table's snapshot.
    struct SnapshotRead {
        /// The held changes of that table to apply over the snapshot, in arrival order.
        let replay: [Change]
        /// Whether Redis's versions went back (it came back without its data, or a replica
        /// behind its primary took over): what the node knew of the old ones means nothing.
        let versionsWentBack: Bool
    }

    /// Where the node is now.
    private(set) var phase: Phase = .waiting(held: [], synced: [], floor: 0)
    /// The highest interest version applied (by a change or a snapshot).
    private(set) var lastSeenVersion = 0

    /// An empty sync, waiting for its first snapshots.
    init() {}

    /// Whether every table is read and changes apply as they come.
    var isReady: Bool {
        if case .ready = phase { return true }
        return false
    }

    /// The held changes, in arrival order (empty once ready).
    var held: [Held] {
        if case .waiting(let held, _, _) = phase { return held }
        return []
    }

    /// A change of `table` at `version` was heard on the subscription.
    mutating func heard(_ table: MirrorTableTag, version: Int, _ change: Change) -> Heard {
        switch phase {
        case .ready:
            return .apply(acknowledge: advance(to: version))
        case .waiting(var held, let synced, let floor):
            guard !synced.contains(table) else {
                lastSeenVersion = max(lastSeenVersion, version)
                return .apply(acknowledge: nil)
            }
            held.append(Held(table: table, version: version, change: change))
            phase = .waiting(held: held, synced: synced, floor: floor)
            return .held
        }
    }

    /// `table`'s snapshot was read at `version` and applied (the engine applies it before
    /// the replay): hands back the held changes of that table to replay over it.
    mutating func snapshotRead(_ table: MirrorTableTag, version: Int, policy: MirrorSnapshotPolicy) -> SnapshotRead {
        guard case .waiting(let held, var synced, var floor) = phase else {
            return SnapshotRead(replay: [], versionsWentBack: false)
        }
        let wentBack = version < floor
        if wentBack {
            lastSeenVersion = version
            floor = version
        }
        let mine = held.filter { $0.table == table }
        let replay = mine.filter { wentBack || policy == .merge || $0.version > version }
        lastSeenVersion = max(lastSeenVersion, version, mine.map(\.version).max() ?? 0)
        synced.insert(table)
        phase = .waiting(held: held.filter { $0.table != table }, synced: synced, floor: floor)
        return SnapshotRead(replay: replay.map(\.change), versionsWentBack: wentBack)
    }

    /// Every table is read: from now on changes apply as they come. - Returns: the version
    /// to acknowledge (every change up to it is applied).
    mutating func becomeReady() -> Int {
        phase = .ready
        return lastSeenVersion
    }

    /// Getting ready starts over (the link dropped, the scripts are loaded again, a read
    /// failed): every table is read again; the changes still held stay (the subscription
    /// that heard them is still on).
    mutating func startOver() {
        switch phase {
        case .ready:
            phase = .waiting(held: [], synced: [], floor: lastSeenVersion)
        case .waiting(let held, _, let floor):
            phase = .waiting(held: held, synced: [], floor: floor)
        }
    }

    /// A new subscription begins: the changes held from the previous one are dropped. The
    /// snapshots read after it have every one of them (or, from a Redis that came back
    /// empty, none: their versions belong to the old data set, and replayed over the new one
    /// they would bring back rows that are gone).
    mutating func subscriptionRestarted() {
        switch phase {
        case .ready:
            phase = .waiting(held: [], synced: [], floor: lastSeenVersion)
        case .waiting(_, _, let floor):
            phase = .waiting(held: [], synced: [], floor: floor)
        }
    }

    /// Raises the version seen. - Returns: `version` when it is news to acknowledge.
    private mutating func advance(to version: Int) -> Int? {
        guard version > lastSeenVersion else { return nil }
        lastSeenVersion = version
        return version
    }
}

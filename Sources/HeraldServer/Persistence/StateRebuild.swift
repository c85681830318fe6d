import HeraldBroker

/// Replays records onto a base state while tracking which channels' state is known exactly.
///
/// Why: a log record like `append` or `assign` changes a state it does not carry; applied to
/// a base that is not the one it was written against (a lost snapshot, a channel the files
/// do not agree on), it makes a state that never existed. So a channel is *known* when its
/// base is (a verified snapshot) or when a record rebuilt it from nothing (`set`, `delete`,
/// `forget`, or a list op at `rev` 1, which had no base). A record that needs the base of a
/// channel that is not known changes nothing, and the channel ends up reported lost unless a
/// later record rebuilds it. Nothing is ever half-built.
struct StateRebuild {
    /// The state built so far; only its known channels are kept by `finish`.
    let store: StateStore
    /// Whether every channel not otherwise marked is known (a verified base).
    private var baseIsKnown: Bool
    /// Channels rebuilt from nothing, known whatever the base.
    private var rebuilt: Set<[UInt8]> = []
    /// Channels whose state the records do not determine.
    private var unknown: Set<[UInt8]> = []
    /// Every channel seen in the base or a record: those not known at the end are lost.
    private var seen: Set<[UInt8]>
    /// The highest `rev` any record carried: the rev floor after a lossy rebuild.
    private var highestRev = 0

    /// What `apply` did with a record.
    enum Outcome: Equatable {
        /// Applied, or skipped as already applied (replay overlap).
        case applied
        /// The record needs a base that is not known, or does not fit the known one.
        case needsLostBase
    }

    /// Starts from a verified base (every channel known) or from nothing known.
    /// - Parameter base: the verified snapshot's store, or nil when there is none.
    init(base: StateStore?) {
        store = base ?? StateStore()
        baseIsKnown = base != nil
        seen = Set(store.entries.keys)
        highestRev = store.entries.values.reduce(store.revFloor) { max($0, $1.rev) }
    }

    /// Whether a channel's state is known exactly.
    func isKnown(_ channel: [UInt8]) -> Bool {
        !unknown.contains(channel) && (baseIsKnown || rebuilt.contains(channel))
    }

    /// Applies one record if the state it needs is known.
    /// - Parameter record: the next record of the log.
    /// - Returns: whether it could be applied.
    mutating func apply(_ record: StateRecord) -> Outcome {
        let channel = record.channel
        highestRev = max(highestRev, record.rev)
        if channel.isEmpty {
            store.apply(record)  // a snapshot's rev floor: no channel to know
            return .applied
        }
        seen.insert(channel)
        if isKnown(channel) {
            guard store.apply(record) == .invalid else { return .applied }
            unknown.insert(channel)
            rebuilt.remove(channel)
            return .needsLostBase
        }
        guard Self.needsNoBase(record), store.apply(record) == .applied else { return .needsLostBase }
        unknown.remove(channel)
        rebuilt.insert(channel)
        return .applied
    }

    /// Records were lost between what was applied and what follows: from here on no
    /// channel's state is known until a record rebuilds it.
    mutating func gap() {
        baseIsKnown = false
        rebuilt.removeAll()
        unknown.removeAll()
        seen.formUnion(store.entries.keys)
    }

    /// Counts channels (and revs) that only a damaged file names, so they are reported and
    /// their revs never reused.
    /// - Parameter channels: channel names with the rev each had.
    mutating func note(_ channels: [[UInt8]: Int]) {
        seen.formUnion(channels.keys)
        highestRev = channels.values.reduce(highestRev, max)
    }

    /// Whether every channel seen is known.
    var isExact: Bool { seen.allSatisfy(isKnown) }

    /// The known channels' state, the rev floor, and the channels that could not be rebuilt.
    ///
    /// After a lossy rebuild the floor rises to the highest `rev` seen, so a lost channel
    /// written again never shows a `rev` it showed before.
    func finish() -> (entries: [[UInt8]: StoredState], revFloor: Int, lost: [[UInt8]]) {
        let entries = store.entries.filter { isKnown($0.key) }
        let lost = seen.filter { !isKnown($0) }.sorted { $0.lexicographicallyPrecedes($1) }
        let floor = isExact ? store.revFloor : max(store.revFloor, highestRev)
        return (entries, floor, lost)
    }

    /// Whether a record determines its channel's state without a base.
    private static func needsNoBase(_ record: StateRecord) -> Bool {
        switch record {
        case .set, .delete, .forget: return true
        case .append, .splice: return record.rev == 1
        case .assign: return false
        }
    }
}

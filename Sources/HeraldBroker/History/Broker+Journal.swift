import HeraldWire

/// The broker's bookkeeping for retained state and history that is not per channel.
struct Retention {
    /// State records not yet handed to the server's writer.
    var pendingRecords: [StateRecord] = []
    /// The log position of the last record emitted (records are numbered from 1 per start).
    var lastPosition = 0
    /// The highest log position the server reported durable.
    var durablePosition = 0
    /// Sessions with held answers (`Session.barriers` not empty).
    var heldSessions: [Session] = []
    /// Every channel's history (`HistoryLog`).
    var log = HistoryLog()
    /// The channels with events in `log`.
    var slots = HistorySlots()
    /// Tombstones waiting to be collected (`Broker+Tombstones.swift`).
    var tombstones = TombstoneQueue()
    /// Whether changes may be applied now (`Broker+DataFolder.swift`).
    var gate = DataFolderGate()
}

extension Broker {
    /// Seeds the store with state loaded from disk; call once, before serving.
    ///
    /// Channels that hold state get a channel record so `channels` lists them. Restored
    /// state is charged to no user until a user's write changes it (`RetainedHolders`), and
    /// restored tombstones wait for the tombstone sweep: history did not survive the
    /// restart, so only an exact subscriber can keep one.
    /// - Parameters:
    ///   - entries: the recovered state by channel name.
    ///   - revFloor: the recovered rev floor (`StateStore.revFloor`).
    public func restore(_ entries: [[UInt8]: StoredState], revFloor: Int = 0) {
        store = StateStore(entries: entries, revFloor: revFloor)
        for (name, state) in entries {
            if state.hasContent {
                _ = channel(named: name)
            } else {
                retention.tombstones.append(TombstoneCandidate(name: name, rev: state.rev, channel: nil, seq: 0))
            }
        }
    }

    /// Hands the records emitted since the last call to `body`, in order.
    ///
    /// The server calls this once per loop iteration and queues them for its writer; the
    /// record numbered `upTo` is the last one passed.
    /// - Parameter body: receives the records and the log position of the last one.
    public func drainRecords(_ body: (_ records: [StateRecord], _ upTo: Int) -> Void) {
        guard !retention.pendingRecords.isEmpty else { return }
        let records = retention.pendingRecords
        retention.pendingRecords.removeAll(keepingCapacity: true)
        // The server reports the writer's total right after, in `dataFolderReport`.
        retention.gate.writerBytes += retention.gate.pendingBytes
        retention.gate.pendingBytes = 0
        body(records, retention.lastPosition)
    }

    /// Whether records wait to be drained.
    public var hasPendingRecords: Bool { !retention.pendingRecords.isEmpty }

    /// Releases the answers held for records up to `position`, now durable.
    ///
    /// A half-closed connection whose last held answer this releases is asked to close after
    /// writing it (`Broker+HalfClose`).
    /// - Parameters:
    ///   - position: the highest durable log position.
    ///   - now: the monotonic clock in ms (when a close is asked for); the latest time the
    ///     broker was told when nil.
    public func durable(upTo position: Int, now: Int? = nil) {
        if let now { lastNow = max(lastNow, now) }
        retention.durablePosition = max(retention.durablePosition, position)
        releaseHeldSessions()
    }

    /// Releases what the durable position and the interest tickets done now allow.
    func releaseHeldSessions() {
        let position = retention.durablePosition
        let tickets = port.ticketsDone
        var stillHeld: [Session] = []
        var released: [Session] = []
        for session in retention.heldSessions {
            if session.releaseBarriers(upTo: position, ticketsDone: tickets) { markDirty(session) }
            if session.barriers.isEmpty { released.append(session) } else { stillHeld.append(session) }
        }
        retention.heldSessions = stillHeld
        for session in released { closeIfDrained(session) }
    }

    /// Applies a validated state change: limits (the daemon's, then the user's
    /// `retained_bytes`), the store, the holder of the channel's bytes, the journal.
    /// - Parameters:
    ///   - record: the change.
    ///   - session: the connection whose request it is; its user is charged.
    /// - Returns: the record's log position (0 when not journaling).
    /// - Throws: `unavailable` when the data folder cannot take it, `limit` when a bound
    ///   refuses it; nothing changed then.
    func commit(_ record: StateRecord, by session: Session) throws(HeraldError) -> Int {
        try admitToJournal(record)
        var contentBytes = 0
        let outcome = store.apply(record, limits: config.stateLimits) { bytes in
            contentBytes = bytes
            return retainedRefusal(record, contentBytes: bytes, by: session)
        }
        switch outcome {
        case .applied:
            rechargeRetained(record, contentBytes: contentBytes, by: session)
        case .refused(let error):
            throw error
        case .skipped, .invalid:
            // The op handlers check type, range and rev first, so this is a broker bug; answer
            // it rather than trusting the store to have done something sensible.
            throw HeraldError(.range, "state change does not fit the channel's current state")
        }
        return journal(record)
    }

    /// Queues an applied record for the writer when journaling.
    /// - Returns: its log position (0 when not journaling).
    func journal(_ record: StateRecord) -> Int {
        guard config.journaling else { return 0 }
        retention.pendingRecords.append(record)
        retention.gate.pendingBytes += record.logBytes
        retention.lastPosition += 1
        return retention.lastPosition
    }

    /// Queues a state op's `ok`, held until `position` is durable when journaling.
    func acknowledge(_ session: Session, _ op: Op, position: Int, _ fields: (inout [UInt8]) -> Void) {
        if position > 0 && !session.closeAfterFlush {
            if session.barriers.isEmpty { retention.heldSessions.append(session) }
            session.holdOutput(until: position, deadline: lastNow + config.diskFullTimeoutMs)
        }
        answer(session, op, fields)
    }
}

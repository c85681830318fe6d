import HeraldWire

/// The data folder as the broker sees it: changes it cannot write are refused before they
/// are applied, answers held too long for their record end with `unavailable`, and at
/// shutdown answers that can no longer be written end with `shutting_down`.
///
/// What a client sees for a change that was already applied when the disk filled (its
/// record queued, its `ok` held): the change stays applied in memory, with its `rev`, its
/// event sent and its history kept, and its record stays queued in the writer, which
/// writes it when space returns. Its answer becomes `unavailable` after
/// `disk_full_timeout_ms` (the frame keeps the `rev` the change holds), meaning "not
/// confirmed": it is written if space returns before the daemon stops, lost otherwise; a
/// later `get` tells which. Changes after the first failed write are refused up front, so
/// at most `max_writer_queue_bytes` of changes are ever in that state.
extension Broker {
    /// Why the data folder cannot be written now ("data folder full"), or nil.
    public var dataFolderFault: String? { retention.gate.fault }

    /// Takes the writer's report, then ends held answers that waited too long.
    ///
    /// During shutdown a fault ends every held answer at once with `shutting_down`: the
    /// records behind them will not be written before the daemon exits.
    /// - Parameters:
    ///   - fault: why the writer cannot write, nil while it can.
    ///   - writerBytes: the bytes of records the writer still holds unwritten.
    ///   - now: the monotonic clock in ms.
    public func dataFolderReport(fault: String?, writerBytes: Int, now: Int) {
        retention.gate.fault = fault
        retention.gate.writerBytes = writerBytes
        if fault != nil && retention.gate.isStopping { failHeldAnswers(dueBy: .max, opening: Self.stoppingOpening) }
        expireHeldAnswers(now: now)
    }

    /// Ends with `unavailable` the held answers whose record was not written within
    /// `disk_full_timeout_ms`.
    /// - Parameter now: the monotonic clock in ms.
    public func expireHeldAnswers(now: Int) {
        guard !retention.heldSessions.isEmpty else { return }
        failHeldAnswers(dueBy: now, opening: unavailableOpening)
    }

    /// Refuses a change the data folder cannot take now; nothing has changed yet.
    /// - Throws: `unavailable` while the writer reports a fault or holds
    ///   `max_writer_queue_bytes`.
    func admitToJournal(_ record: StateRecord) throws(HeraldError) {
        guard config.journaling,
              let refusal = retention.gate.refusal(adding: record.logBytes, limit: config.maxWriterQueueBytes)
        else { return }
        throw refusal
    }

    /// Shutdown begins: with the folder at fault, held answers end now with `shutting_down`
    /// (they would never be released); otherwise they wait for the writer as usual.
    func endHeldAnswersForShutdown() {
        retention.gate.isStopping = true
        guard retention.gate.fault != nil else { return }
        failHeldAnswers(dueBy: .max, opening: Self.stoppingOpening)
    }

    /// Whether tombstone collection may journal its `forget` record now.
    var mayJournalHousekeeping: Bool { retention.gate.fault == nil }

    private func failHeldAnswers(dueBy now: Int, opening: [UInt8]) {
        var stillHeld: [Session] = []
        for session in retention.heldSessions {
            if session.failBarriers(dueBy: now, opening: opening) { markDirty(session) }
            if !session.barriers.isEmpty { stillHeld.append(session) }
        }
        retention.heldSessions = stillHeld
    }

    /// `{"error":"unavailable","message":…,"op":` for an answer that waited too long.
    private var unavailableOpening: [UInt8] {
        let reason = retention.gate.fault
            ?? "data folder did not take the change within disk_full_timeout_ms"
        return Self.errorOpening("unavailable", reason
            + "; the change is not confirmed: applied in memory, written if the folder takes it before heraldd stops")
    }

    /// `{"error":"shutting_down","message":…,"op":` for an answer the stop cut short.
    private static let stoppingOpening = errorOpening(
        "shutting_down", "heraldd is stopping and the data folder cannot be written: the change is not saved")

    private static func errorOpening(_ code: String, _ message: String) -> [UInt8] {
        var out: [UInt8] = []
        out.appendRaw(#"{"error":"#)
        out.appendJSONString(code)
        out.appendRaw(#","message":"#)
        out.appendJSONString(message)
        out.appendRaw(#","op":"#)
        return out
    }
}

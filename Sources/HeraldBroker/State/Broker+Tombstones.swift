import HeraldWire

/// Collecting tombstones (issue 12, section 3): `del` leaves a content-less `StoredState`
/// that keeps the channel's `rev`, so `if_rev` and `rev` stay right; without collection
/// every channel ever deleted would stay in memory, in the snapshot and in `channels`.
///
/// When: a tombstone goes once nobody could still be shown its `del` by `since` and nobody
/// mirrors the channel exactly: the channel's history no longer holds the `del` event (or
/// never did, with `history: 0`, or lost it with a restart) and no subscription names the
/// channel exactly. Wildcard subscribers do not keep one (a `>` subscriber would keep them
/// all); they saw the `del` event live. Until then a tombstone costs its name, and the
/// tombstones kept waiting are bounded by history (`history_bytes`) and exact subscriptions.
///
/// What `rev` means afterwards: the channel has no entry, so `get` answers `rev` 0 and
/// `if_rev:0` matches, but the store's rev floor rises to the tombstone's `rev`, and a
/// channel without an entry takes its next `rev` above the floor (`StateStore.nextRev`).
/// A value set again after its tombstone went therefore never shows a `rev` the channel
/// showed before, which mirrors that drop changes at or below their `rev` rely on.
///
/// Persistence: collection is a `StateRecord.forget`, journaled like any change (no answer
/// waits for it). Replaying it removes the tombstone and raises the floor; a snapshot has no
/// entry for the channel and carries the floor. A crash before the record is written
/// brings the tombstone back with its `rev`, to be collected again: never a lower `rev`.
extension Broker {
    /// Queues the tombstone a `del` just left, with the `seq` of its event.
    func noteTombstone(_ name: [UInt8], rev: Int) {
        let channel = channels[name]
        retention.tombstones.append(TombstoneCandidate(name: name, rev: rev, channel: channel, seq: channel?.seq ?? 0))
    }

    /// Collects the tombstones that may go, visiting at most `budget` candidates per call
    /// (each once: the ones that must wait go to the back for a later tick), so a million
    /// deletions are spread over ticks and never stall the loop.
    func sweepTombstones(budget: Int = Broker.tombstoneBudget, isOverBudget: () -> Bool = { false }) {
        // Collecting journals a record; while the folder cannot take it, wait.
        guard mayJournalHousekeeping else { return }
        var waiting: [TombstoneCandidate] = []
        for visit in 0..<min(budget, retention.tombstones.count) {
            if visit % Broker.itemsPerClockRead == Broker.itemsPerClockRead - 1 && isOverBudget() { break }
            guard let candidate = retention.tombstones.popFirst() else { break }
            guard let state = store.state(of: candidate.name), !state.hasContent, state.rev == candidate.rev else {
                continue  // changed since; a later `del` queued its own candidate
            }
            if mayCollect(candidate) {
                collect(candidate)
            } else {
                waiting.append(candidate)
            }
        }
        for candidate in waiting { retention.tombstones.append(candidate) }
    }

    /// How many tombstone candidates one sweep visits.
    static let tombstoneBudget = 10_000

    /// Whether no exact subscription names the channel and its history lost the `del` event.
    private func mayCollect(_ candidate: TombstoneCandidate) -> Bool {
        guard !index.hasSubscriptions(withPattern: candidate.name) else { return false }
        // A record dropped (or dropped and made again) took the event's history with it.
        guard let channel = candidate.channel, !channel.isRetired, channels[candidate.name] === channel else { return true }
        return !holdsEvent(of: channel, atOrBelow: candidate.seq)
    }

    /// Removes the tombstone and raises the rev floor, in the store and in the journal.
    private func collect(_ candidate: TombstoneCandidate) {
        let record = StateRecord.forget(channel: candidate.name, rev: candidate.rev)
        guard store.apply(record) == .applied else { return }
        _ = journal(record)
    }
}

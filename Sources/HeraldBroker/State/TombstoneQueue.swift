/// A tombstone waiting to be collected: the content-less state `del` left on a channel.
struct TombstoneCandidate {
    /// The channel's name.
    let name: [UInt8]
    /// The tombstone's `rev`; a channel changed since has another and is no candidate.
    let rev: Int
    /// The channel record whose history got the `del` event, nil when the tombstone was
    /// restored from disk (its event went with the previous run's history).
    let channel: Channel?
    /// The `seq` of the `del` event in that record's history.
    let seq: Int
}

/// Tombstones in the order they were made, visited a budget at a time by the sweep.
///
/// A FIFO with a moving head: a candidate that cannot go yet is appended again, one whose
/// channel was changed since is dropped when it comes up. Each `del` (and each tombstone
/// restored at start) adds one entry, so the queue is never longer than the tombstones
/// made and not yet looked at.
struct TombstoneQueue {
    private var items: [TombstoneCandidate] = []
    private var head = 0

    /// Candidates waiting.
    var count: Int { items.count - head }

    /// Adds a candidate at the back.
    mutating func append(_ candidate: TombstoneCandidate) {
        items.append(candidate)
    }

    /// Takes the candidate at the front.
    mutating func popFirst() -> TombstoneCandidate? {
        guard head < items.count else { return nil }
        let first = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1_024 && head * 2 >= items.count {
            items.removeFirst(head)
            head = 0
        }
        return first
    }
}

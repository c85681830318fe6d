import HeraldWire

/// One channel's retained state: its `rev` and a value or a list (or neither, after `del`).
public struct StoredState: Sendable, Equatable {
    /// Counts the channel's state changes; never goes back.
    public var rev: Int
    /// The value's raw JSON bytes, when the channel holds a value.
    public var value: [UInt8]?
    /// The elements' raw JSON bytes, when the channel holds a list.
    public var list: [[UInt8]]?
    /// Bytes of the content as JSON text (`[a,b]` for a list), kept current for the limits.
    public var contentBytes: Int

    /// Whether the channel holds a value or a list (false for a tombstone left by `del`).
    public var hasContent: Bool { value != nil || list != nil }

    /// Appends the content as JSON (`null` when there is none) to `out`.
    /// - Parameter out: the frame being built.
    public func appendContent(to out: inout [UInt8]) {
        if let value {
            out.append(contentsOf: value)
        } else if let list {
            out.append(UInt8(ascii: "["))
            for (position, element) in list.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: element)
            }
            out.append(UInt8(ascii: "]"))
        } else {
            out.appendRaw("null")
        }
    }

    /// The JSON text size of a list with these elements.
    static func listBytes(_ elements: [[UInt8]]) -> Int {
        elements.reduce(2) { $0 + $1.count } + max(0, elements.count - 1)
    }
}

/// The bounds `StateStore.apply` enforces before changing anything.
public struct StateLimits: Sendable, Equatable {
    /// Largest value (a list counts as its JSON text).
    public var maxValueBytes: Int
    /// Most elements in one list.
    public var maxListLength: Int
    /// Most bytes of retained state overall (channel names plus content).
    public var maxRetainedBytes: Int

    /// Creates limits.
    public init(maxValueBytes: Int, maxListLength: Int, maxRetainedBytes: Int) {
        self.maxValueBytes = maxValueBytes
        self.maxListLength = maxListLength
        self.maxRetainedBytes = maxRetainedBytes
    }
}

/// What `StateStore.apply` did with a record.
public enum ApplyOutcome: Equatable, Sendable {
    /// The state changed.
    case applied
    /// The record's `rev` is not above the channel's: already applied (log replay overlap).
    case skipped
    /// A limit refused it; nothing changed.
    case refused(HeraldError)
    /// The record does not fit the state (a list op on a value, an index out of range, an
    /// array that does not parse): the broker checks these first, so only damaged files
    /// produce it.
    case invalid
}

/// Every channel's retained state, changed only through `apply(_:limits:)`.
///
/// Why a separate store rather than fields on `Channel`: retained state is the part of the
/// broker that must survive restarts and may one day live in a NATS KV bucket, so it sits
/// behind this small interface (reads, `apply`, `snapshot`), and everything that changes it
/// is a `StateRecord` the persistence layer can write and replay.
public final class StateStore {
    /// State by channel name, tombstones (content-less, `rev` kept) included.
    public private(set) var entries: [[UInt8]: StoredState]
    /// Channel names plus content bytes over all entries, what `maxRetainedBytes` bounds.
    public private(set) var retainedBytes: Int
    /// The highest `rev` of any tombstone collected (`StateRecord.forget`): a channel without
    /// an entry takes its next `rev` above it, so a channel set again after its tombstone
    /// went never shows a `rev` it showed before. Only rises.
    public private(set) var revFloor: Int

    /// Creates a store, optionally with restored entries.
    /// - Parameters:
    ///   - entries: the state loaded from disk, or empty.
    ///   - revFloor: the rev floor loaded from disk, or 0.
    public init(entries: [[UInt8]: StoredState] = [:], revFloor: Int = 0) {
        self.entries = entries
        self.retainedBytes = entries.reduce(0) { $0 + $1.key.count + $1.value.contentBytes }
        self.revFloor = revFloor
    }

    /// The channel's state, nil when it has none (never had, or its tombstone was collected).
    public func state(of channel: [UInt8]) -> StoredState? { entries[channel] }

    /// The channel's `rev`, what `if_rev` is compared with: 0 when it has no entry.
    public func rev(of channel: [UInt8]) -> Int { entries[channel]?.rev ?? 0 }

    /// The `rev` the channel's next change takes: one above its own, or, without an entry,
    /// one above the rev floor (1 until a tombstone was collected).
    public func nextRev(of channel: [UInt8]) -> Int { (entries[channel]?.rev ?? revFloor) + 1 }

    /// A copy of every entry for a snapshot; copy-on-write, so this costs no value bytes.
    public func snapshot() -> [[UInt8]: StoredState] { entries }

    /// Applies one record: checks it against the state and the limits, then changes the
    /// state, or changes nothing.
    ///
    /// A record on a channel without an entry whose `rev` is not above the rev floor is
    /// skipped like one at or below the channel's `rev`: every change made after a tombstone
    /// was collected took a `rev` above the floor of its time, so such a record is one that
    /// was applied (and then deleted and collected) before.
    /// - Parameters:
    ///   - record: the change.
    ///   - limits: bounds to enforce; nil when replaying what was already accepted.
    ///   - admit: a last check once the limits passed, given the content bytes the channel
    ///     would hold afterwards (the per-user `retained_bytes`); its error refuses the record.
    /// - Returns: what happened.
    @discardableResult
    public func apply(
        _ record: StateRecord, limits: StateLimits? = nil, admit: (_ contentBytes: Int) -> HeraldError? = { _ in nil }
    ) -> ApplyOutcome {
        let name = record.channel
        let old = entries[name]
        if case .forget(_, let rev) = record { return forget(name, old, rev: rev) }
        guard record.rev > (old?.rev ?? revFloor) else { return .skipped }
        guard let plan = Self.plan(old, record) else { return .invalid }
        if let limits, let refusal = Self.check(plan, old: old, name: name, retained: retainedBytes, limits) {
            return .refused(refusal)
        }
        if let refusal = admit(plan.contentBytes) { return .refused(refusal) }
        retainedBytes += plan.contentBytes - (old?.contentBytes ?? 0) + (old == nil ? name.count : 0)
        // Mutating through the dictionary's accessor keeps a list uniquely referenced, so an
        // append or assign costs O(1), not a copy of the list.
        Self.mutate(&entries[name, default: StoredState(rev: 0, value: nil, list: nil, contentBytes: 0)], record, plan)
        return .applied
    }

    /// Collects a tombstone and raises the floor. A channel changed since (a `rev` above
    /// the record's) keeps its state; one that holds content at or below it means the
    /// files are not what was written (the broker only collects tombstones).
    private func forget(_ name: [UInt8], _ old: StoredState?, rev: Int) -> ApplyOutcome {
        if let old {
            guard old.rev <= rev else { return .skipped }
            guard !old.hasContent else { return .invalid }
            entries[name] = nil
            retainedBytes -= name.count
        }
        revFloor = max(revFloor, rev)
        return .applied
    }

    /// What a record will make of a channel's content, worked out before anything changes.
    private struct Plan {
        /// The content's JSON size afterwards.
        var contentBytes: Int
        /// The list length afterwards, when the channel holds a list then.
        var listCount: Int?
        /// For `set` with an array: the split elements.
        var elements: [[UInt8]]?
    }

    /// Checks that `record` fits `old` and computes the sizes after it; nil when it does not fit.
    private static func plan(_ old: StoredState?, _ record: StateRecord) -> Plan? {
        let list = old?.list
        let isEmpty = list == nil && old?.value == nil
        let count = list?.count ?? 0
        let bytes = list == nil ? 2 : (old?.contentBytes ?? 2)
        switch record {
        case .set(_, _, let value):
            guard let split = listElements(value) else { return Plan(contentBytes: value.count) }
            guard let elements = split else { return nil }
            return Plan(contentBytes: StoredState.listBytes(elements), listCount: elements.count, elements: elements)
        case .delete, .forget:
            return Plan(contentBytes: 0)
        case .append(_, _, let element):
            guard list != nil || isEmpty else { return nil }
            return Plan(contentBytes: bytes + element.count + (count > 0 ? 1 : 0), listCount: count + 1)
        case .assign(_, _, let index, let element):
            guard let list, index >= 0, index < count else { return nil }
            return Plan(contentBytes: bytes - list[index].count + element.count, listCount: count)
        case .splice(_, _, let index, let remove, let insert):
            guard list != nil || isEmpty, index >= 0, remove >= 0, index <= count, remove <= count - index else {
                return nil
            }
            let removed = list.map { $0[index..<(index + remove)].reduce(0) { $0 + $1.count } } ?? 0
            let inserted = insert.reduce(0) { $0 + $1.count }
            let newCount = count - remove + insert.count
            let commas = max(0, newCount - 1) - max(0, count - 1)
            return Plan(contentBytes: bytes - removed + inserted + commas, listCount: newCount)
        }
    }

    /// Changes the state in place as planned.
    private static func mutate(_ state: inout StoredState, _ record: StateRecord, _ plan: Plan) {
        switch record {
        case .set(_, _, let value):
            if let elements = plan.elements {
                state.value = nil
                state.list = elements
            } else {
                state.list = nil
                state.value = value
            }
        case .delete, .forget:
            state.value = nil
            state.list = nil
        case .append(_, _, let element):
            if state.list == nil { state.list = [] }
            state.list?.append(element)
        case .assign(_, _, let index, let element):
            state.list?[index] = element
        case .splice(_, _, let index, let remove, let insert):
            if state.list == nil { state.list = [] }
            state.list?.replaceSubrange(index..<(index + remove), with: insert)
        }
        state.rev = record.rev
        state.contentBytes = plan.contentBytes
    }

    /// For a JSON array (after optional whitespace): `.some` with its elements, or
    /// `.some(nil)` when it does not parse; nil for any other value.
    private static func listElements(_ value: [UInt8]) -> [[UInt8]]?? {
        guard let first = value.first(where: { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }),
              first == UInt8(ascii: "[") else { return nil }
        return .some(value.withUnsafeBytes { JSONArrayElements.elements(of: $0) })
    }

    private static func check(
        _ next: Plan, old: StoredState?, name: [UInt8], retained: Int, _ limits: StateLimits
    ) -> HeraldError? {
        if next.contentBytes > limits.maxValueBytes {
            return HeraldError(.limit, "value would be " + String(next.contentBytes)
                + " bytes, above max_value_bytes (" + String(limits.maxValueBytes) + ")")
        }
        if let count = next.listCount, count > limits.maxListLength {
            return HeraldError(.limit, "list would have " + String(count)
                + " elements, above max_list_length (" + String(limits.maxListLength) + ")")
        }
        let growth = next.contentBytes - (old?.contentBytes ?? 0) + (old == nil ? name.count : 0)
        if growth > 0 && retained + growth > limits.maxRetainedBytes {
            return HeraldError(.limit, "retained state would pass max_retained_bytes ("
                + String(limits.maxRetainedBytes) + " bytes)")
        }
        return nil
    }
}

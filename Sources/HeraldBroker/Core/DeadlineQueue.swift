/// What a deadline is for; the broker dispatches on it when the deadline passes.
enum DeadlineKind: UInt8, Hashable {
    /// A `req` waiting for its first reply (`id` is the request's id).
    case request
    /// A signal offered to a handler (`id` is the signal's number).
    case signalOffer
    /// A connection that must authenticate by then (`id` is the connection id).
    case auth
    /// Cluster mode: who may reply to a request delivered here is forgotten (`id` is the
    /// `DeliveredRequests` entry).
    case deliveredRequest
    /// Cluster mode: another node's signal offered here is forgotten if that node never
    /// said it ended (`id` is the signal's global id).
    case remoteOffer
}

/// One scheduled deadline.
struct Deadline {
    /// When it is due, on the broker's monotonic ms clock.
    var at: Int
    /// What it is for.
    var kind: DeadlineKind
    /// Which one of that kind.
    var id: Int
    /// Scheduling order, so equal deadlines fire first-in first-out.
    var order: Int

    /// Heap order: earlier first, then earlier scheduled.
    func precedes(_ other: Deadline) -> Bool {
        at != other.at ? at < other.at : order < other.order
    }
}

/// The broker's timers: a binary min-heap of deadlines with an index for cancelling.
///
/// Why one queue rather than a libuv timer per request: a burst of 10,000 requests costs
/// 10,000 heap entries, not 10,000 handles to init and close, and the server keeps ONE
/// `uv_timer` armed for `next` (see `Broker.nextDeadline`). Cancelled entries are removed
/// at once (O(log n) through the position index), so `count` is exactly what is pending and
/// nothing lingers until its deadline.
struct DeadlineQueue {
    /// Identifies an entry for cancelling.
    private struct Key: Hashable {
        let kind: DeadlineKind
        let id: Int
    }

    private var heap: [Deadline] = []
    private var positions: [Key: Int] = [:]
    private var nextOrder = 0

    /// How many deadlines are pending.
    var count: Int { heap.count }

    /// The earliest pending deadline's time, or nil when none is pending.
    var next: Int? { heap.first?.at }

    /// Schedules (or reschedules) the deadline of `kind`/`id` at `at`.
    mutating func schedule(at: Int, kind: DeadlineKind, id: Int) {
        cancel(kind: kind, id: id)
        nextOrder &+= 1
        heap.append(Deadline(at: at, kind: kind, id: id, order: nextOrder))
        positions[Key(kind: kind, id: id)] = heap.count - 1
        siftUp(heap.count - 1)
    }

    /// Removes the deadline of `kind`/`id`. - Returns: whether one was pending.
    @discardableResult
    mutating func cancel(kind: DeadlineKind, id: Int) -> Bool {
        guard let position = positions.removeValue(forKey: Key(kind: kind, id: id)) else { return false }
        let last = heap.count - 1
        if position != last {
            heap.swapAt(position, last)
            positions[Key(kind: heap[position].kind, id: heap[position].id)] = position
        }
        heap.removeLast()
        if position < heap.count {
            siftDown(position)
            siftUp(position)
        }
        if heap.isEmpty && heap.capacity > 4096 {
            heap = []
            positions = [:]
        }
        return true
    }

    /// Takes the earliest deadline if it is due at `now`.
    mutating func popDue(now: Int) -> Deadline? {
        guard let first = heap.first, first.at <= now else { return nil }
        cancel(kind: first.kind, id: first.id)
        return first
    }

    private mutating func siftUp(_ start: Int) {
        var child = start
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].precedes(heap[parent]) else { return }
            swapEntries(child, parent)
            child = parent
        }
    }

    private mutating func siftDown(_ start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            let right = left + 1
            let child = right < heap.count && heap[right].precedes(heap[left]) ? right : left
            guard heap[child].precedes(heap[parent]) else { return }
            swapEntries(child, parent)
            parent = child
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        heap.swapAt(a, b)
        positions[Key(kind: heap[a].kind, id: heap[a].id)] = a
        positions[Key(kind: heap[b].kind, id: heap[b].id)] = b
    }
}

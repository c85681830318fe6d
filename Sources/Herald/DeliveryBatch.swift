import Dispatch
import Synchronization

/// Events for queued handlers and streams, collected while the I/O thread works through what it
/// read, and handed to each queue as one block and to each stream's buffer under one lock.
///
/// Why: one `DispatchQueue.async` per event cost a block, a wake-up and often a context switch
/// per event; at a few hundred thousand events per second that was most of the raw path. The
/// same held for streams, one lock and often one task resume per event (`EventBuffer`). Order
/// is kept: events go to their queue or stream in arrival order, and the batch is flushed
/// before any other frame is handled (a `removed`, an answer), so a subscription's end still
/// comes after its events.
struct DeliveryBatch {
    /// A struct, not a tuple: freeing an array of tuples went through the runtime's generic
    /// tuple destructor, element by element.
    private struct Item: Sendable {
        let binding: SubscriptionBinding
        let event: IncomingEvent
        let finished: Bool
    }

    private var items: [Item] = []
    /// Batches the handlers' queue is done with, handed back to be freed on the I/O thread.
    private let returns = ReturnedBatches<Item>()

    /// Whether nothing is waiting.
    var isEmpty: Bool { items.isEmpty }

    /// Adds one event for `binding`.
    mutating func append(_ binding: SubscriptionBinding, _ event: IncomingEvent, finished: Bool) {
        items.append(Item(binding: binding, event: event, finished: finished))
    }

    /// Hands every collected event to its queue (one block per queue) or stream (one append per
    /// stream), then ends the subscriptions that finished with them.
    mutating func flush() {
        guard !items.isEmpty else { return }
        let taken = items
        items = returns.reuse() ?? []
        defer {
            for item in taken where item.finished { item.binding.end(.finished) }
        }
        // The usual cases: every event for one queue (the client's `.ordered` one), or for one
        // stream.
        switch taken[0].binding.target {
        case .queue(let first):
            if taken.allSatisfy({ if case .queue(let queue) = $0.binding.target { queue === first } else { false } }) {
                // Not from the main queue: a binding released with its batch may hold the last
                // reference to what its handler captured (a view, say), which must then go on
                // the main thread, as before.
                let returns = first === DispatchQueue.main ? nil : self.returns
                first.async {
                    for item in taken { item.binding.deliverIfWanted(item.event) }
                    returns?.give(taken)
                }
                return
            }
        case .stream(let first):
            if taken.allSatisfy({ if case .stream(let buffer) = $0.binding.target { buffer === first } else { false } }) {
                first.append(taken.map(\.event))
                return
            }
        }
        var queues: [ObjectIdentifier: (queue: DispatchQueue, events: [(SubscriptionBinding, IncomingEvent)])] = [:]
        var streams: [ObjectIdentifier: (buffer: EventBuffer, events: [IncomingEvent])] = [:]
        var queueOrder: [ObjectIdentifier] = []
        for item in taken {
            switch item.binding.target {
            case .queue(let queue):
                let id = ObjectIdentifier(queue)
                if queues[id] == nil {
                    queues[id] = (queue, [])
                    queueOrder.append(id)
                }
                queues[id]?.events.append((item.binding, item.event))
            case .stream(let buffer):
                streams[ObjectIdentifier(buffer), default: (buffer, [])].events.append(item.event)
            }
        }
        for id in queueOrder {
            guard let (queue, events) = queues[id] else { continue }
            queue.async {
                for (binding, event) in events { binding.deliverIfWanted(event) }
            }
        }
        for (buffer, events) in streams.values { buffer.append(events) }
    }
}

/// Delivered batches on their way back from a handler queue to the I/O thread, which frees
/// them (`reuse`).
///
/// Why: the events were allocated on the I/O thread and released on the handler's; with
/// glibc's allocator a free into another thread's arena takes that arena's lock, which the
/// I/O thread holds for its next allocations: a quarter of the raw path's time went to that
/// lock's futex waits and wakes. Handed back, every free happens on the allocating thread,
/// and the batch's storage is reused for the next one.
final class ReturnedBatches<Element: Sendable>: Sendable {
    private let held = Mutex<[[Element]]>([])

    /// A handler queue is done with `batch` (its last use of it).
    func give(_ batch: [Element]) {
        held.withLock { $0.append(batch) }
    }

    /// Frees every batch given back (on the calling thread, the I/O thread) and returns one
    /// emptied array with its capacity for the next batch; nil when none came back.
    func reuse() -> [Element]? {
        var back = held.withLock { held -> [[Element]] in
            var taken: [[Element]] = []
            swap(&taken, &held)
            return taken
        }
        guard var storage = back.popLast() else { return nil }
        back = []
        storage.removeAll(keepingCapacity: true)
        return storage
    }
}

import Dispatch

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
    private struct Item {
        let binding: SubscriptionBinding
        let event: IncomingEvent
        let finished: Bool
    }

    private var items: [Item] = []

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
        items.removeAll(keepingCapacity: true)
        defer {
            for item in taken where item.finished { item.binding.end(.finished) }
        }
        // The usual cases: every event for one queue (the client's `.ordered` one), or for one
        // stream.
        switch taken[0].binding.target {
        case .queue(let first):
            if taken.allSatisfy({ if case .queue(let queue) = $0.binding.target { queue === first } else { false } }) {
                first.async {
                    for item in taken { item.binding.deliverIfWanted(item.event) }
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

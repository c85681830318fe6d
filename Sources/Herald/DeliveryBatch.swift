import Dispatch

/// Events for queued handlers, collected while the I/O thread works through what it read, and
/// handed to each queue as one block.
///
/// Why: one `DispatchQueue.async` per event cost a block, a wake-up and often a context switch
/// per event; at a few hundred thousand events per second that was most of the raw path. Order
/// is kept: events go to their queue in arrival order, and the batch is flushed before any
/// other frame is handled (a `removed`, an answer), so a subscription's end still comes after
/// its events.
struct DeliveryBatch {
    private var items: [(binding: SubscriptionBinding, event: IncomingEvent, finished: Bool)] = []

    /// Whether nothing is waiting.
    var isEmpty: Bool { items.isEmpty }

    /// Adds one event for `binding` (a queued binding; inline ones are called at once).
    mutating func append(_ binding: SubscriptionBinding, _ event: IncomingEvent, finished: Bool) {
        items.append((binding, event, finished))
    }

    /// Hands every collected event to its queue (one block per queue), then ends the
    /// subscriptions that finished with them.
    mutating func flush() {
        guard !items.isEmpty else { return }
        let taken = items
        items.removeAll(keepingCapacity: true)
        // The usual case, every event for one queue (the client's `.ordered` one): one block.
        if case .queue(let first) = taken[0].binding.target,
           taken.allSatisfy({ if case .queue(let queue) = $0.binding.target { queue === first } else { false } }) {
            first.async {
                for item in taken { item.binding.deliverIfWanted(item.event) }
            }
            for item in taken where item.finished { item.binding.end(.finished) }
            return
        }
        var queues: [ObjectIdentifier: (queue: DispatchQueue, events: [(SubscriptionBinding, IncomingEvent)])] = [:]
        var order: [ObjectIdentifier] = []
        for item in taken {
            guard case .queue(let queue) = item.binding.target else { continue }
            let id = ObjectIdentifier(queue)
            if queues[id] == nil {
                queues[id] = (queue, [])
                order.append(id)
            }
            queues[id]?.events.append((item.binding, item.event))
        }
        for id in order {
            guard let (queue, events) = queues[id] else { continue }
            queue.async {
                for (binding, event) in events { binding.deliverIfWanted(event) }
            }
        }
        for item in taken where item.finished { item.binding.end(.finished) }
    }
}

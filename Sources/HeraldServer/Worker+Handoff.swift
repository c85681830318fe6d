import CLibUV
import HeraldBroker
#if canImport(Glibc)
import Glibc
#endif

/// Hand-offs between loops (`workers` above 1): the loop that drains the broker's dirty list
/// moves a plain connection's bytes into that connection's `OutputHandoff` on its own loop,
/// and that loop writes them without the broker lock (`Connection.pumpHandoff`), counting
/// the writes under the lock later, at its next pass (`settleHandedOff`).
///
/// Order: every take of a connection's bytes, by hand-off or by the connection's own
/// `takeQueued`, happens under the broker lock and takes the session's whole writable
/// queue, and `takeQueued` empties the box before it takes from the session. So the box
/// always holds bytes older than the session's, and bytes reach the socket in queue order.
///
/// What still goes the old way (`.flush`, `takeQueued` under the lock): TLS and WebSocket
/// connections (they seal or frame under their own rules), a session closing after its
/// flush (its closing frame decides the close), and one loop alone (no boxes at all).
extension Worker {
    /// On this loop, for a new plain connection when there is more than one loop: its box.
    func openHandoff(for id: ConnectionID, session: Session) -> OutputHandoff {
        let box = OutputHandoff(session: session)
        pthread_mutex_lock(inboxMutex)
        handoffs[id] = box
        pthread_mutex_unlock(inboxMutex)
        return box
    }

    /// On this loop, when the connection closes: later hand-offs for it fall back to `.flush`,
    /// which finds no connection.
    func closeHandoff(for id: ConnectionID) {
        pthread_mutex_lock(inboxMutex)
        handoffs[id]?.dropSpans()
        handoffs[id] = nil
        pthread_mutex_unlock(inboxMutex)
    }

    /// Under the broker lock: moves `session`'s writable bytes into its connection's box on
    /// this loop and wakes this loop if it is not already going to look.
    /// - Parameter wake: false from this loop itself, for a connection whose write is out:
    ///   the write's completion looks at the box.
    /// - Returns: false when the connection has no box here (TLS, WebSocket, gone): the
    ///   caller posts `.flush` instead.
    @discardableResult
    func handOff(_ session: Session, wake: Bool = true) -> Bool {
        pthread_mutex_lock(inboxMutex)
        defer { pthread_mutex_unlock(inboxMutex) }
        guard !inboxClosed, let box = handoffs[session.id] else { return false }
        let moved: Int
        // A box whose connection's write is out may wait long (a peer that does not read):
        // its session's spans are copied in rather than held there.
        if !wake { session.keepSpansInQueue() }
        if box.bytes.isEmpty && box.spans.isEmpty {
            // The box's empty buffer becomes the session's queue: no allocation.
            let spanBytes = session.takeOutbound(into: &box.bytes, spans: &box.spans)
            if spanBytes > 0 { box.arena = session.frameArena }
            moved = box.bytes.count + spanBytes
        } else if let spanBytes = session.moveSpans(appendingTo: &box.spans, arena: &box.arena) {
            // Only shared frames since the last hand-off, which the box's loop has not
            // taken yet (the common case when this loop runs ahead): they join the box's
            // list, no copy.
            moved = spanBytes
        } else {
            box.flattenSpans()
            session.takeOutbound(into: &box.spare)
            moved = box.spare.count
            box.bytes.append(contentsOf: box.spare)
            box.spare.removeAll(keepingCapacity: true)
        }
        session.inFlight += moved
        if moved > 0 && !box.isAwaited {
            box.isAwaited = true
            if wake {
                pending.append(.handoff(session.id))
                uv_async_send(inbox)
            }
        }
        return true
    }

    /// On this loop, with or without the broker lock: the box's bytes into `target` and its
    /// spans into `spans`, which must be empty (their buffers go to the box for the next
    /// hand-off); `arena` becomes the spans' arena when there are any.
    /// - Returns: whether there were any.
    func takeHandoff(_ box: OutputHandoff, into target: inout [UInt8], spans: inout [FrameSpan],
                     arena: inout FrameArena?) -> Bool {
        pthread_mutex_lock(inboxMutex)
        defer { pthread_mutex_unlock(inboxMutex) }
        box.isAwaited = false
        guard !box.bytes.isEmpty || !box.spans.isEmpty else { return false }
        swap(&box.bytes, &target)
        if !box.spans.isEmpty {
            swap(&box.spans, &spans)
            arena = box.arena
        }
        return true
    }

    /// Under the broker lock, for `LargeBufferKeeper`: frees the box's buffers when they are
    /// empty and larger than `limit`, so one burst does not pin them.
    /// - Returns: whether the box pins nothing large now.
    func shrinkHandoff(_ box: OutputHandoff, above limit: Int) -> Bool {
        pthread_mutex_lock(inboxMutex)
        defer { pthread_mutex_unlock(inboxMutex) }
        if box.bytes.isEmpty && box.bytes.capacity > limit { box.bytes = [] }
        if box.spare.capacity > limit { box.spare = [] }
        return box.bytes.capacity <= limit
    }

    /// Under the broker lock: counts the writes this loop's connections made of handed-off
    /// bytes since its last pass.
    func settleHandedOff(_ broker: Broker) {
        for box in unsettled {
            box.isListed = false
            box.settle(broker)
        }
        unsettled.removeAll(keepingCapacity: true)
    }

    /// Without the broker lock, for a pass that found it taken: the holder counts this
    /// loop's uncounted writes before it lets go (`HandoffSettlements`).
    func leaveUnsettled() {
        for box in unsettled { box.isListed = false }
        shared.leave(&unsettled)
    }
}

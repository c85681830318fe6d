import HeraldBroker

/// A plain connection's side of the hand-offs between loops (`Worker+Handoff`): it writes
/// what other loops moved into its `OutputHandoff` without the broker lock, and leaves the
/// count of those writes in the box for the next holder of the lock.
extension Connection {
    /// Under the broker lock, `takeQueued` for a connection with a box: the box's bytes
    /// (already counted in `inFlight`), then the session's, when no write is in flight.
    func takeHandedOffAndQueued(_ box: OutputHandoff) {
        guard inFlightBytes.isEmpty && inFlightSpans.isEmpty else { return }
        _ = worker.takeHandoff(box, into: &inFlightBytes, spans: &inFlightSpans, arena: &inFlightArena)
        guard session.hasWritableOutput else {
            if !inFlightBytes.isEmpty || !inFlightSpans.isEmpty { lastTakenMs = worker.now }
            return
        }
        if inFlightBytes.isEmpty && inFlightSpans.isEmpty {
            session.inFlight += takeSessionOutput()
        } else {
            // The session's bytes go behind the box's: its spans, if any, are copied first.
            flattenSpans()
            session.takeOutbound(into: &takeScratch)
            session.inFlight += takeScratch.count
            inFlightBytes.append(contentsOf: takeScratch)
            takeScratch.removeAll(keepingCapacity: true)
        }
        lastTakenMs = worker.now
    }

    /// Under the broker lock, when `takeQueued` finds a write out: the session's bytes go to
    /// the box for the write's completion to send, or, when the session closes after its
    /// flush (its closing frame decides the close), that completion takes the lock for them.
    func keepForWriteCompletion() {
        if session.closeAfterFlush || !worker.handOff(session, wake: false) { mustTakeAfterWrite = true }
    }

    /// Without the broker lock: writes what other loops handed over, until the box is empty
    /// or a write must wait for the socket (its completion comes back here).
    func pumpHandoff() {
        guard let handoff else { return }
        while !isClosing && !isWriting && inFlightBytes.isEmpty && inFlightSpans.isEmpty
                && worker.takeHandoff(handoff, into: &inFlightBytes, spans: &inFlightSpans, arena: &inFlightArena) {
            lastTakenMs = worker.now
            guard writeTakenAtOnce() else { return }
            noteHandedWritten(handoff)
        }
    }

    /// After a complete write outside the lock: empties the written buffer (keeping its
    /// memory) and leaves the count in the box, listed for this loop's next pass.
    func noteHandedWritten(_ box: OutputHandoff) {
        box.written.add(inFlightBytes.count + spanWrittenBytes, ordering: .releasing)
        spanWrittenBytes = 0
        inFlightBytes.removeAll(keepingCapacity: true)
        // Large buffers stay while the connection streams (`LargeBufferKeeper`).
        if inFlightBytes.capacity > Connection.retainedCapacity { worker.largeBuffers.hold(self) }
        if !box.isListed {
            box.isListed = true
            worker.unsettled.append(box)
        }
    }
}

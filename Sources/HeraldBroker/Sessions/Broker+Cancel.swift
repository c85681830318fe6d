import HeraldWire

/// `cancel {of}`: a connection withdraws a `req` or a `signal` it started, named by the
/// `rid` it sent it with (docs/protocol.md, "Cancelling a request or a signal").
///
/// Why by `rid`: it is the only name the sender has for what it started (a signal's `g…` id
/// reaches the sender with its first callback or its result, a request has none). What is
/// withdrawn leaves nothing behind: a request's waiter, token and deadline go at once (a later
/// `reply` to it is answered as one to an unknown token: ignored, `delivered:false`); a
/// signal is offered to no further handler, no callback or result reaches the sender, its
/// offer deadline goes, and the handler holding the offer is not told (its `handled` is then
/// ignored, its `callback` is `not_found`, as after any end).
///
/// The lookup is per connection, so only the caller's own operations can be named; one that
/// ended already, or a `rid` never sent, withdraws nothing and is not an error (the answer
/// of a request and its `cancel` cross on the wire as a matter of course). Costs the
/// operations withdrawn, never a scan of what is pending.
extension Broker {
    /// `cancel {of}`: withdraws every `req` and `signal` of this connection still under way
    /// whose `rid` is `of`, byte for byte. With its own `rid` the answer is
    /// `{"ok":"cancel","rid":…,"count":N}` (N withdrawn, 0 when nothing was); without one,
    /// nothing.
    /// - Throws: `missing_field` without `of`, `bad_field` when `of` is an object or array.
    func cancel(from session: Session) throws(HeraldError) {
        let rid = try cancelledRid()
        var count = 0
        for id in requests.ids(of: session.id, rid: rid) where withdrawRequest(id) {
            count += 1
        }
        for id in signalsByRid.ids(for: OperationRid(connection: session.id, rid: rid)) {
            guard let pending = signals[id] else { continue }
            endSilently(pending)
            count += 1
        }
        if current.ridRaw != nil {
            answer(session, .cancel) { out in appendCounter(&out, "count", count) }
        }
        if count > 0 { closeIfDrained(session) }
    }

    /// The `of` field's JSON text: the `rid` of the operation to withdraw.
    private func cancelledRid() throws(HeraldError) -> [UInt8] {
        guard let of = scanner[.of] else { throw HeraldError(.missingField, "missing field 'of'") }
        switch of.kind {
        case .object, .array:
            throw HeraldError(.badField, "field 'of' must be a JSON scalar, the rid of a req or signal")
        default:
            return scanner.raw(.of).map { Array($0) } ?? []
        }
    }

    /// Takes a pending request out with its deadline, answering nobody.
    /// - Returns: whether it was still pending.
    private func withdrawRequest(_ id: Int) -> Bool {
        guard requests.take(id) != nil else { return false }
        deadlines.cancel(kind: .request, id: id)
        return true
    }
}

import HeraldWire

/// Retained lists: `append`, `assign`, `splice`.
///
/// A subscriber mirrors a list by applying the events in order to what `get` (or
/// `current`) gave it: `kind:"index"` sets element `index` (appending when `index` equals
/// the length), `kind:"splice"` removes `remove` elements at `index` and inserts `insert`
/// there, `kind:"set"` replaces everything, `kind:"del"` clears it. Each carries the new
/// `rev`; a gap in `rev` means an event was missed and the mirror should `get` again.
extension Broker {
    /// `append`: adds one element at the end; an unset channel becomes a list.
    func appendElement(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        let element = try requestedElement()
        let count = try listCount(name)
        guard try expectedRev(name, session) != nil else { return }
        let rev = store.nextRev(of: name)
        let position = try commit(.append(channel: name, rev: rev, element: Array(element)), by: session)
        emitIndexEvent(on: name, from: session, rev: rev, index: count, element: element)
        acknowledgeRev(session, .append, rev: rev, position: position, index: count)
    }

    /// `assign`: replaces element `index`.
    func assignElement(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        let element = try requestedElement()
        let index = try requestedIndex()
        let count = try listCount(name)
        guard index < count else {
            throw HeraldError(.range, "index " + String(index) + " is outside the list (length " + String(count) + ")")
        }
        guard let rev = try expectedRev(name, session) else { return }
        let position = try commit(.assign(channel: name, rev: rev + 1, index: index, element: Array(element)), by: session)
        emitIndexEvent(on: name, from: session, rev: rev + 1, index: index, element: element)
        acknowledgeRev(session, .assign, rev: rev + 1, position: position)
    }

    /// `splice`: removes `remove` elements at `index` and inserts `insert` there.
    func spliceList(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        let index = try requestedIndex()
        let remove = try scanner.int(.remove) ?? 0
        guard remove >= 0 else { throw HeraldError(.badField, "field 'remove' must be 0 or more") }
        let insertRaw = scanner.raw(.insert)
        var insert: [[UInt8]] = []
        if let kind = scanner[.insert]?.kind, kind != .null {
            guard kind == .array, let insertRaw, let elements = JSONArrayElements.elements(of: insertRaw) else {
                throw HeraldError(.badField, "field 'insert' must be an array")
            }
            insert = elements
        }
        let count = try listCount(name)
        guard index <= count, remove <= count - index else {
            throw HeraldError(.range, "index " + String(index) + " with remove " + String(remove)
                + " is outside the list (length " + String(count) + ")")
        }
        guard try expectedRev(name, session) != nil else { return }
        let rev = store.nextRev(of: name)
        let record = StateRecord.splice(channel: name, rev: rev, index: index, remove: remove, insert: insert)
        let position = try commit(record, by: session)
        emitStateEvent(on: name, from: session, kind: "splice", rev: rev, middle: { out in
            out.appendRaw(#","index":"#)
            out.appendInt(index)
            out.appendRaw(#","remove":"#)
            out.appendInt(remove)
        }, tail: { out in
            out.appendRaw(#","insert":"#)
            if scanner[.insert]?.kind == .array, let insertRaw { out.appendRaw(insertRaw) } else { out.appendRaw("[]") }
        })
        acknowledgeRev(session, .splice, rev: rev, position: position)
    }

    private func emitIndexEvent(on name: [UInt8], from session: Session, rev: Int, index: Int, element: UnsafeRawBufferPointer) {
        emitStateEvent(on: name, from: session, kind: "index", rev: rev, middle: { out in
            out.appendRaw(#","index":"#)
            out.appendInt(index)
        }, tail: { out in
            out.appendRaw(#","value":"#)
            out.appendRaw(element)
        })
    }

    /// The raw `value` of a list op; `null` is a valid element.
    private func requestedElement() throws(HeraldError) -> UnsafeRawBufferPointer {
        guard let element = scanner.raw(.value) else { throw HeraldError(.missingField, "missing field 'value'") }
        return element
    }

    private func requestedIndex() throws(HeraldError) -> Int {
        guard let index = try scanner.int(.index) else { throw HeraldError(.missingField, "missing field 'index'") }
        guard index >= 0 else { throw HeraldError(.range, "index must be 0 or more, got " + String(index)) }
        return index
    }

    /// The length of the channel's list (0 when unset).
    /// - Throws: `type` when the channel holds a value, not a list.
    private func listCount(_ name: [UInt8]) throws(HeraldError) -> Int {
        guard let state = store.state(of: name) else { return 0 }
        if state.value != nil {
            throw HeraldError(.type, "channel holds a value, not a list; 'set' an array to make it a list")
        }
        return state.list?.count ?? 0
    }
}

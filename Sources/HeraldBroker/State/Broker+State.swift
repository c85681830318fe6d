import HeraldWire

/// Retained values: `set`, `get`, `del`, `touch`, and the state event every change sends.
extension Broker {
    /// Dispatches the retained-state ops.
    func performStateOp(_ op: Op, for session: Session) throws(HeraldError) {
        try port.performStateOp(self, op, for: session)
    }

    /// Dispatches the retained-state ops on a node alone (`SingleNodePort`).
    func performStateOpLocally(_ op: Op, for session: Session) throws(HeraldError) {
        switch op {
        case .get: try getState(session)
        case .set: try setValue(session)
        case .del: try deleteState(session)
        case .touch: try touchState(session)
        case .append: try appendElement(session)
        case .assign: try assignElement(session)
        case .splice: try spliceList(session)
        default: throw HeraldError(.unknownOp, "op \"" + op.rawValue + "\" is not a state op")
        }
    }

    /// `get`: the channel's `rev` and value (`null` when unset).
    private func getState(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: false)
        let state = store.state(of: name)
        answer(session, .get) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","rev":"#)
            out.appendInt(state?.rev ?? 0)
            out.appendRaw(#","value":"#)
            if let state { state.appendContent(to: &out) } else { out.appendRaw("null") }
        }
    }

    /// `set`: replaces the value (an array replaces the whole list).
    private func setValue(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        guard let value = scanner.raw(.value) else { throw HeraldError(.missingField, "missing field 'value'") }
        guard try expectedRev(name, session) != nil else { return }
        let rev = store.nextRev(of: name)
        let position = try commit(.set(channel: name, rev: rev, value: Array(value)), by: session)
        emitStateEvent(on: name, from: session, kind: "set", rev: rev) { tail in
            tail.appendRaw(#","value":"#)
            tail.appendRaw(value)
        }
        acknowledgeRev(session, .set, rev: rev, position: position)
    }

    /// `del`: clears the value or list; the `rev` rises and stays in a tombstone until the
    /// tombstone sweep collects it (`Broker+Tombstones.swift`).
    private func deleteState(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        guard let rev = try expectedRev(name, session) else { return }
        guard store.state(of: name)?.hasContent == true else {
            // Nothing to clear: no change, no event, no new rev.
            acknowledgeRev(session, .del, rev: rev, position: 0)
            return
        }
        let position = try commit(.delete(channel: name, rev: rev + 1), by: session)
        emitStateEvent(on: name, from: session, kind: "del", rev: rev + 1) { _ in }
        noteTombstone(name, rev: rev + 1)
        acknowledgeRev(session, .del, rev: rev + 1, position: position)
    }

    /// `touch`: re-sends the current value to subscribers without changing it.
    private func touchState(_ session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: true, for: session)
        guard let state = store.state(of: name), state.hasContent else {
            throw HeraldError(.notFound, "channel holds no value or list to touch")
        }
        emitStateEvent(on: name, from: session, kind: "touch", rev: state.rev) { tail in
            tail.appendRaw(#","value":"#)
            state.appendContent(to: &tail)
        }
        acknowledgeRev(session, .touch, rev: state.rev, position: 0)
    }

    /// The concrete channel a state op names.
    /// - Parameter mutating: whether the op changes state (then `$…` names are forbidden).
    func stateChannel(mutating: Bool, for session: Session? = nil) throws(HeraldError) -> [UInt8] {
        guard scanner.isPresent(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        let name = try scanner.withString(.ch) { bytes throws(HeraldError) -> [UInt8] in
            if mutating && ChannelName.isReserved(bytes) {
                throw HeraldError(.forbidden, "channels starting with '$' are reserved for the daemon")
            }
            try ChannelName.validateConcrete(bytes)
            return Array(bytes)
        }
        guard let name else { throw HeraldError(.missingField, "missing field 'ch'") }
        if mutating {
            try admitChannel(named: name)
            if let session { try admitUserChannel(named: name, for: session) }
        }
        return name
    }

    /// The channel's current `rev` (0 without state), after checking `if_rev` against it. A
    /// change takes `store.nextRev(of:)`, which is this plus one for a channel with state.
    /// - Returns: the rev, or nil when `if_rev` did not match (a `conflict` was queued).
    func expectedRev(_ name: [UInt8], _ session: Session) throws(HeraldError) -> Int? {
        let rev = store.rev(of: name)
        guard let wanted = try scanner.int(.ifRev) else { return rev }
        guard wanted >= 0 else { throw HeraldError(.badField, "field 'if_rev' must be 0 or more") }
        guard wanted != rev else { return rev }
        write(session) { out in
            out.appendRaw(#"{"error":"conflict","message":"#)
            out.appendJSONString("if_rev " + String(wanted) + " does not match the channel's rev " + String(rev))
            if let op = current.opRaw {
                out.appendRaw(#","op":"#)
                out.appendRaw(op)
            }
            appendRID(&out)
            out.appendRaw(#","rev":"#)
            out.appendInt(rev)
            out.appendRaw("}\n")
        }
        return nil
    }

    /// Queues `{"ok":OP,"rev":R}`, held behind the record at `position` when journaling.
    func acknowledgeRev(_ session: Session, _ op: Op, rev: Int, position: Int, index: Int? = nil) {
        acknowledge(session, op, position: position) { out in
            out.appendRaw(#","rev":"#)
            out.appendInt(rev)
            if let index {
                out.appendRaw(#","index":"#)
                out.appendInt(index)
            }
        }
    }

    /// Gives a state change the channel's next `seq`, stores it in history and fans it out.
    ///
    /// The frame is `{"event":CH,"sub":NAME,"seq":S,"from":C,"kind":K,"rev":R` + `middle`
    /// fields + per-subscriber fields + `tail` (the `value` or `insert`, last) + `}`.
    func emitStateEvent(
        on name: [UInt8], from session: Session, kind: StaticString, rev: Int,
        middle: (inout [UInt8]) -> Void = { _ in }, tail: (inout [UInt8]) -> Void
    ) {
        let channel = channel(named: name)
        charge(channel, to: session)
        channel.seq += 1
        var fields: [UInt8] = []
        fields.appendRaw(#","kind":""#)
        fields.appendRaw(kind)
        fields.appendRaw(#"","rev":"#)
        fields.appendInt(rev)
        middle(&fields)
        var value: [UInt8] = []
        tail(&value)
        buildSharedParts(seq: channel.seq, from: session, data: nil, middle: fields)
        // `data: nil` ended the frame with "}\n"; the value goes before it.
        eventShared.drop(last: 2)
        eventShared.append(value)
        eventShared.append("}\n")
        recordHistory(on: channel, from: session)
        _ = fanOut(on: channel, from: session)
    }
}

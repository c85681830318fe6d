import HeraldWire

/// `handlers {ch}` (issue 37, for the console): the signal handlers a signal on `ch` is
/// offered to at its own level, in the order they would be asked, as global ids
/// (`cN/NAME`). Admins only (without auth, every connection, as with `clients`). In cluster
/// mode every node's handlers, from the cluster's handler table this node mirrors, so the
/// answer costs no round trip. The levels a `link` leads to are not followed: the console
/// shows the link, and each level can be asked on its own.
extension Broker {
    /// `handlers {ch}`: `{"ok":"handlers","ch":CH,"handlers":[GLOBAL_ID…]}`.
    func answerHandlers(_ session: Session) throws(HeraldError) {
        guard let name = try scanner.string(.ch) else { throw HeraldError(.missingField, "missing field 'ch'") }
        try ChannelName.validateConcrete(name)
        let handlers = port.signalCandidates(self, matching: name).map { candidate -> [UInt8] in
            switch candidate {
            case .local(let subscription): return subscription.globalID
            case .remote(let handler): return handler.globalID
            }
        }
        answer(session, .handlers) { out in
            out.appendRaw(#","ch":"#)
            out.appendJSONString(name)
            out.appendRaw(#","handlers":["#)
            for (position, id) in handlers.enumerated() {
                if position > 0 { out.append(UInt8(ascii: ",")) }
                out.appendJSONString(id)
            }
            out.append(UInt8(ascii: "]"))
        }
    }
}

import HeraldWire

extension Broker {
    /// Handles one request line from a session: scan, dispatch, answer.
    ///
    /// Every failure becomes an error frame with `op` and `rid` echoed; a run of
    /// `maxErrors` malformed frames closes the connection after `too_many_errors`.
    /// - Parameters:
    ///   - line: one line without its `\n`; only read during the call.
    ///   - session: the connection it came from.
    ///   - now: the monotonic clock in ms.
    public func handleLine(_ line: UnsafeRawBufferPointer, from session: Session, now: Int) {
        guard !session.closeAfterFlush else { return }
        stats.msgsIn += 1
        lastNow = now
        chargeRate(line: line.count, of: session, now: now)
        current = RequestContext()
        defer { current = RequestContext() }
        do throws(HeraldError) {
            try scanner.scan(line)
            if scanner[.op]?.kind == .string { current.opRaw = scanner.raw(.op) }
            current.ridRaw = try requestID()
            // A canonical pub line was recognised by its spelled-out prefix: no lookup needed.
            let op = scanner.isCanonicalPub ? Op.pub : try requestedOp()
            try perform(op, for: session, now: now)
            session.errorRun = 0
        } catch {
            if !current.parkedForLease { fail(session, error, now: now) }
        }
        flushSystemEvents()
    }

    /// Answers a line that passed `max_line`; the server discards the rest of it.
    /// - Parameter length: how many bytes of it were seen.
    public func lineTooLong(from session: Session, length: Int, now: Int) {
        stats.msgsIn += 1
        var message = "line longer than max_line ("
        message += String(lineLimit(for: session))
        message += " bytes); discarded up to the next newline"
        fail(session, HeraldError(.lineTooLong, message), now: now)
        flushSystemEvents()
    }

    private func requestID() throws(HeraldError) -> UnsafeRawBufferPointer? {
        guard let rid = scanner[.rid] else { return nil }
        switch rid.kind {
        case .object, .array:
            throw HeraldError(.badField, "field 'rid' must be a JSON scalar (string, number, boolean or null)")
        default:
            return scanner.raw(.rid)
        }
    }

    func requestedOp() throws(HeraldError) -> Op {
        guard let value = scanner[.op] else { throw HeraldError(.missingField, "missing field 'op'") }
        guard value.kind == .string else {
            throw HeraldError(.badField, "field 'op' must be a string, got " + value.kind.name)
        }
        let op = try scanner.withString(.op) { bytes throws(HeraldError) in Op(bytes: bytes) }
        guard let op = op ?? nil else {
            let name = (try? scanner.string(.op)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) } ?? ""
            throw HeraldError(.unknownOp, "unknown op \"" + name + "\"")
        }
        return op
    }

    private func perform(_ op: Op, for session: Session, now: Int) throws(HeraldError) {
        try authorize(op, for: session)
        switch op {
        case .hello: try hello(session, now: now)
        case .ping: answerPing(session)
        case .pong: if current.ridRaw != nil { answer(session, op) { _ in } }
        case .sub: try subscribe(session)
        case .unsub: try unsubscribe(session)
        case .pub: try publish(from: session)
        case .stats: answerStats(session, now: now)
        case .channels: try answerChannels(session)
        case .subs: answerSubs(session)
        case .lock, .unlock: try lockOrUnlock(session, op)
        case .locks: try answerLocks(session)
        case .declare: try declare(session)
        case .remove: try remove(session)
        case .req: try request(from: session, now: now)
        case .reply: try reply(from: session)
        case .signal: try signal(from: session, now: now)
        case .handled: try handled(from: session, now: now)
        case .callback: try callback(from: session)
        case .cancel: try cancel(from: session)
        case .presence: try answerPresence(session)
        case .clients: try answerClients(session)
        case .kick: try kick(from: session)
        case .handlers: try answerHandlers(session)
        case .link: try link(session)
        case .unlink: try unlink(session)
        case .set, .get, .del, .touch, .append, .assign, .splice: try performStateOp(op, for: session)
        }
    }

    private func hello(_ session: Session, now: Int) throws(HeraldError) {
        guard try authenticate(session, now: now) == .proceed else { return }
        try greet(session, scanGreeting())
    }

    private func answerPing(_ session: Session) {
        let clock = wallClock()
        write(session) { out in
            out.appendRaw(#"{"pong":"#)
            out.appendInt(clock)
            appendRID(&out)
            out.appendRaw("}\n")
        }
    }

    /// Queues `{"ok":"OP","rid":…` + `fields` + `}`.
    func answer(_ session: Session, _ op: Op, _ fields: (inout [UInt8]) -> Void) {
        write(session) { out in
            out.appendRaw(#"{"ok":"#)
            out.appendJSONString(op.rawValue)
            appendRID(&out)
            fields(&out)
            out.appendRaw("}\n")
        }
    }

    func appendRID(_ out: inout [UInt8]) {
        guard let rid = current.ridRaw else { return }
        out.appendRaw(#","rid":"#)
        out.appendRaw(rid)
    }

    /// Appends `,"rid":R` for a `rid` kept from an earlier request (a reply or a signal's
    /// result arrives after the request that carried it was handled).
    func appendStoredRid(_ rid: [UInt8]?, to out: inout [UInt8]) {
        guard let rid else { return }
        out.appendRaw(#","rid":"#)
        out.append(contentsOf: rid)
    }

    /// Queues an error frame and applies the `max_errors` rule.
    func fail(_ session: Session, _ error: HeraldError, now: Int) {
        port.answerInTurn(self, session) { out in
            out.appendRaw(#"{"error":"#)
            out.appendJSONString(error.code.rawValue)
            out.appendRaw(#","message":"#)
            out.appendJSONString(error.message)
            if let op = current.opRaw {
                out.appendRaw(#","op":"#)
                out.appendRaw(op)
            }
            appendRID(&out)
            out.appendRaw("}\n")
        }
        guard error.code.isProtocolError else {
            session.errorRun = 0
            return
        }
        session.errorRun += 1
        guard session.errorRun >= config.maxErrors else { return }
        write(session) { out in
            out.appendRaw(#"{"error":"too_many_errors","message":"#)
            out.appendJSONString(String(config.maxErrors) + " malformed frames in a row; closing")
            out.appendRaw("}\n")
        }
        close(session, now: now)
    }
}

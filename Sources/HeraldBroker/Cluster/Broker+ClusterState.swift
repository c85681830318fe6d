import HeraldWire

/// Cluster mode's retained values and lists (docs/cluster.md, "Retained values and lists"):
/// the state lives in Redis and each op is one `state` script call, atomic there, so `rev`
/// and `if_rev` are exact whichever node the writers are on. The broker checks what it can
/// alone (fields, permissions, `max_value_bytes` of what was sent), parks the session (its
/// further lines wait, so answers keep the order of requests), and answers when the
/// script returned. The change event comes back through Redis like a `pub`.
extension Broker {
    /// A state op in cluster mode: checked here, run by the `state` script.
    func clusterStateOp(_ op: Op, _ cluster: ClusterState, for session: Session) throws(HeraldError) {
        let name = try stateChannel(mutating: op != .get, for: session)
        var value: [UInt8] = []
        var index = 0
        var remove = 0
        var isList = false
        var elements: [[UInt8]] = []
        switch op {
        case .set:
            guard let raw = scanner.raw(.value) else { throw HeraldError(.missingField, "missing field 'value'") }
            try checkValueSize(raw.count)
            value = Array(raw)
            if scanner[.value]?.kind == .array {
                isList = true
                elements = JSONArrayElements.elements(of: raw) ?? []
            }
        case .append, .assign:
            guard let raw = scanner.raw(.value) else { throw HeraldError(.missingField, "missing field 'value'") }
            try checkValueSize(raw.count)
            value = Array(raw)
            if op == .assign { index = try clusterIndex() }
        case .splice:
            index = try clusterIndex()
            remove = try scanner.int(.remove) ?? 0
            guard remove >= 0 else { throw HeraldError(.badField, "field 'remove' must be 0 or more") }
            value = Array("[]".utf8)
            if let kind = scanner[.insert]?.kind, kind != .null {
                guard kind == .array, let raw = scanner.raw(.insert), let parsed = JSONArrayElements.elements(of: raw) else {
                    throw HeraldError(.badField, "field 'insert' must be an array")
                }
                try checkValueSize(raw.count)
                value = Array(raw)
                elements = parsed
            }
            isList = true
        default:
            break
        }
        var ifRev: [UInt8] = []
        if op != .get && op != .touch, let wanted = try scanner.int(.ifRev) {
            guard wanted >= 0 else { throw HeraldError(.badField, "field 'if_rev' must be 0 or more") }
            ifRev.appendInt(wanted)
        }
        park(session, on: cluster, .state, channel: op == .get ? nil : name,
             arguments: Self.stateArguments(op, name: name, from: session, value: value, ifRev: ifRev, isList: isList,
                                            index: index, remove: remove, elements: elements), op: op)
    }

    /// The `state` script's ARGV after its targets (`ClusterStateScripts.state`): op (`setl`
    /// for a `set` of an array), channel, from, value, if_rev, `LIMIT USER`, index, remove,
    /// elements, with trailing ones a call does not need left out (each costs the script
    /// about 1,500 instructions inside Redis); the limits are in the script.
    static func stateArguments(_ op: Op, name: [UInt8], from session: Session, value: [UInt8], ifRev: [UInt8], isList: Bool,
                               index: Int, remove: Int, elements: [[UInt8]]) -> [[UInt8]] {
        let opName = op == .set && isList ? "setl" : op.rawValue
        guard op != .get else { return [Array(opName.utf8), name] }
        var user: [UInt8] = []
        if let account = session.user {
            user.appendInt(account.limits.retainedBytes)
            user.append(UInt8(ascii: " "))
            user += Array(account.name.utf8)
        }
        var arguments: [[UInt8]] = [Array(opName.utf8), name, Array(String(session.id).utf8), value, ifRev, user]
        switch op {
        case .assign:
            arguments.append(Array(String(index).utf8))
        case .splice:
            arguments += [Array(String(index).utf8), Array(String(remove).utf8)]
        default:
            break
        }
        if op == .set && isList {
            arguments += elements
        } else if op == .splice {
            arguments += elements
        } else {
            while arguments.count > 4, arguments.last?.isEmpty == true { arguments.removeLast() }
        }
        return arguments
    }

    /// Parks `session` behind a script call for the request being handled.
    func park(_ session: Session, on cluster: ClusterState, _ script: ClusterState.ScriptCall.Script,
              channel: [UInt8]?, arguments: [[UInt8]], op: Op, subscription: Subscription? = nil,
              catchUp: CatchUp? = nil, claiming name: [UInt8]? = nil, parent: [UInt8]? = nil,
              pageQuestion: ClusterState.PageQuestion? = nil) {
        var waiting = ClusterState.Waiting(session: session, op: op, opRaw: current.opRaw.map { Array($0) },
                                           rid: current.ridRaw.map { Array($0) }, subscription: subscription,
                                           catchUp: catchUp, channel: name, parent: parent)
        waiting.pageQuestion = pageQuestion
        waiting.exclusive = script != .state
        _ = cluster.call(script, channel: channel, arguments: arguments, waiting: waiting)
        session.clusterCalls += 1
        if waiting.exclusive { session.exclusiveClusterCalls += 1 }
    }

    /// The most state ops one connection may have waiting for Redis at once.
    static let maxPipelinedStateOps = 256

    /// Whether `session`, whose requests wait for Redis, may go on with the line at the start
    /// of `rest` now: it is another state op, and everything in flight is a state op too, so
    /// the answers come back in order through the one command link (an error this node
    /// answers at once waits its turn: `answerInTurn`). Otherwise its lines wait for the
    /// answers, as every request behind a catch-up or a `hello` does.
    ///
    /// One set per round trip was all a connection could do through the cluster (issue 29:
    /// 5,500 acknowledged `set`s/s with 256 in flight).
    public func mayPipeline(_ rest: UnsafeRawBufferPointer, for session: Session) -> Bool {
        guard let cluster, cluster.pipelinesStateOps, session.pendingVerification == nil, session.clusterCalls > 0,
              session.exclusiveClusterCalls == 0, session.clusterCalls < Self.maxPipelinedStateOps,
              let end = rest.firstIndex(of: UInt8(ascii: "\n")) else { return false }
        do {
            try scanner.scan(UnsafeRawBufferPointer(rebasing: rest[..<end]))
            switch try requestedOp() {
            case .set, .append, .assign, .splice, .del, .touch, .get: return true
            default: return false
            }
        } catch {
            return false
        }
    }

    /// Whether `session` may read on while its requests wait for Redis: all of them are
    /// state ops and there is room for more (`mayPipeline` judges each line).
    public func mayPipelineMore(_ session: Session) -> Bool {
        guard let cluster, cluster.pipelinesStateOps else { return false }
        return session.pendingVerification == nil && session.exclusiveClusterCalls == 0
            && session.clusterCalls < Self.maxPipelinedStateOps
    }

    /// Writes the answer `build` makes now, or, while the session's earlier requests still
    /// wait for Redis, when their answers are out (an `answer` call in their order).
    func answerInTurn(_ session: Session, _ build: (inout [UInt8]) -> Void) {
        guard let cluster, session.clusterCalls > 0, !session.closeAfterFlush else { return write(session, build) }
        var bytes: [UInt8] = []
        build(&bytes)
        var waiting = ClusterState.Waiting(session: session, op: .ping, opRaw: nil, rid: nil, subscription: nil, catchUp: nil)
        waiting.answer = bytes
        _ = cluster.call(.answer, channel: nil, arguments: [], waiting: waiting)
        session.clusterCalls += 1
    }

    /// A script call came back: answers the parked request.
    /// - Returns: the session to resume (its held lines are framed again), or nil when it
    ///   is gone.
    ///
    /// Answers go out in the order the session asked: an answer that comes before an earlier
    /// call's (the calls went to different Redis shards) waits for it.
    public func clusterCallAnswered(token: Int, result: ClusterValue) -> Session? {
        guard let cluster, let session = cluster.waiting[token]?.session else { return nil }
        guard session.openClusterTokens.first == token else {
            session.earlyClusterAnswers[token] = result
            return nil
        }
        var resumed = answerCall(token: token, result: result, cluster)
        session.openClusterTokens.removeFirst()
        while let next = session.openClusterTokens.first, let early = session.earlyClusterAnswers.removeValue(forKey: next) {
            resumed = answerCall(token: next, result: early, cluster) ?? resumed
            session.openClusterTokens.removeFirst()
        }
        return resumed
    }

    /// Answers one parked request (`clusterCallAnswered`, in the session's order).
    private func answerCall(token: Int, result: ClusterValue, _ cluster: ClusterState) -> Session? {
        guard let waiting = cluster.waiting.removeValue(forKey: token) else { return nil }
        let session = waiting.session
        session.clusterCalls -= 1
        if waiting.exclusive { session.exclusiveClusterCalls -= 1 }
        if let answer = waiting.answer {
            if sessions[session.id] === session { write(session) { $0 += answer } }
            return session
        }
        if let key = waiting.lease {
            leaseAnswered(waiting, key: key, result: result, cluster)
            flushSystemEvents()
            return sessions[session.id] === session ? session : nil
        }
        let buffered = waiting.subscription.map { cluster.endCatchUp($0) } ?? []
        guard sessions[session.id] === session, !session.closeAfterFlush else {
            if let name = waiting.channel {
                if waiting.op == .declare { abandonClaim(of: name, by: session.id, result: result, cluster) }
                if waiting.op == .link { abandonLink(of: name, by: session.id, result: result, cluster) }
            }
            return nil
        }
        withStoredRequest(waiting) {
            if let name = waiting.channel, waiting.op == .declare {
                finishDeclare(of: name, by: session, result: result)
            } else if let name = waiting.channel, waiting.op == .link || waiting.op == .unlink {
                finishLink(waiting.op, of: name, parent: waiting.parent, by: session, result: result)
            } else if waiting.op == .clients || waiting.op == .kick {
                finishAdminQuery(waiting, for: session, result: result)
            } else if let name = waiting.channel, waiting.op == .presence {
                finishPresenceQuery(waiting, of: name, for: session, result: result)
            } else if let name = waiting.channel, waiting.op == .locks || waiting.op == .lock || waiting.op == .unlock {
                finishLocksQuery(waiting, of: name, for: session, result: result)
            } else if let catchUp = waiting.catchUp, let subscription = waiting.subscription {
                finishCatchUp(catchUp, for: subscription, buffered: buffered, result: result)
            } else {
                answerState(waiting.op, session, result: result)
            }
        }
        flushSystemEvents()
        return session
    }

    /// Runs `body` with `current` pointing at the stored `op` and `rid`, so the usual
    /// answer and error writers echo them.
    private func withStoredRequest(_ waiting: ClusterState.Waiting, _ body: () -> Void) {
        let op = waiting.opRaw ?? []
        let rid = waiting.rid ?? []
        op.withUnsafeBytes { opBytes in
            rid.withUnsafeBytes { ridBytes in
                current = RequestContext()
                current.opRaw = waiting.opRaw == nil ? nil : opBytes
                current.ridRaw = waiting.rid == nil ? nil : ridBytes
                body()
                current = RequestContext()
            }
        }
    }

    /// The `state` script's answer: `{0, rev, seq[, index]}`, `{0, rev, value, ch}` for `get`,
    /// or `{1, code, message, rev}`.
    private func answerState(_ op: Op, _ session: Session, result: ClusterValue) {
        guard let parts = result.elements, parts.count >= 3, let status = parts[0].int else {
            return failUnavailable(session, result)
        }
        if status != 0 {
            let code = parts[1].bytes.map { String(decoding: $0, as: UTF8.self) } ?? "internal"
            let message = parts[2].bytes.map { String(decoding: $0, as: UTF8.self) } ?? ""
            return writeError(session, code: code, message: message, rev: parts.count > 3 ? parts[3].int : nil)
        }
        let rev = parts[1].int ?? 0
        if op == .get {
            let name = parts.count > 3 ? parts[3].bytes ?? [] : []
            answer(session, .get) { out in
                if !name.isEmpty {
                    out.appendRaw(#","ch":"#)
                    out.appendJSONString(name)
                }
                out.appendRaw(#","rev":"#)
                out.appendInt(rev)
                out.appendRaw(#","value":"#)
                out.append(contentsOf: parts[2].bytes ?? Array("null".utf8))
            }
            return
        }
        let index = op == .append && parts.count > 3 ? parts[3].int : nil
        acknowledgeRev(session, op, rev: rev, position: 0, index: index)
    }

    /// Redis could not run the script (gone, or an error): `unavailable`.
    func failUnavailable(_ session: Session, _ result: ClusterValue) {
        var reason = "unexpected reply from Redis"
        if case .failure(let text) = result { reason = text }
        writeError(session, code: "unavailable", message: "cluster: " + reason, rev: nil)
    }

    /// `{"error":CODE,"message":M,"op":…,"rid":…[,"rev":R]}`.
    func writeError(_ session: Session, code: String, message: String, rev: Int?) {
        write(session) { out in
            out.appendRaw(#"{"error":"#)
            out.appendJSONString(Array(code.utf8))
            out.appendRaw(#","message":"#)
            out.appendJSONString(Array(message.utf8))
            if let op = current.opRaw {
                out.appendRaw(#","op":"#)
                out.appendRaw(op)
            }
            appendRID(&out)
            if let rev {
                out.appendRaw(#","rev":"#)
                out.appendInt(rev)
            }
            out.appendRaw("}\n")
        }
    }

    private func checkValueSize(_ count: Int) throws(HeraldError) {
        let limit = config.stateLimits.maxValueBytes
        guard count > limit else { return }
        throw HeraldError(.limit, "value would be " + String(count) + " bytes, above max_value_bytes (" + String(limit) + ")")
    }

    private func clusterIndex() throws(HeraldError) -> Int {
        guard let index = try scanner.int(.index) else { throw HeraldError(.missingField, "missing field 'index'") }
        guard index >= 0 else { throw HeraldError(.range, "index must be 0 or more, got " + String(index)) }
        return index
    }
}

import Foundation
import HeraldTestSupport
import Testing

/// Signals across a real cluster (docs/cluster.md "Signals and links"; docs/protocol.md
/// "Signals" and "Cancelling a request or a signal"): three nodes on one Redis, handlers,
/// senders and lockers on different nodes. A signal is offered to the handlers of every
/// node one at a time, in the cluster's subscription order, level by level, whatever node
/// it was sent on; callbacks, per-handler timeouts, a handler leaving or its node dying,
/// the sender leaving or cancelling, `unsub`, `max` and locks behave as on one node.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterSignalServingTests {
    private func cluster(_ redis: TestRedis) throws -> [DaemonProcess] { try ClusterTestNodes.three(redis) }

    /// A connection on `nodes[index]` with one handler subscription (`handle:true`) on
    /// `pattern` named `sub`, its `ok` awaited (so it holds its place in the cluster's order).
    private func handler(_ nodes: [DaemonProcess], _ index: Int, _ pattern: String, sub: String,
                         extra: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> Peer {
        let peer = try Peer(nodes[index], node: "n\(index)", sub: sub)
        let answer = peer.request(#"{"op":"sub","ch":"\#(pattern)","sub":"\#(sub)","handle":true\#(extra),"rid":"sub"}"#, rid: "sub")
        #expect(answer?["ok"] as? String == "sub", "\(peer): sub on \(pattern) → \(answer.map { "\($0)" } ?? "no answer")",
                sourceLocation: sourceLocation)
        return peer
    }

    /// Every node's log, for a failure's message.
    private func logs(of nodes: [DaemonProcess]) -> String {
        nodes.enumerated().map { "n\($0.offset):\n" + $0.element.log.joined(separator: "\n") }.joined(separator: "\n--\n")
    }

    /// A plain connection (a sender or a locker) on `nodes[index]`.
    private func peer(_ nodes: [DaemonProcess], _ index: Int) throws -> Peer {
        try Peer(nodes[index], node: "n\(index)")
    }

    /// `{"op":"signal",…}` with a string `rid`.
    private func signalLine(_ ch: String, rid: String, timeoutMs: Int, data: String = "1") -> String {
        #"{"op":"signal","ch":"\#(ch)","data":\#(data),"timeout_ms":\#(timeoutMs),"rid":"\#(rid)"}"#
    }

    // MARK: 1. Order

    @Test func handlersOnEveryNodeAreOfferedOneAtATimeInClusterSubscriptionOrder() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        // Subscribed on n2, then n0, then n1: the cluster's order is neither the nodes' order
        // nor "the sender's node first".
        let handlers = [try handler(nodes, 2, "app.screen", sub: "first"),
                        try handler(nodes, 0, "app.screen", sub: "second"),
                        try handler(nodes, 1, "app.screen", sub: "third")]
        for (round, senderIndex) in [1, 0, 2].enumerated() {
            let sender = try peer(nodes, senderIndex)
            let rid = "s\(round)"
            sender.send(#"{"op":"signal","ch":"app.screen","data":{"round":\#(round)},"tag":"t\#(round)","timeout_ms":3000,"rid":"\#(rid)"}"#)
            var signalID: String?
            for (position, handler) in handlers.enumerated() {
                let offer = try #require(handler.offer(),
                                         "round \(round), sender on n\(senderIndex): \(handler) was never offered the signal (\(position) handler(s) before it passed); it had \(handler.backlog)")
                #expect(offer["signal"] as? String == "app.screen" && offer["origin"] as? String == "app.screen"
                        && offer["sub"] as? String == handler.sub && offer["from"] as? String == sender.id
                        && offer["tag"] as? String == "t\(round)" && (offer["data"] as? [String: Int])?["round"] == round,
                        "round \(round): \(handler)'s offer does not carry the signal as sent by \(sender.id): \(offer)")
                let id = offer["id"] as? String ?? ""
                if let signalID {
                    #expect(id == signalID, "round \(round): one signal has one id on every node: \(id) vs \(signalID)")
                } else {
                    #expect(!id.isEmpty, "round \(round): an offer without an id: \(offer)")
                    signalID = id
                }
                for later in handlers[(position + 1)...] {
                    let early = later.arrivals(within: 0.3)
                    #expect(early.isEmpty, "round \(round): \(later) got \(early) while \(handler) still held the offer")
                }
                let early = sender.arrivals(within: 0.05)
                #expect(early.isEmpty, "round \(round): the sender got \(early) before the route ended")
                let last = position == handlers.count - 1
                let verdict = handler.handled(id, last ? "stop" : "pass", rid: "v\(round)")
                #expect(verdict?["ok"] as? String == "handled", "round \(round): \(handler)'s handled → \(String(describing: verdict))")
            }
            let result = try #require(sender.result(rid: rid), "round \(round): no result for the sender on n\(senderIndex); it had \(sender.backlog)")
            #expect(result["ok"] as? String == "signal" && result["id"] as? String == signalID, "round \(round): \(result)")
            #expect(result["handled_by"] as? String == handlers[2].globalID && result["at"] as? String == "app.screen",
                    "round \(round): handled by the third handler (\(handlers[2].globalID)): \(result)")
            #expect(result["hops"] as? Int == 3 && (result["timeouts"] as? [String]) == [], "round \(round): three hops, no timeout: \(result)")
            for handler in handlers {
                let extra = handler.arrivals(within: 0.05)
                #expect(extra.isEmpty, "round \(round): \(handler) was offered the signal twice: \(extra)")
            }
        }
    }

    /// A Redis that comes back without its data lost the handler registry: each node sets
    /// its handlers again with the scores they had, so the cluster's order is the same.
    @Test func theHandlerOrderSurvivesARedisThatComesBackEmpty() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let handlers = [try handler(nodes, 2, "r.x", sub: "first"), try handler(nodes, 0, "r.x", sub: "second"),
                        try handler(nodes, 1, "r.x", sub: "third")]
        redis.stop()
        try FileManager.default.removeItem(at: redis.directory.appendingPathComponent("appendonlydir"))
        try redis.restart()
        let sender = try peer(nodes, 1)
        // Probes until a signal reaches all three (every node registered its handlers again).
        var reached = 0
        for attempt in 0..<100 where reached < 3 {
            let rid = "probe\(attempt)"
            sender.send(signalLine("r.x", rid: rid, timeoutMs: 3000))
            reached = 0
            for handler in handlers {
                guard let offer = handler.offer(within: 0.3), let id = offer["id"] as? String else { continue }
                reached += 1
                _ = handler.handled(id, "pass", rid: "h\(attempt)")
            }
            _ = sender.result(rid: rid)
            if reached < 3 { usleep(200_000) }
        }
        #expect(reached == 3, "every node registered its handlers again; node logs:\n\(logs(of: nodes))")
        // One outage, one way back: a node that got ready twice (two snapshot reads at once)
        // let the later read, older than the announcements it had applied, wipe handlers the
        // other nodes had just registered again.
        for (index, node) in nodes.enumerated() {
            let again = node.log.filter { $0.contains("registered again after Redis came back") }.count
            #expect(again == 1, "n\(index) registered again \(again) times after one outage; node logs:\n\(logs(of: nodes))")
        }
        sender.send(signalLine("r.x", rid: "order", timeoutMs: 3000))
        for (position, handler) in handlers.enumerated() {
            let offer = try #require(handler.offer(), "\(handler) (position \(position)) was not offered; it had \(handler.backlog)")
            for later in handlers[(position + 1)...] {
                #expect(later.arrivals(within: 0.2).isEmpty, "\(later) was offered before \(handler): the order changed")
            }
            _ = handler.handled(offer["id"] as? String ?? "", "pass", rid: "o\(position)")
        }
        let result = sender.result(rid: "order")
        #expect(result?["hops"] as? Int == 3, "\(String(describing: result))")
    }

    // MARK: 2. Levels

    @Test func aSignalBubblesLevelByLevelThroughHandlersOnOtherNodes() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let screen = try handler(nodes, 0, "app.screen", sub: "screen")
        let app = try handler(nodes, 2, "app", sub: "app")
        let sender = try peer(nodes, 1)
        for (round, action) in ["stop", "pass"].enumerated() {
            let rid = "s\(round)"
            sender.send(signalLine("app.screen.detail", rid: rid, timeoutMs: 3000))
            #expect(app.arrivals(within: 0.2).isEmpty, "round \(round): the level app was offered before app.screen")
            let first = try #require(screen.offer(), "round \(round): \(screen) was never offered level app.screen; it had \(screen.backlog)")
            #expect(first["signal"] as? String == "app.screen" && first["origin"] as? String == "app.screen.detail",
                    "round \(round): the offer names its level and the origin: \(first)")
            let id = first["id"] as? String ?? ""
            _ = screen.handled(id, "pass", rid: "p\(round)")
            let second = try #require(app.offer(), "round \(round): \(app) was never offered level app after the pass; it had \(app.backlog)")
            #expect(second["signal"] as? String == "app" && second["origin"] as? String == "app.screen.detail"
                    && second["id"] as? String == id, "round \(round): \(second)")
            _ = app.handled(id, action, rid: "a\(round)")
            let result = try #require(sender.result(rid: rid), "round \(round): no result; the sender had \(sender.backlog)")
            #expect(result["hops"] as? Int == 2 && (result["timeouts"] as? [String]) == [], "round \(round): \(result)")
            if action == "stop" {
                #expect(result["handled_by"] as? String == app.globalID && result["at"] as? String == "app",
                        "stopped at level app by \(app.globalID): \(result)")
            } else {
                #expect(result["handled_by"] is NSNull && result["at"] is NSNull, "nobody stopped it: handled_by and at are null: \(result)")
            }
        }
        let nobody = try #require(sender.request(signalLine("nobody.home", rid: "none", timeoutMs: 3000), rid: "none"),
                                  "no result for a signal no node handles")
        #expect(nobody["handled_by"] is NSNull && nobody["at"] is NSNull && nobody["hops"] as? Int == 0, "\(nobody)")
    }

    // MARK: 3. Callbacks

    @Test func callbacksFromRemoteHandlersReachTheSenderInOrderBeforeItsResult() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let early = try handler(nodes, 1, "jobs.run", sub: "early")
        let worker = try handler(nodes, 2, "jobs.run", sub: "worker")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("jobs.run", rid: "s1", timeoutMs: 5000))
        let first = try #require(early.offer(), "\(early) was never offered the signal sent on n0; it had \(early.backlog)")
        let id = first["id"] as? String ?? ""
        _ = early.handled(id, "pass", rid: "pass")
        _ = try #require(worker.offer(), "\(worker) was never offered the signal after \(early) passed; it had \(worker.backlog)")
        // A handler that passed may still call back while the signal is under way elsewhere.
        let earlyAnswer = early.request(#"{"op":"callback","id":"\#(id)","data":"early","rid":"cb"}"#, rid: "cb")
        #expect(earlyAnswer?["ok"] as? String == "callback",
                "a callback from a handler that passed, while \(worker) holds the offer: \(String(describing: earlyAnswer))")
        for i in 0..<50 { worker.send(#"{"op":"callback","id":"\#(id)","data":\#(i)}"#) }
        worker.send(#"{"op":"handled","id":"\#(id)","action":"stop"}"#)

        var fromWorker: [Int] = []
        var fromEarly: [String] = []
        var result: [String: Any]?
        while let frame = sender.frame() {
            guard frame["callback"] != nil else { result = frame; break }
            #expect(frame["callback"] as? String == id, "a callback for another signal: \(frame)")
            switch frame["from"] as? String {
            case worker.id: fromWorker.append(frame["data"] as? Int ?? -1)
            case early.id: fromEarly.append(frame["data"] as? String ?? "?")
            default: Issue.record("a callback from an unknown client: \(frame)")
            }
        }
        #expect(fromWorker == Array(0..<50), "the worker's 50 callbacks, in order, before the result: \(fromWorker)")
        #expect(fromEarly == ["early"], "the early handler's callback, before the result: \(fromEarly)")
        let ok = try #require(result, "no result after the callbacks")
        #expect(ok["ok"] as? String == "signal" && ok["rid"] as? String == "s1" && ok["handled_by"] as? String == worker.globalID
                && ok["hops"] as? Int == 2, "\(ok)")

        for handler in [worker, early] {
            #expect(eventuallyNotFound(handler, id), "\(handler): a callback after the signal finished is not_found")
        }
        let after = sender.arrivals(within: 0.3)
        #expect(after.isEmpty, "nothing reaches the sender after its result: \(after)")
    }

    // MARK: 4. Timeouts

    @Test func aSilentRemoteHandlerTimesOutAndTheNextHandlerIsOfferedAfterIt() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let mute = try handler(nodes, 1, "task", sub: "mute")
        let next = try handler(nodes, 2, "task", sub: "next")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("task", rid: "s1", timeoutMs: 300))
        let silent = try #require(mute.offer(), "\(mute) was never offered the signal sent on n0; it had \(mute.backlog)")
        let offeredAt = Date()
        let id = silent["id"] as? String ?? ""
        let offer = try #require(next.offer(within: 3), "\(next) was never offered the signal after \(mute) timed out; it had \(next.backlog)")
        let waited = Date().timeIntervalSince(offeredAt)
        #expect(waited > 0.2, "\(next) was offered \(waited) s after the silent handler: before its 300 ms ran out")
        #expect(offer["id"] as? String == id, "\(offer)")
        _ = next.handled(id, "stop", rid: "stop")
        let result = try #require(sender.result(rid: "s1"), "no result; the sender had \(sender.backlog)")
        #expect(result["timeouts"] as? [String] == [mute.globalID] && result["handled_by"] as? String == next.globalID
                && result["hops"] as? Int == 2, "the silent handler is listed in timeouts: \(result)")

        let late = mute.handled(id, "stop", rid: "late")
        #expect(late?["ok"] as? String == "handled", "a late handled from the timed-out remote handler is answered ok: \(String(describing: late))")
        let second = sender.arrivals(within: 0.5)
        #expect(second.isEmpty, "the late handled changed nothing for the sender: \(second)")
        #expect(next.arrivals(within: 0.05).isEmpty, "nobody is offered the signal again")
    }

    // MARK: 5. A handler leaving

    @Test func aRemoteHandlerClosingWhileHoldingTheOfferCountsAsPassAtOnce() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let leaving = try handler(nodes, 1, "door", sub: "leaving")
        let next = try handler(nodes, 2, "door", sub: "next")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("door", rid: "s1", timeoutMs: 20_000))
        let offer = try #require(leaving.offer(), "\(leaving) was never offered the signal sent on n0; it had \(leaving.backlog)")
        let id = offer["id"] as? String ?? ""
        leaving.client.closeNow()
        let closedAt = Date()
        _ = try #require(next.offer(within: 3), "\(next) was not offered within 3 s of \(leaving) closing (timeout_ms 20000); it had \(next.backlog)")
        _ = next.handled(id, "stop", rid: "stop")
        let result = try #require(sender.result(rid: "s1"), "no result; the sender had \(sender.backlog)")
        let waited = Date().timeIntervalSince(closedAt)
        #expect(waited < 3, "the result came \(waited) s after the handler closed")
        #expect(result["timeouts"] as? [String] == [leaving.globalID] && result["handled_by"] as? String == next.globalID
                && result["hops"] as? Int == 2, "the handler that left is listed in timeouts: \(result)")
    }

    // MARK: 6. A handler's node dying

    @Test func aHandlersNodeKilledWhileHoldingTheOfferCountsAsPassAndIsNotWaitedForAgain() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let doomed = try handler(nodes, 2, "alarm", sub: "doomed")
        let survivor = try handler(nodes, 1, "alarm", sub: "survivor")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("alarm", rid: "s1", timeoutMs: 30_000))
        let offer = try #require(doomed.offer(), "\(doomed) was never offered the signal sent on n0; it had \(doomed.backlog)")
        let id = offer["id"] as? String ?? ""
        nodes[2].signal(SIGKILL)
        let killedAt = Date()
        _ = try #require(survivor.offer(within: 6),
                         "\(survivor) was not offered within 6 s of the holder's node being killed (node_timeout_ms 1000, timeout_ms 30000); it had \(survivor.backlog)")
        _ = survivor.handled(id, "stop", rid: "stop")
        let result = try #require(sender.result(rid: "s1"), "no result; the sender had \(sender.backlog)")
        let waited = Date().timeIntervalSince(killedAt)
        #expect(waited < 5, "the result came \(waited) s after SIGKILL (node timeout 1 s)")
        #expect(result["timeouts"] as? [String] == [doomed.globalID] && result["handled_by"] as? String == survivor.globalID
                && result["hops"] as? Int == 2, "the dead node's handler is listed in timeouts: \(result)")

        let sentAt = Date()
        sender.send(signalLine("alarm", rid: "s2", timeoutMs: 30_000))
        let again = try #require(survivor.offer(within: 3), "a signal sent after the node was declared down was not offered to \(survivor) within 3 s")
        let delay = Date().timeIntervalSince(sentAt)
        #expect(delay < 1, "the next signal waited \(delay) s before reaching the survivor: it waited for the dead node's handler")
        _ = survivor.handled(again["id"] as? String ?? "", "stop", rid: "stop2")
        let second = try #require(sender.result(rid: "s2"), "no result for the second signal; the sender had \(sender.backlog)")
        #expect(second["hops"] as? Int == 1 && second["timeouts"] as? [String] == [] && second["handled_by"] as? String == survivor.globalID,
                "the dead node's handler is neither asked nor counted: \(second)")
    }

    // MARK: 7. The sender withdrawing or leaving

    @Test func cancelEndsTheSignalForTheRemoteHandlerHoldingItsOffer() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let holder = try handler(nodes, 1, "door", sub: "holder")
        let next = try handler(nodes, 2, "door", sub: "next")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("door", rid: "s7", timeoutMs: 20_000))
        let offer = try #require(holder.offer(), "\(holder) was never offered the signal sent on n0; it had \(holder.backlog)")
        let id = offer["id"] as? String ?? ""
        let cancel = sender.request(#"{"op":"cancel","of":"s7","rid":"c"}"#, rid: "c")
        #expect(cancel?["ok"] as? String == "cancel" && cancel?["count"] as? Int == 1,
                "the signal whose offer is on another node is withdrawn: \(String(describing: cancel))")
        try expectEndedForHolder(holder, id, next: next, sender: sender, what: "cancel")
    }

    @Test func aSenderLeavingEndsTheSignalForTheRemoteHandlerHoldingItsOffer() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let holder = try handler(nodes, 1, "door", sub: "holder")
        let next = try handler(nodes, 2, "door", sub: "next")
        let sender = try peer(nodes, 0)
        sender.send(signalLine("door", rid: "s1", timeoutMs: 20_000))
        let offer = try #require(holder.offer(), "\(holder) was never offered the signal sent on n0; it had \(holder.backlog)")
        let id = offer["id"] as? String ?? ""
        sender.client.closeNow()
        try expectEndedForHolder(holder, id, next: next, sender: nil, what: "the sender leaving")
        let watcher = try peer(nodes, 0)
        var signals: Int?
        let deadline = Date().addingTimeInterval(3)
        repeat {
            signals = watcher.request(#"{"op":"stats","rid":"st"}"#, rid: "st")?["signals"] as? Int
            if signals == 0 { break }
            Thread.sleep(forTimeInterval: 0.1)
        } while Date() < deadline
        #expect(signals == 0, "the sender's node keeps nothing of the signal: stats.signals \(String(describing: signals))")
    }

    /// After a signal ended by its sender (cancel or leaving): the remote handler holding its
    /// offer gets `not_found` for a callback (once its node heard of the end) and `ok` for a
    /// late `handled`, the next handler is never offered it, the sender gets nothing more.
    private func expectEndedForHolder(_ holder: Peer, _ id: String, next: Peer, sender: Peer?, what: String,
                                      sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(eventuallyNotFound(holder, id), "after \(what), a callback from \(holder) is not_found", sourceLocation: sourceLocation)
        let late = holder.handled(id, "pass", rid: "late")
        #expect(late?["ok"] as? String == "handled", "after \(what), the late handled is answered ok: \(String(describing: late))",
                sourceLocation: sourceLocation)
        let offered = next.arrivals(within: 1)
        #expect(offered.isEmpty, "after \(what), \(next) was offered the signal: \(offered)", sourceLocation: sourceLocation)
        if let sender {
            let frames = sender.arrivals(within: 0.2)
            #expect(frames.isEmpty, "after \(what), the sender got \(frames) (no callback, no result)", sourceLocation: sourceLocation)
        }
    }

    // MARK: 8. Concurrent signals from several nodes

    @Test func concurrentSignalsFromTwoNodesThroughOneHandlerGetDistinctIdsAndTheirOwnResults() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let shared = try handler(nodes, 2, "shared", sub: "h")
        let senders = [try peer(nodes, 0), try peer(nodes, 1)]
        var everyID: Set<String> = []
        for round in 0..<10 {
            let rid = "s\(round)"
            for sender in senders { sender.send(signalLine("shared", rid: rid, timeoutMs: 5000, data: "\"\(sender.id)\"")) }
            var idOf: [String: String] = [:]
            for _ in senders {
                let offer = try #require(shared.offer(), "round \(round): \(shared) got \(idOf.count) of the 2 offers; it had \(shared.backlog)")
                let from = offer["from"] as? String ?? ""
                #expect(idOf[from] == nil && offer["data"] as? String == from, "round \(round): \(offer)")
                idOf[from] = offer["id"] as? String ?? ""
            }
            #expect(Set(idOf.keys) == Set(senders.map(\.id)), "round \(round): one offer per sender: \(idOf)")
            #expect(Set(idOf.values).count == 2, "round \(round): two signals from two nodes share an id: \(idOf)")
            everyID.formUnion(idOf.values)
            for (from, id) in idOf {
                shared.send(#"{"op":"callback","id":"\#(id)","data":"\#(from)"}"#)
                shared.send(#"{"op":"handled","id":"\#(id)","action":"stop"}"#)
            }
            for sender in senders {
                let callback = try #require(sender.frame(), "round \(round): \(sender) got no callback; it had \(sender.backlog)")
                #expect(callback["callback"] as? String == idOf[sender.id] && callback["data"] as? String == sender.id
                        && callback["from"] as? String == shared.id, "round \(round): \(sender) got another's callback, or not first: \(callback)")
                let result = try #require(sender.frame(), "round \(round): \(sender) got no result")
                #expect(result["ok"] as? String == "signal" && result["rid"] as? String == rid && result["id"] as? String == idOf[sender.id]
                        && result["handled_by"] as? String == shared.globalID && result["hops"] as? Int == 1,
                        "round \(round): \(sender)'s own result: \(result)")
            }
        }
        #expect(everyID.count == 20, "20 signals, 20 ids: \(everyID.count)")
    }

    // MARK: 9. unsub and max

    @Test func aHandlerUnsubscribedOnAnotherNodeIsNotOfferedSignalsSentAfterItsOk() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let gone = try handler(nodes, 1, "ui.menu", sub: "gone")
        let stay = try handler(nodes, 2, "ui.menu", sub: "stay")
        let sender = try peer(nodes, 0)

        sender.send(signalLine("ui.menu", rid: "s1", timeoutMs: 3000))
        let first = try #require(gone.offer(), "\(gone) was never offered the signal sent on n0; it had \(gone.backlog)")
        let id = first["id"] as? String ?? ""
        _ = gone.handled(id, "pass", rid: "p1")
        _ = try #require(stay.offer(), "\(stay) was never offered the signal after \(gone) passed")
        _ = stay.handled(id, "stop", rid: "t1")
        #expect(sender.result(rid: "s1")?["hops"] as? Int == 2, "both handlers asked before the unsub")

        let unsub = gone.request(#"{"op":"unsub","sub":"gone","rid":"u"}"#, rid: "u")
        #expect(unsub?["ok"] as? String == "unsub" && unsub?["count"] as? Int == 1, "\(String(describing: unsub))")
        sender.send(signalLine("ui.menu", rid: "s2", timeoutMs: 3000))
        let second = try #require(stay.offer(), "\(stay) was not offered the signal sent after the unsub's ok; it had \(stay.backlog)")
        _ = stay.handled(second["id"] as? String ?? "", "stop", rid: "t2")
        let result = try #require(sender.result(rid: "s2"), "no result for the signal sent after the unsub")
        #expect(result["hops"] as? Int == 1 && result["timeouts"] as? [String] == [] && result["handled_by"] as? String == stay.globalID,
                "the unsubscribed handler was asked: \(result)")
        let stale = gone.arrivals(within: 0.2)
        #expect(stale.isEmpty, "\(gone) was offered a signal after its unsub's ok: \(stale)")

        // Subscribing again takes the last place in the cluster's order.
        let resub = gone.request(#"{"op":"sub","ch":"ui.menu","sub":"again","handle":true,"rid":"r"}"#, rid: "r")
        #expect(resub?["ok"] as? String == "sub", "\(String(describing: resub))")
        sender.send(signalLine("ui.menu", rid: "s3", timeoutMs: 3000))
        let third = try #require(stay.offer(), "\(stay) (older) was not offered first; it had \(stay.backlog)")
        #expect(gone.arrivals(within: 0.2).isEmpty, "the new handler subscription was offered before the older one")
        _ = stay.handled(third["id"] as? String ?? "", "pass", rid: "t3")
        let fourth = try #require(gone.offer(), "the handler subscribed again on n1 was not offered; it had \(gone.backlog)")
        #expect(fourth["sub"] as? String == "again", "\(fourth)")
        _ = gone.handled(fourth["id"] as? String ?? "", "stop", rid: "g3")
        let last = try #require(sender.result(rid: "s3"), "no result for the third signal")
        #expect(last["handled_by"] as? String == gone.id + "/again" && last["hops"] as? Int == 2, "\(last)")
    }

    @Test func aMaxOneHandlerOnAnotherNodeGetsLastAndIsNotOfferedAgain() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let once = try handler(nodes, 1, "ui.tab", sub: "once", extra: #","max":1"#)
        let fallback = try handler(nodes, 2, "ui.tab", sub: "fallback")
        let sender = try peer(nodes, 0)

        sender.send(signalLine("ui.tab", rid: "s1", timeoutMs: 3000))
        let first = try #require(once.offer(), "\(once) was never offered the signal sent on n0; it had \(once.backlog)")
        #expect(first["last"] as? Bool == true, "the offer that uses up max:1 says last:true: \(first)")
        let id = first["id"] as? String ?? ""
        let verdict = once.handled(id, "pass", rid: "p1")
        #expect(verdict?["ok"] as? String == "handled", "\(String(describing: verdict))")
        _ = try #require(fallback.offer(), "\(fallback) was never offered the signal after \(once) passed")
        _ = fallback.handled(id, "stop", rid: "f1")
        #expect(sender.result(rid: "s1")?["hops"] as? Int == 2)
        let subs = once.request(#"{"op":"subs","rid":"subs"}"#, rid: "subs")
        #expect((subs?["subs"] as? [Any])?.isEmpty == true, "the used-up handler subscription is removed: \(String(describing: subs))")

        sender.send(signalLine("ui.tab", rid: "s2", timeoutMs: 3000))
        let second = try #require(fallback.offer(), "\(fallback) was not offered the second signal first; it had \(fallback.backlog)")
        _ = fallback.handled(second["id"] as? String ?? "", "stop", rid: "f2")
        let result = try #require(sender.result(rid: "s2"), "no result for the second signal")
        #expect(result["hops"] as? Int == 1 && result["timeouts"] as? [String] == [], "the used-up handler was asked again: \(result)")
        let again = once.arrivals(within: 0.2)
        #expect(again.isEmpty, "the max:1 handler was offered a second signal: \(again)")
    }

    // MARK: 10. Locks

    @Test func aLockTakenOnAnotherNodeSkipsTheLockedHandlersOfEveryNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let locked = try handler(nodes, 0, "app.screen", sub: "locked")
        let open = try handler(nodes, 2, "app.screen", sub: "open")
        let locker = try peer(nodes, 1)
        let sender = try peer(nodes, 2)

        sender.send(signalLine("app.screen", rid: "s1", timeoutMs: 3000))
        let first = try #require(locked.offer(), "before any lock, \(locked) was never offered the signal sent on n2; it had \(locked.backlog)")
        _ = locked.handled(first["id"] as? String ?? "", "pass", rid: "p1")
        _ = try #require(open.offer(), "\(open) was never offered the signal after \(locked) passed")
        _ = open.handled(first["id"] as? String ?? "", "stop", rid: "o1")
        #expect(sender.result(rid: "s1")?["hops"] as? Int == 2, "both handlers asked before the lock")

        // A lock on n1 naming the handler subscription on n0.
        let lock = locker.request(#"{"op":"lock","ch":"app.screen","subs":["\#(locked.globalID)"],"rid":"l"}"#, rid: "l")
        #expect(lock?["ok"] as? String == "lock", "\(String(describing: lock))")
        sender.send(signalLine("app.screen", rid: "s2", timeoutMs: 3000))
        let second = try #require(open.offer(), "\(open) was not offered the signal while the other handler is locked")
        _ = open.handled(second["id"] as? String ?? "", "stop", rid: "o2")
        let skipped = try #require(sender.result(rid: "s2"), "no result while one handler is locked")
        #expect(skipped["hops"] as? Int == 1 && skipped["timeouts"] as? [String] == [] && skipped["handled_by"] as? String == open.globalID,
                "the locked handler is skipped, not counted: \(skipped)")
        let leaked = locked.arrivals(within: 0.2)
        #expect(leaked.isEmpty, "the handler locked from another node was offered the signal: \(leaked)")

        // Unlocked: asked again, first.
        let unlock = locker.request(#"{"op":"unlock","ch":"app.screen","subs":["\#(locked.globalID)"],"rid":"u"}"#, rid: "u")
        #expect(unlock?["ok"] as? String == "unlock" && unlock?["released"] as? Int == 1, "\(String(describing: unlock))")
        sender.send(signalLine("app.screen", rid: "s3", timeoutMs: 3000))
        let third = try #require(locked.offer(), "\(locked) was not offered again after the unlock's ok")
        _ = locked.handled(third["id"] as? String ?? "", "stop", rid: "p3")
        #expect(sender.result(rid: "s3")?["handled_by"] as? String == locked.globalID)

        // A lock on the level, from n1: every node's handlers there are skipped.
        let level = locker.request(#"{"op":"lock","ch":"app.screen","rid":"l2"}"#, rid: "l2")
        #expect(level?["ok"] as? String == "lock", "\(String(describing: level))")
        let none = try #require(sender.request(signalLine("app.screen", rid: "s4", timeoutMs: 3000), rid: "s4"),
                                "no result while the level is locked")
        #expect(none["hops"] as? Int == 0 && none["handled_by"] is NSNull, "every handler of the locked level is skipped: \(none)")
        let offered = locked.arrivals(within: 0.1) + open.arrivals(within: 0.1)
        #expect(offered.isEmpty, "a handler of the locked level was offered the signal: \(offered)")
    }

    // MARK: Helpers

    /// Sends `callback` for `id` (with a `rid`) every 100 ms for up to 3 s until it is
    /// answered `not_found`: the handler's node may hear of the signal's end a moment after
    /// the sender's node (an `ok` before that is fine, provided the sender never sees it).
    private func eventuallyNotFound(_ handler: Peer, _ id: String) -> Bool {
        let deadline = Date().addingTimeInterval(3)
        var attempt = 0
        while Date() < deadline {
            attempt += 1
            let rid = "nf\(attempt)"
            let answer = handler.request(#"{"op":"callback","id":"\#(id)","data":"late","rid":"\#(rid)"}"#, rid: rid)
            if answer?["error"] as? String == "not_found" { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }
}

/// A connection to one node that keeps the frames it read but was not asked for yet, so
/// offers, callbacks and answers may interleave without being lost or reordered.
private final class Peer: CustomStringConvertible {
    let client: TestClient
    /// Its client id (`cN`), the node's name, and its handler subscription's name ("" for none).
    let id: String
    let node: String
    let sub: String
    /// Frames read while looking for another, oldest first.
    private(set) var backlog: [[String: Any]] = []

    init(_ daemon: DaemonProcess, node: String, sub: String = "") throws {
        let (client, id) = try ClusterTestNodes.client(daemon)
        self.client = client
        self.id = id
        self.node = node
        self.sub = sub
    }

    /// `CLIENT/NAME`, as `handled_by` and `timeouts` name it.
    var globalID: String { id + "/" + sub }

    var description: String { sub.isEmpty ? "\(id) on \(node)" : "handler \(globalID) on \(node)" }

    func send(_ line: String) { client.send(line) }

    /// The first frame (kept ones first) that `matches`, waiting up to `seconds`; nil when none came.
    func next(within seconds: Double = 3, where matches: ([String: Any]) -> Bool) -> [String: Any]? {
        if let index = backlog.firstIndex(where: matches) { return backlog.remove(at: index) }
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let frame = try? client.frame(timeout: left) else { return nil }
            if matches(frame) { return frame }
            backlog.append(frame)
        }
    }

    /// The next frame, whatever it is.
    func frame(within seconds: Double = 3) -> [String: Any]? { next(within: seconds) { _ in true } }

    /// The next signal offer.
    func offer(within seconds: Double = 3) -> [String: Any]? { next(within: seconds) { $0["signal"] != nil } }

    /// The answer carrying `rid` (a string).
    func result(rid: String, within seconds: Double = 3) -> [String: Any]? {
        next(within: seconds) { $0["rid"] as? String == rid }
    }

    /// Sends `line` and waits for the answer carrying `rid`.
    func request(_ line: String, rid: String) -> [String: Any]? {
        send(line)
        return result(rid: rid)
    }

    /// `handled` with `action`, and its answer.
    func handled(_ id: String, _ action: String, rid: String) -> [String: Any]? {
        request(#"{"op":"handled","id":"\#(id)","action":"\#(action)","rid":"\#(rid)"}"#, rid: rid)
    }

    /// Every frame that arrives within `seconds` (kept in the backlog too, for later reads).
    func arrivals(within seconds: Double) -> [[String: Any]] {
        var seen: [[String: Any]] = []
        let deadline = Date().addingTimeInterval(seconds)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, let frame = try? client.frame(timeout: left) else { break }
            seen.append(frame)
            backlog.append(frame)
        }
        return seen
    }
}

import Foundation
import HeraldTestSupport
import Testing

/// `req`/`reply` across a real cluster (docs/cluster.md, "Requests and replies"): a real
/// redis-server, three real heraldd nodes, requesters and responders on different nodes.
@Suite(.enabled(if: TestRedis.isAvailable, "needs Debian's redis-server"), .serialized)
struct ClusterRequestServingTests {
    private func cluster(_ redis: TestRedis, nodes: Int = 3, extra: String = "", workers: Int = 1) throws -> [DaemonProcess] {
        try (0..<nodes).map { index in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n\#(index)" },"# + extra,
                              arguments: ["--workers", String(workers)])
        }
    }

    private func subscribe(_ client: TestClient, _ fields: String) throws {
        let answer = try client.request(#"{"op":"sub",\#(fields)}"#)
        #expect(answer["ok"] as? String == "sub", "\(answer)")
    }

    /// A connection and its client id (from `info`).
    private func connect(_ node: DaemonProcess) throws -> (TestClient, String) {
        let client = try TestClient(port: node.port)
        let info = try client.frame()["info"] as? [String: Any]
        return (client, info?["client"] as? String ?? "")
    }

    @Test(arguments: [1, 2])
    func aRequestOnOneNodeIsAnsweredByAResponderOnAnother(workers: Int) throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis, workers: workers)
        let (responder, responderID) = try connect(nodes[1])
        try subscribe(responder, #""ch":"math.double","sub":"m""#)
        let requester = try nodes[0].client()
        requester.send(#"{"op":"req","ch":"math.double","data":21,"rid":"q1"}"#)
        let event = try responder.frame()
        #expect(event["event"] as? String == "math.double" && event["data"] as? Int == 21, "\(event)")
        let token = try #require(event["reply"] as? String)
        #expect(token.count == 32)
        #expect(try responder.request(#"{"op":"reply","to":"\#(token)","data":42,"rid":"r1"}"#)["delivered"] as? Bool == true)
        let answer = try requester.frame()
        #expect(answer["ok"] as? String == "req" && answer["rid"] as? String == "q1", "\(answer)")
        #expect(answer["from"] as? String == responderID && answer["data"] as? Int == 42)
        let late = try responder.request(#"{"op":"reply","to":"\#(token)","data":43,"rid":"r2"}"#)
        #expect(late["delivered"] as? Bool == false, "only the first reply counts: \(late)")
        #expect(throws: (any Error).self, "the requester got one answer") { _ = try requester.frame(timeout: 0.3) }
    }

    @Test func tokensOfDifferentNodesNameTheirNodeAndNeverCollide() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let responder = try nodes[2].client()
        try subscribe(responder, #""ch":"who""#)
        var prefixes: [String: Set<String>] = [:]
        var tokens: Set<String> = []
        for (position, node) in nodes.enumerated() {
            let requester = try node.client()
            for n in 0..<5 {
                requester.send(#"{"op":"req","ch":"who","timeout_ms":5000,"rid":\#(n)}"#)
                let token = try responder.frame()["reply"] as? String ?? ""
                tokens.insert(token)
                prefixes[String(position), default: []].insert(String(token.prefix(8)))
                responder.send(#"{"op":"reply","to":"\#(token)"}"#)
                #expect(try requester.frame()["ok"] as? String == "req")
            }
        }
        #expect(tokens.count == 15)
        #expect(prefixes.values.allSatisfy { $0.count == 1 }, "one node, one prefix: \(prefixes)")
        #expect(Set(prefixes.values.compactMap(\.first)).count == 3, "three nodes, three prefixes")
    }

    @Test func noRespondersWhenNoNodeHasASubscriberAndTimeoutOnTheRequestersNode() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let requester = try nodes[0].client()
        let none = try requester.request(#"{"op":"req","ch":"nobody.here","rid":1}"#)
        #expect(none["error"] as? String == "no_responders" && none["rid"] as? Int == 1, "\(none)")
        let silent = try nodes[2].client()
        try subscribe(silent, #""ch":"slow""#)
        let started = Date()
        requester.send(#"{"op":"req","ch":"slow","timeout_ms":300,"rid":2}"#)
        #expect(try silent.frame()["reply"] != nil)
        let expired = try requester.frame()
        #expect(expired["error"] as? String == "timeout" && expired["rid"] as? Int == 2, "\(expired)")
        #expect(Date().timeIntervalSince(started) >= 0.29)
        #expect(try silent.request(#"{"op":"unsub","sub":"s1","rid":"u"}"#)["count"] as? Int == 1)
        // After the last subscriber left anywhere, the routing table says nobody again.
        var answer: [String: Any] = [:]
        for attempt in 0..<20 {
            answer = try requester.request(#"{"op":"req","ch":"slow","timeout_ms":200,"rid":"a\#(attempt)"}"#)
            if answer["error"] as? String == "no_responders" { break }
        }
        #expect(answer["error"] as? String == "no_responders", "\(answer)")
    }

    /// Nodes that got the request but had nobody who may take it report back, so the
    /// answer is `no_responders` (as on one node), not a `timeout`.
    @Test func aRequestNobodyMayTakeOnTheNodesItReachedIsNoResponders() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let requester = try nodes[0].client()
        #expect(try requester.request(#"{"op":"hello","echo":false}"#)["ok"] as? String == "hello")
        try subscribe(requester, #""ch":"self.q""#)
        let own = try requester.request(#"{"op":"req","ch":"self.q","timeout_ms":3000,"rid":1}"#)
        #expect(own["error"] as? String == "no_responders", "only its own subscription, echo:false: \(own)")
        let handler = try nodes[1].client()
        try subscribe(handler, #""ch":"self.q","handle":true"#)
        let second = try nodes[2].client()
        try subscribe(second, #""ch":"self.>","handle":true"#)
        let started = Date()
        let none = try requester.request(#"{"op":"req","ch":"self.q","timeout_ms":3000,"rid":2}"#)
        #expect(none["error"] as? String == "no_responders" && none["rid"] as? Int == 2,
                "three nodes reached, nobody took it: \(none)")
        #expect(Date().timeIntervalSince(started) < 2, "at once, not at the timeout")
        let other = try nodes[1].client()
        try subscribe(other, #""ch":"self.q""#)
        requester.send(#"{"op":"req","ch":"self.q","timeout_ms":3000,"rid":3}"#)
        let token = try #require(try other.frame()["reply"] as? String)
        other.send(#"{"op":"reply","to":"\#(token)","data":"yes"}"#)
        #expect(try requester.frame()["data"] as? String == "yes", "one node that took it is enough")
    }

    @Test func aQueueGroupOfRespondersOnThreeNodesAnswersEachRequestOnce() throws {
        let redis = try TestRedis()
        let nodes = try cluster(redis)
        let workers = try nodes.map { try $0.client() }
        for worker in workers { try subscribe(worker, #""ch":"rpc.sum","group":"pool""#) }
        let requester = try nodes[1].client()
        let count = 9
        var answeredBy: [Int] = []
        for n in 0..<count {
            requester.send(#"{"op":"req","ch":"rpc.sum","data":\#(n),"timeout_ms":5000,"rid":\#(n)}"#)
            var handled = false
            for _ in 0..<100 where !handled {
                for (position, worker) in workers.enumerated() where !handled {
                    guard let event = try? worker.frame(timeout: 0.02) else { continue }
                    handled = true
                    answeredBy.append(position)
                    worker.send(#"{"op":"reply","to":"\#(event["reply"] as? String ?? "")","data":\#(n * 10)}"#)
                }
            }
            let answer = try requester.frame()
            #expect(answer["data"] as? Int == n * 10 && answer["rid"] as? Int == n, "\(answer) \(answeredBy)")
        }
        #expect(answeredBy.count == count)
        #expect((0..<3).allSatisfy { position in answeredBy.filter { $0 == position }.count == 3 },
                "round robin over the three nodes' members: \(answeredBy)")
        for worker in workers { #expect(throws: (any Error).self) { _ = try worker.frame(timeout: 0.2) } }
    }

    /// Auth on: only a connection the request was delivered to (on its own node) may reply;
    /// a connection on another node holding the token is `forbidden`, and the request still
    /// gets its real answer.
    @Test func replyRightsHoldAcrossNodes() throws {
        let redis = try TestRedis()
        let users = #"auth: { users: [ { name: "app", token: "app-token" } ] },"#
        let nodes = try cluster(redis, extra: users)
        func login(_ node: DaemonProcess) throws -> TestClient {
            let client = try node.client()
            #expect(try client.request(#"{"op":"hello","token":"app-token"}"#)["ok"] as? String == "hello")
            return client
        }
        let responder = try login(nodes[1])
        try subscribe(responder, #""ch":"secure.q""#)
        let requester = try login(nodes[0])
        let thief = try login(nodes[2])
        requester.send(#"{"op":"req","ch":"secure.q","data":1,"timeout_ms":3000,"rid":"q"}"#)
        let token = try #require(try responder.frame()["reply"] as? String)
        let refused = try thief.request(#"{"op":"reply","to":"\#(token)","data":"fake","rid":1}"#)
        #expect(refused["error"] as? String == "forbidden", "not delivered to this connection: \(refused)")
        let local = try login(nodes[0])
        let refusedHere = try local.request(#"{"op":"reply","to":"\#(token)","data":"fake","rid":2}"#)
        #expect(refusedHere["error"] as? String == "forbidden", "not even on the requester's node: \(refusedHere)")
        #expect(try responder.request(#"{"op":"reply","to":"\#(token)","data":"real","rid":3}"#)["delivered"] as? Bool == true)
        let answer = try requester.frame()
        #expect(answer["data"] as? String == "real", "\(answer)")
    }
}

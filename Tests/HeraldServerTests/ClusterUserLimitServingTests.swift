import Foundation
import HeraldServer
import HeraldTestSupport
import Testing

/// `user_limits` across a cluster (issue 32, item 7): a user limited to 5 connections, 1,000
/// subscriptions and 1,000 channels got 5, 1,000 and 1,000 on *each* of 3 nodes. Each node
/// now holds a grant of the user's figures from Redis; these tests try 10× the limits,
/// spread over the nodes, and count what was accepted.
@Suite(.serialized) struct ClusterUserLimitServingTests {
    /// Three nodes on `redis` whose user `app` (token `t`) has the issue's limits.
    private static func nodes(_ redis: TestRedis) throws -> [DaemonProcess] {
        try ["n0", "n1", "n2"].map { name in
            try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "\#(name)", node_timeout_ms: 1000 }, "#
                + #"auth: { users: [ { name: "app", token: "t", limits: { connections: 5, subscriptions: 1000, channels: 1000 } }, "#
                + #"{ name: "watch", token: "w" } ] }"#, arguments: ["--workers", "1"])
        }
    }

    /// A connection of `app` (or refused: nil).
    private static func hello(_ node: DaemonProcess, token: String = "t") throws -> TestClient? {
        let client = try node.client()
        let answer = try client.request(#"{"op":"hello","token":"\#(token)"}"#)
        if answer["ok"] as? String == "hello" { return client }
        #expect(answer["error"] as? String == "limit", "\(answer)")
        return nil
    }

    /// Sends `lines` at once and counts the `ok` answers (the others must be `limit`).
    private static func pipeline(_ client: TestClient, _ lines: [String]) throws -> Int {
        client.send(bytes: Array(lines.map { $0 + "\n" }.joined().utf8))
        var accepted = 0
        for _ in lines {
            let frame = try client.frame(timeout: 20)
            if frame["ok"] != nil {
                accepted += 1
            } else {
                #expect(frame["error"] as? String == "limit", "\(frame)")
            }
        }
        return accepted
    }

    @Test func fiftyConnectionsOverThreeNodesGetExactlyTheUsersFive() throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let nodes = try Self.nodes(redis)
        var accepted: [TestClient] = []
        for attempt in 0..<50 {
            if let client = try Self.hello(nodes[attempt % 3]) { accepted.append(client) }
        }
        #expect(accepted.count == 5, "the cluster-wide limit, not 5 per node")
        // Two leave: once their node gives the grant back, two more get in on the other nodes.
        for client in accepted.prefix(2) { client.closeNow() }
        var again = 0
        let deadline = Date().addingTimeInterval(10)
        while again < 2 && Date() < deadline {
            if let client = try Self.hello(nodes[2 - again % 2]) {
                accepted.append(client)
                again += 1
            } else {
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        #expect(again == 2, "what was freed on one node is taken on another")
        #expect(try Self.hello(nodes[0]) == nil, "and the limit still holds")
    }

    @Test func tenThousandSubscriptionsOverThreeNodesGetExactlyTheUsersThousand() throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let nodes = try Self.nodes(redis)
        let clients = try nodes.map { node in try #require(try Self.hello(node)) }
        var total = 0
        for round in 0..<10 {
            for (at, client) in clients.enumerated() {
                let lines = (0..<334).map { #"{"op":"sub","ch":"s.\#(at).\#(round).\#($0)"}"# }
                total += try Self.pipeline(client, lines)
            }
        }
        #expect(total <= 1_000, "never past the limit across the cluster: \(total)")
        #expect(total >= 1_000 - 3 * 125, "nodes racing leave at most a chunk each idle: \(total)")
        // Once the idle grants went back, the rest of the limit is there, and no more.
        Thread.sleep(forTimeInterval: 2.5)
        for (at, client) in clients.enumerated() {
            total += try Self.pipeline(client, (0..<500).map { #"{"op":"sub","ch":"t.\#(at).\#($0)"}"# })
        }
        #expect(total == 1_000, "exactly the user's limit: \(total)")
    }

    @Test func tenThousandNewChannelsOverThreeNodesGetExactlyTheUsersThousand() throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let nodes = try Self.nodes(redis)
        // Another user's wildcard on every node keeps the channel records from being idle.
        let watchers = try nodes.map { node in try #require(try Self.hello(node, token: "w")) }
        for watcher in watchers { try ClusterTestNodes.ok(watcher, #"{"op":"sub","ch":"p.>"}"#, "sub") }
        let clients = try nodes.map { node in try #require(try Self.hello(node)) }
        var total = 0
        for round in 0..<10 {
            for (at, client) in clients.enumerated() {
                let lines = (0..<334).map { #"{"op":"pub","ch":"p.\#(at).\#(round).\#($0)","rid":1}"# }
                total += try Self.pipeline(client, lines)
            }
        }
        #expect(total <= 1_000, "never past the limit across the cluster: \(total)")
        #expect(total >= 1_000 - 3 * 125, "\(total)")
        Thread.sleep(forTimeInterval: 2.5)
        for (at, client) in clients.enumerated() {
            total += try Self.pipeline(client, (0..<500).map { #"{"op":"pub","ch":"p.x.\#(at).\#($0)","rid":1}"# })
        }
        #expect(total == 1_000, "exactly the user's limit: \(total)")
    }

    /// A `hello` whose token is verified off the loop and whose connection then waits for
    /// a cluster grant: the lines sent right behind it wait too, and are served as the
    /// user's (they were answered `auth_required`: the held lines' first line went through).
    @Test func linesRightBehindAVerifiedHelloWaitForTheGrantAndAreServed() throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let hash = Config.hashToken("slow", iterations: 1_000) ?? ""
        let node = try DaemonProcess(config: #"cluster: { redis: "redis://127.0.0.1:\#(redis.port)", node: "n0", node_timeout_ms: 1000 }, "#
            + #"auth: { users: [ { name: "app", token_hash: "\#(hash)" } ] }"#, arguments: ["--workers", "1"])
        for attempt in 0..<3 {
            let client = try node.client()
            client.send(#"{"op":"hello","token":"slow"}"# + "\n" + #"{"op":"subs","rid":1}"# + "\n" + #"{"op":"pub","ch":"a","rid":2}"#)
            let frames = try (0..<3).map { _ in try client.frame() }
            #expect(frames[0]["ok"] as? String == "hello", "attempt \(attempt): \(frames)")
            #expect(frames[1]["ok"] as? String == "subs" && frames[2]["ok"] as? String == "pub", "attempt \(attempt): \(frames)")
        }
    }

    @Test func aKilledNodesGrantsGoBackWhenTheReaperDeclaresItDown() throws {
        let redis = try TestRedis()
        defer { redis.stop() }
        let nodes = try Self.nodes(redis)
        var held: [TestClient] = []
        for _ in 0..<5 { held.append(try #require(try Self.hello(nodes[0]))) }
        #expect(try Self.hello(nodes[1]) == nil, "n0 holds the user's five")
        nodes[0].signal(SIGKILL)
        _ = nodes[0].waitForExit(seconds: 5)
        // n0's liveness key runs out (node_timeout_ms 1000) and a reaper gives its grant back.
        var accepted: [TestClient] = []
        let deadline = Date().addingTimeInterval(15)
        while accepted.count < 5 && Date() < deadline {
            if let client = try Self.hello(nodes[1 + accepted.count % 2]) {
                accepted.append(client)
            } else {
                Thread.sleep(forTimeInterval: 0.3)
            }
        }
        #expect(accepted.count == 5, "the dead node's five are free again")
        #expect(try Self.hello(nodes[1]) == nil)
        #expect(held.count == 5)
    }
}

import Foundation
import HeraldTestSupport
import Testing

/// Redis credentials (issue 32, item 8): nodes `AUTH` on every link (also after a reconnect),
/// as the `default` user (`requirepass`) or an ACL user, with the password in the URL, a file
/// or an environment variable; a refusal stops start-up with Redis's words, and the password
/// appears in no output.
@Suite(.serialized) struct ClusterRedisAuthServingTests {
    private static let secret = "pw-5f3b9c-hunter2"

    /// A Redis whose `default` user needs `secret` and which has an ACL user `herald`.
    private func protectedRedis() throws -> TestRedis {
        let redis = try TestRedis()
        _ = try redis.command("ACL", "SETUSER", "herald", "on", ">" + Self.secret + "-acl", "~*", "&*", "+@all")
        _ = try redis.command("CONFIG", "SET", "requirepass", Self.secret)
        return redis
    }

    private func node(_ cluster: String, _ name: String, environment: [String: String] = [:]) throws -> DaemonProcess {
        try DaemonProcess(config: #"cluster: { \#(cluster), node: "\#(name)", node_timeout_ms: 1000 },"#,
                          arguments: ["--workers", "1"], environment: environment)
    }

    private func crossNode(_ nodes: [DaemonProcess]) throws {
        let (subscriber, _) = try ClusterTestNodes.client(nodes[0])
        try ClusterTestNodes.ok(subscriber, #"{"op":"sub","ch":"auth.x"}"#, "sub")
        let (publisher, _) = try ClusterTestNodes.client(nodes[1])
        try ClusterTestNodes.ok(publisher, #"{"op":"pub","ch":"auth.x","data":1,"rid":1}"#, "pub")
        #expect(try subscriber.frame()["data"] as? Int == 1)
    }

    @Test func nodesAuthenticateAsTheDefaultUserAndAsAnACLUser() throws {
        let redis = try protectedRedis()
        defer { redis.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-redis-pw-\(UUID().uuidString)")
        try (Self.secret + "-acl\n").write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let inURL = try node(#"redis: "redis://:\#(Self.secret)@127.0.0.1:\#(redis.port)""#, "n0")
        let acl = try node(#"redis: "redis://127.0.0.1:\#(redis.port)", redis_user: "herald", redis_password_file: "\#(file.path)""#, "n1")
        let fromEnvironment = try node(#"redis: "redis://127.0.0.1:\#(redis.port)", redis_password_env: "HERALD_TEST_REDIS_PW""#,
                                       "n2", environment: ["HERALD_TEST_REDIS_PW": Self.secret])
        let nodes = [inURL, acl, fromEnvironment]
        try crossNode(nodes)
        try crossNode([acl, fromEnvironment])
        for node in nodes { #expect(!node.log.contains(Self.secret), "no password in the log") }
    }

    @Test func aLinkCutByRedisAuthenticatesAgainWhenItReconnects() async throws {
        let redis = try protectedRedis()
        defer { redis.stop() }
        let cluster = #"redis: "redis://127.0.0.1:\#(redis.port)", redis_password: "\#(Self.secret)""#
        let nodes = try [node(cluster, "n0"), node(cluster, "n1")]
        try crossNode(nodes)
        // Every client but the killer's own connection goes: the nodes' links reconnect.
        let killed = RedisCommandLine.run(port: redis.port, password: Self.secret, ["CLIENT", "KILL", "TYPE", "normal"])
        guard case .integer(let count) = killed else {
            Issue.record("CLIENT KILL answered \(String(describing: killed))")
            return
        }
        #expect(count >= 2, "the nodes' links were cut")
        // A new connection per try: on a loaded machine the cut node may miss its liveness
        // refresh and be declared down, and its new incarnation closes the connections it had
        // (fail-stop); back on Redis either way, it must take a receipted publish.
        #expect(await eventually(within: 15) {
            guard let publisher = try? TestClient(port: nodes[1].port), (try? publisher.frame()) != nil else { return false }
            return (try? publisher.request(#"{"op":"pub","ch":"auth.y","data":0,"rid":9}"#))?["ok"] as? String == "pub"
        }, "the node is back on Redis, authenticated")
        try crossNode(nodes)
    }

    @Test func aWrongPasswordStopsStartUpWithRedisWordsAndNeverThePassword() throws {
        let redis = try protectedRedis()
        defer { redis.stop() }
        let wrong = "not-the-" + Self.secret
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("herald-auth-\(UUID().uuidString).json5")
        try #"{ port: 0, cluster: { redis: "redis://herald:\#(wrong)@127.0.0.1:\#(redis.port)", node: "n0" } }"#
            .write(to: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: config) }
        let refused = try runDaemon(["--config", config.path])
        #expect(refused.status != 0)
        #expect(refused.output.contains("refused the credentials") && refused.output.contains("WRONGPASS"), "\(refused.output)")
        #expect(!refused.output.contains(wrong), "the password is never shown: \(refused.output)")
    }

    /// Under Sentinel both sides want a password: the sentinel its own (`requirepass`), the
    /// primary it names the data set's. The node asks the sentinel with `sentinel.password`
    /// and the primary with `redis_password`; a wrong sentinel password stops start-up
    /// without showing it.
    @Test func nodesAuthenticateToPasswordProtectedSentinelsAndThePrimaryTheyName() throws {
        let redis = try protectedRedis()
        defer { redis.stop() }
        let sentinelSecret = Self.secret + "-sentinel"
        let sentinel = try TestSentinel(master: "herald", primaryPort: redis.port,
                                        extra: ["sentinel auth-pass herald " + Self.secret, "requirepass " + sentinelSecret])
        let cluster = #"sentinel: { master: "herald", addresses: ["127.0.0.1:\#(sentinel.port)"], password: "\#(sentinelSecret)" }, "#
            + #"redis_password: "\#(Self.secret)""#
        let nodes = try [node(cluster, "n0"), node(cluster, "n1")]
        try crossNode(nodes)
        let wrong = "not-the-" + sentinelSecret
        let config = FileManager.default.temporaryDirectory.appendingPathComponent("herald-auth-\(UUID().uuidString).json5")
        try (#"{ port: 0, cluster: { sentinel: { master: "herald", addresses: ["127.0.0.1:\#(sentinel.port)"], "#
            + #"password: "\#(wrong)" }, redis_password: "\#(Self.secret)", node: "n9" } }"#)
            .write(to: config, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: config) }
        let refused = try runDaemon(["--config", config.path])
        #expect(refused.status != 0, "\(refused.output)")
        #expect(!refused.output.contains(wrong), "the password is never shown: \(refused.output)")
    }

    @Test func badCredentialSettingsAreRefusedWithoutShowingThePassword() throws {
        let secret = "s3cr%et"
        for (cluster, expected) in [
            (#"redis: "redis://u:\#(secret)@127.0.0.1:6379""#, "bad user or password"),
            (#"redis: "redis://:pw@127.0.0.1:6379", redis_password: "\#(secret)""#, "not both"),
            (#"redis: "redis://127.0.0.1:6379", redis_password: "\#(secret)", redis_password_env: "X""#, "give one of"),
            (#"redis: "redis://127.0.0.1:6379", redis_user: "u""#, "needs a password"),
            (#"redis: "rediss://:\#(secret)@127.0.0.1:6379""#, "stunnel"),
            (#"redis: "redis://127.0.0.1:6379", redis_password_env: "HERALD_NO_SUCH_VARIABLE_\#(UUID().uuidString.prefix(8))""#, "not set"),
        ] {
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("herald-auth-\(UUID().uuidString).json5")
            try #"{ cluster: { \#(cluster), node: "a" } }"#.write(to: file, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: file) }
            let result = try runDaemon(["--check-config", "--config", file.path])
            #expect(result.status != 0 && result.output.contains(expected), "\(cluster) → \(result.output)")
            #expect(!result.output.contains(secret), "\(result.output)")
        }
    }
}

import Foundation
import Testing
@testable import HeraldServer

/// Decodes `text` as if it were the file `config/heraldd.json5`.
private func decode(_ text: String) throws(ConfigError) -> Config {
    try Config.decode(json5: Data(text.utf8), source: "config/heraldd.json5")
}

/// The error message for `text`, or `nil` if it decoded.
private func errorMessage(_ text: String) -> String? {
    do {
        _ = try decode(text)
        return nil
    } catch {
        return error.description
    }
}

@Suite struct ConfigTests {
    @Test func emptyObjectGivesEveryDefault() throws {
        let config = try decode("{}")
        #expect(config == Config())
        #expect(config.host == "127.0.0.1")
        #expect(config.port == 7400)
        #expect(config.unix == nil)
        #expect(config.dataDir == nil)
        #expect(config.workers == 1)
        #expect(config.logLevel == .info)
        #expect(config.maxLine == 1_048_576)
        #expect(config.maxErrors == 100)
        #expect(config.heartbeatMs == 30_000)
        #expect(config.maxPending == 67_108_864)
        #expect(config.slowConsumer == .disconnect)
    }

    @Test func json5CommentsTrailingCommasAndUnquotedKeysAreAccepted() throws {
        let config = try decode("""
            // line comment
            {
              /* block comment */
              port: 0, // ephemeral
              'host': '0.0.0.0',
              "log_level": "debug",
              max_pending: 0x20000,
            }
            """)
        #expect(config.port == 0)
        #expect(config.host == "0.0.0.0")
        #expect(config.logLevel == .debug)
        #expect(config.maxPending == 131_072)
    }

    @Test func everyKeyIsRead() throws {
        let config = try decode("""
            { host: "::1", port: 9000, unix: "/tmp/h.sock", data_dir: "data", workers: 4,
              log_level: "warn", max_line: 2048, max_errors: 5, heartbeat_ms: 0,
              max_pending: 65536, slow_consumer: "drop" }
            """)
        var expected = Config()
        expected.host = "::1"
        expected.port = 9000
        expected.unix = "/tmp/h.sock"
        expected.dataDir = "data"
        expected.workers = 4
        expected.logLevel = .warn
        expected.maxLine = 2048
        expected.maxErrors = 5
        expected.heartbeatMs = 0
        expected.maxPending = 65536
        expected.slowConsumer = .drop
        #expect(config == expected)
    }

    @Test func unknownKeyErrorNamesKeyAndFile() {
        #expect(errorMessage("{ prot: 7400 }") == "config/heraldd.json5: unknown key \"prot\"")
    }

    @Test func severalUnknownKeysAreAllNamed() {
        #expect(errorMessage("{ zeta: 1, alpha: 2, port: 1 }") == "config/heraldd.json5: unknown keys \"alpha\", \"zeta\"")
    }

    @Test func wrongTypeErrorNamesKeyFileAndRange() {
        #expect(errorMessage("{ port: \"7400\" }")
            == "config/heraldd.json5: bad value for \"port\": \"7400\" (expected an integer in 0...65535)")
        #expect(errorMessage("{ workers: 1.5 }")
            == "config/heraldd.json5: bad value for \"workers\": 1.5 (expected an integer in 1...64)")
        #expect(errorMessage("{ host: 12 }")
            == "config/heraldd.json5: bad value for \"host\": 12 (expected a non-empty string)")
        #expect(errorMessage("{ max_errors: [1] }")
            == "config/heraldd.json5: bad value for \"max_errors\": an array (expected an integer in 1...1000000)")
        #expect(errorMessage("{ log_level: true }")
            == "config/heraldd.json5: bad value for \"log_level\": true (expected one of \"debug\", \"info\", \"warn\", \"error\")")
    }

    @Test(arguments: [
        ("{ port: 65536 }", "bad value for \"port\": 65536 (expected an integer in 0...65535)"),
        ("{ port: -1 }", "bad value for \"port\": -1 (expected an integer in 0...65535)"),
        ("{ workers: 0 }", "bad value for \"workers\": 0 (expected an integer in 1...64)"),
        ("{ workers: 65 }", "bad value for \"workers\": 65 (expected an integer in 1...64)"),
        ("{ max_line: 1023 }", "bad value for \"max_line\": 1023 (expected an integer in 1024...268435456)"),
        ("{ max_line: 268435457 }", "bad value for \"max_line\": 268435457 (expected an integer in 1024...268435456)"),
        ("{ max_errors: 0 }", "bad value for \"max_errors\": 0 (expected an integer in 1...1000000)"),
        ("{ heartbeat_ms: 9 }", "bad value for \"heartbeat_ms\": 9 (expected 0 (off) or an integer of at least 10)"),
        ("{ max_pending: 65535 }", "bad value for \"max_pending\": 65535 (expected an integer of at least 65536)"),
        ("{ host: \"\" }", "bad value for \"host\": \"\" (expected a non-empty string)"),
    ])
    func outOfRangeErrorNamesKeyFileAndRange(text: String, message: String) {
        #expect(errorMessage(text) == "config/heraldd.json5: " + message)
    }

    @Test func badEnumErrorListsTheChoices() {
        #expect(errorMessage("{ log_level: \"verbose\" }")
            == "config/heraldd.json5: bad value for \"log_level\": \"verbose\" (expected one of \"debug\", \"info\", \"warn\", \"error\")")
        #expect(errorMessage("{ slow_consumer: \"block\" }")
            == "config/heraldd.json5: bad value for \"slow_consumer\": \"block\" (expected one of \"disconnect\", \"drop\")")
    }

    @Test func unixPathLongerThanSunPathIsRejected() {
        let path = "/" + String(repeating: "s", count: 107)
        #expect(errorMessage("{ unix: \"\(path)\" }")
            == "config/heraldd.json5: bad value for \"unix\": \"\(path)\" (expected a non-empty string of at most 107 bytes)")
    }

    @Test func nullUnsetsOptionalKeysButIsBadElsewhere() throws {
        #expect(try decode("{ unix: null, data_dir: null }") == Config())
        #expect(errorMessage("{ port: null }")
            == "config/heraldd.json5: bad value for \"port\": null (expected an integer in 0...65535)")
    }

    @Test func syntaxErrorNamesTheFile() {
        #expect(errorMessage("{ port: 1 host: \"x\" }")
            == "config/heraldd.json5: not valid JSON5 (look for a missing comma, quote or brace)")
    }

    @Test func topLevelArrayIsRejected() {
        #expect(errorMessage("[1]") == "config/heraldd.json5: the top level must be an object: { key: value, … }")
    }

    @Test func missingFileErrorNamesThePath() {
        #expect(throws: ConfigError("/nonexistent/heraldd.json5: no such file")) {
            try Config.load(path: "/nonexistent/heraldd.json5")
        }
    }

    @Test func shippedConfigFileLoadsAsTheDefaults() throws {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/heraldd.json5").path
        var expected = Config()
        expected.dataDir = "data"
        #expect(try Config.load(path: path) == expected, "the shipped file differs from the defaults only in data_dir")
    }

    @Test func shippedConfigFileMentionsEveryKey() throws {
        let path = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("config/heraldd.json5").path
        let text = try String(contentsOfFile: path, encoding: .utf8)
        for key in Config.allKeys {
            #expect(text.contains("\(key):"), "config/heraldd.json5 does not document \(key)")
        }
    }

    @Test func reloadingLiveTakesLiveKeysAndKeepsTheRest() {
        let running = Config()
        var loaded = Config()
        loaded.host = "0.0.0.0"
        loaded.port = 9999
        loaded.unix = "/tmp/x.sock"
        loaded.dataDir = "elsewhere"
        loaded.workers = 8
        loaded.logLevel = .debug
        loaded.maxLine = 4096
        loaded.maxErrors = 3
        loaded.heartbeatMs = 0
        loaded.maxPending = 70000
        loaded.maxSubs = 7
        loaded.slowConsumer = .drop

        let merged = running.reloadingLive(from: loaded)

        #expect(merged.host == running.host)
        #expect(merged.port == running.port)
        #expect(merged.unix == running.unix)
        #expect(merged.dataDir == running.dataDir)
        #expect(merged.workers == running.workers)
        #expect(merged.logLevel == .debug)
        #expect(merged.maxLine == 4096)
        #expect(merged.maxErrors == 3)
        #expect(merged.heartbeatMs == 0)
        #expect(merged.maxPending == 70000)
        #expect(merged.maxSubs == 7)
        #expect(merged.slowConsumer == .drop)
        #expect(running.keysNeedingRestart(for: loaded) == ["host", "port", "unix", "data_dir", "workers"])
        #expect(running.keysNeedingRestart(for: running.reloadingLive(from: Config())).isEmpty)
    }

    @Test func unixModeAndTLSCiphersNeedARestart() throws {
        let running = Config()
        var loaded = Config()
        loaded.unixMode = 0o600
        loaded.tlsCiphers = "ECDHE+AESGCM"
        #expect(running.keysNeedingRestart(for: loaded) == ["unix_mode", "tls_ciphers"])
        let merged = running.reloadingLive(from: loaded)
        #expect(merged.unixMode == 0o660)
        #expect(merged.tlsCiphers == Config.defaultTLSCiphers)
    }

    @Test func liveKeysAreExactlyTheReloadableOnes() {
        #expect(Config.liveKeys == ["log_level", "max_line", "max_errors", "heartbeat_ms", "max_pending", "slow_consumer",
                                    "history", "history_bytes", "max_value_bytes", "max_list_length", "max_retained_bytes",
                                    "max_connections", "max_subs", "max_channels", "max_requests", "max_signals",
                                    "monitor_timeout_ms", "monitor_auth", "max_locks", "max_args_bytes", "presence_max_members", "presence_grace_ms",
                                    "max_info_bytes", "dedup_window_ms", "max_dedup_ids", "max_conn_args_bytes", "max_args_total",
                                    "max_declared", "max_links",
                                    "max_pending_total", "pace_pending", "auth", "auth_timeout_ms", "auth_max_line", "tls_timeout_ms",
                                    "max_unauthenticated", "auth_fail_limit", "auth_fail_window_ms", "auth_block_ms",
                                    "user_limits", "disk_full_timeout_ms", "max_writer_queue_bytes", "ws_origins"])
        #expect(Config.allKeys.count == 62)
    }
}

/// `pass_budget_us` (issue 12): the per-connection line budget per loop pass.
@Suite struct PassBudgetConfigTests {
    @Test func passBudgetDefaultsToOneMillisecondAndZeroTurnsItOff() throws {
        #expect(Config().passBudgetUs == 1_000)
        #expect(try decode("{ pass_budget_us: 0 }").passBudgetUs == 0)
        #expect(try decode("{ pass_budget_us: 250 }").passBudgetUs == 250)
    }

    @Test(arguments: ["-1", "2000000", "\"fast\""])
    func passBudgetOutOfRangeIsAStartupErrorNamingTheKey(value: String) {
        #expect(errorMessage("{ pass_budget_us: \(value) }")?.contains("pass_budget_us") == true)
    }
}

/// `disk_full_timeout_ms` and `max_writer_queue_bytes` (issue 13): defaults, range, live.
@Suite struct DataFolderConfigTests {
    @Test func fullDiskKeysDefaultToFiveSecondsAndSixtyFourMiB() throws {
        #expect(Config().diskFullTimeoutMs == 5_000)
        #expect(Config().maxWriterQueueBytes == 64 << 20)
        let config = try decode("{ disk_full_timeout_ms: 250, max_writer_queue_bytes: 2097152 }")
        #expect(config.diskFullTimeoutMs == 250)
        #expect(config.maxWriterQueueBytes == 2_097_152)
    }

    @Test(arguments: ["disk_full_timeout_ms: 99", "disk_full_timeout_ms: \"5s\"", "max_writer_queue_bytes: 1000"])
    func fullDiskValuesOutOfRangeAreAStartupErrorNamingTheKey(entry: String) {
        let key = String(entry.prefix { $0 != ":" })
        #expect(errorMessage("{ \(entry) }")?.contains(key) == true)
    }

    @Test func fullDiskKeysReloadLiveAndReachTheBroker() throws {
        let fresh = try decode("{ disk_full_timeout_ms: 1000, max_writer_queue_bytes: 8388608 }")
        let merged = Config().reloadingLive(from: fresh)
        #expect(Config().keysNeedingRestart(for: fresh).isEmpty)
        let tunables = Server.brokerConfig(from: merged, epoch: "e")
        #expect(tunables.diskFullTimeoutMs == 1_000)
        #expect(tunables.maxWriterQueueBytes == 8 << 20)
    }
}

/// The `cluster` section (issue 14, docs/cluster.md).
@Suite struct ClusterConfigTests {
    private func decode(_ text: String) throws -> Config {
        try Config.decode(json5: Data(text.utf8), source: "test.json5")
    }

    private func problem(_ text: String) -> String {
        do {
            _ = try decode(text)
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test func absentOrNullRunsAlone() throws {
        #expect(try decode("{}").cluster == nil)
        #expect(try decode("{ cluster: null }").cluster == nil)
    }

    @Test func redisNodeAndPrefixAreRead() throws {
        let settings = try decode(#"{ cluster: { redis: "redis://127.0.0.1:7000", node: "a" } }"#).cluster
        #expect(settings?.redisHost == "127.0.0.1" && settings?.redisPort == 7000 && settings?.node == "a")
        #expect(settings?.keyPrefix == "herald:")
        let other = try decode(#"{ cluster: { redis: "redis://[::1]", node: "b-2", key_prefix: "h2:" } }"#).cluster
        #expect(other?.redisHost == "::1" && other?.redisPort == 6379 && other?.keyPrefix == "h2:")
    }

    @Test func nodeTimeoutDefaultsToFiveSecondsAndIsBounded() throws {
        #expect(try decode(#"{ cluster: { redis: "redis://h", node: "a" } }"#).cluster?.nodeTimeoutMs == 5_000)
        #expect(try decode(#"{ cluster: { redis: "redis://h", node: "a", node_timeout_ms: 1500 } }"#).cluster?.nodeTimeoutMs == 1_500)
        for bad in ["999", "600001", "\"5s\"", "-1"] {
            #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", node_timeout_ms: \#(bad) } }"#)
                .contains("cluster.node_timeout_ms"), "\(bad)")
        }
    }

    /// Issue 29: backpressure's bounds on the command link.
    @Test func outstandingBoundsDefaultTo4096OpsAnd8MiBAndAreBounded() throws {
        let plain = try decode(#"{ cluster: { redis: "redis://h", node: "a" } }"#).cluster
        #expect(plain?.maxOutstandingOps == 4_096 && plain?.maxOutstandingBytes == 8_388_608)
        let set = try decode(#"{ cluster: { redis: "redis://h", node: "a", max_outstanding_ops: 100, max_outstanding_bytes: 1048576 } }"#).cluster
        #expect(set?.maxOutstandingOps == 100 && set?.maxOutstandingBytes == 1_048_576)
        for bad in ["15", "1048577", "\"4096\"", "-1"] {
            #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", max_outstanding_ops: \#(bad) } }"#)
                .contains("cluster.max_outstanding_ops"), "\(bad)")
        }
        for bad in ["65535", "1073741825", "1.5"] {
            #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", max_outstanding_bytes: \#(bad) } }"#)
                .contains("cluster.max_outstanding_bytes"), "\(bad)")
        }
    }

    /// Issue 32: the idle record collection's step, 0 for off.
    @Test func collectKeysDefaultsTo5000AndZeroTurnsItOff() throws {
        #expect(try decode(#"{ cluster: { redis: "redis://h", node: "a" } }"#).cluster?.collectKeys == 5_000)
        #expect(try decode(#"{ cluster: { redis: "redis://h", node: "a", collect_keys: 0 } }"#).cluster?.collectKeys == 0)
        for bad in ["-1", "1000001", "\"5000\""] {
            #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", collect_keys: \#(bad) } }"#)
                .contains("cluster.collect_keys"), "\(bad)")
        }
    }

    @Test func badSectionsNameTheirPlace() {
        #expect(problem(#"{ cluster: { redis: "redis://h:1" } }"#).contains("cluster.node"))
        #expect(problem(#"{ cluster: { node: "a" } }"#).contains("cluster.redis"))
        #expect(problem(#"{ cluster: { redis: "http://h", node: "a" } }"#).contains("cluster.redis"))
        #expect(problem(#"{ cluster: { redis: "redis://h:99999", node: "a" } }"#).contains("1…65535"))
        #expect(problem(#"{ cluster: { redis: "redis://h", node: "a b" } }"#).contains("cluster.node"))
        #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", nod: 1 } }"#).contains("cluster.nod"))
        #expect(problem(#"{ cluster: 3 }"#).contains("cluster"))
    }

    @Test func sentinelReplacesRedisAndWaitReplicasIsRead() throws {
        let settings = try decode(#"{ cluster: { sentinel: { master: "herald", addresses: ["127.0.0.1:26379", "[::1]:26380"] }, node: "a", wait_replicas: 1, wait_timeout_ms: 500 } }"#).cluster
        #expect(settings?.sentinel?.master == "herald")
        #expect(settings?.sentinel?.addresses == [RedisAddress(host: "127.0.0.1", port: 26379), RedisAddress(host: "::1", port: 26380)])
        #expect(settings?.waitReplicas == 1 && settings?.waitTimeoutMs == 500)
        let plain = try decode(#"{ cluster: { redis: "redis://h", node: "a" } }"#).cluster
        #expect(plain?.sentinel == nil && plain?.waitReplicas == 0 && plain?.waitTimeoutMs == 1_000)
    }

    @Test func badSentinelSettingsNameTheirPlace() {
        #expect(problem(#"{ cluster: { node: "a" } }"#).contains("give redis (one server), sentinel"))
        #expect(problem(#"{ cluster: { redis: "redis://h", sentinel: { master: "m", addresses: ["h:1"] }, node: "a" } }"#)
            .contains("not both"))
        #expect(problem(#"{ cluster: { sentinel: { addresses: ["h:1"] }, node: "a" } }"#).contains("cluster.sentinel.master"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m" }, node: "a" } }"#).contains("cluster.sentinel.addresses"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m", addresses: [] }, node: "a" } }"#).contains("1 to 16 sentinels"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m", addresses: ["h"] }, node: "a" } }"#).contains("expected host:port"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m", addresses: ["h:0"] }, node: "a" } }"#).contains("1…65535"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m", addresses: [1] }, node: "a" } }"#).contains("cluster.sentinel.addresses"))
        #expect(problem(#"{ cluster: { sentinel: { master: "a b", addresses: ["h:1"] }, node: "a" } }"#).contains("cluster.sentinel"))
        #expect(problem(#"{ cluster: { sentinel: { master: "m", addresses: ["h:1"], port: 1 }, node: "a" } }"#).contains("cluster.sentinel.port"))
        #expect(problem(#"{ cluster: { sentinel: "h:1", node: "a" } }"#).contains("cluster.sentinel"))
        for bad in ["-1", "65", "\"1\""] {
            #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", wait_replicas: \#(bad) } }"#).contains("cluster.wait_replicas"), "\(bad)")
        }
        #expect(problem(#"{ cluster: { redis: "redis://h", node: "a", wait_timeout_ms: 5 } }"#).contains("cluster.wait_timeout_ms"))
    }

    /// Issue 33: `shards` in place of `redis`/`sentinel`, each a URL or a Sentinel group.
    @Test func shardsListThePrimariesTheFirstOneHoldingTheClustersRecords() throws {
        let settings = try decode(#"""
            { cluster: { shards: ["redis://h0:7000", "redis://:pw@h1", { sentinel: { master: "s2", addresses: ["h2:26379"] } }],
                         node: "a" } }
            """#).cluster
        #expect(settings?.redisHost == "h0" && settings?.redisPort == 7000 && settings?.shardCount == 3)
        #expect(settings?.otherShards.first?.host == "h1" && settings?.otherShards.first?.port == 6379)
        #expect(settings?.otherShards.first?.credentials?.password == "pw")
        #expect(settings?.otherShards.last?.sentinel?.master == "s2")
        #expect(settings?.shardList == "redis://h0:7000,redis://h1:6379,sentinel:s2", "no credentials in the recorded list")
        let first = try decode(#"{ cluster: { shards: [{ sentinel: { master: "m", addresses: ["h:1"] } }], node: "a" } }"#).cluster
        #expect(first?.sentinel?.master == "m" && first?.shardCount == 1)
        let shared = try decode(#"{ cluster: { shards: ["redis://h0", "redis://h1"], node: "a", redis_password: "pw" } }"#).cluster
        #expect(shared?.redisCredentials?.password == "pw" && shared?.otherShards.first?.credentials?.password == "pw",
                "redis_password* applies to every shard")
        #expect(try decode(#"{ cluster: { redis: "redis://h", node: "a" } }"#).cluster?.shardCount == 1)
    }

    @Test func badShardListsNameTheirPlace() {
        #expect(problem(#"{ cluster: { shards: ["redis://h0"], redis: "redis://h", node: "a" } }"#).contains("not beside them"))
        #expect(problem(#"{ cluster: { shards: [], node: "a" } }"#).contains("cluster.shards"))
        #expect(problem(#"{ cluster: { shards: "redis://h", node: "a" } }"#).contains("cluster.shards"))
        #expect(problem(#"{ cluster: { shards: ["http://h"], node: "a" } }"#).contains("cluster.shards[0]"))
        #expect(problem(#"{ cluster: { shards: ["redis://h0", "redis://h1:0"], node: "a" } }"#).contains("cluster.shards[1]"))
        #expect(problem(#"{ cluster: { shards: ["redis://h0", 3], node: "a" } }"#).contains("cluster.shards[1]"))
        #expect(problem(#"{ cluster: { shards: ["redis://h0", { master: "m" }], node: "a" } }"#).contains("cluster.shards[1].master"))
        #expect(problem(#"{ cluster: { shards: ["redis://h0:6379", "redis://h0"], node: "a" } }"#).contains("listed twice"))
        #expect(problem(#"{ cluster: { shards: ["redis://:pw@h0", "redis://h1"], node: "a", redis_password: "x" } }"#)
            .contains("not both"))
    }

    @Test func changingTheClusterNeedsARestart() throws {
        let running = try decode(#"{ cluster: { redis: "redis://h:1", node: "a" } }"#)
        let loaded = try decode(#"{ cluster: { redis: "redis://h:2", node: "a" } }"#)
        #expect(running.keysNeedingRestart(for: loaded) == ["cluster"])
    }
}

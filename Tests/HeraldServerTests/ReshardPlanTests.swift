import Testing
@testable import HeraldServer

/// The pure parts of `heraldd --reshard` (issue 33): reading the lists, the plan's rules,
/// the progress record, the counters' arithmetic, the commands a move sends, the progress
/// line and the flag. No Redis: `ClusterReshardServingTests` runs the binary against real ones.
@Suite struct ReshardPlanTests {
    private func plan(_ old: String, _ new: String, prefix: String = "herald:") throws -> ReshardPlan {
        try ReshardPlan(old: try ShardList(parsing: old), new: try ShardList(parsing: new), prefix: prefix)
    }

    @Test func aShardListRecordsItsURLsWithoutCredentials() throws {
        let list = try ShardList(parsing: "redis://:pw@127.0.0.1:7001, redis://u:p%40ss@host:7002/,redis://other,redis://[::1]:7003")
        #expect(list.recorded == "redis://127.0.0.1:7001,redis://host:7002,redis://other:6379,redis://[::1]:7003")
        #expect(list.shards[0].credentials == RedisCredentials(user: nil, password: "pw"))
        #expect(list.shards[1].credentials == RedisCredentials(user: "u", password: "p@ss"))
        #expect(list.shards[2].credentials == nil)
    }

    @Test func aShardListRefusesAServerTwiceAnEmptyEntryAndABadURL() {
        #expect(throws: ClusterURLError.self) { try ShardList(parsing: "redis://:a@h:1,redis://h:1") }
        #expect(throws: ClusterURLError.self) { try ShardList(parsing: "redis://h:1,,redis://h:2") }
        #expect(throws: ClusterURLError.self) { try ShardList(parsing: "") }
        #expect(throws: ClusterURLError.self) { try ShardList(parsing: "h:1") }
        do {
            _ = try ShardList(parsing: "redis://:secret@h:1,redis://:secret@h:1")
        } catch {
            #expect(!error.description.contains("secret"), "\(error)")
        }
    }

    @Test func thePlanJoinsBothListsServersTakingTheFirstCredentialsGiven() throws {
        let made = try plan("redis://a:1,redis://b:2", "redis://a:1,redis://:pw@b:2,redis://c:3")
        #expect(made.servers.map(\.address.description) == ["a:1", "b:2", "c:3"])
        #expect(made.servers[1].credentials?.password == "pw")
        #expect(made.sourceCount == 2)
        #expect(!made.isNewOnly(1) && made.isNewOnly(2))
    }

    @Test func theFirstShardMustStayAndTheListsMustDiffer() {
        #expect(throws: ReshardError.self) { try plan("redis://a:1,redis://b:2", "redis://b:2,redis://a:1") }
        #expect(throws: ReshardError.self) { try plan("redis://a:1,redis://b:2", "redis://a:1/,redis://:pw@b:2") }
        #expect((try? plan("redis://a:1", "redis://a:1,redis://b:2")) != nil)
    }

    /// A channel's home is a server: one whose NEW index names the server it already has
    /// stays, whatever index that server had in OLD.
    @Test func aChannelsHomeIsItsServerUnderNew() throws {
        let made = try plan("redis://a:1,redis://b:2,redis://c:3", "redis://a:1,redis://c:3")
        let names = (0..<3_000).map { Array("ch.\($0)".utf8) }
        let two = ShardMap(count: 2)
        #expect(names.allSatisfy { made.home(of: $0) == (two.shard(of: $0) == 0 ? 0 : 2) })
        let three = ShardMap(count: 3)
        let staying = names.filter { three.shard(of: $0) == made.home(of: $0) }
        // B's channels all go; A's stay; C's stay unless NEW sends them to A.
        #expect(staying.allSatisfy { three.shard(of: $0) != 1 })
        #expect(!staying.isEmpty && staying.count < names.count)
    }

    @Test func scanPatternsEscapeThePrefixsGlobCharacters() throws {
        let made = try plan("redis://a:1", "redis://a:1,redis://b:2", prefix: #"x*y?[z]\:"#)
        #expect(made.match("m:") == Array(#"x\*y\?\[z\]\\:m:*"#.utf8))
        #expect(made.key("m:", Array("ch".utf8)) == Array(#"x*y?[z]\:m:ch"#.utf8))
    }

    @Test func progressComesBackFromItsHash() throws {
        var progress = ReshardProgress(old: "redis://a:1", new: "redis://a:1,redis://b:2", channels: 10, moving: 4)
        progress.moved = 3
        progress.phase = .check
        progress.cursors = ["a:1": ReshardProgress.done, "b:2": "1234"]
        let reply = RedisReply.array(progress.fields.map { .string($0) })
        #expect(try ReshardProgress(hash: reply, key: "p:reshard") == progress)
        #expect(try ReshardProgress(hash: .array([]), key: "p:reshard") == nil)
        #expect(throws: ReshardError.self) {
            try ReshardProgress(hash: .array([.string(Array("old".utf8)), .string(Array("x".utf8))]), key: "p:reshard")
        }
    }

    private func record(_ channel: String, _ fields: [String?], stream: Bool) -> ChannelRecord? {
        ChannelRecord(channel: Array(channel.utf8), fields: .array(fields.map { $0.map { .string(Array($0.utf8)) } ?? .null }),
                      hasStream: stream)
    }

    /// The sums the scripts keep: `#CH + c` for content (per holder too), `cb - tb` plus the
    /// stream's overhead, `hc - tb` plus the overhead per charged history user.
    @Test func countersAreTheSumsOfTheChannels() throws {
        let over = ClusterHistoryScripts.streamOverheadBytes
        var counters = ShardCounters()
        // k c u cb tb hc hu
        counters.add(try #require(record("v1", ["v", "10", "ann", "500", "100", "400", "ann"], stream: true)))
        counters.add(try #require(record("l22", ["l", "7", "", "0", nil, nil, nil], stream: false)))
        counters.add(try #require(record("t", ["t", "0", "ann", "90", "90", nil, nil], stream: false)))
        #expect(counters.channels == 3 && counters.retained == 2 && counters.streams == 1)
        #expect(counters.retainedBytes == 12 + 10)
        #expect(counters.userRetainedBytes == [Array("ann".utf8): 12])
        #expect(counters.historyBytes == 400 + over)
        #expect(counters.userHistoryBytes == [Array("ann".utf8): 300 + over])
        #expect(record("x", ["v"], stream: false) == nil, "not a hash's seven fields")
    }

    @Test func writingCountersDeletesWhatNoChannelCharges() throws {
        let made = try plan("redis://a:1", "redis://a:1,redis://b:2", prefix: "p:")
        var counters = ShardCounters()
        counters.retainedBytes = 5
        counters.userRetainedBytes = [Array("ann".utf8): 5, Array("bob".utf8): 0]
        counters.userHistoryBytes = [Array("ann".utf8): 9]
        let commands = counters.writeCommands(made, existingUserKeys: [Array("p:ub:ann".utf8), Array("p:ub:old".utf8)])
            .map { $0.map { String(decoding: $0, as: UTF8.self) } }
        #expect(commands == [["SET", "p:rb", "5"], ["DEL", "p:hb"], ["DEL", "p:uh"], ["HSET", "p:uh", "ann", "9"],
                             ["DEL", "p:ub:old"], ["SET", "p:ub:ann", "5"]])
    }

    @Test func aMoveRestoresDeletesAndRanksWhatTheChannelHas() throws {
        let made = try plan("redis://a:1", "redis://a:1,redis://b:2", prefix: "p:")
        let bare = ChannelMove(channel: Array("c".utf8), meta: [1], history: nil, list: nil, isRetained: false,
                               historyUser: nil, isCharged: false)
        let full = ChannelMove(channel: Array("d".utf8), meta: [1], history: [2], list: [3], isRetained: true,
                               historyUser: Array("ann".utf8), isCharged: true)
        func text(_ commands: [[[UInt8]]]) -> [[String]] { commands.map { $0.map { String(decoding: $0, as: UTF8.self) } } }
        #expect(text(bare.restoreCommands(made)).map { $0.prefix(2) } == [["RESTORE", "p:m:c"], ["DEL", "p:h:c"], ["DEL", "p:l:c"],
                                                                          ["ZREM", "p:sk"], ["ZREM", "p:hi"]])
        #expect(text(full.restoreCommands(made)).map { $0.prefix(2) } == [["RESTORE", "p:m:d"], ["RESTORE", "p:h:d"],
                                                                          ["RESTORE", "p:l:d"], ["ZADD", "p:sk"]])
        #expect(text(full.restoreCommands(made))[1].suffix(2) == ["\u{2}", "REPLACE"])
        #expect(text(full.removeCommands(made)) == [["DEL", "p:m:d", "p:h:d", "p:l:d"], ["ZREM", "p:sk", "d"],
                                                   ["ZREM", "p:hi", "d"], ["ZREM", "p:ui:ann", "d"]])
        let rank = try #require(ChannelMove.rankCommand(made, [bare, full]))
        #expect(text([rank])[0].suffix(3) == ["p:", "d", "ann"], "only the channel with a stream is ranked")
        #expect(ChannelMove.rankCommand(made, [bare]) == nil)
    }

    @Test func theProgressLineSaysMovedRateAndTimeLeftOnceASecond() {
        #expect(ReshardMeter.text(moved: 1200, moving: 3300, channels: 10_000, rate: 2400)
                == "moved 1200 of 3300 channels (36%; 10000 in all), 2400 channels/s, about 0.9 s left")
        #expect(ReshardMeter.text(moved: 3300, moving: 3300, channels: 10_000, rate: 2400)
                == "moved 3300 of 3300 channels (100%; 10000 in all), 2400 channels/s")
        #expect(ReshardMeter.duration(125) == "2 min 5 s" && ReshardMeter.duration(7_500) == "2 h 5 min")
        var meter = ReshardMeter(now: 100, moved: 50)
        #expect(meter.line(now: 100.5, moved: 60, moving: 100, channels: 200) == nil)
        #expect(meter.line(now: 102, moved: 70, moving: 100, channels: 200)
                == "moved 70 of 100 channels (70%; 200 in all), 10 channels/s, about 3.0 s left")
    }

    @Test func reshardTakesTwoListsAndOnlyAKeyPrefix() throws {
        let options = try CommandLineOptions.parse(["--reshard", "redis://a:1", "redis://a:1,redis://b:2", "--key-prefix", "x:"])
        #expect(options.reshard == ReshardLists(old: "redis://a:1", new: "redis://a:1,redis://b:2"))
        #expect(options.keyPrefix == "x:")
        #expect(try CommandLineOptions.parse(["--reshard=o", "n"]).reshard == ReshardLists(old: "o", new: "n"))
        #expect(throws: ConfigError.self) { try CommandLineOptions.parse(["--reshard", "o"]) }
        #expect(throws: ConfigError.self) { try CommandLineOptions.parse(["--reshard", "o", "n", "--port", "1"]) }
        #expect(throws: ConfigError.self) { try CommandLineOptions.parse(["--key-prefix", "x:"]) }
    }
}

import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The real daemon killed with SIGKILL and restarted on its data folder (issue 6).
@Suite(.serialized) struct CrashRecoveryTests {
    private func makeDataDir() throws -> String {
        let path = NSTemporaryDirectory() + "heraldd-crash-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private func start(_ dataDir: String, fsync: String = "everysec", extra: String = "", arguments: [String] = []) throws -> DaemonProcess {
        try DaemonProcess(config: #"data_dir: "\#(dataDir)", fsync: "\#(fsync)", compact_min_bytes: 2048, \#(extra)"#,
                          arguments: arguments)
    }

    private func kill9(_ daemon: DaemonProcess) {
        daemon.signal(SIGKILL)
        _ = daemon.waitForExit(seconds: 10)
    }

    /// Every acknowledged write survives kill -9 at a random moment, over 50 cycles, under
    /// every fsync policy, with compaction running along the way.
    @Test func acknowledgedWritesSurviveKillNineAtRandomMoments() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        var random = SystemRandomNumberGenerator()
        var ackedValue: [String: (rev: Int, value: Int)] = [:]
        var ackedList: [Int] = []   // elements of `crash.list` whose append was acknowledged, in order
        var appended: [Int] = []    // every element ever sent to `crash.list`, in order
        var counter = 0
        let policies = ["always", "everysec", "no"]
        for cycle in 0..<50 {
            let daemon = try start(dataDir, fsync: policies[cycle % 3])
            let client = try daemon.client()
            try verify(client, ackedValue: ackedValue, ackedList: ackedList, appended: appended, cycle: cycle)
            // Pipeline a burst of writes, read a random number of their answers, then kill.
            var sent: [(rid: Int, channel: String?, value: Int)] = []
            var burst = ""
            for _ in 0..<16 {
                counter += 1
                if counter % 3 == 0 {
                    appended.append(counter)
                    burst += #"{"op":"append","ch":"crash.list","value":\#(counter),"rid":\#(counter)}"# + "\n"
                    sent.append((counter, nil, counter))
                } else {
                    let channel = "crash.v" + String(counter % 5)
                    burst += #"{"op":"set","ch":"\#(channel)","value":\#(counter),"rid":\#(counter)}"# + "\n"
                    sent.append((counter, channel, counter))
                }
            }
            client.send(bytes: Array(burst.utf8))
            let toRead = Int.random(in: 0...sent.count, using: &random)
            for k in 0..<toRead {
                let answer = try client.frame()
                #expect(answer["rid"] as? Int == sent[k].rid, "answers come in order")
                guard answer["ok"] != nil, let rev = answer["rev"] as? Int else {
                    Issue.record("write refused: \(answer)")
                    continue
                }
                if let channel = sent[k].channel {
                    ackedValue[channel] = (rev, sent[k].value)
                } else {
                    ackedList.append(sent[k].value)
                }
            }
            if Bool.random(using: &random) { usleep(UInt32.random(in: 0...3_000, using: &random)) }
            kill9(daemon)
        }
        let daemon = try start(dataDir)
        let client = try daemon.client()
        try verify(client, ackedValue: ackedValue, ackedList: ackedList, appended: appended, cycle: 50)
        // A compaction (tens of ms with its fsyncs and read-back check) rarely finishes
        // between a burst and its kill, so the last life writes until one has run.
        var names = try FileManager.default.contentsOfDirectory(atPath: dataDir)
        let deadline = Date().addingTimeInterval(10)
        while !names.contains("snapshot") && Date() < deadline {
            for n in 0..<50 { client.send(#"{"op":"set","ch":"crash.fill","value":\#(n),"rid":"f\#(n)"}"#) }
            for _ in 0..<50 { _ = try client.frame() }
            usleep(50_000)
            names = try FileManager.default.contentsOfDirectory(atPath: dataDir)
        }
        #expect(names.contains("snapshot"), "the log was compacted: \(names)")
        #expect(!names.contains("damaged"), "no repair ran")
    }

    private func verify(
        _ client: TestClient, ackedValue: [String: (rev: Int, value: Int)], ackedList: [Int], appended: [Int], cycle: Int
    ) throws {
        for (channel, acked) in ackedValue {
            let answer = try client.request(#"{"op":"get","ch":"\#(channel)"}"#)
            let rev = answer["rev"] as? Int ?? -1
            #expect(rev >= acked.rev, "cycle \(cycle): \(channel) lost rev \(acked.rev), has \(rev)")
            if rev == acked.rev { #expect(answer["value"] as? Int == acked.value, "cycle \(cycle): \(channel)") }
        }
        let list = try client.request(#"{"op":"get","ch":"crash.list"}"#)["value"] as? [Int] ?? []
        // Unacknowledged appends may or may not have landed, but the list holds what was sent
        // in order, once each, and every acknowledged append.
        #expect(list == list.sorted() && Set(list).count == list.count && Set(list).isSubset(of: Set(appended)),
                "cycle \(cycle): the list is not a subsequence of what was sent")
        let missing = Set(ackedList).subtracting(list)
        #expect(missing.isEmpty, "cycle \(cycle): acknowledged appends lost: \(missing.sorted())")
    }

    @Test func retainedStateAndRevPersistButEpochAndSeqAreNew() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        var first = try start(dataDir, fsync: "no")
        var client = try TestClient(port: first.port)
        let epoch1 = (try client.frame()["info"] as? [String: Any])?["epoch"] as? String
        _ = try client.request(#"{"op":"set","ch":"p","value":"kept"}"#)
        #expect(try client.request(#"{"op":"pub","ch":"p","rid":1}"#)["seq"] as? Int == 2)
        first.signal(SIGTERM)
        #expect(first.waitForExit(seconds: 10) == 0)
        first = try start(dataDir, fsync: "no")
        client = try TestClient(port: first.port)
        let epoch2 = (try client.frame()["info"] as? [String: Any])?["epoch"] as? String
        #expect(epoch1 != nil && epoch1 != epoch2)
        let answer = try client.request(#"{"op":"get","ch":"p"}"#)
        #expect(answer["rev"] as? Int == 1)
        #expect(answer["value"] as? String == "kept")
        #expect(try client.request(#"{"op":"sub","ch":"p","since":2}"#)["recovered"] as? Bool == false)
        #expect(try client.request(#"{"op":"pub","ch":"p","rid":2}"#)["seq"] as? Int == 1)
    }

    @Test func damageInTheMiddleOfTheLogIsRefusedUntilRepair() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let daemon = try start(dataDir, fsync: "always", extra: "compact_min_bytes: 100000000,")
        let client = try daemon.client()
        for n in 1...6 { _ = try client.request(#"{"op":"set","ch":"m","value":\#(n)}"#) }
        kill9(daemon)
        let logPath = dataDir + "/log.0"
        var log = try Data(contentsOf: URL(fileURLWithPath: logPath))
        log[12] ^= 0xFF
        try log.write(to: URL(fileURLWithPath: logPath))
        let refused = try runDaemon(["--data-dir", dataDir, "--port", "0"])
        #expect(refused.status == 70)
        #expect(refused.output.contains("--repair"), "\(refused.output)")
        let repaired = try start(dataDir, arguments: ["--repair"])
        #expect(repaired.log.contains { $0.contains("--repair cut the log") })
        let answer = try repaired.client().request(#"{"op":"get","ch":"m"}"#)
        #expect(answer["rev"] as? Int == 0, "everything from the damaged first record on was cut")
    }

    /// Issue 13, item 2, end to end: 80 lists written through the daemon, two compactions,
    /// kill -9, one flipped byte in the middle of `snapshot`. A plain start refuses, naming the
    /// file and the offset; `heraldd --repair` serves every list exactly as acknowledged,
    /// leaves the damaged snapshot in `damaged/`, and the next plain start works.
    @Test func aDamagedSnapshotIsRefusedAndRepairServesExactlyTheAcknowledgedState() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let daemon = try start(dataDir, fsync: "always", extra: "compact_min_bytes: 1024,")
        let client = try daemon.client()
        var acked: [String: (rev: Int, list: [String])] = [:]
        func write(_ op: String, _ k: Int, _ value: String, _ change: ([String]) -> [String]) throws {
            let answer = try client.request(#"{"op":"\#(op)","ch":"r.l\#(k)",\#(value)}"#)
            let rev = try #require(answer["rev"] as? Int, "\(answer)")
            acked["r.l\(k)"] = (rev, change(acked["r.l\(k)"]?.list ?? []))
        }
        for k in 0..<80 { try write("set", k, #""value":["a0","a1","a2"]"#) { _ in ["a0", "a1", "a2"] } }
        for round in 0..<40 where !FileManager.default.fileExists(atPath: dataDir + "/snapshot.previous") {
            for k in 0..<80 { try write("append", k, #""value":"b\#(round)""#) { $0 + ["b\(round)"] } }
            usleep(20_000)
        }
        #expect(FileManager.default.fileExists(atPath: dataDir + "/snapshot.previous"), "two compactions ran")
        for k in 0..<80 { try write("assign", k, #""index":0,"value":"A""#) { ["A"] + $0.dropFirst() } }
        kill9(daemon)

        var snapshot = try Data(contentsOf: URL(fileURLWithPath: dataDir + "/snapshot"))
        snapshot[snapshot.count / 2] ^= 0x01
        try snapshot.write(to: URL(fileURLWithPath: dataDir + "/snapshot"))
        let refused = try runDaemon(["--data-dir", dataDir, "--port", "0"])
        #expect(refused.status == 70)
        #expect(refused.output.contains("/snapshot: damaged at byte ") && refused.output.contains("--repair"),
                "\(refused.output)")

        let repaired = try start(dataDir, arguments: ["--repair"])
        try expectLists(try repaired.client(), acked)
        let aside = try FileManager.default.contentsOfDirectory(atPath: dataDir + "/damaged")
        #expect(aside.count == 1)
        #expect(FileManager.default.fileExists(atPath: dataDir + "/damaged/" + (aside.first ?? "") + "/snapshot"))
        repaired.signal(SIGTERM)
        #expect(repaired.waitForExit(seconds: 10) == 0)
        let plain = try start(dataDir)
        try expectLists(try plain.client(), acked)
    }

    private func expectLists(_ client: TestClient, _ acked: [String: (rev: Int, list: [String])]) throws {
        for (channel, state) in acked {
            let answer = try client.request(#"{"op":"get","ch":"\#(channel)"}"#)
            #expect(answer["rev"] as? Int == state.rev, "\(channel): \(answer)")
            #expect(answer["value"] as? [String] == state.list, "\(channel): \(answer)")
        }
    }

    @Test func aTornTailIsCutWithALogLineAndTheRestServed() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let daemon = try start(dataDir, fsync: "always", extra: "compact_min_bytes: 100000000,")
        let client = try daemon.client()
        for n in 1...3 { _ = try client.request(#"{"op":"set","ch":"t","value":\#(n)}"#) }
        kill9(daemon)
        let logPath = dataDir + "/log.0"
        let log = try Data(contentsOf: URL(fileURLWithPath: logPath))
        try log.prefix(log.count - 3).write(to: URL(fileURLWithPath: logPath))
        let restarted = try start(dataDir)
        #expect(restarted.log.contains { $0.contains("torn or damaged tail") })
        let answer = try restarted.client().request(#"{"op":"get","ch":"t"}"#)
        #expect(answer["rev"] as? Int == 2)
        #expect(answer["value"] as? Int == 2)
    }

    @Test func limitsAnswerLimitAndChangeNothing() throws {
        let daemon = try DaemonProcess(config: "max_value_bytes: 8, max_list_length: 2, max_retained_bytes: 40")
        let client = try daemon.client()
        #expect(try client.request(#"{"op":"set","ch":"a","value":"123456789"}"#)["error"] as? String == "limit")
        _ = try client.request(#"{"op":"set","ch":"l","value":[1,2]}"#)
        #expect(try client.request(#"{"op":"append","ch":"l","value":3}"#)["error"] as? String == "limit")
        #expect(try client.request(#"{"op":"get","ch":"l"}"#)["rev"] as? Int == 1)
        for n in 0..<5 { _ = try client.request(#"{"op":"set","ch":"k\#(n)","value":"abcdef"}"#) }
        #expect(try client.request(#"{"op":"set","ch":"full","value":1}"#)["error"] as? String == "limit")
    }

    /// The generation of the log in use (`log.N`).
    private func logGeneration(_ dataDir: String) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: dataDir)
            .compactMap { $0.hasPrefix("log.") ? Int($0.dropFirst(4)) : nil }.max() ?? -1
    }

    /// Asks `get` until the tombstone sweep (one tick a second) collected `ch`: `rev` 0.
    private func waitUntilCollected(_ client: TestClient, _ ch: String) throws -> Bool {
        for _ in 0..<50 {
            if try client.request(#"{"op":"get","ch":"\#(ch)"}"#)["rev"] as? Int == 0 { return true }
            usleep(100_000)
        }
        return false
    }

    /// Issue 12, section 3: a collected tombstone stays collected after kill -9, whether its
    /// `forget` record is in the log or folded into a snapshot, and a channel set again
    /// after its tombstone went gets a `rev` above every one it had, across restarts.
    @Test func aCollectedTombstoneStaysGoneAfterKillNineAndRevNeverGoesBack() throws {
        let dataDir = try makeDataDir()
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        // history: 0 keeps no del event, so nothing delays the sweep.
        var daemon = try start(dataDir, fsync: "no", extra: "history: 0, compact_min_bytes: 100000000,")
        var client = try daemon.client()
        _ = try client.request(#"{"op":"set","ch":"t","value":1}"#)
        _ = try client.request(#"{"op":"set","ch":"t","value":2}"#)
        #expect(try client.request(#"{"op":"del","ch":"t"}"#)["rev"] as? Int == 3)
        #expect(try waitUntilCollected(client, "t"))
        // An acknowledged write after it: the writer keeps order, so the forget is on disk too.
        _ = try client.request(#"{"op":"set","ch":"marker","value":1}"#)
        kill9(daemon)

        daemon = try start(dataDir, fsync: "no", extra: "history: 0, compact_min_bytes: 64,")
        client = try daemon.client()
        let restarted = try client.request(#"{"op":"get","ch":"t"}"#)
        #expect(restarted["rev"] as? Int == 0 && restarted["value"] is NSNull, "the log's forget was replayed")
        #expect(try client.request(#"{"op":"set","ch":"t","value":4}"#)["rev"] as? Int == 4, "above the 3 it had")
        #expect(try client.request(#"{"op":"del","ch":"t"}"#)["rev"] as? Int == 5)
        #expect(try waitUntilCollected(client, "t"))
        // Two compactions after the collection: the second snapshot was certainly taken after it.
        let collectedAt = try logGeneration(dataDir)
        let pad = String(repeating: "p", count: 200)
        for n in 0..<200 where try logGeneration(dataDir) < collectedAt + 2 {
            _ = try client.request(#"{"op":"set","ch":"pad\#(n % 4)","value":"\#(pad)"}"#)
            usleep(5_000)
        }
        #expect(try logGeneration(dataDir) >= collectedAt + 2, "compaction ran")
        kill9(daemon)

        daemon = try start(dataDir, fsync: "no", extra: "history: 0,")
        client = try daemon.client()
        #expect(try client.request(#"{"op":"get","ch":"t"}"#)["rev"] as? Int == 0, "the snapshot has no tombstone")
        #expect(try client.request(#"{"op":"set","ch":"t","value":6}"#)["rev"] as? Int == 6, "the snapshot kept the floor")
        #expect(try client.request(#"{"op":"get","ch":"marker"}"#)["rev"] as? Int == 4,
                "set after the first collection: a new channel starts above the floor too")
    }
}

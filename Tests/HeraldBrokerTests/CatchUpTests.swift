import Foundation
import Testing
import HeraldBroker

/// `sub` with `current` and `since`, and the history behind `since` (issue 6).
@Suite struct CatchUpTests {
    @Test func currentSendsEveryMatchingChannelRightAfterTheOk() {
        let harness = BrokerHarness()
        let writer = harness.connect()
        let reader = harness.connect()
        _ = harness.request(writer, #"{"op":"set","ch":"app.b","value":2}"#)
        _ = harness.request(writer, #"{"op":"set","ch":"app.a","value":{"x":1}}"#)
        _ = harness.request(writer, #"{"op":"append","ch":"app.list","value":"e"}"#)
        _ = harness.request(writer, #"{"op":"set","ch":"other","value":3}"#)
        _ = harness.request(writer, #"{"op":"set","ch":"app.gone","value":3}"#)
        _ = harness.request(writer, #"{"op":"del","ch":"app.gone"}"#)
        harness.send(reader, #"{"op":"sub","ch":"app.*","sub":"w","current":true,"args":7}"#)
        #expect(harness.lines(reader) == [
            #"{"ok":"sub","sub":"w","ch":"app.*"}"#,
            #"{"event":"app.a","sub":"w","kind":"current","rev":1,"args":7,"value":{"x":1}}"#,
            #"{"event":"app.b","sub":"w","kind":"current","rev":1,"args":7,"value":2}"#,
            #"{"event":"app.list","sub":"w","kind":"current","rev":1,"args":7,"value":["e"]}"#,
        ])
    }

    @Test func currentOnAConcreteChannelWithoutStateSendsNothing() {
        let harness = BrokerHarness()
        let reader = harness.connect()
        harness.send(reader, #"{"op":"sub","ch":"quiet","current":true}"#)
        #expect(harness.lines(reader).count == 1)
    }

    @Test func currentEventsCountTowardMax() {
        let harness = BrokerHarness()
        let client = harness.connect()
        _ = harness.request(client, #"{"op":"set","ch":"k.1","value":1}"#)
        _ = harness.request(client, #"{"op":"set","ch":"k.2","value":2}"#)
        harness.send(client, #"{"op":"sub","ch":"k.*","once":true,"current":true}"#)
        let frames = harness.frames(client)
        #expect(frames.count == 2)
        #expect(frames[1]["last"] as? Bool == true)
        #expect(harness.request(client, #"{"op":"subs"}"#)["subs"] as? [Any] != nil)
        #expect((harness.request(client, #"{"op":"subs"}"#)["subs"] as? [Any])?.isEmpty == true)
    }

    @Test func sinceReplaysWhatFollowedWithReplayTrue() {
        let harness = BrokerHarness()
        let writer = harness.connect()
        let reader = harness.connect()
        harness.send(writer, #"{"op":"pub","ch":"c","data":"one"}"#)
        harness.send(writer, #"{"op":"set","ch":"c","value":2}"#)
        harness.send(writer, #"{"op":"pub","ch":"c","data":"three"}"#)
        _ = harness.frames(writer)
        harness.send(reader, #"{"op":"sub","ch":"c","since":1}"#)
        #expect(harness.lines(reader) == [
            #"{"ok":"sub","sub":"s1","ch":"c","recovered":true}"#,
            #"{"event":"c","sub":"s1","seq":2,"from":"c1","kind":"set","rev":1,"replay":true,"value":2}"#,
            #"{"event":"c","sub":"s1","seq":3,"from":"c1","replay":true,"data":"three"}"#,
        ])
        harness.send(writer, #"{"op":"pub","ch":"c","data":4}"#)
        #expect(harness.lines(reader) == [#"{"event":"c","sub":"s1","seq":4,"from":"c1","data":4}"#])
    }

    @Test func sinceAtTheCurrentSeqRecoversWithNothingToReplay() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.send(client, #"{"op":"pub","ch":"c"}"#)
        let answer = harness.request(client, #"{"op":"sub","ch":"c","since":1}"#)
        #expect(answer["recovered"] as? Bool == true)
        #expect(harness.request(client, #"{"op":"sub","ch":"new","since":0}"#)["recovered"] as? Bool == true)
    }

    @Test func sinceAheadOfTheChannelIsNotRecovered() {
        let harness = BrokerHarness()
        let client = harness.connect()
        harness.send(client, #"{"op":"pub","ch":"c"}"#)
        #expect(harness.request(client, #"{"op":"sub","ch":"c","since":9}"#)["recovered"] as? Bool == false)
    }

    @Test func historyKeepsTheLastNAndReportsWhenItNoLongerReachesBack() {
        var config = BrokerConfig(epoch: "e")
        config.history = 3
        let harness = BrokerHarness(config)
        let writer = harness.connect()
        let reader = harness.connect()
        for n in 1...10 { harness.send(writer, #"{"op":"pub","ch":"c","data":\#(n)}"#) }
        harness.send(reader, #"{"op":"sub","ch":"c","since":2,"sub":"late"}"#)
        let frames = harness.frames(reader)
        #expect(frames.first?["recovered"] as? Bool == false)
        #expect(frames.dropFirst().compactMap { $0["seq"] as? Int } == [8, 9, 10], "what history still has is replayed")
        harness.send(reader, #"{"op":"sub","ch":"c","since":7,"sub":"edge"}"#)
        #expect(harness.frames(reader).first?["recovered"] as? Bool == true)
    }

    @Test func historyZeroKeepsNothing() {
        var config = BrokerConfig(epoch: "e")
        config.history = 0
        let harness = BrokerHarness(config)
        let client = harness.connect()
        harness.send(client, #"{"op":"pub","ch":"c"}"#)
        let frames = harness.request(client, #"{"op":"sub","ch":"c","since":0}"#)
        #expect(frames["recovered"] as? Bool == false)
    }

    @Test func historyBytesCountsEachEventsBookkeepingNotOnlyItsPayload() {
        var config = BrokerConfig(epoch: "e")
        config.history = 100_000
        config.historyBytes = 10_000
        let harness = BrokerHarness(config)
        let writer = harness.connect()
        for n in 1...2_000 { harness.send(writer, #"{"op":"pub","ch":"tiny","data":\#(n % 10)}"#) }
        let reader = harness.connect()
        harness.send(reader, #"{"op":"sub","ch":"tiny","since":0,"sub":"t"}"#)
        let replayed = harness.frames(reader).filter { $0["event"] != nil }.count
        // Each event's frame bytes are ~20 B; with its 40 B entry counted, 10 kB holds well
        // under 10_000 / 40 = 250 of them (payload alone would allow ~500).
        #expect(replayed > 50)
        #expect(replayed < 250)
    }

    @Test func historyBytesCapEvictsTheGloballyOldestEvents() {
        var config = BrokerConfig(epoch: "e")
        config.history = 1000
        config.historyBytes = 2_000
        let harness = BrokerHarness(config)
        let writer = harness.connect()
        let reader = harness.connect()
        let payload = String(repeating: "x", count: 100)
        for n in 1...30 {
            harness.send(writer, #"{"op":"pub","ch":"old","data":"\#(payload)\#(n)"}"#)
        }
        for n in 1...30 {
            harness.send(writer, #"{"op":"pub","ch":"new","data":"\#(payload)\#(n)"}"#)
        }
        let stats = harness.request(writer, #"{"op":"stats"}"#)
        #expect((stats["history_bytes"] as? Int ?? .max) <= 2_000)
        harness.send(reader, #"{"op":"sub","ch":"old","since":0,"sub":"o"}"#)
        let old = harness.frames(reader)
        #expect(old.first?["recovered"] as? Bool == false)
        #expect(old.count == 1, "the oldest channel's events went first")
        harness.send(reader, #"{"op":"sub","ch":"new","since":29,"sub":"n"}"#)
        #expect(harness.frames(reader).count == 2)
    }

    @Test func replayAndLiveNeverOverlapWhilePublishersKeepPublishing() {
        var config = BrokerConfig(epoch: "e")
        config.history = 10_000
        let harness = BrokerHarness(config)
        let writer = harness.connect()
        var random = SplitMix(seed: 42)
        var readers: [(Session, Int)] = []
        var published = 0
        for round in 0..<60 {
            for _ in 0..<Int(random.next() % 5) {
                published += 1
                harness.send(writer, #"{"op":"pub","ch":"feed","data":\#(published)}"#)
            }
            if round % 3 == 0 {
                let reader = harness.connect()
                let since = published == 0 ? 0 : Int(random.next() % UInt64(published))
                harness.send(reader, #"{"op":"sub","ch":"feed","since":\#(since)}"#)
                readers.append((reader, since))
            }
        }
        published += 1
        harness.send(writer, #"{"op":"pub","ch":"feed","data":\#(published)}"#)
        for (reader, since) in readers {
            let seqs = harness.frames(reader).compactMap { $0["seq"] as? Int }
            #expect(seqs == Array((since + 1)...published), "since \(since)")
        }
    }
}

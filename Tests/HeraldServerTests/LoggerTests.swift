import Foundation
import Synchronization
import Testing
@testable import HeraldServer

/// 2026-11-29T20:47:54.123Z.
private let fixedInstant: Int64 = 1_795_985_274_123

/// A logger writing into `capture` at `fixedInstant`.
private func makeLogger(_ capture: LogCapture, level: LogLevel = .debug) -> Logger {
    Logger(component: "server", level: level, sink: capture.sink, clock: .fixed(millisecondsSince1970: fixedInstant))
}

@Suite struct LoggerTests {
    @Test func lineFormatIsTimeLevelComponentMessageFields() {
        let capture = LogCapture()
        makeLogger(capture).info("listening", ["host": "127.0.0.1", "port": 7400])
        #expect(capture.lines == ["2026-11-29T20:47:54.123Z info server listening host=127.0.0.1 port=7400"])
    }

    @Test func lineWithoutFieldsEndsAfterTheMessage() {
        let capture = LogCapture()
        makeLogger(capture).warn("disk nearly full")
        #expect(capture.lines == ["2026-11-29T20:47:54.123Z warn server disk nearly full"])
    }

    @Test func eachLevelWritesItsName() {
        let capture = LogCapture()
        let log = makeLogger(capture)
        log.debug("a")
        log.info("b")
        log.warn("c")
        log.error("d")
        #expect(capture.lines.map { $0.split(separator: " ")[1] } == ["debug", "info", "warn", "error"])
    }

    @Test func eventsBelowTheLevelAreNotWrittenNorBuilt() {
        let capture = LogCapture()
        let log = makeLogger(capture, level: .warn)
        let built = Atomic<Int>(0)
        func expensive() -> String {
            built.add(1, ordering: .relaxed)
            return "costly"
        }
        log.debug(expensive())
        log.info(expensive(), ["k": expensive()])
        log.warn("kept")
        #expect(capture.lines.count == 1)
        #expect(built.load(ordering: .relaxed) == 0)
    }

    @Test func childSharesTheLevelAndNamesItsComponent() {
        let capture = LogCapture()
        let root = makeLogger(capture, level: .info)
        let child = root.child(component: "persist")
        child.debug("hidden")
        root.setLevel(.debug)
        child.debug("shown")
        child.setLevel(.error)
        root.warn("hidden too")
        #expect(capture.lines == ["2026-11-29T20:47:54.123Z debug persist shown"])
        #expect(root.level == .error)
    }

    @Test func valuesWithSpacesEqualsOrQuotesAreJSONQuoted() {
        let capture = LogCapture()
        makeLogger(capture).info("got", [
            "plain": "abc",
            "space": "a b",
            "equals": "a=b",
            "quote": "say \"hi\"",
            "backslash": "a\\b",
            "newline": "a\nb",
            "empty": "",
        ])
        #expect(capture.lines == [
            #"2026-11-29T20:47:54.123Z info server got plain=abc space="a b" equals="a=b" quote="say \"hi\"" backslash="a\\b" newline="a\nb" empty="""#,
        ])
    }

    @Test func messageWithNewlineStaysOnOneLine() {
        let capture = LogCapture()
        makeLogger(capture).error("first\nsecond\u{1}")
        #expect(capture.lines == [#"2026-11-29T20:47:54.123Z error server first\nsecond\u0001"#])
    }

    @Test func timestampMatchesFoundationForManyInstants() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        let instants: [Int64] = [0, 1, 999, 86_399_999, 951_782_400_000, 4_107_542_400_123, fixedInstant, 1_709_164_800_500]
        for ms in instants {
            let expected = formatter.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
            #expect(UTCTimestamp.format(millisecondsSince1970: ms) == expected)
        }
    }

    @Test func timestampBeforeTheEpochRoundsDown() {
        #expect(UTCTimestamp.format(millisecondsSince1970: -1) == "1969-12-31T23:59:59.999Z")
    }

    @Test func concurrentLoggingKeepsLinesWhole() async {
        let capture = LogCapture()
        let log = makeLogger(capture)
        await withTaskGroup(of: Void.self) { group in
            for task in 0..<8 {
                group.addTask {
                    for index in 0..<100 { log.info("event", ["task": task, "index": index]) }
                }
            }
        }
        #expect(capture.lines.count == 800)
        #expect(capture.lines.allSatisfy { $0.hasPrefix("2026-11-29T20:47:54.123Z info server event task=") })
    }
}

/// Repeated warnings (issue 32, item 9): a peer that makes the daemon complain many times
/// costs a few lines, and the count of the rest is written.
@Suite struct LogRepeatTests {
    @Test func aWarningRepeatedAThousandTimesWritesTwentyLinesAndCountsTheRest() {
        let capture = LogCapture()
        let clock = Mutex<Int64>(fixedInstant)
        let log = Logger(component: "cluster", level: .info, sink: capture.sink, clock: LogClock { clock.withLock { $0 } })
        for n in 0..<10_000 { log.warn("malformed message dropped", ["bytes": n]) }
        log.warn("another complaint")
        for n in 0..<100 { log.info("connection closed", ["n": n]) }
        #expect(capture.lines.filter { $0.contains("malformed") }.count == 20)
        #expect(capture.lines.contains { $0.hasSuffix("another complaint") }, "other messages have their own budget")
        #expect(capture.lines.filter { $0.contains("connection closed") }.count == 100, "info lines are not held back")
        clock.withLock { $0 += 10_000 }
        log.warn("malformed message dropped", ["bytes": 1])
        #expect(capture.lines.last?.hasSuffix("bytes=1 suppressed=9980") == true, "\(capture.lines.last ?? "")")
        log.warn("malformed message dropped", ["bytes": 2])
        #expect(capture.lines.last?.hasSuffix("bytes=2") == true, "counted once")
    }

    @Test func theTableOfMessagesIsBounded() {
        let limiter = LogRepeatLimiter(burst: 1, windowMs: 1_000, capacity: 100)
        for n in 0..<100_000 { _ = limiter.admit("complaint \(n)", now: 0) }
        #expect(limiter.admit("complaint 99999", now: 0).write == false, "the newest key is remembered")
        #expect(limiter.admit("complaint 0", now: 0).write, "old keys were forgotten, not kept without end")
    }
}

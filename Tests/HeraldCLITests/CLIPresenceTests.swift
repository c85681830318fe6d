import Foundation
import HeraldTestSupport
import Testing

/// `herald presence CH [--watch]` (issue 36): every page of members, then joins and leaves.
@Suite struct CLIPresenceTests {
    @Test func presenceListsEveryMemberWithItsInfo() throws {
        let daemon = try TestDaemon()
        let members = try (0..<3).map { _ in try startHerald(["sub", "room.1", "--timeout", "5"] + at(daemon)) }
        #expect(try waitForSubscriptions(daemon, count: 3))

        let pretty = try herald(["presence", "room.1"] + at(daemon))
        #expect(pretty.status == 0)
        let lines = pretty.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.prefix(3).allSatisfy { $0.hasPrefix("c") && $0.contains(#" - {"instance":""#) }, "CLIENT USER INFO")
        #expect(lines.last == "count 3")

        let json = try herald(["presence", "room.1", "--json"] + at(daemon))
        let objects = try json.stdout.split(separator: "\n").map {
            try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any])
        }
        #expect(objects.count == 4)
        #expect(objects.prefix(3).allSatisfy { ($0["info"] as? [String: Any])?["instance"] is String && $0["user"] == nil })
        #expect(Set(objects.prefix(3).compactMap { $0["client"] as? String }).count == 3)
        #expect(objects.last?["count"] as? Int == 3)

        let empty = try herald(["presence", "room.none"] + at(daemon))
        #expect(empty.stdout == "count 0\n")
        for member in members { member.process.terminate() }
    }

    @Test func watchPrintsJoinsAndLeavesAfterTheListing() throws {
        let daemon = try TestDaemon()
        let first = try startHerald(["sub", "room.2", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let watch = try startHerald(["presence", "room.2", "--watch", "--count", "2", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 2), "the watch's $presence subscription")
        // A member that stays a second: one join, one leave.
        let visitor = try herald(["sub", "room.2", "--timeout", "1"] + at(daemon))
        #expect(visitor.status == 0)
        let result = watch.finish()
        #expect(result.status == 0, "exit after --count lines")
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 4)
        #expect(lines.first?.hasPrefix("c") == true)
        #expect(lines[1] == "count 1")
        #expect(lines[2].hasPrefix("join c") && lines[2].contains(#" - {"instance":""#))
        #expect(lines[3].hasPrefix("leave c"))
        #expect(lines[2].dropFirst(5) == lines[3].dropFirst(6), "the same member joins and leaves")
        first.process.terminate()
    }

    @Test func watchWithJSONPrintsEachEventsData() throws {
        let daemon = try TestDaemon()
        let watch = try startHerald(["presence", "room.3", "--watch", "--count", "1", "--json", "--timeout", "8"] + at(daemon))
        #expect(try waitForSubscriptions(daemon, count: 1))
        let member = try startHerald(["sub", "room.3", "--timeout", "3"] + at(daemon))
        let result = watch.finish()
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == #"{"count":0}"#)
        #expect(lines.count == 2)
        #expect(lines.last?.hasPrefix(#"{"action":"join","client":"c"#) == true)
        member.process.terminate()
    }

    @Test func presenceRefusesPatternsAndStrayFlags() throws {
        let daemon = try TestDaemon()
        let pattern = try herald(["presence", "room.*"] + at(daemon))
        #expect(pattern.status == 2, "checked before it is sent, as for pub")
        #expect(pattern.stderr.contains("a concrete channel is required"))
        let dollar = try herald(["presence", "$sys.x"] + at(daemon))
        #expect(dollar.status == 1, "the daemon refuses '$' channels")
        #expect(dollar.stderr.hasPrefix("herald: bad_channel: "))
        #expect(try herald(["presence"] + at(daemon)).status == 2, "missing channel")
        #expect(try herald(["sub", "room.1", "--watch"] + at(daemon)).status == 2, "--watch is presence's")
        let watchTimeout = try herald(["presence", "room.4", "--watch", "--count", "1", "--timeout", "0.3"] + at(daemon))
        #expect(watchTimeout.status == 5, "--count lines did not all come")
        #expect(watchTimeout.stdout == "count 0\n")
    }
}
